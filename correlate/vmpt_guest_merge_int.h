/* SPDX-License-Identifier: MIT */
/* The guest merge's state, shared by its two files: vmpt_guest_merge.c
 * reads the inputs and places the guest's records, vmpt_guest_merge_write.c
 * writes the merged recording.  Internal to correlate/.
 */
#ifndef VMPT_GUEST_MERGE_INT_H
#define VMPT_GUEST_MERGE_INT_H

#include "vmpt/guest_merge.h"
#include "vmpt_guest_vcpus.h"
#include "vmpt_merge_output.h"

/* A guest event id and the host id it becomes. */
struct merge_id {
	uint64_t id, host_id;
	uint32_t vcpu;		/* the guest CPU the id was opened on */
};

/* A guest record to merge, found in the first pass. */
struct merge_rec {
	uint64_t host_time, guest_time;
	uint64_t offset;	/* of the record in the guest file */
	uint64_t zpos;		/* perf record -z: in the records at offset */
	int compressed;
	uint64_t seq;		/* its place in the guest file */
	uint32_t vcpu;
	uint64_t host_id;
};

struct merge {
	const struct vmpt_guest_merge_config *cfg;
	struct vmpt_guest_merge_stats *st;
	char *err;
	size_t errlen;
	struct vmpt_perf_data host, guest;
	struct vmpt_guest_vcpus vcpus;
	struct vmpt_guest_clock clock;
	uint64_t host_tc_offset, guest_tc_offset;	/* 0: none found */
	int host_has_cpu, host_has_init;
	char *vcpu_map;		/* the map file read, or NULL: thread names */
	uint64_t guest_id_index_offset;			/* 0: no ID_INDEX */
	struct merge_id *ids;
	size_t nr_ids;
	uint64_t dflt_id;	/* what records with id 0 stand for (perf's) */
	struct merge_rec *recs;
	size_t nr_recs, cap_recs, next;
	struct vmpt_perf_writer *w;
	struct vmpt_merge_output out;
	char guest_kcore[32];	/* kcore_dir__PID */
	uint8_t rec[0x10000];
};

/* Set the error message; returns -err. */
int gm_fail(struct merge *m, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The reader's message (it names the file and offset); returns ret. */
int gm_pd_fail(struct merge *m, const struct vmpt_perf_data *pd, int ret);
/* A guest id's entry, once the ids are sorted (after placement). */
struct merge_id *gm_lookup_id(struct merge *m, uint64_t id);
/* Has guest CPU cpu a vCPU thread?  If not, gm_no_vcpu says so. */
int gm_has_vcpu(const struct merge *m, uint32_t cpu);
int gm_no_vcpu(struct merge *m, uint64_t offset, uint32_t cpu);
/* Write the merged recording out of place: see vmpt_guest_merge_write.c. */
int gm_write_output(struct merge *m);

#endif
