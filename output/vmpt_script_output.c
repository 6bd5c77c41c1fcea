/* SPDX-License-Identifier: MIT */
/* perf script's samples of the instruction flow: which samples perf's
 * intel-pt.c synthesizes from each decoder state (instructions by period,
 * branches through the c/r filter, trace starts and ends, psb, cbr, power
 * and ptwrite events, errors), with perf's thread stacks for --call-trace,
 * callchains (g) and branch stacks (l), and perf script's sample filters.
 * vmpt_script_line.c lays them out.
 */
#include "vmpt_script_int.h"
#include "vmpt/error.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

uint64_t vmpt_script_time(const struct vmpt_script_opts *opts, uint64_t tsc)
{
	return opts->have_tc ? vmpt_perf_tsc_to_time(&opts->tc, tsc) : tsc;
}

/* ---- Samples ---- */



/* The time of a perf decoder state's samples (ptq->timestamp): it goes
 * forward only.
 */
uint64_t script_state_time(struct vmpt_consumer *c, uint64_t t)
{
	if (t > c->ptq_ts)
		c->ptq_ts = t;
	return c->ptq_ts;
}


static uint64_t branch_time(struct vmpt_consumer *c, uint64_t from, uint64_t to,
			    uint64_t t)
{
	if (script_est_branch(c, from, to)) {
		uint64_t est = c->ts_insns << 1;

		if (c->cbr && c->o->max_nonturbo)
			est = est * c->o->max_nonturbo / c->cbr;
		c->ptq_ts = c->ts_time + est;
		return c->ptq_ts;
	}
	return script_state_time(c, t);
}

/* The time state track_block_time and on_block (or script_track_time,
 * for an event) would leave at item it, the blocks waiting for a
 * period's time first: perf's timestamp and the instructions since.
 */
static void time_state_at(const struct vmpt_consumer *c, const struct vmpt_flow_item *it,
			  uint64_t *ts_time, uint64_t *ts_insns)
{
	uint64_t t = c->ts_time, n = c->ts_insns, undecided = c->undecided;

	for (unsigned i = 0; i < c->n_pending; i++) {
		const struct vmpt_flow_item *p = &c->pending[i];

		if (p->time != t) {
			t = p->time;
			n = undecided;
		}
		if (p->kind == VMPT_FLOW_BLOCK) {
			n += p->ninsn;
			undecided = script_decided_by_trace(p) ? 0 : undecided + p->ninsn;
		} else if (script_decided_by_trace(p)) {
			undecided = 0;
		}
	}
	if (it->time != t) {
		t = it->time;
		n = undecided;
	}
	if (it->kind == VMPT_FLOW_BLOCK)
		n += it->ninsn;
	*ts_time = t;
	*ts_insns = n;
}

int script_stream_estimate(struct vmpt_consumer *c, const struct vmpt_flow_item *it,
			   uint64_t *time)
{
	uint64_t from, to, ts_time, ts_insns, est;

	if (!c->o->est_tsc)
		return 0;
	if (it->kind == VMPT_FLOW_BLOCK && it->taken) {
		from = it->end_ip;
		to = it->to;
	} else if (it->kind == VMPT_FLOW_EVENT && it->ev == VMPT_EV_ENABLED &&
		   it->payload != VMPT_ENABLED_PSB) {
		from = 0;
		to = it->ip;
	} else {
		return 0;
	}
	if (!script_est_branch(c, from, to))
		return 0;
	time_state_at(c, it, &ts_time, &ts_insns);
	est = ts_insns << 1;
	if (c->cbr && c->o->max_nonturbo)
		est = est * c->o->max_nonturbo / c->cbr;
	*time = ts_time + est;
	return 1;
}


static struct script_stack *thread_stack(struct vmpt_consumer *c)
{
	if (!c->s->use_stacks)
		return NULL;
	return script_stack_get(&c->s->stacks, c->task.tid, c->task.cpu);
}

