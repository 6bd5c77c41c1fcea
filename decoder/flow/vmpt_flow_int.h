/* SPDX-License-Identifier: MIT */
/* The flow decoder's state, shared by its files: vmpt_flow.c (items, the
 * steps and the hot path), vmpt_flow_trace.c (reading the trace up to
 * what steers the flow), vmpt_flow_walk.c (a block walked toward it),
 * vmpt_flow_runs.c (TNT runs and chains played back) and vmpt_flow_carry.c
 * (a piece's state handed on).  Internal to the flow decoder.
 */
#ifndef VMPT_FLOW_INT_H
#define VMPT_FLOW_INT_H

#include "vmpt/error.h"
#include "vmpt/flow.h"
#include "vmpt/packet.h"
#include "../packet/vmpt_packet_fast.h"
#include "vmpt_block_cache.h"
#include "vmpt_cycles.h"
#include "vmpt_evd_store.h"
#include "vmpt_time.h"
#include "vmpt_tnt_memo.h"

#include <stddef.h>
#include <stdint.h>

#define STACK_DEPTH 64		/* the return stack libipt and the CPU keep */
/* Instructions walked without consuming trace: a loop of direct jumps
 * that never ends means the trace and the code disagree.
 */
#define MAX_WALK (1u << 22)
/* perf's intel-pt.max-loops default: direct branches in a row that read
 * no trace before the walk is called a never-ending loop.
 */
#define MAX_LOOPS 100000

/* config.release: trace dropped every RELEASE_STEP bytes read, up to
 * RELEASE_KEEP bytes behind the packet being read.
 */
#define RELEASE_STEP (8u << 20)
#define RELEASE_KEEP (64u << 10)

/* Blocks walked into one vmpt_flow_next_items batch at most. */
#define FLOW_BATCH 64

enum want { W_TNT, W_TIP, W_PGD, W_FUP };
enum { RESYNC_KEEP_IP = 1, RESYNC_NO_IP };

/* Events bound to the IP of the next FUP (perf's set_fup_*): a FUP with
 * any of them is theirs, no TIP follows (but after a TSX abort). */
enum fup_bound {
	FUP_CFE = 1 << 0,	/* a CFE with the IP bit */
	FUP_MWAIT = 1 << 1,	/* MWAIT: the FUP of its EXSTOP */
	FUP_PWRE = 1 << 2,	/* a PWRE after an MWAIT */
	FUP_EXSTOP = 1 << 3,	/* EXSTOP with the IP bit */
	FUP_TSX = 1 << 4,	/* MODE.TSX */
	FUP_PTW = 1 << 5,	/* PTW with the IP bit */
	/* A PSB+ read while tracing is on: perf walks to its FUP first (the
	 * direct branches on the way are samples before the psb's).
	 */
	FUP_PSB = 1 << 6,
};

/* EVD packets before one CFE (perf's INTEL_PT_MAX_EVDS: one per type). */
#define MAX_EVDS 64

/* Where a call returns to, and the call's block: its fall-through link
 * (never taken by the call itself) leads to the block there, so a return
 * rarely needs the cache's hash.
 */
struct ret_site {
	uint64_t ip;
	struct vmpt_block *call;
};

