/* SPDX-License-Identifier: MIT */
/* Each thread's call stack from its branch samples, by the rules of
 * perf's thread-stack.c with a call/return processor (what perf's
 * export-to-sqlite.py gets for its calls table): calls push, returns pop
 * to the matching return address (ending what they skip as "no return"),
 * a return with no call seen pushes its target below ("no call"), a jump
 * to the start of another function is a call that returns with the
 * function it left ("jump"), trace ends push a placeholder the next trace
 * start pops, a new trace (perf's trace_nr) or an exec ends everything;
 * x86 retpolines are taken out.  Call paths are perf's call_path tree.
 */
#include "vmpt_export_int.h"
#include "vmpt/error.h"
#include "vmpt_script_stack.h"

#include <stdlib.h>
#include <string.h>

/* perf's call_return flags. */
enum { CR_NO_CALL = 1, CR_NO_RETURN = 2, CR_NON_CALL = 4 };

static struct export_call_path *path_of(struct vmpt_export *x, struct export_call_path *parent,
					struct export_sym *sym, uint64_t ip)
{
	int in_kernel = ip >= x->kernel_start;
	struct export_call_path *cp;

	if (sym)
		ip = 0;
	cp = export_map_get(&x->paths, (uint64_t)(uintptr_t)parent, (uint64_t)(uintptr_t)sym, ip);
	if (cp)
		return cp;
	cp = calloc(1, sizeof(*cp));
	if (!cp || export_map_put(&x->paths, (uint64_t)(uintptr_t)parent,
				  (uint64_t)(uintptr_t)sym, ip, cp) < 0) {
		free(cp);
		export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
		return NULL;
	}
	cp->parent = parent;
	cp->sym = sym;
	cp->ip = ip;
	cp->in_kernel = in_kernel;
	cp->depth = parent->depth + 1;
	return cp;
}

/* perf's db_export__call_path: parents first. */
static void path_export(struct vmpt_export *x, struct export_call_path *cp)
{
	if (cp->db_id)
		return;
	if (cp->parent)
		path_export(x, cp->parent);
	cp->db_id = ++x->last_id[EK_CALL_PATH];
	x->stats.call_paths++;
	if (x->ops->call_path)
		x->ops->call_path(x, cp);
}

static int push(struct vmpt_export *x, struct export_thread *t, uint64_t ret_addr,
		uint64_t time, uint64_t ref, struct export_call_path *cp, int no_call,
		int trace_end)
{
	struct export_entry *e;

	if (!cp)
		return -1;
	if (t->cnt == t->sz) {
		size_t sz = t->sz ? t->sz * 2 : 64;
		struct export_entry *s = realloc(t->stack, sz * sizeof(*s));

		if (!s) {
			export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
			return -1;
		}
		t->stack = s;
		t->sz = sz;
	}
	e = &t->stack[t->cnt++];
	*e = (struct export_entry){
		.ret_addr = ret_addr, .time = time, .ref = ref,
		.branch_count = t->branch_count, .insn_count = t->insn_count,
		.cyc_count = t->cyc_count, .cp = cp, .no_call = (uint8_t)no_call,
		.trace_end = (uint8_t)trace_end,
	};
	if (x->ops->push)
		x->ops->push(x, t, e, time);
	return 0;
}

/* The top entry returns (perf's thread_stack__call_return). */
static void call_return(struct vmpt_export *x, struct export_thread *t, uint64_t time,
			uint64_t ref, int no_return)
{
	struct export_entry *e = &t->stack[--t->cnt];
	struct export_call_return cr = {
		.thread = t, .comm = t->comm, .cp = e->cp, .call_time = e->time,
		.return_time = time, .branch_count = t->branch_count - e->branch_count,
		.insn_count = t->insn_count - e->insn_count,
		.cyc_count = t->cyc_count - e->cyc_count, .db_id = e->db_id,
		.call_ref = e->ref, .return_ref = ref,
		.flags = (e->no_call ? CR_NO_CALL : 0) | (no_return ? CR_NO_RETURN : 0) |
			 (e->non_call ? CR_NON_CALL : 0),
	};

	if (x->ops->pop)
		x->ops->pop(x, t, e, time);
	if (!x->ops->call_return)
		return;
	/* perf's db_export__call_return: the parent's id is given before
	 * the parent itself is complete.
	 */
	path_export(x, cr.cp);
	if (!cr.db_id)
		cr.db_id = ++x->last_id[EK_CALL_RETURN];
	if (t->cnt) {
		struct export_entry *parent = &t->stack[t->cnt - 1];

		if (!parent->db_id)
			parent->db_id = ++x->last_id[EK_CALL_RETURN];
		cr.parent_db_id = parent->db_id;
	}
	x->stats.calls++;
	x->ops->call_return(x, &cr);
}