/* vmpt_script_opts.sample_fn's sample. */
static void hand_on(struct vmpt_consumer *c, const struct script_sample *smp)
{
	struct vmpt_script_sample out = {
		.ev = smp->ev, .task = &c->task, .ip = smp->ip, .addr = smp->addr,
		.time = smp->time, .period = smp->period, .flags = smp->flags,
		.insn_len = smp->insn_len, .guest = smp->guest,
		.addr_guest = smp->addr_guest, .vmcs = c->vmcs,
		.sec = smp->sec ? smp->sec : smp->ip ? script_find(c, smp->ip, smp->guest) : NULL,
		.addr_sec = smp->addr ? script_find(c, smp->addr, smp->addr_guest) : NULL,
		.insn_cnt = smp->ipc_insns, .cyc_cnt = smp->ipc_cyc,
		.trace_nr = c->trace_nr, .insns = c->insns, .cbr = c->cbr_seen,
	};

	c->o->sample_fn(c->o->sample_ctx, &out);
}

void script_deliver(struct vmpt_consumer *c, const struct script_sample *smp)
{
	const struct vmpt_itrace *it = &c->o->it;
	uint64_t chain[ITRACE_CHAIN_MAX + 2];
	struct script_branch br[ITRACE_BRANCHES_MAX];
	size_t nchain = 0, nbr = 0, depth = 0;
	struct script_stack *st = NULL;

	/* With --time, the states before the range made no samples, so the
	 * first one in it tells the CBR (perf's cbr_seen).
	 */
	if (c->o->filter.ntimes && smp->ev != VMPT_SE_CBR && smp->ev != VMPT_SE_PSB &&
	    c->cbr && c->cbr != c->cbr_seen && script_in_time(c, smp->time))
		script_cbr_at(c, c->cbr, smp->ip, smp->time, smp->mode, smp->flags);
	c->stats.synthesized++;
	if (!script_shown(c, smp))
		return;
	/* One thread stack, the host thread's, makes the callchains; perf
	 * script's call depth is the sample's thread's, and a guest
	 * sample's (the guest machine's thread) has none.
	 */
	if (c->s->use_stacks) {
		st = thread_stack(c);
		depth = st && !smp->guest ? st->n : 0;
	}
	if (smp->ev != VMPT_SE_BRANCHES) {
		if (it->callchain)
			nchain = script_stack_chain(st, smp->ip, c->o->kernel_start, chain,
						    it->callchain_sz + 1);
		if (it->last_branch)
			nbr = script_stack_branches(st, br, it->last_branch_sz);
	}
	if (c->o->sample_fn) {
		hand_on(c, smp);
		return;
	}
	script_print_sample_x(c, smp, chain, nchain, br, nbr, depth);
}

static void fill_ipc(struct vmpt_consumer *c, struct script_sample *smp, uint64_t cyc,
		     uint64_t insns, uint64_t *last_cyc, uint64_t *last_insns)
{
	/* perf's IPC since the last sample of the kind that showed one:
	 * cyc is the cycle count where perf's decoder samples IPC (0: it
	 * does not), insns the instructions so far.
	 */
	if (!(c->o->f.set[VMPT_OUT_HW] & VMPT_F_IPC) || !cyc || cyc == *last_cyc)
		return;
	smp->ipc_cyc = cyc - *last_cyc;
	smp->ipc_insns = insns - *last_insns;
	*last_cyc = cyc;
	*last_insns = insns;
}

/* The branch sample(s) of a state from `from` to `to` (0: tracing starts
 * or ends): in one machine, or, from the host into a guest or back, two
 * samples as perf ("perf cannot handle having different machines for ip
 * and addr").
 */
