/* SPDX-License-Identifier: MIT */
/* The instruction flow decoder.
 *
 * It walks the code from the current IP, block by block, until it needs
 * the trace to go on (a conditional branch needs a TNT bit, an indirect
 * branch a TIP, an asynchronous event is due at a FUP's IP), and reads
 * packets only then (vmpt_flow_trace.c, vmpt_flow_walk.c).  This file:
 * the items handed out, one step of the decoder, and the hot path that
 * takes most blocks without either.
 */
#include "vmpt_flow_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const char *const event_names[VMPT_EV_COUNT] = {
	[VMPT_EV_ENABLED] = "enabled",
	[VMPT_EV_DISABLED] = "disabled",
	[VMPT_EV_ASYNC_DISABLED] = "async-disabled",
	[VMPT_EV_ASYNC_BRANCH] = "async-branch",
	[VMPT_EV_OVERFLOW] = "overflow",
	[VMPT_EV_EXEC_MODE] = "exec-mode",
	[VMPT_EV_PAGING] = "paging",
	[VMPT_EV_VMCS] = "vmcs",
	[VMPT_EV_TSX] = "tsx",
	[VMPT_EV_PTWRITE] = "ptwrite",
	[VMPT_EV_CBR] = "cbr",
	[VMPT_EV_PWRE] = "pwre",
	[VMPT_EV_PWRX] = "pwrx",
	[VMPT_EV_EXSTOP] = "exstop",
	[VMPT_EV_MWAIT] = "mwait",
	[VMPT_EV_ERROR] = "error",
	[VMPT_EV_PSB] = "psb",
	[VMPT_EV_CFE] = "cfe",
};

const char *vmpt_event_name(unsigned ev)
{
	return ev < VMPT_EV_COUNT ? event_names[ev] : "?";
}

struct vmpt_flow *vmpt_flow_new(const struct vmpt_flow_config *config)
{
	struct vmpt_flow *dec = calloc(1, sizeof(*dec));

	if (!dec)
		return NULL;
	dec->cfg = *config;
	if (!config->cache)
		dec->own_cache = vmpt_bcache_new();
	if (!config->cache && !dec->own_cache) {
		free(dec);
		return NULL;
	}
	dec->disasm = vmpt_bdisasm_new(config->cache ? config->cache : dec->own_cache);
	dec->evd_store = vmpt_evd_store_new();
	if (!dec->disasm || !dec->evd_store) {
		vmpt_flow_free(dec);
		return NULL;
	}
	if (config->n_parts)
		vmpt_pkt_decoder_init_parts(&dec->pd, config->parts, config->n_parts);
	else
		vmpt_pkt_decoder_init(&dec->pd, config->begin,
				      (size_t)(config->end - config->begin));
	/* config.release: one contiguous trace (a part or none). */
	dec->released = config->n_parts ? config->parts[0].begin : config->begin;
	vmpt_last_ip_init(&dec->lip);
	vmpt_time_init(&dec->time, config->tsc_ctc_ratio_n,
		       config->tsc_ctc_ratio_d, config->mtc_period,
		       config->max_nonturbo_ratio);
	vmpt_cycles_init(&dec->cyc, config->max_nonturbo_ratio, config->cyc_thresh);
	/* Until a PIP says NR=1, code is the host's (as perf takes it):
	 * SYSCALL and friends change neither CR3 nor the machine, so a
	 * trace may run a while before any PIP. */
	dec->asid = vmpt_asid_any();
	dec->asid.machine = VMPT_MACHINE_HOST;
	return dec;
}

void vmpt_flow_free(struct vmpt_flow *dec)
{
	if (!dec)
		return;
	vmpt_bdisasm_free(dec->disasm);
	vmpt_bcache_free(dec->own_cache);
	vmpt_tnt_memo_free(dec->memo);
	vmpt_evd_store_free(dec->evd_store);
	free(dec->q);
	free(dec);
}

struct vmpt_flow_item *vmpt_flow_emit(struct vmpt_flow *dec, unsigned kind)
{
	struct vmpt_flow_item *it;

