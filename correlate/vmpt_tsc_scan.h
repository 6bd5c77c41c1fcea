/* SPDX-License-Identifier: MIT */
/* The correlator's packet pass (internal to correlate/): one walk over a
 * queue's buffers that keeps, for every TSC packet, what perf's VM time
 * correlation and vmpt's learning need to know about it, and nothing
 * else.  It walks packets the way perf's decoder does in its VM time
 * correlation state (intel_pt_vm_time_correlation: the first PSB, then
 * every packet; a bad byte is stepped over), so that perf's decisions can
 * be replayed exactly from the records.
 */
#ifndef VMPT_TSC_SCAN_H
#define VMPT_TSC_SCAN_H

#include "vmpt/correlate.h"

#include <stddef.h>
#include <stdint.h>

enum {
	/* The record is a TMA that came without a TSC before it (none since
	 * the last TMA): only its TMA fields count.
	 */
	VMPT_REC_TMA_ONLY = 1 << 0,
	VMPT_REC_IN_PSB = 1 << 1,	/* between PSB and PSBEND */
	VMPT_REC_PIP = 1 << 2,		/* perf knows PIP: nr is valid */
	VMPT_REC_NR = 1 << 3,		/* PIP.NR=1: in a guest */
	VMPT_REC_TMA = 1 << 4,		/* perf's lookahead found its TMA */
	VMPT_REC_OWN_TMA = 1 << 5,	/* a TMA came after it: tma_* valid */
	VMPT_REC_PGE = 1 << 6,		/* packet generation on (perf's pge) */
	VMPT_REC_CONT = 1 << 7,		/* perf's vm_tm_corr_continuous */
	VMPT_REC_SAME_BUF = 1 << 8,	/* perf's vm_tm_corr_same_buf */
	VMPT_REC_MTC = 1 << 9,		/* perf counted an MTC since its last TMA */
	VMPT_REC_NO_PSBEND = 1 << 10,	/* perf's "PSB without PSBEND" */
	VMPT_REC_BASE = 1 << 11,	/* ctc_pos is related to the stretch's */
	VMPT_REC_NEW_BUF = 1 << 12,	/* first record of a buffer perf repositions at */
	VMPT_REC_PSB_PIP = 1 << 13,	/* the PIP came from the PSB+ (not pge) */
	/* Before the first PSB of a buffer that does not continue the one
	 * before: perf reads it (from the buffer's first byte), it may be no
	 * packet at all; vmpt's learning leaves it.
	 */
	VMPT_REC_UNSYNCED = 1 << 14,
};

/* One TSC packet (or a lone TMA). */
struct vmpt_tsc_rec {
	uint64_t off;		/* of the TSC (TMA) packet in its buffer */
	uint64_t tsc;		/* the 7-byte payload */
	uint64_t vmcs;		/* the PSB+'s VMCS packet, else the last (payload) */
	/* vmpt: the CTC position of its TMA in the stretch, an absolute
	 * count of CTC ticks from the stretch's first TMA.
	 */
	int64_t ctc_pos;
	/* perf: the CTC ticks from its last TMA's MTC boundary to this TMA
	 * (intel_pt_calc_expected_tsc), and those its MTCs counted before
	 * the TSC (the timestamp the decoder had).
	 */
	uint64_t perf_ticks;
	uint64_t perf_mtc_ticks;
	uint32_t buf;		/* index of the buffer */
	uint32_t stretch;	/* CTC positions relate within one stretch */
	uint16_t tma_ctc, tma_fc;
	uint16_t flags;
};

struct vmpt_tsc_recs {
	struct vmpt_tsc_rec *r;
	size_t n, cap;
	uint32_t stretches;	/* stretch ids handed out */
	uint64_t bad_packets;	/* bytes perf steps over */
	uint32_t bad_buf;	/* where the first one was */
	uint64_t bad_off;
	uint64_t ovf;		/* OVF packets */
};

struct vmpt_tsc_scan_cfg {
	uint8_t mtc_period;
	uint8_t have_ratio;	/* TSC:CTC known (perf needs it for TMA) */
	/* vmpt's view: consecutive buffers are one stream, a packet cut at a
	 * buffer's end goes on in the next (its record in the buffer it
	 * starts in).  0: perf's (on 64-bit hosts perf reads a cut packet
	 * as a bad one, byte by byte, and goes on at the next buffer's
	 * first byte; its lookaheads stop at a buffer's end).
	 */
	uint8_t join;
};

/* Walk the buffers bufs[idx[0..n-1]] of one queue, in order, appending
 * their records; *sync: the position in idx of the buffer with the
 * queue's first PSB (n: none).  0 or -VMPT_ERR_NOMEM.
 */
int vmpt_tsc_scan_queue(struct vmpt_tsc_recs *out, const struct vmpt_tsc_scan_cfg *cfg,
			const struct vmpt_corr_buffer *bufs, const size_t *idx, size_t n,
			int consecutive, size_t *sync);

/* Append r: 0 or -VMPT_ERR_NOMEM. */
int vmpt_tsc_recs_push(struct vmpt_tsc_recs *o, const struct vmpt_tsc_rec *r);
void vmpt_tsc_recs_free(struct vmpt_tsc_recs *r);

#endif