/* An entry dropped without a return (retpolines): timelines end it. */
static void drop(struct vmpt_export *x, struct export_thread *t, uint64_t time)
{
	struct export_entry *e = &t->stack[--t->cnt];

	if (x->ops->pop)
		x->ops->pop(x, t, e, time);
}

void export_stack_flush(struct vmpt_export *x, struct export_thread *t)
{
	while (t->cnt)
		call_return(x, t, t->last_time, 0, 1);
}

/* Returns 1 when nothing on the stack matched (perf's pop_cp). */
static int pop_to(struct vmpt_export *x, struct export_thread *t, uint64_t ret_addr,
		  uint64_t time, uint64_t ref, const struct export_sym *sym)
{
	if (!t->cnt)
		return 1;
	if (t->cnt == 1 && t->stack[0].cp->sym == sym) {
		call_return(x, t, time, ref, 0);
		return 0;
	}
	if (t->stack[t->cnt - 1].ret_addr == ret_addr && !t->stack[t->cnt - 1].non_call) {
		call_return(x, t, time, ref, 0);
		return 0;
	}
	for (size_t i = t->cnt - 1; i--;) {
		if (t->stack[i].ret_addr != ret_addr || t->stack[i].non_call)
			continue;
		while (t->cnt > i + 1)
			call_return(x, t, time, ref, 1);
		call_return(x, t, time, ref, 0);
		return 0;
	}
	return 1;
}

static int in_kernel(const struct export_thread *t)
{
	return t->cnt && t->stack[t->cnt - 1].cp->in_kernel;
}

/* A return with no call on the stack (perf's no_call_return). */
static void no_call_return(struct vmpt_export *x, struct export_thread *t,
			   const struct export_sample *es)
{
	const struct vmpt_script_sample *s = es->s;
	uint64_t ks = x->kernel_start, tm = es->time, ref = es->db_id;
	struct export_call_path *parent, *cp;

	if (s->ip >= ks && s->addr < ks) {
		/* back to user space: the kernel's entries end */
		while (in_kernel(t))
			call_return(x, t, tm, ref, 1);
		if (!t->cnt) {
			push(x, t, 0, tm, ref, path_of(x, &x->root, es->to_sym, s->addr), 1, 0);
			return;
		}
	} else if (in_kernel(t) && s->ip < ks) {
		while (in_kernel(t))
			call_return(x, t, tm, ref, 1);
	}
	parent = t->cnt ? t->stack[t->cnt - 1].cp : &x->root;
	if (parent->sym == es->sym) {
		/* at the bottom: the call was before the trace started */
		if (t->cnt == 1)
			call_return(x, t, tm, ref, 0);
		if (!t->cnt) {
			push(x, t, s->addr, tm, ref, path_of(x, &x->root, es->to_sym, s->addr), 1, 0);
			return;
		}
		/* a return used as a jump (retpoline) */
		if (push(x, t, 0, tm, ref, path_of(x, parent, es->to_sym, s->addr), 1, 0) == 0)
			t->stack[t->cnt - 1].non_call = 1;
		return;
	}
	/* parent has not returned: push to, push and pop from */
	cp = path_of(x, parent, es->to_sym, s->addr);
	if (push(x, t, s->addr, tm, ref, cp, 1, 0) < 0)
		return;
	if (push(x, t, s->ip, tm, ref, path_of(x, cp, es->sym, s->ip), 1, 0) < 0)
		return;
	call_return(x, t, tm, ref, 0);
}

static int is_retpoline(const char *name)
{
	return strstr(name, "__x86_indirect_thunk_") == name ||
	       !strcmp(name, "__indirect_thunk_start");
}