	if (dec->qh == dec->qn)
		dec->qh = dec->qn = 0;
	if (dec->direct && dec->qn == 0) {
		/* The caller's item itself: no copy on the hot path. */
		it = dec->direct;
		dec->direct = NULL;
		goto fill;
	}
	if (dec->qn == dec->qcap) {
		size_t cap = dec->qcap ? dec->qcap * 2 : 64;
		struct vmpt_flow_item *q = realloc(dec->q, cap * sizeof(*q));

		if (!q)
			return NULL;
		dec->q = q;
		dec->qcap = cap;
	}
	it = &dec->q[dec->qn++];
fill:
	memset(it, 0, sizeof(*it));
	it->kind = (uint8_t)kind;
	it->mode = dec->mode;
	it->offset = dec->pkt_off;
	it->time = kind == VMPT_FLOW_BLOCK ? dec->block_time : dec->time.tsc;
	it->cyc_est = dec->cyc.est;
	return it;
}

struct vmpt_flow_item *vmpt_flow_event(struct vmpt_flow *dec, unsigned ev, uint64_t ip,
				       int ip_valid, uint64_t payload)
{
	struct vmpt_flow_item *it = vmpt_flow_emit(dec, VMPT_FLOW_EVENT);

	if (!it)
		return NULL;
	it->ev = (uint8_t)ev;
	it->ip = ip;
	it->ip_valid = (uint8_t)ip_valid;
	it->payload = payload;
	it->nr = dec->nr;
	return it;
}

int vmpt_flow_emit_event(struct vmpt_flow *dec, unsigned ev, uint64_t ip,
			 int ip_valid, uint64_t payload)
{
	return vmpt_flow_event(dec, ev, ip, ip_valid, payload) ? 0 : -VMPT_ERR_NOMEM;
}

/* An event where perf's decoder returns a state: an IPC point. */
int vmpt_flow_emit_ipc_event(struct vmpt_flow *dec, unsigned ev, uint64_t ip,
			     int ip_valid, uint64_t payload)
{
	struct vmpt_flow_item *it = vmpt_flow_event(dec, ev, ip, ip_valid, payload);

	if (!it)
		return -VMPT_ERR_NOMEM;
	it->cyc = vmpt_cycles_point(&dec->cyc);
	return 0;
}

void vmpt_flow_reset_state(struct vmpt_flow *dec)
{
	dec->tnt_n = 0;
	dec->have_pkt = 0;
	dec->depth = 0;
	dec->have_pend_mode = dec->have_pend_pip = dec->have_pend_vmcs = 0;
	dec->fup_bound = dec->want_fup = dec->cfe_wait = 0;
	dec->n_evd = 0;
	progressed(dec);
	dec->after_ovf = 0;
	dec->prev = NULL;
	dec->rec = NULL;
	dec->chain_n = 0;
}

/* Report an error at the current packet and IP, then look for the next
 * PSB (libipt), or with perf_resync the next IP packet (perf).
 */
static int error_resync(struct vmpt_flow *dec, int err)
{
	struct vmpt_flow_item *it = vmpt_flow_emit(dec, VMPT_FLOW_EVENT);
	unsigned depth, at_psb;
	int decode_error = err == -VMPT_ERR_NO_MATCH || err == -VMPT_ERR_NO_IMAGE ||
			   err == -VMPT_ERR_IP_SUPPRESSED || err == -VMPT_ERR_NO_LAST_IP ||
			   err == -VMPT_ERR_LOOP;

	if (!it)
		return -VMPT_ERR_NOMEM;
	it->ev = VMPT_EV_ERROR;
	it->err = err;
	/* perf walked the block closing a loop before it gave up. */
	if (err == -VMPT_ERR_LOOP)
		it->ninsn = dec->loop.insns;
	it->ip = dec->ip;
	it->ip_valid = dec->enabled;
	it->cyc = dec->cyc.tot;
	depth = dec->depth;
	at_psb = dec->fup_bound & FUP_PSB;
	vmpt_flow_reset_state(dec);
	/* perf's call stack outlives an error (only a PSB empties it): a
	 * compressed return after it goes back to a call before it.
	 */
	if (dec->cfg.perf_resync && decode_error)
		dec->depth = depth;
	dec->enabled = 0;
	/* The walk to a PSB's FUP failed: decoding starts again at that
	 * PSB, which says where the flow is (as a piece of vmpt/jobs.h
	 * starting there does), not at the next one or packet.
	 */
	if (at_psb && dec->synced && vmpt_pkt_seek(&dec->pd, dec->psb_off) == 0) {
		dec->pd.sync = UINT64_MAX;
		dec->synced = 0;
		dec->resync = 0;
		return 0;
	}
	if (!dec->cfg.perf_resync || !decode_error || !dec->synced) {
		dec->synced = 0;
		dec->resync = 0;
		return 0;
	}
	dec->resync = err == -VMPT_ERR_NO_IMAGE ? RESYNC_NO_IP : RESYNC_KEEP_IP;
	if (dec->resync == RESYNC_NO_IP) {
		dec->ip = 0;
		vmpt_last_ip_init(&dec->lip);
	}
	return 0;
}