void script_branch_state(struct vmpt_consumer *c, const struct vmpt_flow_item *b,
			 uint64_t from, uint64_t to, uint32_t flags, int from_guest,
			 int to_guest, unsigned insn_len, uint64_t time)
{
	const struct vmpt_itrace *it = &c->o->it;
	struct script_sample smp;
	struct script_stack *st;
	int split, skip_from;

	time = branch_time(c, from, to, time);
	c->stats.branches++;
	/* perf's decoder synthesizes nothing outside --time's ranges: no
	 * samples, no thread stack.
	 */
	if (!script_in_time(c, time))
		return;
	st = thread_stack(c);
	if (st && script_stack_event(&c->s->stacks, st, flags, from, to, insn_len,
				     c->trace_nr) < 0)
		c->stats.errors[VMPT_ERR_NOMEM]++;
	/* A branch between machines is two samples, each counted by
	 * --itrace=s as perf counts them.
	 */
	split = from_guest != to_guest && from && to;
	if (!it->branches || script_branch_filtered(&c->o->it, flags) || (!split && script_skipped(c)))
		return;
	if (c->fast && (from_guest == to_guest || !from || !to) &&
	    script_fast_branch(c, from && b->kind == VMPT_FLOW_BLOCK ? b->sec : NULL,
			       from, from_guest, to, to_guest) >= 0) {
		c->stats.synthesized++;
		return;
	}
	/* The sample once it is made, without its synth text (a branch
	 * has none): zeroing that would cost as much as the rest.
	 */
	memset(&smp, 0, offsetof(struct script_sample, synth));
	smp.synth[0] = 0;
	smp.synth_len = 0;
	smp.ev = VMPT_SE_BRANCHES;
	smp.ip = from;
	smp.addr = to;
	smp.flags = flags;
	smp.time = time;
	smp.period = 1;
	smp.mode = b->mode;
	smp.insn_len = insn_len;
	smp.guest = from_guest;
	smp.addr_guest = to_guest;
	smp.sec = from && b->kind == VMPT_FLOW_BLOCK ? b->sec : NULL;
	skip_from = split && script_skipped(c);
	if (!skip_from)
		fill_ipc(c, &smp, b->cyc_est ? c->est_cyc : b->cyc, c->insns, &c->br_cyc,
			 &c->br_insns);
	if (split) {
		smp.addr = 0;
		smp.addr_guest = from_guest;
		if (!skip_from)
			script_deliver(c, &smp);
		if (script_skipped(c))
			return;
		smp.ip = 0;
		smp.addr = to;
		smp.sec = NULL;
		smp.guest = smp.addr_guest = to_guest;
		smp.ipc_cyc = smp.ipc_insns = 0;
		script_deliver(c, &smp);
		return;
	}
	script_deliver(c, &smp);
}

/* perf's flags of a branch instruction (intel_pt_insn_type). */
uint32_t script_insn_flags(unsigned iclass)
{
	switch (iclass) {
	case VMPT_IC_JCC: return PF_BRANCH | PF_CONDITIONAL;
	case VMPT_IC_JMP:
	case VMPT_IC_JMP_IND:
	case VMPT_IC_FAR_JMP: return PF_BRANCH;
	/* perf's decoder takes far calls and rets as near ones. */
	case VMPT_IC_CALL:
	case VMPT_IC_CALL_IND:
	case VMPT_IC_FAR_CALL: return PF_BRANCH | PF_CALL;
	case VMPT_IC_RET:
	case VMPT_IC_FAR_RET: return PF_BRANCH | PF_RETURN;
	case VMPT_IC_INT: return PF_BRANCH | PF_CALL | PF_INTERRUPT;
	case VMPT_IC_SYSCALL: return PF_BRANCH | PF_CALL | PF_SYSCALLRET;
	case VMPT_IC_IRET: return PF_BRANCH | PF_RETURN | PF_INTERRUPT;
	case VMPT_IC_SYSRET: return PF_BRANCH | PF_RETURN | PF_SYSCALLRET;
	case VMPT_IC_VMENTRY: return PF_BRANCH | PF_CALL | PF_VMENTRY;
	default: return 0;
	}
}


/* Instructions to the next time-period sample, as perf's decoder
 * counts them: the timestamp plus one tick per instruction since it; a
 * sample when that enters a new period (after the first one entered).
 */
static uint64_t period_next(struct vmpt_consumer *c)
{
	uint64_t ts = c->p_ts + c->p_cnt, masked = ts & c->p_mask;

	if (c->p_cont) {
		if (masked > c->p_last)
			return 1;
	} else {
		ts++;
		masked = ts & c->p_mask;
		if (masked > c->p_last) {
			c->p_last = masked;
			c->p_cont = 1;
		}
	}
	if (masked < c->p_last)
		return c->p_ticks;
	return c->p_ticks - (ts - masked);
}

