/* SPDX-License-Identifier: MIT */
/* Cycle counts for IPC, kept as perf's Intel PT decoder keeps them.
 *
 * Cycles are the CYC packets read while tracing is on.  Until the first
 * CYC they are estimated from the time (MTC, TMA) at CBR / max non-turbo
 * cycles per TSC tick.  perf samples IPC at an IPC point (a branch
 * decided by the trace, tracing starting or stopping, a PSB+, a CBR
 * change...) when a CYC came since the point before, with a CYC threshold
 * only if it came right before the packet read there; while estimating,
 * at every sample, with the count as of the last point (an MTC or TMA
 * since the point before updates it there; vmpt_flow_item.cyc_est).
 */
#ifndef VMPT_CYCLES_H
#define VMPT_CYCLES_H

#include "vmpt/packet.h"
#include "vmpt_time.h"

#include <stdint.h>

struct vmpt_cycles {
	uint64_t tot;		/* cycles so far */
	/* Estimating: cycles at base_tsc, and cycles per TSC tick. */
	uint64_t base, base_tsc;
	double tsc_to_cyc;
	uint32_t max_nonturbo;
	uint8_t cbr;
	uint8_t est;		/* no CYC seen yet */
	uint8_t fresh;		/* a CYC (estimating: MTC, TMA) since the last point */
	uint8_t pge;		/* tracing on, as perf's decoder counts it */
	uint8_t thresh;		/* the trace has a CYC threshold */
	uint8_t after_cyc;	/* the packet read before was a CYC */
};

void vmpt_cycles_init(struct vmpt_cycles *c, uint32_t max_nonturbo, int cyc_thresh);

/* A timing packet (CYC, MTC, TMA, CBR; t already updated by it); in_psb:
 * read in a PSB+.  Returns 1 when the CBR changed: an IPC point where the
 * flow reads it.
 */
int vmpt_cycles_update(struct vmpt_cycles *c, const struct vmpt_time *t,
		       const struct vmpt_packet *pkt, int in_psb);

/* Any packet the flow reads on its way to the next branch: with a CYC
 * threshold, a CYC counts only for the packet right after it.
 */
static inline void vmpt_cycles_seen(struct vmpt_cycles *c, unsigned type)
{
	if (type == VMPT_PKT_PAD)
		return;
	if (c->thresh && !c->after_cyc)
		c->fresh = 0;
	c->after_cyc = type == VMPT_PKT_CYC;
}

/* TIP.PGE: tracing starts, and the estimate from here.  (A PSB+'s FUP
 * sets pge, TIP.PGD clears it; an overflow leaves it.)
 */
void vmpt_cycles_pge(struct vmpt_cycles *c, const struct vmpt_time *t);

/* At an IPC point: the count if fresh, else 0 (perf shows no IPC where
 * the count is not new, and where it is 0 it is unchanged: 0 loses
 * nothing).
 */
static inline uint64_t vmpt_cycles_point(struct vmpt_cycles *c)
{
	if (!c->fresh)
		return 0;
	c->fresh = 0;
	return c->tot;
}

#endif
