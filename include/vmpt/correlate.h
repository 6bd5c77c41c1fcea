/* SPDX-License-Identifier: MIT */
/* The correlator: guest TSC -> host TSC for the TSC packets a CPU wrote in
 * VMX non-root operation.
 *
 * Inside a guest, TSC packets carry the guest's TSC (the host's, scaled
 * and offset by the VMCS), while MTC/CTC, the crystal clock, are not
 * offset.  One pass over the packets (no code, no instruction walk)
 * relates every TSC packet to the host TSC the CTC says it was written at
 * (the last host TSC + the CTC ticks since, as perf does), learns per
 * VMCS the offset (and a scaling ratio, and where they change), and
 * yields per trace buffer the corrected host TSC of each guest TSC packet
 * (a sorted patch list).  Applying the list in place, into a new
 * perf.data, or on the fly in the flow decoder (vmpt_flow_config's
 * tsc_patches) gives the same times by construction.
 *
 * struct vmpt_corr is opaque; the config, buffers, segments and patches
 * are plain data the caller fills or reads.  docs/correlate.md explains
 * the arithmetic and the report.
 */
#ifndef VMPT_CORRELATE_H
#define VMPT_CORRELATE_H

#include "vmpt/guest_time.h"
#include "vmpt/tsc_patch.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* perf's key of a VMCS is the 40-bit VMCS packet payload (the base
 * address >> 12); all ones is "no VMCS".
 */
#define VMPT_NO_VMCS 0xffffffffffull

/* One AUXTRACE buffer, in file order. */
struct vmpt_corr_buffer {
	const uint8_t *data;
	uint64_t size;
	uint64_t reference;	/* the AUXTRACE record's (the TSC when read) */
	uint32_t idx;		/* perf's mmap index: the buffers of one queue */
	int cpu, tid;		/* -1 when per-thread / per-cpu */
	/* Where the data is in the recording: its file (0 the perf.data,
	 * N its data.(N-1)) and offset there, for errors and rewriting.
	 */
	unsigned file;
	uint64_t file_offset;
};

struct vmpt_corr_config {
	/* From AUXTRACE_INFO and the intel_pt event's config. */
	uint32_t tsc_ctc_ratio_n, tsc_ctc_ratio_d;
	uint8_t mtc_period;	/* MTCFreq, 0..15 (more is taken as 15) */
	uint8_t have_tsc, have_mtc;
	/* Snapshot or sampling mode: a queue's buffers do not continue
	 * one another.
	 */
	uint8_t not_consecutive;
	/* perf's --vm-time-correlation: compute the patches as perf's
	 * decoder does (with the offsets given by vmpt_corr_set_offset),
	 * which is what perf inject writes.  0: vmpt's own (segments,
	 * scaling, KVM's values).
	 */
	uint8_t perf_patches;
	/* perf's dry-run messages ("VMCS: 0x1c0  TSC Offset 0x...",
	 * "ERROR: ..."), in perf's order; NULL: none.
	 */
	FILE *perf_log;
	/* Learn from the PSB+s only (no patches but those of PSB+ TSCs:
	 * for a report, not a rewrite); a queue where that cannot give the
	 * walk's answer is walked.  Ignored with perf_log or perf_patches.
	 */
	uint8_t psb_only;
	/* The host thread (returned) and its process (*pid) running buffer
	 * buf at host TSC tsc (per-cpu buffers: from the context switches);
	 * NULL or -1: the buffer's tid, pid unknown.
	 */
	int (*thread_at)(void *ctx, size_t buf, uint64_t tsc, int *pid);
	void *ctx;
};

enum vmpt_tsc_source {
	VMPT_TSC_FROM_TRACE,	/* learned from the packets */
	VMPT_TSC_FROM_KVM,	/* KVM's values, saved by vmpt record */
	VMPT_TSC_FROM_USER,	/* given (perf's OFFSET:VMCS) */
	VMPT_TSC_UNKNOWN,	/* no sample: TSCs get the CTC's estimate */
};

#define VMPT_CORR_MAX_TIDS 4

/* What holds for one VMCS over a stretch of host time. */
struct vmpt_tsc_segment {
	uint64_t vmcs;			/* the VMCS packet payload */
	struct vmpt_tsc_scale scale;	/* guest = ((host * mult) >> frac) + offset */
	int scaled;			/* mult learned (or given) != 1.0 */
	/* The feasible multipliers, when learned: [mult_lo, mult_hi]. */
	uint64_t mult_lo, mult_hi;
	enum vmpt_tsc_source source;
	uint64_t first, last;		/* host TSC of the first and last sample */
	uint64_t tsc_packets;		/* guest TSC packets converted with it */
	uint64_t samples;		/* TSC packets in a PSB+ with PIP.NR=1 */
	uint64_t agree;			/* samples the scale fits exactly */
	uint64_t max_residual;		/* largest |guest - fit|, ticks */
	int tids[VMPT_CORR_MAX_TIDS];	/* host threads it ran on */
	int n_tids;
	int vcpu, pid;			/* from the vCPU map; -1 unknown */
	/* KVM's value for this vCPU when it disagrees with the trace's. */
	int kvm_disagrees;
	struct vmpt_tsc_scale trace_scale;
};

/* KVM's TSC values of one vCPU, saved by vmpt record (docs/correlate.md,
 * "KVM's values").  from: host perf time (ns) from which they hold,
 * 0: the whole recording.
 */