struct vmpt_flow {
	struct vmpt_flow_config cfg;
	struct vmpt_pkt_decoder pd;
	struct vmpt_last_ip lip;
	struct vmpt_bcache *own_cache;	/* when the config gives none */
	struct vmpt_bdisasm *disasm;
	struct vmpt_time time;
	struct vmpt_cycles cyc;	/* cycle counts for IPC */
	const struct vmpt_section *sec;	/* the last section hit */
	/* The block walked last and which of its successors comes next. */
	struct vmpt_block *prev;
	unsigned prev_slot;
	struct vmpt_asid asid;
	uint64_t ip;
	uint64_t tnt_bits;
	unsigned tnt_n;
	/* The flow packet read but not yet used (TIP, TIP.PGE/PGD, FUP, OVF). */
	struct vmpt_packet pkt;
	uint64_t pkt_off, pkt_ip;
	uint8_t have_pkt, pkt_ip_valid;
	uint8_t synced, enabled, mode, after_ovf;
	/* perf_resync after an error: RESYNC_KEEP_IP (perf's ERR_RESYNC)
	 * or RESYNC_NO_IP (perf's NO_IP: the last IP is gone too).
	 */
	uint8_t resync;
	/* At stop_offset: walking to the next segment's first IP. */
	uint8_t stopping;
	/* Bound to the next branch target (MODE.Exec, PIP, VMCS). */
	uint8_t have_pend_mode, pend_mode;
	uint8_t have_pend_pip, pend_nr;
	uint8_t have_pend_vmcs;
	uint64_t pend_cr3, pend_vmcs;
	/* What the trace said so far: nr/cr3/vmcs. */
	uint8_t have_nr, nr, have_vmcs;
	uint64_t cr3, vmcs;
	/* The host process the sideband says runs (vmpt_flow_set_host_space):
	 * host code is looked up under it instead of PIP's CR3; 0: unset.
	 */
	uint64_t host_space;
	/* The same for guest code (vmpt_flow_set_guest_space): the guest
	 * task the guest's sideband says runs; 0: PIP's CR3.
	 */
	uint64_t guest_space;
	/* Events that wait for their FUP (enum fup_bound) and their
	 * payloads; want_fup: the packet right after must be that FUP.
	 */
	uint8_t fup_bound, want_fup;
	uint64_t psb_off;	/* FUP_PSB: the PSB's offset */
	uint64_t psb_time_before;	/* and the time before it */
	uint64_t fup_tsx, fup_ptw, fup_mwait, fup_pwre;
	/* Event Trace: a CFE waiting for the FUP of its event's compound
	 * packet (the IP bit clear, tracing on) or its own (FUP_CFE), with
	 * its EVDs; the EVDs read since the last CFE.
	 */
	uint8_t cfe_wait;
	uint64_t cfe_payload;
	const struct vmpt_evd *cfe_evd;
	unsigned cfe_n_evd, n_evd;
	struct vmpt_evd evd[MAX_EVDS];
	struct vmpt_evd_store *evd_store;
	uint64_t walked;
	/* Direct jumps and calls since trace was last read, and Brent's
	 * cycle finding over their targets (perf's stuck_ip): the target
	 * remembered, the period and what is left of it.
	 */
	struct {
		uint32_t n, period, left;
		uint64_t ip;
		uint32_t insns;	/* of the block closing the loop */
	} loop;
	/* Blocks get perf's sample time: the time as of the flow packet
	 * (TNT, TIP) that decided their branch; direct branches before a
	 * new packet's first bit keep the one before.
	 */
	uint64_t block_time;
	struct ret_site stack[STACK_DEPTH];
	unsigned sp, depth;
	struct vmpt_flow_item *q;
	size_t qh, qn, qcap;
	/* While vmpt_flow_next waits: where the next item goes directly. */
	struct vmpt_flow_item *direct;
	/* TNT runs (vmpt_flow_next_items only): the one found to play back
	 * next, and the one being recorded, which ends as soon as the walk
	 * leaves the hot path.
	 */
	struct vmpt_tnt_memo *memo;
	struct vmpt_run *play;
	struct vmpt_run *rec;
	/* A run may start here: new TNT bits, or the last run ended. */
	uint8_t memo_try;
	/* Runs played back to back so far (a chain in the making): the
	 * chain's key, and where the last one's packet ended (in which
	 * bytes: a part, or the seam at that offset).
	 */
	struct vmpt_run *chain_run[VMPT_CHAIN_PKTS];
	unsigned chain_n;
	const struct vmpt_section *chain_sec;
	/* Chains that are rarely played are not made for a while (as the
	 * memo rests): plays and chain plays in this window, plays to rest.
	 */
	uint32_t chain_plays, chain_hits, chain_rest;
	uint64_t chain_key;
	const uint8_t *chain_begin, *chain_end;
	uint64_t chain_base;
	/* The chain found to play: the offsets of its packets after the
	 * first, the last one's bits, and where it ends.
	 */
	uint64_t peek_off[VMPT_CHAIN_PKTS];
	uint64_t peek_bits;
	const uint8_t *peek_end;
	/* What vmpt_flow_next_items hands out when it is not a run: blocks
	 * of the hot path while their time stays that of the last item
	 * handed out (last_time, when have_last).
	 */
	uint8_t have_last;
	uint64_t last_time;
	struct vmpt_flow_item batch[FLOW_BATCH];
	/* config.release: the trace before this is dropped. */
	const uint8_t *released;
};

/* Trace was read: the walk goes on from here. */
static inline void progressed(struct vmpt_flow *dec)
{
	dec->walked = 0;
	dec->loop.n = 0;
}

/* A call: its return address on the return stack. */
static inline void push_ret(struct vmpt_flow *dec, struct vmpt_block *call)
{
	dec->stack[dec->sp].ip = call->next_ip;
	dec->stack[dec->sp].call = call;
	dec->sp = (dec->sp + 1) % STACK_DEPTH;
	if (dec->depth < STACK_DEPTH)
		dec->depth++;
}

