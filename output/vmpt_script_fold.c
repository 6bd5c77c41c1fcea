/* SPDX-License-Identifier: MIT */
/* Blocks that print nothing (--itrace=e, the branches the c/r filters
 * leave out), folded into the stream's state: a batch at a time with the
 * state in locals (script_stream_items), or ahead on a decoding thread
 * into one item whose state is a function of the one before it
 * (script_stream_fold, for -j).  Each does what script_stream_item does
 * for every block, for the blocks it takes.
 */
#include "vmpt_script_int.h"

#include <stdint.h>

/* A folded item's mode: where perf's count since the timestamp starts. */
enum { FOLD_FROM_TS, FOLD_FROM_UNDECIDED, FOLD_FROM_NONE, FOLD_UNDECIDED_ON = 4 };

/* Which blocks script_stream_items may fold: none where instructions are
 * sampled or thread stacks kept; a taken one where its branch prints no
 * sample (the c/r filter, or no b); with PTWRITE emulation no jump (the
 * one over its magic starts it).  Where every branch prints, what is
 * left to fold is a not taken jcc here and there: not worth the look.
 */
uint32_t script_fold_mask(const struct vmpt_script_opts *o, int use_stacks)
{
	const struct vmpt_itrace *it = &o->it;
	uint32_t quiet = 0;

	if (it->insns || use_stacks)
		return 0;
	for (unsigned ic = VMPT_IC_OTHER; ic <= VMPT_IC_VMENTRY; ic++)
		if (!it->branches || script_branch_filtered(it, script_insn_flags(ic)))
			quiet |= 1u << ic;
	if (it->ptwrites)
		quiet &= ~(1u << VMPT_IC_JMP);
	return quiet;
}

/* What script_stream_item does for each of the blocks at it that print
 * nothing (c->fold, c->quiet_taken), with the state in locals: they are
 * most of a trace where only calls, errors or nothing print.  Stops
 * where more is due (an event, a sample, an error's skip, a held or CFE
 * sample to settle).  Returns how many items it took.
 */
static size_t fold_quiet_blocks(struct vmpt_consumer *c, const struct vmpt_flow_item *it,
				size_t n)
{
	/* decided_by_trace's classes */
	const uint32_t decided = ~(1u << VMPT_IC_JMP | 1u << VMPT_IC_CALL | 1u << VMPT_IC_OTHER);
	const struct vmpt_script_opts *o = c->o;
	uint64_t ts_time = c->ts_time, ts_insns = c->ts_insns, undecided = c->undecided;
	uint64_t ptq_ts = c->ptq_ts, insns = c->insns, est_cyc = c->est_cyc, branches = 0;
	uint64_t kernel_start = o->kernel_start;
	uint32_t quiet = c->quiet_taken;
	int est_tsc = o->est_tsc;
	const struct vmpt_flow_item *b;
	size_t i;

	if (!c->fold || c->held.on || c->have_cfe || c->err_offset >= 0 || c->eptw.on)
		return 0;
	for (i = 0; i < n; i++) {
		unsigned ic;

		b = &it[i];
		ic = b->iclass;
		if (b->kind != VMPT_FLOW_BLOCK || (b->taken && !(quiet >> ic & 1)))
			break;
		/* track_block_time, on_block */
		if (b->time != ts_time) {
			ts_time = b->time;
			ts_insns = undecided;
		}
		ts_insns += b->ninsn;
		undecided = decided >> ic & 1 ? 0 : undecided + b->ninsn;
		insns += b->ninsn;
		if (b->cyc && b->cyc_est && (b->taken || ic != VMPT_IC_JCC))
			est_cyc = b->cyc;
		if (!b->taken)
			continue;
		/* branch_time */
		branches++;
		if (est_tsc && b->to && b->to < kernel_start &&
		    (!b->end_ip || b->end_ip >= kernel_start)) {
			uint64_t est = ts_insns << 1;

			if (c->cbr && o->max_nonturbo)
				est = est * o->max_nonturbo / c->cbr;
			ptq_ts = ts_time + est;
		} else if (b->time > ptq_ts) {
			ptq_ts = b->time;
		}
	}
	if (!i)
		return 0;
	b = &it[i - 1];
	/* on_block's times: the block's, and the one's before it */
	c->insn_time = i > 1 ? it[i - 2].time : c->have_block ? c->block_time : b->time;
	c->block_time = b->time;
	c->have_block = 1;
	c->ts_time = ts_time;
	c->ts_insns = ts_insns;
	c->undecided = undecided;
	c->ptq_ts = ptq_ts;
	c->stats.insns += insns - c->insns;
	c->insns = insns;
	c->est_cyc = est_cyc;
	c->stats.branches += branches;
	c->from_nr = c->nr;
	c->next_time = b->time;
	script_block_left(c, b);
	return i;
}

/* The state a VMPT_FLOW_FOLDED item of script_stream_fold's leaves (its
 * fields: see there), from the state the block before it left.
 */