struct vmpt_kvm_value {
	int pid, vcpu;
	int64_t offset;
	uint64_t ratio;		/* 0: no scaling known */
	unsigned frac_bits;
	uint64_t from;
};

/* A vCPU's host thread (the vcpus file, or a "CPU n/KVM" COMM). */
struct vmpt_vcpu_thread {
	int pid, tid, vcpu;
};

struct vmpt_corr;

/* NULL: no memory. */
struct vmpt_corr *vmpt_corr_new(const struct vmpt_corr_config *cfg);
void vmpt_corr_free(struct vmpt_corr *c);

/* The buffers, in file order; they must stay mapped while c lives. */
int vmpt_corr_add_buffer(struct vmpt_corr *c, const struct vmpt_corr_buffer *b);

/* perf's OFFSET:VMCS (vmcs VMPT_NO_VMCS: the default for every VMCS). */
int vmpt_corr_set_offset(struct vmpt_corr *c, uint64_t vmcs, uint64_t offset);

/* Parse perf's --vm-time-correlation argument ("[dry-run] [OFFSET[:VMCS
 * [,VMCS]...]]..."), setting the offsets; *dry_run tells whether it asked
 * for one.  -VMPT_ERR_INVAL: "Failed to parse VM Time Correlation options".
 */
int vmpt_corr_parse_perf_args(struct vmpt_corr *c, const char *arg, int *dry_run);

/* With psb_only: 1 when the PSB+s were read (*psbs of them) and the
 * packets walked only around *ambiguous PSB+s that no two host PSB+s
 * less than a CTC wrap apart bracket (*walked bytes); 0 when every packet
 * was walked.
 */
int vmpt_corr_psb_only(const struct vmpt_corr *c, uint64_t *psbs, uint64_t *ambiguous,
		       uint64_t *walked);

int vmpt_corr_add_vcpu(struct vmpt_corr *c, const struct vmpt_vcpu_thread *v);
int vmpt_corr_add_kvm(struct vmpt_corr *c, const struct vmpt_kvm_value *v);

/* TSC -> perf time, for KVM values given in perf time (NULL: none). */
void vmpt_corr_set_time(struct vmpt_corr *c, uint64_t (*to_time)(void *ctx, uint64_t tsc),
			void *ctx);

/* Read what vmpt record saved next to a recording (REC.kvm-tsc and
 * REC.vcpus, or REC/kvm-tsc and REC/vcpus): KVM's values and the vCPU
 * threads (of process pid, -1 unknown).  Missing files are no error; a
 * bad line is (-VMPT_ERR_FORMAT, errmsg naming file and line).
 */
int vmpt_corr_read_vcpu_files(struct vmpt_corr *c, const char *recording, int pid);

/* A correlator for a recording (perf.data, file or directory form): its
 * buffers and settings, who ran on each CPU, the vCPU threads ("CPU n/KVM"
 * COMMs, the vcpus file) and KVM's values.  opts gives perf_patches and
 * perf_log; the rest comes from the recording.  0 or a negative vmpt_err
 * with errmsg set; free *c in both cases (NULL: no memory).
 */
int vmpt_corr_open(struct vmpt_corr **c, const char *path,
		   const struct vmpt_corr_config *opts);

/* The recording's path as given, and the file of buffer file number n. */
const char *vmpt_corr_path(const struct vmpt_corr *c);
const char *vmpt_corr_file(const struct vmpt_corr *c, unsigned n);

/* The recording's perf time (ns) of a host TSC; 0 when unknown. */
uint64_t vmpt_corr_tsc_to_time(const struct vmpt_corr *c, uint64_t tsc);

/* Rewrite the TSC packets of an opened recording after vmpt_corr_run:
 * in place (out NULL), as perf inject does, or into a new recording at
 * out (written under a temporary name and renamed, so an interrupted run
 * leaves no half-written file).  On failure the input is untouched and
 * errmsg says why.  0 or a negative vmpt_err.
 */
int vmpt_corr_write(struct vmpt_corr *c, const char *out);

/* The packet pass over every buffer and the learning.  Problems in the
 * trace are no error here: they are messages (vmpt_corr_messages).  0 or
 * a negative vmpt_err (vmpt_corr_errmsg says what).
 */
int vmpt_corr_run(struct vmpt_corr *c);

const struct vmpt_tsc_segment *vmpt_corr_segments(const struct vmpt_corr *c, size_t *n);
struct vmpt_tsc_patches vmpt_corr_patches(const struct vmpt_corr *c, size_t buf);

/* Guest TSC packets seen, and how many were rewritten. */
void vmpt_corr_counts(const struct vmpt_corr *c, uint64_t *guest_tscs,
		      uint64_t *patched);

/* What the pass had to say (one line each: what, where), in order. */
const char *const *vmpt_corr_messages(const struct vmpt_corr *c, size_t *n);

/* Which offsets were used and where they came from, one line per segment
 * ("WHO: VMCS 0x1c0 TSC offset 0x... (from the trace, 5 samples agree)"),
 * then the messages, each line starting with who.
 */
void vmpt_corr_summary(const struct vmpt_corr *c, FILE *f, const char *who);
const char *vmpt_corr_errmsg(const struct vmpt_corr *c);

#ifdef __cplusplus
}
#endif

#endif
