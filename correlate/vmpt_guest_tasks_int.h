/* SPDX-License-Identifier: MIT */
/* The guest tasks' state, shared by vmpt_guest_tasks.c (reading the
 * guest's sideband, the time lines) and vmpt_guest_checks.c (what a user
 * can get wrong, said in one line each).  Internal to correlate/.
 */
#ifndef VMPT_GUEST_TASKS_INT_H
#define VMPT_GUEST_TASKS_INT_H

#include "vmpt/guest_tasks.h"
#include "vmpt/task_recs.h"
#include "vmpt_guest_vcpus.h"

/* A guest record that says who runs or what a task is called: a switch
 * (comm NULL), a COMM, a FORK (ptid >= 0), an exec (COMM with exec).
 */
struct gt_rec {
	struct vmpt_task_rec r;	/* first: time in host perf time, cpu the vCPU */
	uint64_t gtime;		/* guest perf time */
	unsigned exec;		/* the exec'th address space from here on */
};

/* A guest process: its parent, the host times of its execs. */
struct gt_proc {
	int pid, parent;
	uint64_t fork_time;	/* host perf time of its FORK */
	uint64_t *execs;	/* host perf times, in order */
	size_t n_execs;
	struct { uint64_t gtime, seq; } *gexecs;	/* the same in the guest's file */
	size_t n_gexecs;
	uint64_t maps_in;	/* bit e: space e has mappings (e < 64) */
};

struct vmpt_guest_tasks {
	const struct vmpt_guest_tasks_config *cfg;
	char *err;
	size_t errlen;
	struct vmpt_perf_data guest;
	struct vmpt_guest_vcpus vcpus;
	int machine_pid;
	struct vmpt_perf_time_conv guest_tc;
	uint64_t guest_tc_offset;	/* 0: no TIME_CONV */
	/* Guest CPU of each event id (ID_INDEX), when records carry none. */
	struct { uint64_t id; int cpu; } *ids;
	size_t n_ids;
	uint64_t id_index_offset;
	unsigned guest_cpus;		/* highest guest CPU seen + 1 */
	uint64_t cpu_offset;		/* a record of that CPU */
	struct gt_rec *switches, *comms, *forks;
	size_t n_switches, n_comms, n_forks;
	uint64_t per_thread_switch;	/* offset of a PERF_RECORD_SWITCH */
	struct gt_proc *procs;		/* sorted by pid */
	size_t n_procs;
	struct vmpt_guest_map *maps;
	size_t n_maps;
	struct vmpt_guest_tasks_stats st;
};

/* Set the message; returns -err. */
int gt_fail(struct vmpt_guest_tasks *gt, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* vmpt_guest_checks.c: after the guest's records are read. */
int gt_check_attrs(struct vmpt_guest_tasks *gt);
int gt_check_id_index(struct vmpt_guest_tasks *gt, const struct vmpt_perf_event *ev);
int gt_check_records(struct vmpt_guest_tasks *gt);
int gt_check_vcpus(struct vmpt_guest_tasks *gt);

#endif