static void period_sampled(struct vmpt_consumer *c)
{
	uint64_t masked = (c->p_ts + c->p_cnt) & c->p_mask;

	if (masked > c->p_last)
		c->p_last = masked;
	else
		c->p_last += c->p_ticks;
}

int script_time_period(const struct vmpt_consumer *c)
{
	const struct vmpt_itrace *it = &c->o->it;

	return it->period_type != VMPT_ITRACE_PERIOD_INSNS;
}

static void insn_sample(struct vmpt_consumer *c, const struct vmpt_flow_item *b,
			uint32_t i, uint64_t ip, uint64_t cyc)
{
	struct script_sample smp = {
		.ev = VMPT_SE_INSTRUCTIONS, .ip = ip, .sec = b->sec, .mode = b->mode,
		.insn_len = b->isize[i], .guest = c->nr,
	};
	uint64_t tot = c->insns + i + 1;

	/* The branch's state is the last instruction's: its time too, as
	 * of the packet that decided it (perf's walk updates the sample time
	 * once the trace decided a branch).
	 */
	if (i + 1 == b->ninsn && b->taken)
		smp.time = branch_time(c, b->end_ip, b->to, script_decided_by_trace(b) ?
				       b->time : c->insn_time);
	else if (i + 1 == b->ninsn && b->iclass == VMPT_IC_JCC)
		smp.time = script_state_time(c, b->time);
	else
		smp.time = script_state_time(c, c->insn_time);

	/* perf's state at a branch: its flags, and its target as addr. */
	if (ip == b->end_ip) {
		smp.flags = script_insn_flags(b->iclass) | (script_stopped_at(b) ? PF_TRACE_END : 0);
		smp.addr = b->taken ? b->to : 0;
		/* A VM entry goes into the guest (perf's to_nr). */
		smp.addr_guest = c->nr || b->iclass == VMPT_IC_VMENTRY;
	}
	/* Outside --time's ranges perf's decoder makes no sample: the
	 * period counts on to the next.
	 */
	if (!script_in_time(c, smp.time))
		return;
	smp.period = tot - c->last_insn_cnt;
	if (ip == b->end_ip && !b->taken && b->iclass != VMPT_IC_OTHER) {
		c->held.on = 1;
		c->held.fast = 0;
		c->held.smp = smp;
		c->held.cyc = cyc;
		c->held.tot = tot;
		c->held.prev_cnt = c->last_insn_cnt;
		c->last_insn_cnt = tot;
		return;
	}
	/* A sample s skips was never synthesized: the period counts on. */
	if (script_skipped(c))
		return;
	c->last_insn_cnt = tot;
	fill_ipc(c, &smp, cyc, tot, &c->in_cyc, &c->in_insns);
	script_deliver(c, &smp);
}

/* The instruction samples of block b on the fast path (c->fast, a
 * sample every period instructions): what insn_sample does, with the line made
 * straight away (or its text held, as insn_sample holds the sample).
 */