void script_apply_folded(struct vmpt_consumer *c, const struct vmpt_flow_item *f)
{
	unsigned ti_from = f->mode & 3;
	uint64_t ti = (ti_from == FOLD_FROM_TS ? c->ts_insns :
		       ti_from == FOLD_FROM_UNDECIDED ? c->undecided : 0) + f->ip;
	uint64_t undecided = (f->mode & FOLD_UNDECIDED_ON ? c->undecided : 0) + f->end_ip;

	c->ts_time = f->time;
	c->ts_insns = ti;
	c->undecided = undecided;
	if (f->folded > c->ptq_ts)
		c->ptq_ts = f->folded;
	c->insns += f->ninsn;
	c->stats.insns += f->ninsn;
	c->stats.branches += (unsigned)f->err;
	if (f->cyc_est)
		c->est_cyc = f->cyc;
	c->insn_time = f->payload;
	c->block_time = f->time;
	c->have_block = 1;
	c->from_nr = c->nr;
	c->next_time = f->time;
	c->last_iclass = f->iclass;
	c->walk_to = f->to;
	c->have_stopped = 0;
}

/* fold_quiet_blocks on a decoding thread (vmpt_consumer_ops.fold): the
 * blocks after a block (*sum, then the folded item made of them) as one
 * item, whose state is a function of the one that block leaves (its time
 * is the block's, its counts not known yet): perf's count since the
 * timestamp (ts_insns) as the stream's count then (FOLD_FROM_TS), its
 * undecided count (FOLD_FROM_UNDECIDED) or nothing, plus ip; the
 * undecided count as the stream's plus end_ip, or end_ip alone.  Stops
 * before a block that prints, sets the time from perf's estimate, ends
 * the trace, or was cut (a seam may join it to the next piece's first).
 * The item: ninsn instructions, err taken branches, folded their latest
 * time, cyc the estimate's cycle count (cyc_est: one came), payload the
 * time of the block before the last; time, offset, iclass, to and nr the
 * last block's.
 */
size_t script_stream_fold(const struct vmpt_consumer *c, struct vmpt_flow_item *sum,
			  const struct vmpt_flow_item *it, size_t n)
{
	const uint32_t decided = ~(1u << VMPT_IC_JMP | 1u << VMPT_IC_CALL | 1u << VMPT_IC_OTHER);
	const struct vmpt_script_opts *o = c->o;
	uint64_t t, prev_t = 0, ti, undecided, tmax, cyc;
	uint64_t total, branches;
	uint32_t quiet = c->quiet_taken;
	unsigned ti_from;
	int undecided_on, have_cyc, est_tsc = o->est_tsc;
	const struct vmpt_flow_item *b;
	size_t k;

	if (!c->fold || o->it.ptwrites)
		return 0;
	if (sum->kind == VMPT_FLOW_FOLDED) {
		t = sum->time;
		prev_t = sum->payload;
		ti = sum->ip;
		undecided = sum->end_ip;
		tmax = sum->folded;
		cyc = sum->cyc;
		have_cyc = sum->cyc_est;
		total = sum->ninsn;
		branches = (uint64_t)sum->err;
		ti_from = sum->mode & 3;
		undecided_on = !!(sum->mode & FOLD_UNDECIDED_ON);
	} else {
		t = sum->time;
		ti = undecided = tmax = cyc = total = branches = 0;
		have_cyc = 0;
		ti_from = FOLD_FROM_TS;
		undecided_on = 1;
	}
	for (k = 0; k < n; k++) {
		unsigned ic;

		b = &it[k];
		ic = b->iclass;
		if (b->kind != VMPT_FLOW_BLOCK || (b->taken && !(quiet >> ic & 1)) ||
		    /* cut (a seam may join it), or tracing stopped there */
		    (!b->taken && (ic != VMPT_IC_JCC || !b->to)) ||
		    (b->taken && est_tsc && script_est_branch(c, b->end_ip, b->to)) ||
		    total + b->ninsn > UINT32_MAX || branches == INT32_MAX)
			break;
		if (b->time != t) {
			ti_from = undecided_on ? FOLD_FROM_UNDECIDED : FOLD_FROM_NONE;
			ti = undecided;
		}
		ti += b->ninsn;
		if (decided >> ic & 1) {
			undecided_on = 0;
			undecided = 0;
		} else {
			undecided += b->ninsn;
		}
		total += b->ninsn;
		if (b->cyc && b->cyc_est && (b->taken || ic != VMPT_IC_JCC)) {
			cyc = b->cyc;
			have_cyc = 1;
		}
		if (b->taken) {
			branches++;
			if (b->time > tmax)
				tmax = b->time;
		}
		prev_t = t;
		t = b->time;
	}
	if (!k)
		return 0;
	b = &it[k - 1];
	*sum = (struct vmpt_flow_item){
		.kind = VMPT_FLOW_FOLDED, .iclass = b->iclass, .taken = b->taken, .nr = b->nr,
		.mode = (uint8_t)(ti_from | (undecided_on ? FOLD_UNDECIDED_ON : 0)),
		.cyc_est = (uint8_t)have_cyc, .cyc = cyc, .err = (int)branches,
		.ninsn = (uint32_t)total, .folded = tmax, .ip = ti, .end_ip = undecided,
		.to = b->to, .payload = prev_t, .offset = b->offset, .time = t,
	};
	return k;
}

void script_stream_items(struct vmpt_consumer *c, const struct vmpt_flow_item *it, size_t n)
{
	int eptw = c->o->it.ptwrites;

	for (size_t i = 0; i < n; i++) {
		if (c->fold) {
			i += fold_quiet_blocks(c, it + i, n - i);
			if (i == n)
				break;
		}
		if (eptw)
			script_eptw_item(c, &it[i]);
		else
			script_stream_item(c, &it[i]);
	}
}
