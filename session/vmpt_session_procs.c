/* SPDX-License-Identifier: MIT */
/* The recording's processes as address spaces: who forked whom and when,
 * the execs that give a process new code, and the address space a
 * process's code is in at a time.  Each exec's mappings are an address
 * space of their own over the one before it, as perf's maps of a thread
 * are: a fork starts with a copy of its parent's, an exec keeps them (the
 * exec's own call is still on the stack), and the new mappings replace
 * what they overlap.
 */
#include "vmpt_session_int.h"
#include "vmpt/error.h"

#include <stdlib.h>
#include <string.h>

struct vmpt_session_proc *session_find_proc(const struct vmpt_session *s, int pid)
{
	size_t lo = 0, hi = s->n_procs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->n_procs && s->procs[lo].pid == pid ? &s->procs[lo] : NULL;
}

struct vmpt_session_proc *session_get_proc(struct vmpt_session *s, int pid)
{
	struct vmpt_session_proc *p = session_find_proc(s, pid), *more;
	struct vmpt_session_proc np = { .pid = pid, .parent = -1 };
	size_t at = 0;

	if (p)
		return p;
	/* Doubling from 16: a recording of many processes adds them one by
	 * one.
	 */
	if (!s->n_procs || (s->n_procs >= 16 && !(s->n_procs & (s->n_procs - 1)))) {
		more = realloc(s->procs, (s->n_procs ? 2 * s->n_procs : 16) * sizeof(*more));
		if (!more)
			return NULL;
		s->procs = more;
	}
	while (at < s->n_procs && s->procs[at].pid < pid)
		at++;
	memmove(&s->procs[at + 1], &s->procs[at], (s->n_procs - at) * sizeof(*s->procs));
	s->procs[at] = np;
	s->n_procs++;
	return &s->procs[at];
}

int session_proc_exec(struct vmpt_session *s, int pid, uint64_t time, uint64_t offset)
{
	struct vmpt_session_proc *p = session_get_proc(s, pid);
	struct vmpt_session_exec *e;

	if (!p)
		return -VMPT_ERR_NOMEM;
	e = realloc(p->execs, (p->n_execs + 1) * sizeof(*e));
	if (!e)
		return -VMPT_ERR_NOMEM;
	p->execs = e;
	p->execs[p->n_execs++] = (struct vmpt_session_exec){ time, offset };
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct vmpt_session_exec *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

void session_procs_sort(struct vmpt_session *s)
{
	for (size_t i = 0; i < s->n_procs; i++)
		if (s->procs[i].n_execs > 1)
			qsort(s->procs[i].execs, s->procs[i].n_execs,
			      sizeof(*s->procs[i].execs), by_time);
}

unsigned session_execs_before(const struct vmpt_session_proc *p, uint64_t time,
			      uint64_t offset)
{
	unsigned n = 0;

	while (n < p->n_execs && (p->execs[n].time < time ||
				  (p->execs[n].time == time && p->execs[n].offset < offset)))
		n++;
	return n;
}

uint64_t vmpt_session_space(const struct vmpt_session *s, int pid, uint64_t time)
{
	/* A forked child runs its parent's code, as it was at the fork,
	 * until it maps its own or execs.
	 */
	for (int depth = 0; depth < 64 && pid > 0; depth++) {
		const struct vmpt_session_proc *p = session_find_proc(s, pid);
		unsigned exec;

		if (!p)
			return 0;
		exec = session_execs_before(p, time, UINT64_MAX);
		if (exec)
			return vmpt_pid_space(pid, exec);
		if (p->has_maps && time >= p->maps_from)
			return vmpt_pid_space(pid, 0);
		if (p->forked_at && p->forked_at < time)
			time = p->forked_at;
		pid = p->parent;
	}
	return 0;
}

uint64_t session_space_before(const struct vmpt_session *s, uint64_t space)
{
	int pid = vmpt_space_pid(space);
	unsigned exec = vmpt_space_exec(space);
	const struct vmpt_session_proc *p;

	if (exec)
		return vmpt_pid_space(pid, exec - 1);
	p = session_find_proc(s, pid);
	if (!p || p->parent <= 0)
		return 0;
	return vmpt_session_space(s, p->parent, p->forked_at ? p->forked_at : UINT64_MAX);
}

uint64_t session_space_until(const struct vmpt_session *s, int pid, uint64_t time)
{
	const struct vmpt_session_proc *p = session_find_proc(s, pid);
	unsigned exec;

	if (!p)
		return UINT64_MAX;
	exec = session_execs_before(p, time, UINT64_MAX);
	/* Its own code from its first mapping on, unless it execs first. */
	if (!exec && p->has_maps && p->maps_from > time &&
	    (!p->n_execs || p->maps_from < p->execs[0].time))
		return p->maps_from;
	return exec < p->n_execs ? p->execs[exec].time : UINT64_MAX;
}

void session_procs_free(struct vmpt_session *s)
{
	for (size_t i = 0; i < s->n_procs; i++)
		free(s->procs[i].execs);
	free(s->procs);
}
