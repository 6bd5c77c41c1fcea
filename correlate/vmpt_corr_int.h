/* SPDX-License-Identifier: MIT */
/* struct vmpt_corr and what its files share (internal to correlate/). */
#ifndef VMPT_CORR_INT_H
#define VMPT_CORR_INT_H

#include "vmpt/correlate.h"
#include "vmpt_tsc_offset.h"
#include "vmpt_tsc_perf.h"
#include "vmpt_tsc_psb.h"
#include "vmpt_tsc_scan.h"

struct vmpt_corr_recording;

struct vmpt_corr {
	struct vmpt_corr_config cfg;
	struct vmpt_corr_buffer *bufs;
	size_t n_bufs, bufs_cap;
	/* Queues: buffers of one mmap index, in file order. */
	size_t *queue_bufs;
	struct vmpt_tsc_queue *queues;
	size_t n_queues;
	/* The packet pass, perf's replay and vmpt's learning: vmpt's
	 * records (recs), perf's (perf_recs: recs, or its own pass where
	 * buffers are joined).
	 */
	struct vmpt_tsc_recs recs, own_perf_recs;
	const struct vmpt_tsc_recs *perf_recs;
	struct vmpt_tsc_perf perf;
	struct vmpt_tsc_learn learn;
	/* Patches, by buffer then offset once run: patch_at[b]..[b+1]. */
	struct vmpt_tsc_patch *patches;
	uint32_t *patch_buf;
	size_t n_patches, patches_cap, patch_buf_cap;
	size_t *patch_at;
	uint64_t guest_tscs;
	/* psb_only: what the PSB+ pass found; walked: 1 when it fell back. */
	struct vmpt_tsc_psb_stats psb;
	int walked;
	int failed;		/* vmpt_corr_run said no (errmsg) */
	/* What is known of the vCPUs. */
	struct vmpt_vcpu_thread *vcpus;
	size_t n_vcpus, vcpus_cap;
	struct vmpt_kvm_value *kvm;
	size_t n_kvm, kvm_cap;
	uint64_t (*to_time)(void *ctx, uint64_t tsc);
	void *time_ctx;
	/* Opened from a recording (vmpt_corr_open): its files. */
	struct vmpt_corr_recording *rec;
	char **msgs;
	size_t n_msgs, msgs_cap;
	/* "FILE: offset 0x...: " of the recording's AUXTRACE_INFO, or "". */
	char info_where[560];
	char errmsg[1200];
};

int vmpt_corr_grow(void **arr, size_t *cap, size_t n, size_t size);
void vmpt_corr_msg(struct vmpt_corr *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* vmpt's learning and what it adds: threads, vCPUs, KVM's values,
 * patches (vmpt_corr_learn.c).
 */
int vmpt_corr_learn(struct vmpt_corr *c);

void vmpt_corr_recording_close(struct vmpt_corr *c);

#endif
