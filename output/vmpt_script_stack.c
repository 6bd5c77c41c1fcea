/* SPDX-License-Identifier: MIT */
/* Thread call stacks and last-branch rings, with perf's rules
 * (tools/perf/util/thread-stack.c): see vmpt_script_stack.h.
 */
#include "vmpt_script_stack.h"
#include "vmpt/error.h"

#include <stdlib.h>
#include <string.h>

struct script_stack *script_stack_get(struct script_stacks *all, int tid, int cpu)
{
	struct script_stack *st;

	if (tid != 0)
		cpu = -1;	/* only the idle task runs on several CPUs at once */
	for (size_t i = 0; i < all->n; i++)
		if (all->v[i].tid == tid && all->v[i].cpu == cpu)
			return &all->v[i];
	if (all->n == all->cap) {
		size_t cap = all->cap ? 2 * all->cap : 16;
		struct script_stack *v = realloc(all->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		all->v = v;
		all->cap = cap;
	}
	st = &all->v[all->n];
	memset(st, 0, sizeof(*st));
	st->tid = tid;
	st->cpu = cpu;
	st->br_sz = all->br_sz;
	if (st->br_sz) {
		st->br = calloc(st->br_sz, sizeof(*st->br));
		if (!st->br)
			return NULL;
	}
	all->n++;
	return st;
}

static void flush(struct script_stack *st)
{
	st->n = 0;
	st->br_n = 0;
	st->br_pos = 0;
}

/* Pop down to ret if it is on the stack (perf: thread_stack__pop). */
static void pop_to(struct script_stack *st, uint64_t ret)
{
	for (size_t i = st->n; i; i--)
		if (st->frames[i - 1].ret == ret) {
			st->n = i - 1;
			return;
		}
}

int script_stack_event(struct script_stacks *all, struct script_stack *st,
		       uint32_t flags, uint64_t from, uint64_t to, unsigned insn_len,
		       uint64_t trace_nr)
{
	(void)all;
	if (trace_nr != st->trace_nr) {
		if (st->trace_nr)
			flush(st);
		st->trace_nr = trace_nr;
	}
	if (st->br_sz) {
		struct script_branch *b;

		if (!st->br_pos)
			st->br_pos = st->br_sz;
		b = &st->br[--st->br_pos];
		b->from = from;
		b->to = to;
		b->abort = !!(flags & PF_TX_ABORT);
		b->in_tx = !!(flags & PF_IN_TX);
		if (st->br_n < st->br_sz)
			st->br_n++;
	}
	if (flags & PF_CALL) {
		uint64_t ret = from + insn_len;

		if (!to || ret == to)
			return 0;	/* zero-length calls are no calls */
		if (st->n == st->cap) {
			size_t cap = st->cap ? 2 * st->cap : 64;
			struct script_frame *f = realloc(st->frames, cap * sizeof(*f));

			if (!f)
				return -VMPT_ERR_NOMEM;
			st->frames = f;
			st->cap = cap;
		}
		st->frames[st->n].ret = ret;
		st->frames[st->n].trace_end = !!(flags & PF_TRACE_END);
		st->n++;
	} else if (flags & PF_TRACE_BEGIN) {
		/* Tracing may have started right after a return, and a call
		 * made as tracing ended will not come back.
		 */
		pop_to(st, to);
		while (st->n && st->frames[st->n - 1].trace_end)
			st->n--;
	} else if ((flags & PF_RETURN) && from) {
		pop_to(st, to);
	}
	return 0;
}

static uint64_t context(uint64_t ip, uint64_t kernel_start)
{
	return kernel_start && ip >= kernel_start ? SCRIPT_CONTEXT_KERNEL :
	       SCRIPT_CONTEXT_USER;
}

size_t script_stack_chain(const struct script_stack *st, uint64_t ip,
			  uint64_t kernel_start, uint64_t *chain, size_t sz)
{
	uint64_t last;
	size_t i, j;

	if (sz < 2)
		return 0;
	chain[0] = last = context(ip, kernel_start);
	chain[1] = ip;
	if (!st)
		return 2;
	for (i = 2, j = 1; i < sz && j <= st->n; i++, j++) {
		uint64_t ret = st->frames[st->n - j].ret, ctx = context(ret, kernel_start);

		if (ctx != last) {
			if (i >= sz - 1)
				break;
			chain[i++] = ctx;
			last = ctx;
		}
		chain[i] = ret;
	}
	return i;
}

size_t script_stack_branches(const struct script_stack *st, struct script_branch *out,
			     size_t sz)
{
	size_t n = st && st->br_n < sz ? st->br_n : st ? sz : 0;

	for (size_t k = 0; k < n; k++)
		out[k] = st->br[(st->br_pos + k) % st->br_sz];
	return n;
}

void script_stacks_free(struct script_stacks *all)
{
	for (size_t i = 0; i < all->n; i++) {
		free(all->v[i].frames);
		free(all->v[i].br);
	}
	free(all->v);
	memset(all, 0, sizeof(*all));
}
