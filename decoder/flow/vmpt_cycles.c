/* SPDX-License-Identifier: MIT */
#include "vmpt_cycles.h"

void vmpt_cycles_init(struct vmpt_cycles *c, uint32_t max_nonturbo, int cyc_thresh)
{
	*c = (struct vmpt_cycles){ 0 };
	c->max_nonturbo = max_nonturbo;
	c->est = 1;
	c->thresh = cyc_thresh != 0;
}

/* Estimating: the estimate goes on from here. */
static void restart(struct vmpt_cycles *c, const struct vmpt_time *t)
{
	if (!c->est)
		return;
	c->base_tsc = t->tsc;
	c->base = c->tot;
}

/* Estimating: the cycles up to the time now.  perf computes in double. */
static void estimate(struct vmpt_cycles *c, const struct vmpt_time *t)
{
	double est;
	uint64_t tot;

	if (!c->est)
		return;
	c->fresh = 1;
	if (!c->pge || t->tsc <= c->base_tsc)
		return;
	est = (double)(t->tsc - c->base_tsc) * c->tsc_to_cyc + (double)c->base;
	/* Past 2^64 cycles (a wild TSC): no count, not undefined behaviour. */
	if (!(est < 18446744073709551616.0))
		return;
	tot = (uint64_t)est;
	if (tot > c->tot)
		c->tot = tot;
}

int vmpt_cycles_update(struct vmpt_cycles *c, const struct vmpt_time *t,
		       const struct vmpt_packet *pkt, int in_psb)
{
	switch (pkt->type) {
	case VMPT_PKT_CYC:
		c->est = 0;
		if (c->pge)
			c->tot += pkt->cyc;
		c->fresh = 1;
		break;
	case VMPT_PKT_MTC:
		if (t->have_tma)
			estimate(c, t);
		break;
	case VMPT_PKT_TMA:
		if (!t->ratio_d)
			break;
		if (c->pge && !in_psb)
			restart(c, t);
		else
			estimate(c, t);
		break;
	case VMPT_PKT_CBR:
		if (pkt->cbr == c->cbr)
			break;
		c->cbr = pkt->cbr;
		c->tsc_to_cyc = c->max_nonturbo ? (double)pkt->cbr / c->max_nonturbo : 0;
		if (c->pge)
			restart(c, t);
		return 1;
	default:
		break;
	}
	return 0;
}

void vmpt_cycles_pge(struct vmpt_cycles *c, const struct vmpt_time *t)
{
	c->pge = 1;
	restart(c, t);
}
