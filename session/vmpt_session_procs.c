/* SPDX-License-Identifier: MIT */
/* The recording's processes as address spaces: who forked whom and when,
 * the generations of a process's code, and the address space a process's
 * code is in at a time.  A generation starts at an exec, or where the
 * process maps code over code it mapped since its last exec (a library
 * dlclose'd and another dlopen'd at its address, a MAP_FIXED remap; not
 * the same mapping again).  Each generation's mappings are an address
 * space of their own over the one before it, as perf's maps of a thread
 * are: a fork starts with a copy of its parent's, an exec keeps them (the
 * exec's own call is still on the stack), and a new mapping replaces what
 * it overlaps from its record's time on.  Mappings over nothing mapped
 * since the exec start none: a process gets as many generations as it
 * replaces code, not as it maps.
 */
#include "vmpt_session_int.h"
#include "vmpt/error.h"

#include <search.h>
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

int session_proc_start(struct vmpt_session *s, int pid, int parent, int gen,
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
	s->starts[s->n_starts++] = (struct vmpt_session_start){ pid, parent, gen, time, offset };
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
	const struct vmpt_session_gen *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Each process's parent and generations, from the starts. */
static int procs_gens(struct vmpt_session *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n_starts; i++)
		n += s->starts[i].gen;
	free(s->gens);
	s->gens = malloc((n + 1) * sizeof(*s->gens));
	if (!s->gens)
		return -VMPT_ERR_NOMEM;
	if (s->n_starts)
		qsort(s->starts, s->n_starts, sizeof(*s->starts), by_pid);
	for (size_t i = 0; i < s->n_procs; i++) {
		s->procs[i].gens = NULL;
		s->procs[i].n_gens = 0;
	}
	n = 0;
	for (size_t i = 0; i < s->n_starts; i++) {
		const struct vmpt_session_start *st = &s->starts[i];
		struct vmpt_session_proc *p = session_find_proc(s, st->pid);

		if (!st->gen) {
			p->parent = st->parent;
			p->forked_at = st->time;
			continue;
		}
		if (!p->n_gens)
			p->gens = &s->gens[n];
		s->gens[n++] = (struct vmpt_session_gen){ st->time, st->offset };
		p->n_gens++;
	}
	for (size_t i = 0; i < s->n_procs; i++)
		if (s->procs[i].n_gens > 1)
			qsort(s->procs[i].gens, s->procs[i].n_gens,
			      sizeof(*s->procs[i].gens), by_time);
	return 0;
}

/* A span of the code a process mapped since its last exec (the mapping
 * there now), in a tree (tsearch) where overlapping spans compare equal:
 * the tree's are disjoint.
 */
struct procs_span {
	uint64_t start, end;
	const struct vmpt_session_map *m;
};

static int span_cmp(const void *a, const void *b)
{
	const struct procs_span *x = a, *y = b;

	if (x->end <= y->start)
		return -1;
	return y->end <= x->start;
}

static void span_keep(void *span)
{
	(void)span;
}

/* Code mapped again where nothing perf names or vmpt decodes changes: the
 * same mapping again (perf record's synthesized MMAPs, a remap), or
 * anonymous code over anonymous code (a process's is all named
 * /tmp/perf-PID.map and never decoded: a JIT's growing).
 */
static int same_code(const struct vmpt_session_map *a, const struct vmpt_session_map *b)
{
	if (a->anon_name[0] && b->anon_name[0])
		return 1;
	return a->start == b->start && a->len == b->len && a->pgoff == b->pgoff &&
	       !strcmp(a->name, b->name) && !strcmp(a->build_id, b->build_id);
}

