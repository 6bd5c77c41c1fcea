/* SPDX-License-Identifier: MIT */
/* perf's VM time correlation replayed from the packet pass's records
 * (internal to correlate/): the offsets perf finds, the lines perf inject
 * --vm-time-correlation prints, and the TSC payloads it rewrites.
 */
#ifndef VMPT_TSC_PERF_H
#define VMPT_TSC_PERF_H

#include "vmpt_tsc_scan.h"

#include <stdio.h>

/* perf's intel_pt_vmcs_info, found or made by VMCS. */
struct vmpt_perf_vmcs {
	uint64_t vmcs, offset;
	uint8_t reliable, error_printed;
};

struct vmpt_tsc_perf {
	struct vmpt_perf_vmcs *v;
	size_t n, cap;
	uint64_t dflt_offset;	/* perf's dflt_tsc_offset (0: none) */
	uint32_t ratio_n, ratio_d;
	uint8_t mtc_period;
	FILE *log;		/* perf's messages; NULL: none */
};

/* perf's OFFSET:VMCS (a VMCS of 0 is refused, as perf does). */
int vmpt_tsc_perf_set(struct vmpt_tsc_perf *p, uint64_t vmcs, uint64_t offset);

/* One queue's records recs[0..n-1], its buffers bufs[idx[0..nb-1]] and
 * the position in idx where its first PSB was.  For every TSC packet perf
 * rewrites, patch(ctx, rec, new payload) is called.  0 or a negative
 * vmpt_err from patch.
 */
int vmpt_tsc_perf_queue(struct vmpt_tsc_perf *p, const struct vmpt_tsc_rec *recs, size_t n,
			const struct vmpt_corr_buffer *bufs, const size_t *idx, size_t nb,
			size_t sync, int consecutive,
			int (*patch)(void *ctx, const struct vmpt_tsc_rec *r, uint64_t tsc),
			void *ctx);

/* perf's queue order: it takes them from a heap of equal timestamps. */
void vmpt_tsc_perf_order(size_t n, size_t *order);

void vmpt_tsc_perf_free(struct vmpt_tsc_perf *p);

#endif
