/* SPDX-License-Identifier: MIT */
/* The walk: one block at a time from the current IP, leaving it the way
 * the trace gives (a TNT bit, a TIP, the return stack), up to a FUP's IP
 * where an asynchronous event or one bound to it is due.
 */
#include "vmpt_flow_int.h"

static int in_filter(const struct vmpt_flow *dec, uint64_t ip)
{
	if (!dec->cfg.n_filters)
		return 1;
	for (unsigned i = 0; i < dec->cfg.n_filters; i++)
		if (ip >= dec->cfg.filter_a[i] && ip <= dec->cfg.filter_b[i])
			return 1;
	return 0;
}

/* Did the branch ending b switch tracing off (the pending TIP.PGD)?  With
 * an IP, it is the branch that goes there; suppressed, a far transfer, or
 * (with a filter) a branch whose target leaves the filter.
 */
static int pgd_binds(const struct vmpt_flow *dec, const struct vmpt_block *b)
{
	int known = dec->pkt_ip_valid;

	switch (b->iclass) {
	case VMPT_IC_JMP:
	case VMPT_IC_CALL:
		if (known)
			return b->target == dec->pkt_ip;
		return dec->cfg.n_filters && !in_filter(dec, b->target);
	case VMPT_IC_JCC:
		if (known)
			return 1;
		return dec->cfg.n_filters && !in_filter(dec, b->target);
	case VMPT_IC_OTHER:
		return 0;
	default:
		return 1;
	}
}

/* The code at dec->ip comes from the section hit last while the IP stays
 * in it (and the address space does not change), else from the image.
 * Within that section a successor link of the block walked last gives the
 * same block as the cache would.
 */
int vmpt_flow_lookup_block(struct vmpt_flow *dec, struct vmpt_block **out)
{
	const struct vmpt_section *s = dec->sec;
	struct vmpt_block *prev = dec->prev, *b;
	int ret;

	if (!s || dec->ip - s->vaddr >= s->size) {
		s = vmpt_image_find(dec->cfg.image, &dec->asid, dec->ip);
		if (!s)
			return -VMPT_ERR_NO_IMAGE;
		dec->sec = s;
	}
	if (prev && prev->sec == s) {
		b = atomic_load_explicit(&prev->succ[dec->prev_slot], memory_order_acquire);
		if (b && b->ip == dec->ip && b->mode == dec->mode) {
			*out = b;
			return 0;
		}
	}
	ret = vmpt_bcache_get(dec->disasm, dec->cfg.image, s, &dec->asid, dec->ip,
			      dec->mode, &b);
	if (ret < 0)
		return ret;
	/* Set once: a link rewritten at every new indirect target (or even
	 * a failing compare-and-swap, which takes the line exclusive) would
	 * bounce its cache line between the threads sharing the cache.
	 */
	if (prev && prev->sec == s &&
	    !atomic_load_explicit(&prev->succ[dec->prev_slot], memory_order_relaxed)) {
		struct vmpt_block *none = NULL;

		atomic_compare_exchange_strong_explicit(&prev->succ[dec->prev_slot], &none, b,
							memory_order_release,
							memory_order_relaxed);
	}
	*out = b;
	return 0;
}

static struct vmpt_flow_item *emit_block(struct vmpt_flow *dec,
					 const struct vmpt_block *b,
					 uint32_t ninsn)
{
	struct vmpt_flow_item *it = vmpt_flow_emit(dec, VMPT_FLOW_BLOCK);

	if (!it)
		return NULL;
	it->ip = b->ip;
	it->ninsn = ninsn;
	it->isize = b->isize;
	it->sec = b->sec;
	it->mode = b->mode;
	if (ninsn == b->ninsn) {
		it->iclass = b->iclass;
		it->end_ip = b->end_ip;
		it->to = b->next_ip;
	} else {
		uint64_t ip = b->ip;

		for (uint32_t i = 0; i + 1 < ninsn; i++)
			ip += b->isize[i];
		it->iclass = VMPT_IC_OTHER;
		it->end_ip = ip;
		it->to = ip + b->isize[ninsn - 1];
	}
	dec->walked += ninsn;
	return it;
}