/* A direct jump or call to `to` that reads no trace: -VMPT_ERR_LOOP when
 * the walk is in a loop that never reads any (perf's intel_pt_walk_insn:
 * a target seen again, or more than MAX_LOOPS of them), else 0.
 */
static inline int loop_step(struct vmpt_flow *dec, uint64_t to)
{
	uint32_t n = dec->loop.n++;

	if (n == 1) {
		dec->loop.ip = to;
		dec->loop.period = dec->loop.left = 1;
	} else if (n > 1) {
		if (n > MAX_LOOPS || to == dec->loop.ip)
			return -VMPT_ERR_LOOP;
		if (!--dec->loop.left) {
			dec->loop.left = ++dec->loop.period;
			dec->loop.ip = to;
		}
	}
	return 0;
}

/* PAD, TNT-8 and TIP, most of a trace, straight from the fast table
 * (which holds only what the full decoder gives): 1 when a TNT-8 or a TIP
 * was read as vmpt_flow_fetch() reads them, 0 when the next packet is
 * another (the PADs before it are read).
 */
static inline __attribute__((always_inline)) int
fetch_fast(struct vmpt_flow *dec, int after_fup)
{
	const uint8_t *p = dec->pd.pos, *end = dec->pd.end;
	uint32_t e = 0;
	unsigned ipc;

	if (dec->pd.ctx != VMPT_CTX_NONE || dec->want_fup)
		return 0;
	while (p < end && (e = vmpt_pkt_fast_table[*p]) == VMPT_PKT_FAST(VMPT_PKT_PAD, 1, 0, 0))
		p++;
	if (p != dec->pd.pos)
		dec->pkt_off = dec->pd.base + (uint64_t)(p - 1 - dec->pd.begin);
	dec->pd.pos = p;
	if (p == end)
		return 0;
	if ((uint16_t)e == VMPT_PKT_FAST(VMPT_PKT_TNT8, 1, 0, 0)) {
		dec->pkt_off = dec->pd.base + (uint64_t)(p - dec->pd.begin);
		dec->pd.pos = p + 1;
		dec->tnt_bits = e >> 24;
		dec->tnt_n = (e >> 16) & 0xff;
		dec->memo_try = 1;
		/* (an MTC after it is no MTC right after a CYC) */
		vmpt_time_seen(&dec->time, VMPT_PKT_TNT8);
		if (!after_fup)
			vmpt_cycles_seen(&dec->cyc, VMPT_PKT_TNT8);
		return 1;
	}
	/* A TIP where vmpt_pkt_next would take its fast path too, with a
	 * last IP to update (fetch's special case after a resync aside).
	 */
	ipc = (e >> 16) & 0xff;
	if ((uint8_t)e != VMPT_PKT_TIP || p >= dec->pd.limit || end - p < VMPT_PKT_FAST_READ ||
	    !dec->lip.have_ip || ipc == 5 || ipc > VMPT_IPC_FULL)
		return 0;
	dec->pkt_off = dec->pd.base + (uint64_t)(p - dec->pd.begin);
	dec->pd.pos = p + vmpt_pkt_decode_fast(p, &dec->pkt);
	vmpt_time_seen(&dec->time, VMPT_PKT_TIP);
	if (!after_fup)
		vmpt_cycles_seen(&dec->cyc, VMPT_PKT_TIP);
	vmpt_last_ip_update(&dec->lip, &dec->pkt);
	dec->pkt_ip_valid = vmpt_last_ip_query(&dec->lip, &dec->pkt_ip) == 0;
	dec->have_pkt = 1;
	return 1;
}

/* A return: the call site on top of the return stack, or NO_MATCH when empty. */
static inline int pop_ret(struct vmpt_flow *dec, struct ret_site *site)
{
	if (!dec->depth)
		return -VMPT_ERR_NO_MATCH;
	dec->sp = (dec->sp + STACK_DEPTH - 1) % STACK_DEPTH;
	dec->depth--;
	*site = dec->stack[dec->sp];
	return 0;
}

/* A return went to dec->ip: the walk goes on from the call's block when
 * that is the call's return site.
 */
static inline void went_back(struct vmpt_flow *dec, const struct ret_site *site)
{
	dec->prev = site->ip == dec->ip ? site->call : NULL;
	dec->prev_slot = 0;
}

/* Trace rules the walk (vmpt_flow_walk.c) and its hot path (walk_fast)
 * share.
 */

