/* SPDX-License-Identifier: MIT */
/* Task records and their lookups: see include/vmpt/task_recs.h. */
#include "vmpt/task_recs.h"
#include "vmpt/error.h"

#include <stdlib.h>
#include <string.h>

#define REC(recs, i, stride) \
	((const struct vmpt_task_rec *)((const char *)(recs) + (i) * (stride)))

static int cmp_time_seq(const struct vmpt_task_rec *x, const struct vmpt_task_rec *y)
{
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_by_time(const void *a, const void *b)
{
	return cmp_time_seq(a, b);
}

static int cmp_by_cpu(const void *a, const void *b)
{
	const struct vmpt_task_rec *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return cmp_time_seq(x, y);
}

static int cmp_by_tid(const void *a, const void *b)
{
	const struct vmpt_task_rec *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return cmp_time_seq(x, y);
}

static int (*const cmps[])(const void *, const void *) = {
	[VMPT_TASK_BY_TIME] = cmp_by_time,
	[VMPT_TASK_BY_CPU] = cmp_by_cpu,
	[VMPT_TASK_BY_TID] = cmp_by_tid,
};

void vmpt_task_recs_sort(void *recs, size_t n, size_t stride, enum vmpt_task_order order)
{
	if (n > 1)
		qsort(recs, n, stride, cmps[order]);
}

static int key_of(const struct vmpt_task_rec *r, enum vmpt_task_order order)
{
	return order == VMPT_TASK_BY_CPU ? r->cpu : r->tid;
}

const struct vmpt_task_rec *vmpt_task_recs_at(const void *recs, size_t n, size_t stride,
					      enum vmpt_task_order order, int key,
					      uint64_t time, uint64_t *until)
{
	size_t lo = 0, hi = n, first;

	*until = UINT64_MAX;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (key_of(REC(recs, mid, stride), order) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	hi = n;
	/* The key's first record after time. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct vmpt_task_rec *r = REC(recs, mid, stride);

		if (key_of(r, order) == key && r->time <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && key_of(REC(recs, lo, stride), order) == key)
		*until = REC(recs, lo, stride)->time;
	return lo > first ? REC(recs, lo - 1, stride) : NULL;
}

int vmpt_task_recs_inherit_comms(void **comms, size_t *n_comms, size_t stride,
				 const void *forks, size_t n_forks)
{
	for (size_t i = 0; i < n_forks; i++) {
		const struct vmpt_task_rec *fork = REC(forks, i, stride), *parent;
		const char *comm;
		uint64_t until;
		char *v, *at;
		size_t k;

		parent = vmpt_task_recs_at(*comms, *n_comms, stride, VMPT_TASK_BY_TID,
					   fork->ptid, fork->time, &until);
		if (!parent)
			continue;
		comm = parent->comm;	/* before comms moves */
		v = realloc(*comms, (*n_comms + 1) * stride);
		if (!v)
			return -VMPT_ERR_NOMEM;
		*comms = v;
		/* Into its place in the tid order. */
		for (k = *n_comms; k > 0 && cmp_by_tid(REC(v, k - 1, stride), fork) > 0; k--)
			;
		at = v + k * stride;
		memmove(at + stride, at, (*n_comms - k) * stride);
		memcpy(at, fork, stride);
		((struct vmpt_task_rec *)at)->comm = comm;
		(*n_comms)++;
	}
	return 0;
}