/* The walk reached the IP of a FUP. */
static int fup_reached(struct vmpt_flow *dec)
{
	uint64_t at = dec->ip;
	int ret;

	dec->have_pkt = 0;
	progressed(dec);
	dec->prev = NULL;
	if (dec->stopping) {
		ret = dec->fup_bound & FUP_PSB ? vmpt_flow_emit_bound(dec, at, 1) : 0;
		return ret < 0 ? ret : -VMPT_ERR_EOS;
	}
	/* Events bound to this FUP: no TIP follows but after a TSX abort.
	 * A CFE of the compound packet's goes before its branch. */
	ret = vmpt_flow_emit_bound(dec, at, 1);
	if (ret <= 0)
		return ret;
	/* An asynchronous event: a TIP says where it went, a TIP.PGD that
	 * tracing stopped here.
	 */
	ret = vmpt_flow_fetch(dec, 1);
	if (ret < 0)
		return ret == -VMPT_ERR_EOS ? 0 : ret;
	if (dec->tnt_n || !dec->have_pkt)
		return -VMPT_ERR_NO_MATCH;
	switch (dec->pkt.type) {
	case VMPT_PKT_TIP:
		if (!dec->pkt_ip_valid)
			return -VMPT_ERR_NO_MATCH;
		dec->have_pkt = 0;
		ret = vmpt_flow_apply_pending(dec);
		if (ret < 0)
			return ret;
		struct vmpt_flow_item *it = vmpt_flow_emit(dec, VMPT_FLOW_EVENT);

		if (!it)
			return -VMPT_ERR_NOMEM;
		it->ev = VMPT_EV_ASYNC_BRANCH;
		it->ip = at;
		it->ip_valid = 1;
		it->to = dec->pkt_ip;
		it->cyc = vmpt_cycles_point(&dec->cyc);
		dec->ip = dec->pkt_ip;
		return 0;
	case VMPT_PKT_TIP_PGD:
		dec->have_pkt = 0;
		dec->enabled = 0;
		ret = vmpt_flow_apply_pending(dec);
		if (ret < 0)
			return ret;
		return vmpt_flow_emit_ipc_event(dec, VMPT_EV_ASYNC_DISABLED, at, 1, 0);
	default:
		return -VMPT_ERR_NO_MATCH;
	}
}

/* Take the way out of block b the trace gives; `want` is what is pending. */
static int leave_block(struct vmpt_flow *dec, struct vmpt_block *b,
		       struct vmpt_flow_item *it, enum want want)
{
	struct ret_site site = { 0 };
	int ret;