static void fast_insns(struct vmpt_consumer *c, const struct vmpt_flow_item *b,
		       uint64_t period)
{
	uint64_t ip = b->ip;
	uint32_t i = 0;

	/* No sample in the block: its count at once. */
	if (c->since + b->ninsn < period) {
		c->since += b->ninsn;
		return;
	}
	/* Every instruction: the ones before the block's last in a row. */
	if (period == 1 && b->ninsn > 1) {
		i = script_fast_run(c, b->sec, b->isize, &ip, b->ninsn - 1, c->nr);
		if (i) {
			script_state_time(c, c->insn_time);
			c->last_insn_cnt = c->insns + i;
			c->stats.synthesized += i;
		}
	}
	for (; i < b->ninsn; ip += b->isize[i], i++) {
		int last = i + 1 == b->ninsn, at_end = ip == b->end_ip;
		uint64_t time, addr = at_end && b->taken ? b->to : 0;
		struct held_sample *h;
		int n;

		if (++c->since < period)
			continue;
		c->since = 0;
		if (last && b->cyc_est && b->cyc)
			c->est_cyc = b->cyc;
		/* The sample's time as insn_sample's: it moves perf's
		 * state time, which later samples show.
		 */
		if (last && b->taken)
			time = branch_time(c, b->end_ip, b->to, script_decided_by_trace(b) ?
					   b->time : c->insn_time);
		else if (last && b->iclass == VMPT_IC_JCC)
			time = script_state_time(c, b->time);
		else
			time = script_state_time(c, c->insn_time);
		if (!(at_end && !b->taken && b->iclass != VMPT_IC_OTHER)) {
			if (script_fast_insn(c, b->sec, ip, addr, c->nr) < 0) {
				insn_sample(c, b, i, ip, last ? b->cyc : 0);
				continue;
			}
			c->last_insn_cnt = c->insns + i + 1;
			c->stats.synthesized++;
			continue;
		}
		/* Held as insn_sample holds it: its line's text aside.  A
		 * branch that ends the trace is insn_sample's (its addr, and
		 * a jcc's ip, come with the TIP.PGD).
		 */
		h = &c->held;
		n = script_stopped_at(b) ? -1 : script_fast_insn(c, b->sec, ip, addr, c->nr);
		if (n < 0) {
			insn_sample(c, b, i, ip, last ? b->cyc : 0);
			continue;
		}
		c->len -= (size_t)n;
		memcpy(h->text, c->buf + c->len, (size_t)n);
		h->text_len = (unsigned)n;
		h->on = 1;
		h->fast = 1;
		h->smp.ip = ip;
		h->smp.time = time;
		h->smp.flags = script_insn_flags(b->iclass) | (script_stopped_at(b) ? PF_TRACE_END : 0);
		h->prev_cnt = c->last_insn_cnt;
		c->last_insn_cnt = c->insns + i + 1;
	}
}

/* The next item came: the held sample is perf's unless that item is an
 * error at its instruction, which perf counts but does not sample.
 */
void script_settle_held(struct vmpt_consumer *c, const struct vmpt_flow_item *next)
{
	struct held_sample *h = &c->held;

	if (!h->on)
		return;
	h->on = 0;
	if (next && next->kind == VMPT_FLOW_EVENT && next->ev == VMPT_EV_ERROR &&
	    next->ip == h->smp.ip) {
		c->last_insn_cnt = h->prev_cnt;
		return;
	}
	/* Tracing stopped there: perf's state is the TIP.PGD's, its time,
	 * the IP it gives as addr (a jcc's sample is at it: perf 6.1 moves
	 * there first).
	 */
	if (next && next->kind == VMPT_FLOW_EVENT && next->ev == VMPT_EV_DISABLED &&
	    (h->smp.flags & PF_TRACE_END)) {
		h->smp.time = script_state_time(c, next->time);
		if (next->ip_valid && !h->fast) {
			h->smp.addr = next->ip;
			if (h->smp.flags & PF_CONDITIONAL) {
				h->smp.code_sec = h->smp.sec;
				h->smp.code_ip = h->smp.ip;
				h->smp.ip = next->ip;
				h->smp.sec = NULL;
			}
		}
	}
	if (h->fast) {
		script_fast_held(c);
		return;
	}
	if (script_skipped(c)) {
		c->last_insn_cnt = h->prev_cnt;
		return;
	}
	fill_ipc(c, &h->smp, h->cyc, h->tot, &c->in_cyc, &c->in_insns);
	script_deliver(c, &h->smp);
}