/* perf's thread_stack__x86_retpoline: the thunk leaves the stack. */
static void retpoline(struct vmpt_export *x, struct export_thread *t,
		      const struct export_sample *es)
{
	struct export_sym *sym = t->stack[t->cnt - 1].cp->sym, *tsym = es->to_sym;
	struct export_call_path *cp;

	if (sym && is_retpoline(sym->name)) {
		drop(x, t, es->time);
		sym = t->stack[t->cnt - 2].cp->sym;
		if (sym && sym == tsym && es->s->addr != tsym->addr) {
			drop(x, t, es->time);
			return;
		}
	} else if (sym && sym == tsym) {
		drop(x, t, es->time);
		return;
	}
	cp = path_of(x, t->stack[t->cnt - 2].cp, tsym, es->s->addr);
	if (!cp)
		return;
	if (x->ops->pop)
		x->ops->pop(x, t, &t->stack[t->cnt - 1], es->time);
	t->stack[t->cnt - 1].cp = cp;
	if (x->ops->push)
		x->ops->push(x, t, &t->stack[t->cnt - 1], es->time);
}

void export_stack_sample(struct vmpt_export *x, struct export_thread *t,
			 const struct export_sample *es)
{
	const struct vmpt_script_sample *s = es->s;
	uint64_t ref = es->db_id, tm = es->time;
	int rstate = t->retpoline;

	if (x->ops->weigh) {
		uint64_t w = 1;

		if (x->o->weight == VMPT_WEIGHT_INSNS)
			w = t->have_weigh ? s->insns - t->last_insns : 0;
		else if (x->o->weight == VMPT_WEIGHT_TIME)
			w = t->have_weigh && tm > t->weigh_time ? tm - t->weigh_time : 0;
		t->last_insns = s->insns;
		t->weigh_time = tm;
		t->have_weigh = 1;
		if (w)
			x->ops->weigh(x, t, w);
	}
	/* A new trace (perf's trace_nr): the old stack means nothing. */
	if (s->trace_nr != t->trace_nr) {
		if (t->trace_nr)
			export_stack_flush(x, t);
		t->trace_nr = s->trace_nr;
	}
	if (rstate == 2)
		t->retpoline = 1;
	/* an exec: the process's stack ends */
	if (t->comm != es->comm && t->pid == t->tid) {
		export_stack_flush(x, t);
		t->comm = es->comm;
	}
	if (!t->comm)
		t->comm = es->comm;
	if (!t->cnt) {
		/* the function it is in goes at the bottom */
		if (s->ip)
			push(x, t, s->ip, tm, ref, path_of(x, &x->root, es->sym, s->ip), 1, 0);
		else if (s->addr)
			push(x, t, s->addr, tm, ref, path_of(x, &x->root, es->to_sym, s->addr),
			     1, 0);
	}
	t->branch_count++;
	t->insn_count += s->insn_cnt;
	t->cyc_count += s->cyc_cnt;
	t->last_time = tm;
	if (x->failed)
		return;
	if (s->flags & PF_CALL) {
		uint64_t ret_addr = s->ip + s->insn_len;

		if (!s->ip || !s->addr || ret_addr == s->addr)
			return;
		if (push(x, t, ret_addr, tm, ref,
			 path_of(x, t->stack[t->cnt - 1].cp, es->to_sym, s->addr), 0,
			 !!(s->flags & PF_TRACE_END)) < 0)
			return;
		/* a call into the same function, not at its start: a retpoline */
		if (rstate == 1 && es->to_sym && es->sym == es->to_sym &&
		    s->addr != es->to_sym->addr)
			t->retpoline = 2;
	} else if (s->flags & PF_RETURN) {
		if (!s->ip || !s->addr)
			return;
		if (rstate == 2 && t->cnt > 2 && t->stack[t->cnt - 1].ret_addr != s->addr) {
			retpoline(x, t, es);
			return;
		}
		if (pop_to(x, t, s->addr, tm, ref, es->sym))
			no_call_return(x, t, es);
	} else if (s->flags & PF_TRACE_BEGIN) {
		if (t->cnt && t->stack[t->cnt - 1].trace_end)
			call_return(x, t, tm, ref, 0);
	} else if (s->flags & PF_TRACE_END) {
		/* no trace end at the bottom */
		if (!t->cnt || (t->cnt == 1 && t->stack[0].ref == ref))
			return;
		push(x, t, s->ip + s->insn_len, tm, ref,
		     path_of(x, t->stack[t->cnt - 1].cp, NULL, 0), 0, 1);
	} else if ((s->flags & PF_BRANCH) && es->sym != es->to_sym && es->to_sym &&
		   s->addr == es->to_sym->addr) {
		/* a jump to another function's start: a call made a jump */
		if (push(x, t, 0, tm, ref, path_of(x, t->stack[t->cnt - 1].cp, es->to_sym,
						    s->addr), 0, 0) == 0)
			t->stack[t->cnt - 1].non_call = 1;
	}
}