	/* perf pushes a call's return and pops a return's whatever the
	 * trace says of them: a call leaving the filter region returns into
	 * it compressed.
	 */
	if (want == W_PGD && pgd_binds(dec, b)) {
		if (b->iclass == VMPT_IC_RET)
			pop_ret(dec, &site);
		else if ((b->iclass == VMPT_IC_CALL && !b->zero_call) ||
			 b->iclass == VMPT_IC_CALL_IND)
			push_ret(dec, b);
		dec->have_pkt = 0;
		dec->enabled = 0;
		/* The branch is the trace's end, one sample from it to where
		 * the TIP.PGD says it went (0: suppressed), as perf's: the
		 * block stops at it (no branch; `to` 0 where the event has
		 * the IP).
		 */
		it->taken = 0;
		if (dec->pkt_ip_valid)
			it->to = 0;
		/* walked after the packets before the TIP.PGD, in their time */
		it->time = dec->block_time = dec->time.tsc;
		it->cyc = vmpt_cycles_point(&dec->cyc);
		/* perf's decoder stays at the branch, or goes where the
		 * TIP.PGD says: later events (a CBR) are there.
		 */
		dec->ip = dec->pkt_ip_valid ? dec->pkt_ip : b->end_ip;
		ret = vmpt_flow_apply_pending(dec);
		if (ret < 0)
			return ret;
		progressed(dec);
		return vmpt_flow_emit_event(dec, VMPT_EV_DISABLED,
				  dec->pkt_ip_valid ? dec->pkt_ip : 0,
				  dec->pkt_ip_valid, 0);
	}
	switch (b->iclass) {
	case VMPT_IC_OTHER:
		dec->ip = b->next_ip;
		return 0;
	case VMPT_IC_CALL:
		if (!b->zero_call)
			push_ret(dec, b);
		/* fall through */
	case VMPT_IC_JMP:
		it->taken = 1;
		it->to = dec->ip = b->target;
		return 0;
	case VMPT_IC_JCC:
		if (want != W_TNT)
			return -VMPT_ERR_NO_MATCH;
		it->taken = (uint8_t)take_tnt_bit(dec, &it->cyc);
		it->time = dec->block_time;
		it->to = dec->ip = it->taken ? b->target : b->next_ip;
		return 0;
	case VMPT_IC_RET:
		if (want == W_TNT) {
			/* A compressed return: a taken bit, the address from
			 * our call stack.  A RET that meets a TNT bit was
			 * compressed whether or not the config says so: the
			 * TIP of one that was not would come before the bit.
			 */
			dec->tnt_n--;
			progressed(dec);
			it->time = dec->block_time = dec->time.tsc;
			/* The return pops the call stack even when the bit
			 * says it was no compressed one (perf pops first).
			 */
			ret = pop_ret(dec, &site);
			if (dec->cfg.retcomp == VMPT_RETCOMP_OFF ||
			    !((dec->tnt_bits >> dec->tnt_n) & 1))
				return -VMPT_ERR_NO_MATCH;
			if (ret < 0)
				return ret;
			it->cyc = vmpt_cycles_point(&dec->cyc);
			it->taken = 1;
			it->to = dec->ip = site.ip;
			went_back(dec, &site);
			return 0;
		}
		break;
	default:
		break;
	}
	/* Indirect: the TIP has the target, a deferred one with TNT bits
	 * pending.
	 */
	if (want == W_TNT && (ret = vmpt_flow_deferred_tip(dec)) < 0)
		return ret;
	if (want != W_TIP && want != W_TNT) {
		if (b->iclass == VMPT_IC_RET)
			pop_ret(dec, &site);
		return -VMPT_ERR_NO_MATCH;
	}
	if (!dec->pkt_ip_valid)
		return -VMPT_ERR_IP_SUPPRESSED;
	take_tip(dec, b, &site, &it->cyc);
	it->taken = 1;
	it->to = dec->ip;
	it->time = dec->block_time = dec->time.tsc;
	if (b->iclass == VMPT_IC_RET)
		went_back(dec, &site);
	return vmpt_flow_apply_pending(dec);
}

/* One block toward what the trace asks for next. */
int vmpt_flow_walk(struct vmpt_flow *dec, enum want want)
{
	struct vmpt_block *b;
	struct vmpt_flow_item *it;
	int ret;

	if (want == W_FUP && dec->ip == dec->pkt_ip)
		return fup_reached(dec);
	if (dec->walked > MAX_WALK)
		return -VMPT_ERR_NO_MATCH;
	ret = vmpt_flow_lookup_block(dec, &b);
	if (ret < 0)
		return ret;
	if (want == W_FUP && dec->pkt_ip - b->ip < b->next_ip - b->ip) {
		/* The event comes in the middle of this block: the
		 * instructions before it ran, the one at it did not.
		 */
		uint64_t ip = b->ip;
		uint32_t n = 0;

		while (ip != dec->pkt_ip && n < b->ninsn)
			ip += b->isize[n++];
		if (ip != dec->pkt_ip)
			return -VMPT_ERR_NO_MATCH;
		if (n && !emit_block(dec, b, n))
			return -VMPT_ERR_NOMEM;
		dec->ip = ip;
		return fup_reached(dec);
	}
	/* A loop reading no trace ends at the branch closing it: perf's
	 * error, at its target, and no branch.
	 */
	if ((b->iclass == VMPT_IC_JMP || b->iclass == VMPT_IC_CALL) &&
	    !(want == W_PGD && pgd_binds(dec, b)) && loop_step(dec, b->target) < 0) {
		dec->ip = b->target;
		dec->loop.insns = b->ninsn;
		return -VMPT_ERR_LOOP;
	}
	it = emit_block(dec, b, b->ninsn);
	if (!it)
		return -VMPT_ERR_NOMEM;
	ret = leave_block(dec, b, it, want);
	if (ret < 0) {
		dec->ip = b->end_ip;	/* the error is at the branch */
		return ret;
	}
	/* Only a walk that goes on from b may use b's successors (a
	 * return's way on is set by went_back).
	 */
	if (dec->enabled && b->iclass != VMPT_IC_RET) {
		dec->prev = b;
		dec->prev_slot = dec->ip != b->next_ip;
	}
	return 0;
}