/* The instruction samples of block b (every one with every). */
static void sampled_insns(struct vmpt_consumer *c, const struct vmpt_flow_item *b, int every)
{
	const struct vmpt_itrace *it = &c->o->it;
	uint64_t ip = b->ip;

	/* No sample in the block: its count at once (what the loop does). */
	if (!every && script_time_period(c)) {
		if (!c->p_left && b->ninsn)
			c->p_left = period_next(c);
		if (c->p_left > b->ninsn) {
			c->p_cnt += b->ninsn;
			c->p_left -= b->ninsn;
			return;
		}
	} else if (!every && c->since + b->ninsn < (it->period ? it->period : 1)) {
		c->since += b->ninsn;
		return;
	}
	for (uint32_t i = 0; i < b->ninsn; i++) {
		int take;

		if (every) {
			take = 1;
		} else if (script_time_period(c)) {
			if (!c->p_left)
				c->p_left = period_next(c);
			c->p_cnt++;
			take = --c->p_left == 0;
			if (take)
				period_sampled(c);
		} else {
			take = ++c->since >= (it->period ? it->period : 1);
		}
		if (take) {
			int last = i + 1 == b->ninsn;
			uint64_t cyc = last ? b->cyc : 0;

			/* Estimating: the count of the last IPC point,
			 * at the last instruction the block's own.
			 */
			if (b->cyc_est) {
				if (last && b->cyc)
					c->est_cyc = b->cyc;
				cyc = c->est_cyc;
			}
			c->since = 0;
			insn_sample(c, b, i, ip, cyc);
		}
		ip += b->isize[i];
	}
}

/* The instruction samples of block b: by period, or every one.  Kept out
 * of line (as block_branch), so that on_block, which runs for every
 * block, stays small enough to be inlined where items are handed in.
 */
static __attribute__((noinline)) void block_insns(struct vmpt_consumer *c,
						   const struct vmpt_flow_item *b)
{
	const struct vmpt_itrace *it = &c->o->it;
	int every = script_time_period(c) && (!c->p_ticks || it->timeless || !b->time);

	if (script_time_period(c) && c->next_time != c->p_ts) {
		c->p_ts = c->next_time;
		c->p_cnt = 0;
	}
	/* perf's walk stops at every branch and counts anew. */
	c->p_left = 0;
	if (c->fast && (every || !script_time_period(c)))
		fast_insns(c, b, every ? 1 : it->period ? it->period : 1);
	else
		sampled_insns(c, b, every);
}

/* perf's timestamp_insn_cnt: instructions since the timestamp changed.
 * perf reads the timing packets before it walks the code up to the next
 * branch the trace decides: code after a direct branch counts for the
 * new timestamp already.
 */
static inline void track_block_time(struct vmpt_consumer *c, const struct vmpt_flow_item *b)
{
	if (b->time != c->ts_time) {
		c->ts_time = b->time;
		c->ts_insns = c->undecided;
	}
	c->undecided = script_decided_by_trace(b) ? 0 : c->undecided + b->ninsn;
}

/* The branch state a taken block ends in. */
static __attribute__((noinline)) void block_branch(struct vmpt_consumer *c,
						    const struct vmpt_flow_item *b)
{
	uint32_t flags = script_insn_flags(b->iclass);
	unsigned len = b->ninsn ? b->isize[b->ninsn - 1] : 0;

	if (b->iclass == VMPT_IC_VMENTRY && !c->nr)
		/* Into the guest (its PIP comes after this block). */
		script_branch_state(c, b, b->end_ip, b->to, flags, 0, 1, len, b->time);
	else
		script_branch_state(c, b, b->end_ip, b->to, flags, c->nr, c->nr, len, b->time);
}

/* A block's state, then its samples.  The state is kept for every block
 * (the events' samples show it), so its cost is per block whatever is
 * printed: tests and calls only where a sample may come.
 */
static void on_block(struct vmpt_consumer *c, const struct vmpt_flow_item *b)
{
	/* Estimating, perf takes the count at a not taken jcc only when it
	 * samples that instruction (else its decoder has no state there).
	 */
	int est_point = b->cyc_est && b->cyc && (b->taken || b->iclass != VMPT_IC_JCC);

	if (c->held.on)
		script_settle_held(c, b);
	if (c->have_cfe)
		script_settle_cfe(c, b);
	track_block_time(c, b);
	c->from_nr = c->nr;
	c->ts_insns += b->ninsn;
	c->insn_time = c->have_block ? c->block_time : b->time;
	c->block_time = b->time;
	c->have_block = 1;
	c->stats.insns += b->ninsn;
	if (c->o->it.insns)
		block_insns(c, b);
	c->insns += b->ninsn;
	if (est_point)
		c->est_cyc = b->cyc;
	script_block_left(c, b);
	if (!b->taken)
		return;
	/* No branch samples, no thread stacks: the branch moves perf's
	 * state time, nothing else (script_branch_state's first steps).
	 */
	if (c->branches_quiet) {
		branch_time(c, b->end_ip, b->to, b->time);
		c->stats.branches++;
		return;
	}
	block_branch(c, b);
}


