/* SPDX-License-Identifier: MIT */
#include "vmpt_time.h"

void vmpt_time_init(struct vmpt_time *t, uint32_t ratio_n, uint32_t ratio_d,
		    uint8_t mtc_period, uint32_t max_nonturbo)
{
	*t = (struct vmpt_time){ 0 };
	t->ratio_n = ratio_n;
	t->ratio_d = ratio_d;
	/* MTCFreq is 4 bits: more would shift past the CTC's width. */
	t->mtc_shift = mtc_period > 15 ? 15 : mtc_period;
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

/* A TSC or MTC right after a CYC: the count restarts at its time, and
 * the ratio of cycles to ticks is measured anew (from an MTC only).
 */
static void restart_cyc(struct vmpt_time *t, int from_mtc)
{
	if (t->prev_type != VMPT_PKT_CYC)
		return;
	t->base = t->tsc;
	t->cyc = 0;
	t->have_base = t->tsc != 0;
	t->n_base++;
	t->have_calc = 0;
	t->calib_pending = (uint8_t)from_mtc;
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
		restart_cyc(t, 0);
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
			restart_cyc(t, 1);
		}
		break;
	case VMPT_PKT_CYC: {
		double ratio, ticks;

		t->cyc += pkt->cyc;
		t->n_cyc++;
		if (!t->have_base)
			break;
		if (t->have_calc)
			ratio = t->calc_ratio;
		else if (t->cbr && t->max_nonturbo)
			ratio = (double)t->max_nonturbo / t->cbr;
		else
			break;
		/* A count no 64-bit TSC can hold says nothing (and would not
		 * convert): the time stays.
		 */
		ticks = (double)t->cyc * ratio;
		if (!(ticks >= 0 && ticks < 0x1p64))
			break;
		advance(t, t->base + (uint64_t)ticks);
		break;
	}
	case VMPT_PKT_CBR:
		/* perf: the count starts again at a new ratio */
		if (pkt->cbr == t->cbr)
			break;
		t->cbr = pkt->cbr;
		t->base = t->tsc;
		t->cyc = 0;
		t->have_base = t->tsc != 0;
		t->n_base++;
		break;
	default:
		break;
	}
}

/* perf's intel_pt_calc_cyc_cb over the packets after the MTC: cycles
 * counted up to the next MTC right after a CYC give the ratio, unless a
 * packet that stops or changes the clock comes first.
 */
void vmpt_time_calibrate(struct vmpt_time *t, const struct vmpt_pkt_decoder *pd)
{
	struct vmpt_pkt_decoder la = *pd;
	struct vmpt_packet pkt;
	uint64_t cycles = 0, ctc_delta = t->ctc_delta, ts = t->tsc, mts = 0;
	unsigned last = t->prev_type, cbr = 0, mtc_last = t->last_mtc;
	double cbr_ratio = 0, ratio;

	t->calib_pending = 0;
	for (;;) {
		if (vmpt_pkt_next(&la, &pkt) < 0)
			return;
		if (pkt.type == VMPT_PKT_PAD)
			continue;
		switch (pkt.type) {
		case VMPT_PKT_TNT8: case VMPT_PKT_TNT64: case VMPT_PKT_TIP_PGE:
		case VMPT_PKT_TIP: case VMPT_PKT_FUP: case VMPT_PKT_PSB:
		case VMPT_PKT_PIP: case VMPT_PKT_MODE_EXEC: case VMPT_PKT_MODE_TSX:
		case VMPT_PKT_PSBEND: case VMPT_PKT_VMCS: case VMPT_PKT_MNT:
		case VMPT_PKT_PTW: case VMPT_PKT_BBP: case VMPT_PKT_BIP: case VMPT_PKT_BEP:
		case VMPT_PKT_CFE: case VMPT_PKT_EVD:
			break;
		case VMPT_PKT_MTC: {
			unsigned n;

			if (!t->have_tma)
				break;
			n = pkt.mtc > mtc_last ? pkt.mtc - mtc_last : pkt.mtc + 256u - mtc_last;
			ctc_delta += (uint64_t)n << t->mtc_shift;
			mtc_last = pkt.mtc;
			mts = t->ctc_tsc + ctc_to_tsc(t, ctc_delta);
			if (mts < ts)
				return;
			if (last != VMPT_PKT_CYC) {
				ts = mts;
				break;
			}
			if (!cbr && t->cbr && t->max_nonturbo) {
				cbr = t->cbr;
				cbr_ratio = (double)t->max_nonturbo / cbr;
			}
			if (!cycles)
				return;
			ratio = (double)(mts - t->tsc) / (double)cycles;
			if (cbr && ratio > cbr_ratio && ratio / cbr_ratio > 1.25)
				return;
			t->calc_ratio = ratio;
			t->have_calc = 1;
			return;
		}
		case VMPT_PKT_CYC:
			cycles += pkt.cyc;
			break;
		case VMPT_PKT_CBR:
			if (cbr && cbr != pkt.cbr)
				return;
			cbr = pkt.cbr;
			cbr_ratio = t->max_nonturbo && cbr ? (double)t->max_nonturbo / cbr : 0;
			break;
		default:	/* TSC, TMA (from an MTC), PGD, power, OVF, STOP */
			return;
		}
		last = pkt.type;
	}
}
