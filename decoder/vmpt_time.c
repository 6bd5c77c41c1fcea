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

void vmpt_time_update(struct vmpt_time *t, const struct vmpt_packet *pkt)
{
	switch (pkt->type) {
	case VMPT_PKT_TSC:
		/* 56 bits; keep the high byte of what we had. */
		t->base = (t->tsc & ~0xffffffffffffffull) | pkt->tsc;
		if (t->have_tsc && t->base + (1ull << 55) < t->tsc)
			t->base += 1ull << 56;	/* wrapped */
		t->have_tsc = 1;
		t->cyc = 0;
		t->tsc = t->base;
		break;
	case VMPT_PKT_TMA:
		t->last_mtc = (uint8_t)(pkt->tma.ctc >> t->mtc_shift);
		t->have_tma = 1;
		break;
	case VMPT_PKT_MTC:
		if (t->have_tsc && t->have_tma && t->ratio_d) {
			uint64_t ctc = (uint8_t)(pkt->mtc - t->last_mtc);

			ctc <<= t->mtc_shift;
			t->base += ctc * t->ratio_n / t->ratio_d;
			t->cyc = 0;
			advance(t, t->base);
		}
		t->last_mtc = pkt->mtc;
		break;
	case VMPT_PKT_CYC:
		t->cyc += pkt->cyc;
		if (t->have_tsc && t->cbr && t->max_nonturbo)
			advance(t, t->base + t->cyc * t->max_nonturbo / t->cbr);
		break;
	case VMPT_PKT_CBR:
		t->cbr = pkt->cbr;
		break;
	default:
		break;
	}
}
