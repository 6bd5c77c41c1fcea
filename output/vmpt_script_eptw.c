/* SPDX-License-Identifier: MIT */
/* perf's emulated PTWRITE (perf-intel-pt(1), "Emulated PTWRITE"): a
 * function that jumps over the magic 0f 0b "perf,ptwrite  " and then
 * gives a 64-bit payload in its next 64 conditional jumps (taken = 1,
 * the most significant bit first).  perf's decoder reports a ptwrite at
 * the jump's target (IP: 0) once it has the 64 TNT bits, with no TIP,
 * overflow or error between; otherwise nothing.  The items after the
 * jump wait here until the payload is known, so the sample comes before
 * theirs, as perf's.
 */
#include "vmpt_script_int.h"

#include <string.h>

static const uint8_t eptw_magic[16] = "\x0f\x0bperf,ptwrite  ";

/* Does block b end in the jump over the magic? */
static int eptw_jump(const struct vmpt_flow_item *b)
{
	const struct vmpt_section *sec = b->sec;
	uint64_t after;

	if (b->kind != VMPT_FLOW_BLOCK || b->iclass != VMPT_IC_JMP || !b->ninsn || !sec)
		return 0;
	after = b->end_ip + b->isize[b->ninsn - 1];
	if (b->to != after + sizeof(eptw_magic) || after < sec->vaddr ||
	    after + sizeof(eptw_magic) > sec->vaddr + sec->size)
		return 0;
	return !memcmp(sec->data + (after - sec->vaddr), eptw_magic, sizeof(eptw_magic));
}

/* Items that end perf's look-ahead for the payload's bits. */
static int eptw_breaks(const struct vmpt_flow_item *it)
{
	if (it->kind == VMPT_FLOW_BLOCK)
		return it->iclass != VMPT_IC_JCC && it->iclass != VMPT_IC_JMP &&
		       it->iclass != VMPT_IC_CALL && it->iclass != VMPT_IC_OTHER;
	switch (it->ev) {
	case VMPT_EV_ENABLED: case VMPT_EV_DISABLED: case VMPT_EV_ASYNC_DISABLED:
	case VMPT_EV_ASYNC_BRANCH: case VMPT_EV_OVERFLOW: case VMPT_EV_ERROR:
		return 1;
	default:
		return 0;
	}
}

/* The payload is complete, or will never be: the sample (if any), then
 * the items that waited.
 */
static void eptw_end(struct vmpt_consumer *c, int complete)
{
	struct script_eptw *e = &c->eptw;

	e->on = 0;
	if (complete)
		script_ptwrite_sample(c, e->ip, e->time, e->payload);
	for (unsigned i = 0; i < e->n; i++)
		script_eptw_item(c, &e->items[i]);
	e->n = 0;
}

void script_eptw_item(struct vmpt_consumer *c, const struct vmpt_flow_item *it)
{
	struct script_eptw *e = &c->eptw;

	if (!e->on) {
		script_stream_item(c, it);
		/* perf's state at the jump (its branch sample's time) */
		if (c->o->it.ptwrites && eptw_jump(it))
			*e = (struct script_eptw){ .on = 1, .ip = it->to, .time = c->ptq_ts };
		return;
	}
	if (eptw_breaks(it) || e->n == SCRIPT_EPTW_ITEMS) {
		eptw_end(c, 0);
		script_eptw_item(c, it);
		return;
	}
	e->items[e->n++] = *it;
	if (it->kind == VMPT_FLOW_BLOCK && it->iclass == VMPT_IC_JCC) {
		e->payload = e->payload << 1 | it->taken;
		if (++e->bits == 64)
			eptw_end(c, 1);
	}
}

void script_eptw_drain(struct vmpt_consumer *c, uint64_t next_time)
{
	/* the trace's end: the payload will not come */
	if (c->eptw.on && !next_time)
		eptw_end(c, 0);
	script_stream_drain(c, next_time);
}