void vmpt_flow_update_asid(struct vmpt_flow *dec)
{
	uint64_t machine = dec->asid.machine;

	if (dec->have_nr)
		machine = !dec->nr ? VMPT_MACHINE_HOST :
			  dec->have_vmcs ? dec->vmcs : VMPT_MACHINE_GUEST;
	int guest = dec->have_nr && dec->nr;
	uint64_t space = guest ? dec->guest_space : dec->host_space;
	uint64_t cr3 = space ? space : dec->have_nr ? dec->cr3 : VMPT_ASID_ANY;

	if (machine != dec->asid.machine || cr3 != dec->asid.cr3) {
		dec->asid.machine = machine;
		dec->asid.cr3 = cr3;
		dec->sec = NULL;	/* the code may be elsewhere now */
	}
}

static int enable_at(struct vmpt_flow *dec, uint64_t ip)
{
	int ret;

	dec->have_pkt = 0;
	dec->enabled = 1;
	dec->after_ovf = 0;
	progressed(dec);
	dec->prev = NULL;
	dec->ip = ip;
	ret = vmpt_flow_apply_pending(dec);
	if (ret < 0)
		return ret;
	return vmpt_flow_emit_ipc_event(dec, VMPT_EV_ENABLED, ip, 1, 0);
}

static int overflow(struct vmpt_flow *dec)
{
	struct vmpt_flow_item *it = vmpt_flow_event(dec, VMPT_EV_OVERFLOW, dec->ip, dec->enabled, 0);

	if (!it)
		return -VMPT_ERR_NOMEM;
	it->cyc = dec->cyc.tot;
	dec->have_pkt = 0;
	dec->tnt_n = 0;
	/* A return may still be compressed against a call before the
	 * overflow (the SDM lets RETs use the CALLs since the last PSB):
	 * perf keeps its call stack, libipt starts anew.
	 */
	if (!dec->cfg.perf_resync)
		dec->depth = 0;
	/* what waited for a FUP is lost with the trace (perf) */
	dec->fup_bound = dec->want_fup = dec->cfe_wait = 0;
	dec->n_evd = 0;
	dec->enabled = 0;
	dec->after_ovf = 1;
	/* perf resynchronizes after an overflow as after an error. */
	if (dec->cfg.perf_resync)
		dec->resync = RESYNC_KEEP_IP;
	return 0;
}

/* perf_resync: the packet after an error that says where the trace goes
 * on (perf's intel_pt_walk_to_ip); TNT bits are passed over.
 */
static int step_resync(struct vmpt_flow *dec)
{
	uint64_t ip;

	if (dec->tnt_n) {
		dec->tnt_n = 0;
		return 0;
	}
	dec->have_pkt = 0;
	if (dec->pkt.type == VMPT_PKT_OVF)
		return overflow(dec);
	ip = dec->pkt_ip_valid ? dec->pkt_ip :
	     dec->resync == RESYNC_KEEP_IP ? dec->ip : 0;
	if (!ip)
		return 0;
	dec->resync = 0;
	if (dec->pkt.type != VMPT_PKT_TIP_PGD)
		return enable_at(dec, ip);
	/* Tracing stopped there: perf's "tr strt tr end". */
	dec->ip = ip;
	return vmpt_flow_emit_ipc_event(dec, VMPT_EV_ENABLED, ip, 1, VMPT_ENABLED_RESYNC_END);
}

