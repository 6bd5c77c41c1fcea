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

static int by_pid(const void *a, const void *b, void *arg)
{
	const struct vmpt_session_map *maps = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;

	if (maps[i].pid != maps[j].pid)
		return maps[i].pid < maps[j].pid ? -1 : 1;
	return i < j ? -1 : i > j;
}

static int by_start(const void *a, const void *b, void *arg)
{
	const struct vmpt_session_map *maps = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;

	if (maps[i].start != maps[j].start)
		return maps[i].start < maps[j].start ? -1 : 1;
	return i < j ? -1 : i > j;
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
	size_t from, to, vdso = SIZE_MAX, k = 0, n = 0;
	size_t *order;
	int pid;

	if (!s->n_maps)
		return 0;
	if (!s->maps_by_pid) {
		if (!(s->maps_by_pid = malloc(s->n_maps * sizeof(size_t))))
			return 0;
		for (size_t i = 0; i < s->n_maps; i++)
			s->maps_by_pid[i] = i;
		qsort_r(s->maps_by_pid, s->n_maps, sizeof(size_t), by_pid, s->maps);
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
	if (vdso == SIZE_MAX || !(order = malloc((to - from) * sizeof(size_t))))
		return 0;
	for (size_t i = from; i < to && s->maps_by_pid[i] < vdso; i++)
		order[k++] = s->maps_by_pid[i];
	qsort_r(order, k, sizeof(size_t), by_start, s->maps);
	for (size_t i = 0; i < k; i++) {
		const struct vmpt_session_map *m = &s->maps[order[i]];

		/* perf asks file-backed dsos only ("//anon" is one to it). */
		if (m->name[0] != '/')
			continue;
		if (m->found)
			break;
		if (n < max)
			names[n++] = m->name;
	}
	free(order);
	return n;
}
