/* SPDX-License-Identifier: MIT */
/* TNT runs and chains played back (docs/decoding.md, "TNT runs"): a run
 * recorded from the walk (vmpt_tnt_memo.h) gives the same items as
 * walking it; runs played back to back over TNT-8 packets become chains.
 */
#include "vmpt_flow_int.h"
#include "../packet/vmpt_packet_fast.h"

/* Chains are not made for CHAIN_REST plays after a window of CHAIN_WINDOW
 * plays with fewer than an eighth of chains played back.
 */
#define CHAIN_WINDOW 4096
#define CHAIN_REST (8 * CHAIN_WINDOW)

/* A run about to play back, after those played back to back before it:
 * the chain grows, and is kept when it has all its packets.  Back to back:
 * the run takes all the bits of a TNT-8 packet read just after the last
 * one's (PADs between), from its first, in the same section.
 */
static void chain_grow(struct vmpt_flow *dec, struct vmpt_run *r)
{
	const uint8_t *tnt = dec->pd.pos - 1, *p = dec->chain_end;
	unsigned n = dec->tnt_n;

	if (r->nbits != n || n > 6) {
		dec->chain_n = 0;
		return;
	}
	/* In the same bytes, a few PADs at most after the last one's end
	 * (tnt - p wraps when before it).
	 */
	if (dec->chain_n && (dec->chain_begin != dec->pd.begin ||
			     dec->chain_base != dec->pd.base || (size_t)(tnt - p) > 16))
		dec->chain_n = 0;
	if (dec->chain_n) {
		uint32_t e = vmpt_pkt_fast_table[*tnt];

		if ((uint16_t)e != VMPT_PKT_FAST(VMPT_PKT_TNT8, 1, 0, 0) ||
		    ((e >> 16) & 0xff) != n || r->first->sec != dec->chain_sec)
			dec->chain_n = 0;
		while (dec->chain_n && p < tnt)
			if (*p++ != 0)
				dec->chain_n = 0;
	}
	if (!dec->chain_n) {
		dec->chain_key = 0;
		dec->chain_sec = r->first->sec;
	}
	dec->chain_key = vmpt_chain_key_add(dec->chain_key, dec->chain_n, dec->tnt_bits, n);
	dec->chain_run[dec->chain_n++] = r;
	dec->chain_begin = dec->pd.begin;
	dec->chain_base = dec->pd.base;
	dec->chain_end = dec->pd.pos;
	if (dec->chain_n == VMPT_CHAIN_PKTS) {
		vmpt_tnt_memo_chain(dec->memo, dec->chain_run, dec->chain_n, dec->chain_key);
		dec->chain_n = 0;
	}
}

/* Only while the time is that of the last item handed out: the caller
 * sets the address space by the time between calls (see
 * vmpt_flow_next_items), and a chain takes what would be several calls.
 */
struct vmpt_run *vmpt_flow_find_chain(struct vmpt_flow *dec, const struct vmpt_block *b)
{
	const uint8_t *p = dec->pd.pos, *end = dec->pd.limit;
	uint64_t key;
	uint32_t e = 0;

	if (dec->tnt_n > 6 || dec->have_pkt || dec->pd.ctx != VMPT_CTX_NONE ||
	    dec->want_fup || !dec->have_last || dec->last_time != dec->time.tsc ||
	    dec->block_time != dec->time.tsc)
		return NULL;
	key = vmpt_chain_key_add(0, 0, dec->tnt_bits, dec->tnt_n);
	for (unsigned k = 1; k < VMPT_CHAIN_PKTS; k++) {
		while (p < end && (e = vmpt_pkt_fast_table[*p]) ==
				  VMPT_PKT_FAST(VMPT_PKT_PAD, 1, 0, 0))
			p++;
		if (p >= end || (uint16_t)e != VMPT_PKT_FAST(VMPT_PKT_TNT8, 1, 0, 0))
			return NULL;
		dec->peek_off[k] = dec->pd.base + (uint64_t)(p - dec->pd.begin);
		key = vmpt_chain_key_add(key, k, e >> 24, (e >> 16) & 0xff);
		p++;
	}
	dec->peek_bits = e >> 24;
	dec->peek_end = p;
	return vmpt_tnt_memo_find_chain(dec->memo, b, key);
}