/* Handle the pending flow packet while tracing is off. */
static int step_disabled(struct vmpt_flow *dec)
{
	int ret;

	if (dec->tnt_n) {
		dec->tnt_n = 0;
		return -VMPT_ERR_NO_MATCH;
	}
	switch (dec->pkt.type) {
	case VMPT_PKT_TIP_PGE:
		if (!dec->pkt_ip_valid)
			return -VMPT_ERR_IP_SUPPRESSED;
		return enable_at(dec, dec->pkt_ip);
	case VMPT_PKT_FUP:
		/* After an overflow the FUP says where tracing goes on. */
		if (dec->after_ovf && dec->pkt_ip_valid)
			return enable_at(dec, dec->pkt_ip);
		dec->have_pkt = 0;
		/* with tracing off, what is bound to it is at its IP (perf) */
		ret = vmpt_flow_emit_bound(dec, dec->pkt_ip, dec->pkt_ip_valid);
		return ret < 0 ? ret : 0;
	case VMPT_PKT_TIP_PGD:
		dec->have_pkt = 0;
		return 0;
	case VMPT_PKT_OVF:
		return overflow(dec);
	default:
		dec->have_pkt = 0;
		return -VMPT_ERR_NO_MATCH;
	}
}

static int step(struct vmpt_flow *dec)
{
	struct vmpt_packet pkt;
	int ret;

	if (dec->stopping && !dec->have_pkt)
		return -VMPT_ERR_EOS;
	if (!dec->synced) {
		if (vmpt_pkt_sync_forward(&dec->pd) < 0)
			return -VMPT_ERR_EOS;
		dec->pkt_off = vmpt_pkt_offset(&dec->pd);
		if (dec->cfg.stop_offset && dec->pkt_off >= dec->cfg.stop_offset)
			return -VMPT_ERR_EOS;
		ret = vmpt_pkt_next(&dec->pd, &pkt);
		if (ret < 0)
			return error_resync(dec, ret);
		ret = vmpt_flow_psb_plus(dec);
		dec->block_time = dec->time.tsc;
		if (ret == -VMPT_ERR_EOS)
			return ret;
		return ret < 0 ? error_resync(dec, ret) : 0;
	}
	if (!dec->tnt_n && !dec->have_pkt) {
		dec->block_time = dec->time.tsc;
		ret = vmpt_flow_fetch(dec, 0);
		if (ret == -VMPT_ERR_EOS)
			return ret;
		if (ret < 0)
			return error_resync(dec, ret);
		return 0;
	}
	if (dec->resync)
		ret = step_resync(dec);
	else if (!dec->enabled)
		ret = step_disabled(dec);
	else if (dec->tnt_n)
		ret = vmpt_flow_walk(dec, W_TNT);
	else if (dec->pkt.type == VMPT_PKT_TIP)
		ret = vmpt_flow_walk(dec, W_TIP);
	else if (dec->pkt.type == VMPT_PKT_TIP_PGD)
		ret = vmpt_flow_walk(dec, W_PGD);
	else if (dec->pkt.type == VMPT_PKT_FUP)
		ret = dec->pkt_ip_valid ? vmpt_flow_walk(dec, W_FUP) : -VMPT_ERR_IP_SUPPRESSED;
	else if (dec->pkt.type == VMPT_PKT_OVF)
		ret = overflow(dec);
	else	/* TIP.PGE while on: tracing restarted there (a VM entry) */
		ret = dec->pkt_ip_valid ? enable_at(dec, dec->pkt_ip) :
					  -VMPT_ERR_IP_SUPPRESSED;
	if (ret == -VMPT_ERR_EOS)
		return ret;
	return ret < 0 ? error_resync(dec, ret) : 0;
}

void vmpt_flow_set_host_space(struct vmpt_flow *dec, uint64_t space)
{
	dec->host_space = space;
	vmpt_flow_update_asid(dec);
	/* A run being recorded may go on in other code now. */
	dec->rec = NULL;
}

void vmpt_flow_set_guest_space(struct vmpt_flow *dec, uint64_t space)
{
	dec->guest_space = space;
	vmpt_flow_update_asid(dec);
	dec->rec = NULL;
}

