/* SPDX-License-Identifier: MIT */
/* Trace time from TSC, TMA, MTC and CYC packets (Intel SDM 32.3.7). */
#ifndef VMPT_TIME_H
#define VMPT_TIME_H

#include "vmpt/packet.h"

#include <stdint.h>

struct vmpt_time {
	uint64_t tsc;		/* the current estimate */
	/* CYC counts cycles from base, as perf's cyc_ref_timestamp: set at
	 * a CBR, and at a TSC or MTC right after a CYC (where that CYC's
	 * count is); elsewhere the count goes on across TSC and MTC.
	 */
	uint64_t base;
	uint64_t cyc;		/* cycles since base */
	/* MTC: the TSC at CTC's last MTC boundary before the TMA, and the CTC
	 * ticks counted by MTCs since (SDM 32.3.7.2: TSC - FastCounter -
	 * CTC's bits below the MTC period, then CTC ticks times TSC:CTC).
	 */
	uint64_t ctc_tsc, ctc_delta;
	uint64_t tsc_pkt;	/* the last TSC packet's time */
	uint32_t ratio_n, ratio_d;	/* TSC:CTC */
	uint32_t max_nonturbo;	/* for CYC: TSC ticks per cycle = max / cbr */
	uint8_t mtc_shift;
	uint8_t cbr;
	uint8_t have_tsc, have_tma, have_base;
	/* perf's calc_cyc_to_tsc: TSC ticks per cycle measured between an MTC
	 * right after a CYC and the next such MTC (vmpt_time_calibrate),
	 * else the CBR's.
	 */
	uint8_t have_calc, calib_pending;
	double calc_ratio;
	uint8_t last_mtc;
	uint8_t prev_type, cur_type;	/* the packets read last (PAD aside) */
	/* CYC packets read, and times base was set: a piece decoded apart
	 * that reads no CYC prints the same times whatever base it had
	 * (vmpt_flow_carry_settle).
	 */
	uint32_t n_cyc, n_base;
};

void vmpt_time_init(struct vmpt_time *t, uint32_t ratio_n, uint32_t ratio_d,
		    uint8_t mtc_period, uint32_t max_nonturbo);

/* Feed a timing packet (TSC, TMA, MTC, CYC, CBR); others are ignored. */
void vmpt_time_update(struct vmpt_time *t, const struct vmpt_packet *pkt);

/* After feeding an MTC that left calib_pending set: look ahead from
 * pd's position (after that MTC) for the cycles to the next MTC that
 * follows a CYC, as perf's intel_pt_calc_cyc_to_tsc does.
 */
void vmpt_time_calibrate(struct vmpt_time *t, const struct vmpt_pkt_decoder *pd);

/* Every packet read (its type), before it is fed: a TSC or MTC right
 * after a CYC restarts the cycle count (perf's last_packet_type).
 */
static inline void vmpt_time_seen(struct vmpt_time *t, unsigned type)
{
	if (type == VMPT_PKT_PAD)
		return;
	t->prev_type = t->cur_type;
	t->cur_type = (uint8_t)type;
}

#endif