/* The run (or chain) played back: its items, given their time, offset
 * and cycle count in place, and the state the walk would have after the
 * last.  Nothing is read during a run: the offset is that of the packet
 * whose bits a step takes, the time that of the packet (the time of the
 * block before until the first bit), the same for every packet of a
 * chain; only the first bit can take a new cycle count.
 */
const struct vmpt_flow_item *vmpt_flow_play_run(struct vmpt_flow *dec, size_t *n)
{
	struct vmpt_run *r = dec->play;
	struct vmpt_flow_item *it = r->item, *p = it, *end;
	uint32_t last = r->nsteps - 1, first_bit = r->first_bit;
	uint64_t before = dec->block_time, tsc = dec->time.tsc;
	uint8_t est = dec->cyc.est;

	if (!dec->chain_rest && ++dec->chain_plays == CHAIN_WINDOW) {
		if (dec->chain_hits < CHAIN_WINDOW / 8) {
			dec->chain_rest = CHAIN_REST;
			dec->chain_n = 0;
		}
		dec->chain_plays = dec->chain_hits = 0;
	}
	if (r->npkts == 1) {
		uint64_t off = dec->pkt_off;

		if (!dec->chain_rest)
			chain_grow(dec, r);
		else
			dec->chain_rest--;
		for (end = it + last + 1; p != end; p++) {
			p->time = tsc;
			p->offset = off;
			p->cyc_est = est;
		}
	} else {
		dec->chain_hits++;
		dec->chain_n = 0;
		dec->peek_off[0] = dec->pkt_off;
		for (uint32_t k = 0; k < r->npkts; k++) {
			uint64_t off = dec->peek_off[k];

			end = it + (k + 1 < r->npkts ? r->seg[k + 1] : last + 1);
			for (; p != end; p++) {
				p->time = tsc;
				p->offset = off;
				p->cyc_est = est;
			}
		}
	}
	for (uint32_t i = 0; i < first_bit; i++)
		it[i].time = before;
	it[first_bit].cyc = vmpt_cycles_point(&dec->cyc);
	if (r->pushes)
		for (uint32_t i = 0; i <= last; i++)
			if (r->step[i].push)
				push_ret(dec, r->step[i].block);
	if (r->npkts == 1) {
		dec->tnt_n -= r->nbits;
	} else {
		/* The packets after the first, read (as fetch_fast would). */
		dec->pd.pos = dec->peek_end;
		dec->pkt_off = dec->peek_off[r->npkts - 1];
		dec->tnt_bits = dec->peek_bits;
		dec->tnt_n = 0;
	}
	dec->block_time = tsc;
	progressed(dec);	/* a run ends with a bit */
	dec->ip = it[last].to;
	dec->prev = r->step[last].block;
	dec->prev_slot = it[last].taken;
	dec->play = NULL;
	dec->memo_try = 1;
	*n = r->nsteps;
	return it;
}

/* Append the block just walked to the run being recorded; keep the run
 * when it took the last bit (or is full), drop it when the walk went
 * somewhere a run cannot follow (a return, another section).
 */
void vmpt_flow_record_step(struct vmpt_flow *dec, struct vmpt_block *b,
			   const struct vmpt_flow_item *it)
{
	struct vmpt_run *r = dec->rec;
	struct vmpt_run_step *s = &r->step[r->nsteps];

	switch (b->iclass) {
	case VMPT_IC_OTHER:
	case VMPT_IC_JCC:
	case VMPT_IC_JMP:
	case VMPT_IC_CALL:
		if (b->sec == r->first->sec)
			break;
		/* fall through */
	default:
		dec->rec = NULL;
		return;
	}
	r->item[r->nsteps] = *it;
	r->item[r->nsteps].cyc = 0;
	s->block = b;
	s->bit = b->iclass == VMPT_IC_JCC;
	s->push = b->iclass == VMPT_IC_CALL && !b->zero_call;
	if (s->bit && !r->nbits++)
		r->first_bit = r->nsteps;
	r->pushes += s->push;
	r->nsteps++;
	r->ninsn += b->ninsn;
	if (s->bit && (!dec->tnt_n || r->nsteps == VMPT_RUN_MAX)) {
		vmpt_tnt_memo_commit(dec->memo);
		dec->rec = NULL;
		dec->memo_try = 1;
	} else if (r->nsteps == VMPT_RUN_MAX) {
		dec->rec = NULL;
	}
}