/* The next TNT bit, which decides the branch ending the block: perf's
 * time of the branch is as of the TNT packet; *cyc its IPC point.
 */
static inline unsigned take_tnt_bit(struct vmpt_flow *dec, uint64_t *cyc)
{
	dec->tnt_n--;
	progressed(dec);
	dec->block_time = dec->time.tsc;
	*cyc = vmpt_cycles_point(&dec->cyc);
	return (dec->tnt_bits >> dec->tnt_n) & 1;
}

/* The TIP ending block b, an indirect branch: its call pushed, its
 * return popped (the CPU pops on every ret, compressed or not, as perf's
 * decoder does: a mismatching top is why this one has a TIP); *cyc its
 * IPC point.
 */
static inline void take_tip(struct vmpt_flow *dec, struct vmpt_block *b,
			    struct ret_site *site, uint64_t *cyc)
{
	if (b->iclass == VMPT_IC_CALL_IND)
		push_ret(dec, b);
	if (b->iclass == VMPT_IC_RET && dec->depth)
		pop_ret(dec, site);
	dec->have_pkt = 0;
	progressed(dec);
	*cyc = vmpt_cycles_point(&dec->cyc);
	dec->ip = dec->pkt_ip;
}

/* Items (vmpt_flow.c): one queued (or the caller's own item), an event,
 * an event that is an IPC point (perf's decoder returns a state there).
 */
struct vmpt_flow_item *vmpt_flow_emit(struct vmpt_flow *dec, unsigned kind);
struct vmpt_flow_item *vmpt_flow_event(struct vmpt_flow *dec, unsigned ev, uint64_t ip,
				       int ip_valid, uint64_t payload);
int vmpt_flow_emit_event(struct vmpt_flow *dec, unsigned ev, uint64_t ip,
			 int ip_valid, uint64_t payload);
int vmpt_flow_emit_ipc_event(struct vmpt_flow *dec, unsigned ev, uint64_t ip,
			     int ip_valid, uint64_t payload);
/* What a resync or a new PSB+ forgets of the flow. */
void vmpt_flow_reset_state(struct vmpt_flow *dec);
/* The address space from the PIP, VMCS and the spaces the caller set. */
void vmpt_flow_update_asid(struct vmpt_flow *dec);

/* Reading the trace (vmpt_flow_trace.c). */

/* The PSB+ just read: status applied; 1 when its FUP says where the flow
 * is, 0 when not, < 0 on error.
 */
int vmpt_flow_psb_plus(struct vmpt_flow *dec);
/* Packets up to the next that steers the flow (see the definition). */
int vmpt_flow_fetch(struct vmpt_flow *dec, int after_fup);
/* An indirect branch met with TNT bits pending: its TIP is the packet
 * right after them (PADs aside), as the SDM's "Deferred TIPs" allow (the
 * processor holds TIPs back while the TNT fills) and perf's decoder takes
 * it; the bits are the branches' after it.  0 (pkt, pkt_ip set), or
 * -VMPT_ERR_NO_MATCH (that packet is read again).
 */
int vmpt_flow_deferred_tip(struct vmpt_flow *dec);
/* MODE.Exec, PIP and VMCS read since the last branch take effect. */
int vmpt_flow_apply_pending(struct vmpt_flow *dec);
/* The events bound to a FUP at `at`; 1 when a TIP follows. */
int vmpt_flow_emit_bound(struct vmpt_flow *dec, uint64_t at, int ip_valid);

/* The walk (vmpt_flow_walk.c). */

/* The block at dec->ip, by the last block's successor link or the cache. */
int vmpt_flow_lookup_block(struct vmpt_flow *dec, struct vmpt_block **out);
/* One block toward what the trace asks for next. */
int vmpt_flow_walk(struct vmpt_flow *dec, enum want want);

/* TNT runs and chains (vmpt_flow_runs.c). */

/* The chain from b for the bits pending and the TNT-8 packets after them,
 * or NULL; where its packets are is kept for vmpt_flow_play_run.
 */
struct vmpt_run *vmpt_flow_find_chain(struct vmpt_flow *dec, const struct vmpt_block *b);

/* dec->play played back: its items (*n), the decoder left as the walk
 * would leave it.
 */
const struct vmpt_flow_item *vmpt_flow_play_run(struct vmpt_flow *dec, size_t *n);

/* The block just walked (its item it) into the run being recorded. */
void vmpt_flow_record_step(struct vmpt_flow *dec, struct vmpt_block *b,
			   const struct vmpt_flow_item *it);

#endif