/* By pid, then time, then file order. */
static int by_pid_time(const void *a, const void *b, void *arg)
{
	const struct vmpt_session_map *maps = arg;
	const struct vmpt_session_map *x = &maps[*(const size_t *)a];
	const struct vmpt_session_map *y = &maps[*(const size_t *)b];

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* What a mapping leaves of another by its side: kept till the end. */
struct procs_piece {
	struct procs_span span;
	struct procs_piece *next;
};

static int procs_put_piece(void **tree, struct procs_piece **pieces, uint64_t start,
			   uint64_t end, const struct vmpt_session_map *m)
{
	struct procs_piece *p = malloc(sizeof(*p));

	if (!p)
		return -VMPT_ERR_NOMEM;
	*p = (struct procs_piece){ { start, end, m }, *pieces };
	*pieces = p;
	return tsearch(&p->span, tree, span_cmp) ? 0 : -VMPT_ERR_NOMEM;
}

/* Take the spans overlapping key's out of the tree: 1 if one is not the
 * same code as key's (a generation starts), 0 if they are all the same
 * (*key grows over them); -VMPT_ERR_NOMEM.  What key leaves of them by
 * its sides goes back in (as pieces).
 */
static int procs_take(void **tree, struct procs_span *key, struct procs_piece **pieces)
{
	uint64_t start = key->start, end = key->end;
	struct procs_span **o, *taken[2] = { NULL, NULL };
	int other = 0;

	while ((o = tfind(key, tree, span_cmp))) {
		struct procs_span *old = *o;

		tdelete(old, tree, span_cmp);
		other |= !same_code(old->m, key->m);
		start = old->start < start ? old->start : start;
		end = old->end > end ? old->end : end;
		/* Only the spans at its ends reach past it (they are disjoint). */
		if (old->start < key->start)
			taken[0] = old;
		if (old->end > key->end)
			taken[1] = old;
	}
	if (!other) {
		key->start = start;
		key->end = end;
		return 0;
	}
	if (taken[0] && procs_put_piece(tree, pieces, taken[0]->start, key->start,
					taken[0]->m) < 0)
		return -VMPT_ERR_NOMEM;
	if (taken[1] && procs_put_piece(tree, pieces, key->end, taken[1]->end,
					taken[1]->m) < 0)
		return -VMPT_ERR_NOMEM;
	return 1;
}

/* The generations code mapped over code starts after an exec, at most:
 * lookups see through 64 spaces (map_of, vmpt_image_find), and the
 * program's own code is in the exec's.  Past them the last mapping of an
 * address wins.
 */
#define PROCS_MAX_REMAPS 32

/* The generations code mapped over code starts, as starts (the execs'
 * generations already made): each process's code mappings in time order,
 * what it maps since its last exec in a tree.  A mapping placed in a
 * generation is there from the generation's start: one over code mapped
 * since the exec starts one, whichever generation that code is in.  How
 * many, or -VMPT_ERR_NOMEM.
 */
static long procs_overlaps(struct vmpt_session *s)
{
	size_t *at = malloc((s->n_maps + 1) * sizeof(*at)), n = 0;
	struct procs_span *spans = malloc((s->n_maps + 1) * sizeof(*spans));
	struct procs_piece *pieces = NULL;
	unsigned exec = 0, remaps = 0;
	void *tree = NULL;
	long found = 0;

	for (size_t i = 0; at && spans && i < s->n_maps; i++)
		if (s->maps[i].pid > 0)
			at[n++] = i;
	if (n)
		qsort_r(at, n, sizeof(*at), by_pid_time, s->maps);
	for (size_t i = 0; at && spans && i < n && found >= 0; i++) {
		const struct vmpt_session_map *m = &s->maps[at[i]];
		struct procs_span *sp = &spans[i];
		unsigned g = session_gens_before(session_find_proc(s, m->pid), m->time,
						 m->offset);
		struct procs_span **o;
		int ret;

		/* Another process, or an exec since: nothing mapped yet. */
		if (!i || m->pid != s->maps[at[i - 1]].pid || g != exec) {
			tdestroy(tree, span_keep);
			tree = NULL;
			exec = g;
			remaps = 0;
		}
		*sp = (struct procs_span){ m->start, m->start + m->len, m };
		if (sp->end <= sp->start)
			continue;
		/* In at once where nothing is (the common case). */
		o = tsearch(sp, &tree, span_cmp);
		if (!o || *o == sp) {
			found = o ? found : -VMPT_ERR_NOMEM;
			continue;
		}
		ret = procs_take(&tree, sp, &pieces);
		if (ret > 0 && remaps++ < PROCS_MAX_REMAPS) {
			found++;
			ret = session_proc_start(s, m->pid, -1, 1, m->time, m->offset);
		}
		if (ret < 0 || !tsearch(sp, &tree, span_cmp))
			found = -VMPT_ERR_NOMEM;
	}
	tdestroy(tree, span_keep);
	if (!at || !spans)
		found = -VMPT_ERR_NOMEM;
	free(at);
	free(spans);
	while (pieces) {
		struct procs_piece *next = pieces->next;

		free(pieces);
		pieces = next;
	}
	return found;
}

int session_procs_build(struct vmpt_session *s)
{
	size_t n = 0;
	int *pids = malloc((s->n_starts + s->n_maps + 1) * sizeof(*pids));
	long ret;

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
	/* The execs' generations, then the ones code over code starts. */
	ret = procs_gens(s);
	if (!ret)
		ret = procs_overlaps(s);
	if (ret > 0)
		ret = procs_gens(s);
	free(s->starts);
	s->starts = NULL;
	s->n_starts = 0;
	return ret < 0 ? (int)ret : 0;
}

unsigned session_gens_before(const struct vmpt_session_proc *p, uint64_t time,
			     uint64_t offset)
{
	size_t lo = 0, hi = p->n_gens;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct vmpt_session_gen *e = &p->gens[mid];

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
		unsigned gen;

		if (!p)
			return 0;
		gen = session_gens_before(p, time, UINT64_MAX);
		if (gen)
			return vmpt_pid_space(pid, gen);
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
	unsigned gen = vmpt_space_gen(space);
	const struct vmpt_session_proc *p;

	if (gen)
		return vmpt_pid_space(pid, gen - 1);
	p = session_find_proc(s, pid);
	if (!p || p->parent <= 0)
		return 0;
	return vmpt_session_space(s, p->parent, p->forked_at ? p->forked_at : UINT64_MAX);
}

uint64_t session_space_until(const struct vmpt_session *s, int pid, uint64_t time)
{
	const struct vmpt_session_proc *p = session_find_proc(s, pid);
	unsigned gen;

	if (!p)
		return UINT64_MAX;
	gen = session_gens_before(p, time, UINT64_MAX);
	/* Its own code from its first mapping on, unless it execs first. */
	if (!gen && p->has_maps && p->maps_from > time &&
	    (!p->n_gens || p->maps_from < p->gens[0].time))
		return p->maps_from;
	return gen < p->n_gens ? p->gens[gen].time : UINT64_MAX;
}

void session_procs_free(struct vmpt_session *s)
{
	free(s->procs);
	free(s->starts);
	free(s->gens);
}
