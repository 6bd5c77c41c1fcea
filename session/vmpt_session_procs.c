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

int session_proc_start(struct vmpt_session *s, int pid, int parent, int exec,
		       uint64_t time, uint64_t offset)
{
	size_t n = s->n_starts;

	/* Doubling from 16: a recording may fork a million processes. */
	if (!n || (n >= 16 && !(n & (n - 1)))) {
		struct vmpt_session_start *more = realloc(s->starts, (n ? 2 * n : 16) *
							  sizeof(*more));

		if (!more)
			return -VMPT_ERR_NOMEM;
		s->starts = more;
	}
	s->starts[s->n_starts++] = (struct vmpt_session_start){ pid, parent, exec, time, offset };
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

/* By pid, then file order: a pid's later fork is the one that counts. */
static int by_pid(const void *a, const void *b)
{
	const struct vmpt_session_start *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int by_time(const void *a, const void *b)
{
	const struct vmpt_session_exec *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

int session_procs_build(struct vmpt_session *s)
{
	size_t n = 0, n_execs = 0;
	int *pids = malloc((s->n_starts + s->n_maps + 1) * sizeof(*pids));

	if (!pids)
		return -VMPT_ERR_NOMEM;
	/* Every process forked, exec'ing or mapping code, once. */
	for (size_t i = 0; i < s->n_starts; i++)
		pids[n++] = s->starts[i].pid;
	for (size_t i = 0; i < s->n_maps; i++)
		if (s->maps[i].pid > 0)
			pids[n++] = s->maps[i].pid;
	qsort(pids, n, sizeof(*pids), cmp_int);
	s->procs = calloc(n + 1, sizeof(*s->procs));
	if (!s->procs) {
		free(pids);
		return -VMPT_ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (!s->n_procs || s->procs[s->n_procs - 1].pid != pids[i])
			s->procs[s->n_procs++] = (struct vmpt_session_proc){ .pid = pids[i],
									     .parent = -1 };
	free(pids);
	for (size_t i = 0; i < s->n_starts; i++)
		n_execs += s->starts[i].exec;
	s->execs = malloc((n_execs + 1) * sizeof(*s->execs));
	if (!s->execs)
		return -VMPT_ERR_NOMEM;
	if (s->n_starts)
		qsort(s->starts, s->n_starts, sizeof(*s->starts), by_pid);
	n_execs = 0;
	for (size_t i = 0; i < s->n_starts; i++) {
		const struct vmpt_session_start *st = &s->starts[i];
		struct vmpt_session_proc *p = session_find_proc(s, st->pid);

		if (!st->exec) {
			p->parent = st->parent;
			p->forked_at = st->time;
			continue;
		}
		if (!p->n_execs)
			p->execs = &s->execs[n_execs];
		s->execs[n_execs++] = (struct vmpt_session_exec){ st->time, st->offset };
		p->n_execs++;
	}
	for (size_t i = 0; i < s->n_procs; i++)
		if (s->procs[i].n_execs > 1)
			qsort(s->procs[i].execs, s->procs[i].n_execs,
			      sizeof(*s->procs[i].execs), by_time);
	free(s->starts);
	s->starts = NULL;
	s->n_starts = 0;
	return 0;
}

unsigned session_execs_before(const struct vmpt_session_proc *p, uint64_t time,
			      uint64_t offset)
{
	size_t lo = 0, hi = p->n_execs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct vmpt_session_exec *e = &p->execs[mid];

		if (e->time < time || (e->time == time && e->offset < offset))
			lo = mid + 1;
		else
			hi = mid;
	}
	return (unsigned)lo;
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
	free(s->procs);
	free(s->starts);
	free(s->execs);
}