void vmpt_flow_count_on(struct vmpt_flow *dec, const struct vmpt_flow *from)
{
	dec->cyc = from->cyc;
	/* Decoding starts anew: tracing is off until the trace says on. */
	dec->cyc.pge = 0;
	dec->cyc.after_cyc = 0;
}

int vmpt_flow_sync_at(struct vmpt_flow *dec, uint64_t offset, uint64_t stop)
{
	if (vmpt_pkt_seek(&dec->pd, offset) < 0)
		return -VMPT_ERR_EOS;
	dec->pd.sync = UINT64_MAX;
	dec->synced = 0;
	dec->enabled = 0;
	dec->resync = 0;
	dec->stopping = 0;
	dec->cfg.stop_offset = stop;
	dec->qh = dec->qn = 0;
	dec->have_last = 0;	/* the caller sets the space anew */
	dec->released = dec->pd.pos;
	vmpt_flow_reset_state(dec);
	/* What the trace said before belongs to another piece: start as a
	 * new decoder does, in the host.
	 */
	dec->have_nr = dec->nr = dec->have_vmcs = 0;
	dec->cr3 = dec->vmcs = 0;
	dec->mode = VMPT_MODE_64;
	dec->asid = vmpt_asid_any();
	dec->asid.machine = VMPT_MACHINE_HOST;
	vmpt_flow_update_asid(dec);
	dec->sec = NULL;
	return 0;
}

/* The hot path: tracing on, nothing queued, and the way out of the next
 * block is a TNT bit, a TIP or no trace at all.  The block goes straight
 * into the caller's item, with what vmpt_flow_walk() would do (returns 1),
 * or, with runs, a run recorded from it is ready to play back (returns 2);
 * anything else (an error, an event due, a pending mode or PIP) is left
 * to the walk (returns 0).
 */
static inline __attribute__((always_inline)) int
walk_fast(struct vmpt_flow *dec, struct vmpt_flow_item *it, int runs)
{
	struct vmpt_block *b, *prev = dec->prev;
	struct ret_site site = { 0 };
	uint64_t cyc = 0;
	uint8_t taken;

	if (dec->walked > MAX_WALK)
		return 0;
	/* lookup_block's successor link, inline: a block of the current
	 * section at the IP is the one lookup_block gives.
	 */
	if (!prev || prev->sec != dec->sec ||
	    !(b = atomic_load_explicit(&prev->succ[dec->prev_slot], memory_order_acquire)) ||
	    b->ip != dec->ip || b->mode != dec->mode) {
		if (vmpt_flow_lookup_block(dec, &b) < 0)
			return 0;
	}
	/* The walk goes on to one of b's successors: fetch both while b is
	 * handled (on a walk that never repeats, a block is rarely in L1).
	 */
	__builtin_prefetch(atomic_load_explicit(&b->succ[0], memory_order_relaxed));
	__builtin_prefetch(atomic_load_explicit(&b->succ[1], memory_order_relaxed));
	if (runs && dec->tnt_n && dec->memo_try && !dec->rec) {
		uint64_t key = vmpt_tnt_key(dec->tnt_bits, dec->tnt_n);
		struct vmpt_run *run = vmpt_tnt_memo_find(dec->memo, b, key), *chain;

		if (run && run->chain_head && run->nbits == dec->tnt_n &&
		    (chain = vmpt_flow_find_chain(dec, b)))
			run = chain;
		if (run && dec->walked + run->ninsn <= MAX_WALK) {
			dec->play = run;
			return 2;
		}
		dec->rec = vmpt_tnt_memo_start(dec->memo, b, key);
		dec->memo_try = 0;
	}
	/* Most blocks end in a conditional jump: tested before the jump
	 * table of the rest.
	 */
	if (b->iclass == VMPT_IC_JCC) {
		if (!dec->tnt_n)
			return 0;
		taken = (uint8_t)take_tnt_bit(dec, &cyc);
		dec->ip = taken ? b->target : b->next_ip;
	} else switch (b->iclass) {
	case VMPT_IC_CALL:
	case VMPT_IC_JMP:
		/* A loop reading no trace: vmpt_flow_walk() reports it. */
		if (loop_step(dec, b->target) < 0)
			return 0;
		if (b->iclass == VMPT_IC_CALL && !b->zero_call)
			push_ret(dec, b);
		taken = 1;
		dec->ip = b->target;
		dec->walked += b->ninsn;
		break;
	case VMPT_IC_OTHER:
		taken = 0;
		dec->ip = b->next_ip;
		dec->walked += b->ninsn;
		break;
	case VMPT_IC_RET:
		if (dec->tnt_n) {
			if (dec->cfg.retcomp == VMPT_RETCOMP_OFF || !dec->depth ||
			    !((dec->tnt_bits >> (dec->tnt_n - 1)) & 1))
				return 0;
			taken = (uint8_t)take_tnt_bit(dec, &cyc);
			pop_ret(dec, &site);
			dec->ip = site.ip;
			break;
		}
		/* fall through */
	default:	/* indirect: the TIP */
		if (dec->tnt_n || !dec->have_pkt || dec->pkt.type != VMPT_PKT_TIP ||
		    !dec->pkt_ip_valid || dec->have_pend_mode || dec->have_pend_pip ||
		    dec->have_pend_vmcs)
			return 0;
		take_tip(dec, b, &site, &cyc);
		taken = 1;
		break;
	}
	if (!dec->tnt_n && !dec->have_pkt)
		dec->block_time = dec->time.tsc;
	/* Field by field: a compound literal would go through a copy. */
	it->kind = VMPT_FLOW_BLOCK;
	it->mode = b->mode;
	it->iclass = b->iclass;
	it->taken = taken;
	it->ev = 0;
	it->ip_valid = 0;
	it->nr = 0;
	it->cyc_est = dec->cyc.est;
	it->err = 0;
	it->ninsn = b->ninsn;
	it->isize = b->isize;
	it->sec = b->sec;
	it->ip = b->ip;
	it->end_ip = b->end_ip;
	it->to = taken ? dec->ip : b->next_ip;
	it->payload = 0;
	it->offset = dec->pkt_off;
	it->time = dec->block_time;
	it->cyc = cyc;
	if (b->iclass == VMPT_IC_RET) {
		went_back(dec, &site);
	} else {
		dec->prev = b;
		dec->prev_slot = taken;
	}
	if (dec->rec)
		vmpt_flow_record_step(dec, b, it);
	return 1;
}

