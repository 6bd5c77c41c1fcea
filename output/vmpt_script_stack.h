/* SPDX-License-Identifier: MIT */
/* Each thread's call stack and last branches as perf's thread-stack.c
 * keeps them from the branches decoded (thread_stack__event): the depth
 * --call-trace indents by, the callchains of --itrace=g and the branch
 * stacks of --itrace=l.  Internal to output/.
 */
#ifndef VMPT_SCRIPT_STACK_H
#define VMPT_SCRIPT_STACK_H

#include <stddef.h>
#include <stdint.h>

/* perf's sample flags (PERF_IP_FLAG_*). */
enum {
	PF_BRANCH = 1 << 0, PF_CALL = 1 << 1, PF_RETURN = 1 << 2,
	PF_CONDITIONAL = 1 << 3, PF_SYSCALLRET = 1 << 4, PF_ASYNC = 1 << 5,
	PF_INTERRUPT = 1 << 6, PF_TX_ABORT = 1 << 7, PF_TRACE_BEGIN = 1 << 8,
	PF_TRACE_END = 1 << 9, PF_IN_TX = 1 << 10, PF_VMENTRY = 1 << 11,
	PF_VMEXIT = 1 << 12,
};

struct script_branch {
	uint64_t from, to;
	uint8_t in_tx, abort;
};

struct script_stack {
	int tid, cpu;			/* cpu: the idle task's stack is per CPU */
	uint64_t trace_nr;		/* the trace its entries come from */
	struct script_frame { uint64_t ret; uint8_t trace_end; } *frames;
	size_t n, cap;
	struct script_branch *br;	/* ring, newest at br_pos */
	size_t br_n, br_pos, br_sz;
};

struct script_stacks {
	struct script_stack *v;
	size_t n, cap;
	unsigned br_sz;			/* 0: no branch stacks */
};

/* The stack of tid (on cpu, for the idle task).  NULL: no memory. */
struct script_stack *script_stack_get(struct script_stacks *all, int tid, int cpu);

/* A branch of the thread, as thread_stack__event: calls push their
 * return address, returns and trace starts pop to it; a trace other than
 * the stack's (trace_nr) empties it first.
 */
int script_stack_event(struct script_stacks *all, struct script_stack *st,
		       uint32_t flags, uint64_t from, uint64_t to, unsigned insn_len,
		       uint64_t trace_nr);

/* perf's callchain of a sample at ip: context markers and return
 * addresses, at most sz entries (perf's callchain_sz + 1).  Returns the
 * number of entries in chain.
 */
size_t script_stack_chain(const struct script_stack *st, uint64_t ip,
			  uint64_t kernel_start, uint64_t *chain, size_t sz);

/* The last branches, newest first, at most sz.  Returns how many. */
size_t script_stack_branches(const struct script_stack *st, struct script_branch *out,
			     size_t sz);

void script_stacks_free(struct script_stacks *all);

/* perf's callchain context markers (PERF_CONTEXT_HV, _KERNEL, _USER, _MAX). */
#define SCRIPT_CONTEXT_HV ((uint64_t)-32)
#define SCRIPT_CONTEXT_KERNEL ((uint64_t)-128)
#define SCRIPT_CONTEXT_USER ((uint64_t)-512)
#define SCRIPT_CONTEXT_MAX ((uint64_t)-4095)

#endif