static void run_pending(struct vmpt_consumer *c, uint64_t next_time)
{
	c->next_time = next_time;
	for (unsigned i = 0; i < c->n_pending; i++) {
		if (c->pending[i].kind == VMPT_FLOW_BLOCK)
			on_block(c, &c->pending[i]);
		else
			script_on_event(c, &c->pending[i]);
	}
	c->n_pending = 0;
}

void script_stream_item(struct vmpt_consumer *c, const struct vmpt_flow_item *it)
{
	const struct vmpt_itrace *itr = &c->o->it;

	if (it->kind == VMPT_FLOW_FOLDED) {
		script_apply_folded(c, it);
		return;
	}

	if (c->err_offset >= 0 && it->kind == VMPT_FLOW_BLOCK) {
		c->stats.skipped += it->offset - (uint64_t)c->err_offset;
		c->err_offset = -1;
	}
	if (itr->insns && script_time_period(c) && c->p_ticks) {
		/* perf walks to a PSB+'s FUP before it reads the PSB+:
		 * that walk's periods count in the time before its TSC (an
		 * MTC's after the last branch), and the TSC counts anew.
		 */
		if (it->kind == VMPT_FLOW_EVENT && it->ev == VMPT_EV_PSB && it->ip_valid) {
			if (c->n_pending)
				run_pending(c, it->time_before);
			c->p_ts = it->time;
			c->p_cnt = 0;
		}
		if (!script_decided_by_trace(it)) {
			if (c->n_pending == sizeof(c->pending) / sizeof(c->pending[0]))
				run_pending(c, c->pending[0].time);
			c->pending[c->n_pending++] = *it;
			return;
		}
		run_pending(c, it->time);
	}
	c->next_time = it->time;
	if (it->kind == VMPT_FLOW_BLOCK)
		on_block(c, it);
	else
		script_on_event(c, it);
}


/* The time state at item it (track_block_time's for blocks). */
void script_track_time(struct vmpt_consumer *c, const struct vmpt_flow_item *it)
{
	if (it->kind == VMPT_FLOW_BLOCK) {
		track_block_time(c, it);
		return;
	}
	/* perf read the timing packet before it walked the code since the
	 * last branch the trace decided (to an interrupt's FUP, say): that
	 * code counts for the new timestamp, as at a block.
	 */
	if (it->time != c->ts_time) {
		c->ts_time = it->time;
		c->ts_insns = c->undecided;
	}
	/* A PSB+'s TSC counts anew: perf walked to its FUP before. */
	if (it->kind == VMPT_FLOW_EVENT && it->ev == VMPT_EV_PSB && it->time)
		c->ts_insns = 0;
	if (script_decided_by_trace(it))
		c->undecided = 0;
	/* Tracing starts: perf walks the code after it in the time it read
	 * the TIP.PGE at, until the trace decides the next branch.
	 */
	if (it->kind == VMPT_FLOW_EVENT && it->ev == VMPT_EV_ENABLED) {
		c->block_time = it->time;
		c->have_block = 1;
	}
	if (it->kind == VMPT_FLOW_EVENT && it->ev == VMPT_EV_PSB && it->to)
		c->cbr = (unsigned)it->to;
	else if (it->kind == VMPT_FLOW_EVENT && it->ev == VMPT_EV_CBR)
		c->cbr = (unsigned)it->payload;
}

void script_stream_drain(struct vmpt_consumer *c, uint64_t next_time)
{
	if (c->n_pending)
		run_pending(c, next_time ? next_time : c->pending[c->n_pending - 1].time);
	script_settle_held(c, NULL);
	script_settle_cfe(c, NULL);
}