/* The walk needs the next packet and nothing else is due: step() would
 * only read it (fetch).
 */
static inline int wants_packet(const struct vmpt_flow *dec)
{
	return dec->qh == dec->qn && !dec->play && !dec->tnt_n && !dec->have_pkt &&
	       dec->synced && dec->enabled && !dec->stopping;
}

/* The next item into *item; with runs, TNT runs are recorded, and one
 * ready to play back returns 1 instead (nothing filled).  Played one item
 * per call a run would cost more than the walk.  Inlined in both callers
 * with walk_fast, so that each has its own hot path.
 */
static inline __attribute__((always_inline)) int
next_item(struct vmpt_flow *dec, struct vmpt_flow_item *item, int runs)
{
	for (;;) {
		int ret;

		if (dec->qh != dec->qn) {
			*item = dec->q[dec->qh++];
			return 0;
		}
		if (dec->play)
			return 1;
		if ((dec->tnt_n || (dec->have_pkt && dec->pkt.type == VMPT_PKT_TIP)) &&
		    dec->enabled && !dec->stopping) {
			ret = walk_fast(dec, item, runs);
			if (ret == 1)
				return 0;
			if (ret == 2)
				continue;	/* a run to play */
		}
		dec->rec = NULL;	/* the walk leaves the hot path */
		/* step() reading a TNT-8 or TIP, inline */
		if (wants_packet(dec)) {
			dec->block_time = dec->time.tsc;
			if (fetch_fast(dec, 0))
				continue;
		}
		dec->direct = item;
		ret = step(dec);
		if (!dec->direct)
			return 0;	/* step wrote *item */
		dec->direct = NULL;
		if (ret < 0 && dec->qh == dec->qn)
			return ret;
	}
}

int vmpt_flow_next(struct vmpt_flow *dec, struct vmpt_flow_item *item)
{
	return next_item(dec, item, 0);
}

int vmpt_flow_enabled(const struct vmpt_flow *dec)
{
	return dec->enabled;
}

/* config.release: drop the pages of the trace read (whole pages, from
 * the last drop up to a little behind the packet being read).
 */
