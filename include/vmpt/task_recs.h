/* SPDX-License-Identifier: MIT */
/* Who runs where, when: the task records of a perf.data (a switch-in, a
 * COMM, a FORK), the host's as the session reads them and a guest's as the
 * correlator reads them, and the lookups over them.  A caller's record may
 * carry more: it begins with a struct vmpt_task_rec, and every function
 * takes the size of the caller's element (stride).
 */
#ifndef VMPT_TASK_RECS_H
#define VMPT_TASK_RECS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vmpt_task_rec {
	uint64_t time;		/* perf time, ns (a guest's: in host time) */
	uint64_t seq;		/* record order: ties in time keep it */
	int cpu;		/* the CPU (a guest's: the vCPU) */
	int pid, tid;
	int ptid;		/* FORK: the parent thread */
	const char *comm;	/* COMM: the name */
};

enum vmpt_task_order {
	VMPT_TASK_BY_TIME,
	VMPT_TASK_BY_CPU,	/* then by time */
	VMPT_TASK_BY_TID,	/* then by time */
};

/* Sort n records of stride bytes each. */
void vmpt_task_recs_sort(void *recs, size_t n, size_t stride, enum vmpt_task_order order);

/* Of records sorted by cpu or tid (order), the last with that key at or
 * before time, NULL if there is none; *until is when the key's next record
 * starts (UINT64_MAX: none).
 */
const struct vmpt_task_rec *vmpt_task_recs_at(const void *recs, size_t n, size_t stride,
					      enum vmpt_task_order order, int key,
					      uint64_t time, uint64_t *until);

/* A forked thread is named as its parent was at the fork, until its own
 * COMM: for each fork (sorted by time: records of different CPUs
 * interleave in a file) whose parent had a name, a copy of the fork named
 * so joins comms (sorted by tid, and kept so).  0, or -VMPT_ERR_NOMEM.
 */
int vmpt_task_recs_inherit_comms(void **comms, size_t *n_comms, size_t stride,
				 const void *forks, size_t n_forks);

#ifdef __cplusplus
}
#endif

#endif
