/* SPDX-License-Identifier: MIT */
/* A process's mappings as perf's thread holds them when the process maps
 * its vdso: perf 6.1's map__new finds the vdso's dso by the process's ELF
 * class, which it asks the binaries of its mappings for in address order
 * until one answers (machine__thread_dso_type).  A binary that cannot be
 * opened has its dso data status ERROR from then on, and the decoder's
 * failures in it are reported one time less (vmpt_script_stream.c).
 * After an exec these are the program and its interpreter.
 */
#include "vmpt_session_int.h"

#include <stdlib.h>

/* maps_by_pid's order: by pid, then address (the order perf asks them
 * in), then file order.
 */
static int by_pid_start(const void *a, const void *b, void *arg)
{
	const struct vmpt_session_map *maps = arg;
	const struct vmpt_session_map *x = &maps[*(const size_t *)a];
	const struct vmpt_session_map *y = &maps[*(const size_t *)b];

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The first index of pid's maps in s->maps_by_pid. */
static size_t first_of(const struct vmpt_session *s, int pid)
{
	size_t lo = 0, hi = s->n_maps;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->maps[s->maps_by_pid[mid]].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t vmpt_session_vdso_unread(void *ctx, const struct vmpt_perf_event *ev,
				const char **names, size_t max)
{
	struct vmpt_session *s = ctx;
	size_t from, to, vdso = SIZE_MAX, n = 0;
	int pid;

	if (!s->n_maps)
		return 0;
	if (!s->maps_by_pid) {
		if (!(s->maps_by_pid = malloc(s->n_maps * sizeof(size_t))))
			return 0;
		for (size_t i = 0; i < s->n_maps; i++)
			s->maps_by_pid[i] = i;
		qsort_r(s->maps_by_pid, s->n_maps, sizeof(size_t), by_pid_start, s->maps);
	}
	pid = ev->mmap.pid == UINT32_MAX ? -1 : (int)ev->mmap.pid;
	if (pid <= 0)
		return 0;
	from = to = first_of(s, pid);
	while (to < s->n_maps && s->maps[s->maps_by_pid[to]].pid == pid)
		to++;
	/* The vdso's mapping keeps the record's name. */
	for (size_t i = from; i < to; i++)
		if (s->maps[s->maps_by_pid[i]].name == ev->mmap.filename)
			vdso = s->maps_by_pid[i];
	if (vdso == SIZE_MAX)
		return 0;
	/* The process's mappings before it, in address order. */
	for (size_t i = from; i < to; i++) {
		const struct vmpt_session_map *m = &s->maps[s->maps_by_pid[i]];

		/* perf asks file-backed dsos only ("//anon" is one to it). */
		if (s->maps_by_pid[i] >= vdso || m->name[0] != '/')
			continue;
		if (m->found)
			break;
		if (n < max)
			names[n++] = m->name;
	}
	return n;
}