static void release_behind(struct vmpt_flow *dec)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t from = ((uintptr_t)dec->released + page - 1) & ~(page - 1);
	uintptr_t to = ((uintptr_t)dec->pd.pos - RELEASE_KEEP) & ~(page - 1);

	if (to > from)
		madvise((void *)from, to - from, MADV_DONTNEED);
	dec->released = dec->pd.pos - RELEASE_KEEP;
}

/* Can walk_fast take the next block (next_item's test)? */
static inline int on_hot_path(const struct vmpt_flow *dec)
{
	return dec->qh == dec->qn && !dec->play &&
	       (dec->tnt_n || (dec->have_pkt && dec->pkt.type == VMPT_PKT_TIP)) &&
	       dec->enabled && !dec->stopping;
}

/* The memo of runs (640 KB), made for a decoder that plays them back. */
static __attribute__((noinline, cold)) int make_memo(struct vmpt_flow *dec)
{
	dec->memo = vmpt_tnt_memo_new();
	return dec->memo ? 0 : -VMPT_ERR_NOMEM;
}

int vmpt_flow_next_items(struct vmpt_flow *dec, const struct vmpt_flow_item **items,
			 size_t *n)
{
	struct vmpt_flow_item *b = dec->batch;
	size_t k = 1;
	int ret;

	if (__builtin_expect(!dec->memo, 0) && make_memo(dec) < 0)
		return -VMPT_ERR_NOMEM;
	ret = next_item(dec, b, 1);

	if (dec->cfg.release && dec->cfg.n_parts <= 1 &&
	    dec->pd.pos - dec->released > RELEASE_STEP)
		release_behind(dec);
	if (ret < 0)
		return ret;
	if (ret == 1) {
		*items = vmpt_flow_play_run(dec, n);
		dec->last_time = (*items)[*n - 1].time;
		dec->have_last = 1;
		return 0;
	}
	/* More blocks in one call: the caller may set the host address
	 * space by each item's time (vmpt_flow_set_host_space), which then
	 * applies from the next item on; a block walked before the caller
	 * saw the one before it is the same only while the time has not
	 * changed since the last item handed out.
	 */
	if (b[0].kind == VMPT_FLOW_BLOCK && dec->have_last && dec->qh == dec->qn &&
	    !dec->play && dec->enabled && !dec->stopping) {
		/* Of on_hot_path's test walk_fast changes only the bits and
		 * the packet (a run to play ends the batch), step() all.
		 */
		while (k < FLOW_BATCH && b[k - 1].time == dec->last_time) {
			/* Out of bits: the next packet read here, not in
			 * another call (what it queues ends the batch; an
			 * error, the end included, comes again from step()
			 * in the next call).
			 */
			if (!dec->tnt_n && !(dec->have_pkt && dec->pkt.type == VMPT_PKT_TIP)) {
				if (!wants_packet(dec))
					break;
				/* step() on the hot path, inline for a TNT-8 or TIP */
				dec->rec = NULL;	/* as next_item */
				dec->block_time = dec->time.tsc;
				if (!fetch_fast(dec, 0) && (step(dec) < 0 || !on_hot_path(dec)))
					break;
			}
			ret = walk_fast(dec, &b[k], 1);
			if (ret != 1) {
				if (!ret)
					dec->rec = NULL;	/* as next_item */
				break;
			}
			k++;
		}
	}
	dec->last_time = b[k - 1].time;
	dec->have_last = 1;
	*items = b;
	*n = k;
	return 0;
}

int vmpt_flow_psb_offsets(const uint8_t *begin, const uint8_t *end,
			  uint64_t **offsets, size_t *n)
{
	const uint8_t *p = begin;
	uint64_t *o = NULL;
	size_t cnt = 0, cap = 0;

	while ((p = vmpt_pkt_find_psb(p, end))) {
		if (cnt == cap) {
			uint64_t *t;

			cap = cap ? cap * 2 : 64;
			t = realloc(o, cap * sizeof(*t));
			if (!t) {
				free(o);
				return -VMPT_ERR_NOMEM;
			}
			o = t;
		}
		o[cnt++] = (uint64_t)(p - begin);
		p++;
	}
	*offsets = o;
	*n = cnt;
	return 0;
}
