/* SPDX-License-Identifier: MIT */
#include "vmpt_time.h"

void vmpt_time_init(struct vmpt_time *t, uint32_t ratio_n, uint32_t ratio_d,
		    uint8_t mtc_period, uint32_t max_nonturbo)
{
	*t = (struct vmpt_time){ 0 };
	t->ratio_n = ratio_n;
	t->ratio_d = ratio_d;
	t->mtc_shift = mtc_period;
	t->max_nonturbo = max_nonturbo;
}

static void advance(struct vmpt_time *t, uint64_t tsc)
{
	/* Time never runs backwards, whatever estimate came before. */
	if (tsc > t->tsc)
		t->tsc = tsc;
}

/* t * n / d without overflowing for large t. */
static uint64_t ctc_to_tsc(const struct vmpt_time *t, uint64_t ctc)
{
	return ctc / t->ratio_d * t->ratio_n + ctc % t->ratio_d * t->ratio_n / t->ratio_d;
}

/* A TSC or MTC right after a CYC: the count restarts at its time. */
static void restart_cyc(struct vmpt_time *t)
{
	if (t->prev_type != VMPT_PKT_CYC)
		return;
	t->base = t->tsc;
	t->cyc = 0;
	t->have_base = 1;
}

/* A TSC packet a little behind the estimate is not time running
 * backwards: TSC can slip past MTCs (perf allows 0x10000 ticks).
 */
#define TSC_SLIP 0x10000

void vmpt_time_update(struct vmpt_time *t, const struct vmpt_packet *pkt)
{
	switch (pkt->type) {
	case VMPT_PKT_TSC: {
		/* 56 bits; keep the high byte of what we had. */
		uint64_t tsc = (t->tsc & ~0xffffffffffffffull) | pkt->tsc;

		if (t->have_tsc && tsc < t->tsc && t->tsc - tsc < TSC_SLIP)
			tsc = t->tsc;
		/* Wrapped when it went back by more than half the 56-bit
		 * range; less is an estimate (CYC) that ran past it: keep
		 * that, as perf does ("Suppressing bad timestamp").
		 */
		if (t->have_tsc && tsc < t->tsc)
			tsc = t->tsc - tsc > 1ull << 55 ? tsc + (1ull << 56) : t->tsc;
		t->have_tsc = 1;
		t->have_tma = 0;
		t->tsc_pkt = t->tsc = tsc;
		restart_cyc(t);
		break;
	}
	case VMPT_PKT_TMA: {
		uint32_t rem = pkt->tma.ctc & ((1u << t->mtc_shift) - 1);

		if (!t->ratio_d)
			break;
		t->last_mtc = (uint8_t)(pkt->tma.ctc >> t->mtc_shift);
		t->ctc_tsc = t->tsc_pkt - pkt->tma.fc - ctc_to_tsc(t, rem);
		t->ctc_delta = 0;
		t->have_tma = 1;
		break;
	}
	case VMPT_PKT_MTC:
		if (t->have_tma) {
			/* An MTC equal to the last is a whole wrap later. */
			uint64_t n = pkt->mtc > t->last_mtc ?
				     (uint64_t)(pkt->mtc - t->last_mtc) :
				     (uint64_t)pkt->mtc + 256 - t->last_mtc;

			t->ctc_delta += n << t->mtc_shift;
			advance(t, t->ctc_tsc + ctc_to_tsc(t, t->ctc_delta));
			t->last_mtc = pkt->mtc;
			restart_cyc(t);
		}
		break;
	case VMPT_PKT_CYC:
		t->cyc += pkt->cyc;
		if (t->have_base && t->cbr && t->max_nonturbo)
			advance(t, t->base + t->cyc * t->max_nonturbo / t->cbr);
		break;
	case VMPT_PKT_CBR:
		t->cbr = pkt->cbr;
		/* perf: the count starts again at a CBR */
		if (t->have_tsc) {
			t->base = t->tsc;
			t->cyc = 0;
			t->have_base = 1;
		}
		break;
	default:
		break;
	}
}
