/* SPDX-License-Identifier: MIT */
/* Who runs on each vCPU of a guest, at every moment of the host's trace,
 * and with which mappings: the guest's own sideband (recorded cpu-wide
 * inside it by vmpt guest / vmpt record --guest: context switches, COMM,
 * FORK/EXIT, MMAP2, TIME_CONV) put on the host's time line.
 *
 * Guest perf time -> host perf time as the guest merge does it
 * (guest_merge.h: the guest's TIME_CONV, that vCPU's TSC offset and
 * multiplier, the host's TIME_CONV).  Guest CPU n is vCPU n, run by the
 * host thread the recording's vCPU map or QEMU's thread names ("CPU n/KVM")
 * say.  Per vCPU, a time-sorted list of the guest task switched in; per
 * guest process, its address spaces: one per exec (a forked child runs its
 * parent's until it maps code of its own), each with the mappings recorded
 * in it, keyed for the image by vmpt_guest_space().
 *
 * The object is opaque; tasks and mappings are plain data it hands out.
 */
#ifndef VMPT_GUEST_TASKS_H
#define VMPT_GUEST_TASKS_H

#include "vmpt/guest_time.h"
#include "vmpt/image.h"
#include "vmpt/perf_data.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The image's cr3 key of guest process pid after its exec'th exec (no
 * CR3 has bit 63 set; guest keys live in the guest machine only).
 */
static inline uint64_t vmpt_guest_space(int pid, unsigned exec)
{
	return vmpt_pid_space(pid, exec);
}

/* A guest task: -1 and NULL when unknown (comm NULL: perf's ":TID"). */
struct vmpt_guest_task {
	int pid, tid;
	const char *comm;
	uint64_t space;		/* vmpt_guest_space(), 0: no user code */
};

/* An executable guest mapping (MMAP/MMAP2 of guest user space). */
struct vmpt_guest_map {
	int pid;
	uint64_t space;		/* the address space it was recorded in */
	uint64_t start, len, pgoff;
	const char *name;	/* as recorded: a guest path, or "[vdso]" */
	uint64_t offset;	/* of the record in the guest's perf.data */
};

struct vmpt_guest_tasks_config {
	const char *host;		/* the host recording (vCPU map beside it) */
	const struct vmpt_perf_data *host_pd;	/* it, opened */
	const char *guest;		/* the guest's perf.data */
};

struct vmpt_guest_tasks;

/* Read the guest's sideband and find the vCPU threads in the host's.
 * 0, or a negative vmpt_err with err one line naming the file (and
 * offset) and what to do: a guest recorded per-thread, no vCPU threads,
 * more guest CPUs than vCPUs, a guest clock that is not the TSC.
 * Free *gt in both cases (NULL: no memory).
 */
int vmpt_guest_tasks_open(struct vmpt_guest_tasks **gt,
			  const struct vmpt_guest_tasks_config *cfg,
			  char *err, size_t errlen);
void vmpt_guest_tasks_free(struct vmpt_guest_tasks *gt);

/* The QEMU process, its vCPUs (highest + 1), how they were found
 * ("thread names", "qmp", ...), and the vCPU host thread tid runs (-1).
 */
int vmpt_guest_tasks_machine_pid(const struct vmpt_guest_tasks *gt);
unsigned vmpt_guest_tasks_nr_vcpus(const struct vmpt_guest_tasks *gt);
const char *vmpt_guest_tasks_vcpu_source(const struct vmpt_guest_tasks *gt);
int vmpt_guest_tasks_vcpu_of_tid(const struct vmpt_guest_tasks *gt, int tid);
int vmpt_guest_tasks_tid_of_vcpu(const struct vmpt_guest_tasks *gt, unsigned vcpu);

/* Put the guest's records on the host's time line: tsc[n] relates vCPU
 * n's TSC to the host's (nr_tsc vCPUs; a missing one: offset 0), host_tc
 * host TSC to host perf time.  0 or -VMPT_ERR_NOMEM.
 */
int vmpt_guest_tasks_place(struct vmpt_guest_tasks *gt, const struct vmpt_tsc_scale *tsc,
			   size_t nr_tsc, const struct vmpt_perf_time_conv *host_tc);

/* The guest task on vCPU vcpu at host perf time `time`, and until when
 * that holds (*until, UINT64_MAX: to the end).
 */
void vmpt_guest_tasks_at(const struct vmpt_guest_tasks *gt, unsigned vcpu, uint64_t time,
			 struct vmpt_guest_task *t, uint64_t *until);

/* The guest's executable user mappings, in file order. */
const struct vmpt_guest_map *vmpt_guest_tasks_maps(const struct vmpt_guest_tasks *gt,
						   size_t *n);

/* Counts for the summary: records read, switches placed, BPF programs
 * the guest JIT-compiled (code in no file).
 */
struct vmpt_guest_tasks_stats {
	uint64_t records, switches, comms, maps, bpf_ksymbols;
	uint64_t first, last;	/* host perf time of the first and last switch */
};
void vmpt_guest_tasks_stats(const struct vmpt_guest_tasks *gt,
			    struct vmpt_guest_tasks_stats *st);

#ifdef __cplusplus
}
#endif

#endif
