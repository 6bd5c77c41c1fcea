/* SPDX-License-Identifier: MIT */
/* A VM's vCPUs as the host recording sees them: vCPU n <-> the host
 * thread that runs it, and the host CPU that thread runs on over time.
 * Internal to correlate/ (the guest merge).
 *
 * The threads come from QEMU's thread names in the host's COMM records
 * ("CPU n/KVM", "CPU n/TCG": -name ...,debug-threads=on) or from the map
 * vmpt record saves beside the recording (REC.vcpus, REC/vcpus: lines
 * "vcpu N tid T source qmp|libvirt|thread-names").  The host CPU comes
 * from the host's context switches of those threads.
 */
#ifndef VMPT_GUEST_VCPUS_H
#define VMPT_GUEST_VCPUS_H

#include "vmpt/perf_data.h"

#include <stddef.h>
#include <stdint.h>

/* A vCPU thread started running on a host CPU at a host time. */
struct vmpt_guest_run {
	uint64_t time;
	uint64_t seq;		/* file order, for equal times */
	uint32_t cpu;
};

struct vmpt_guest_vcpu {
	uint32_t tid;		/* 0: no thread known */
	struct vmpt_guest_run *runs;	/* in host time order once sorted */
	size_t nr_runs, cap_runs;
};

/* A switch of one of pid's threads, before the threads are known. */
struct vmpt_guest_switch {
	uint32_t tid;
	struct vmpt_guest_run run;
};

struct vmpt_guest_vcpus {
	uint32_t pid;			/* the hypervisor process */
	struct vmpt_guest_vcpu *v;	/* indexed by vCPU number */
	struct vmpt_guest_switch *switches;	/* until vmpt_guest_vcpus_sort */
	size_t nr_switches, cap_switches;
	unsigned nr;			/* highest vCPU number + 1 */
	unsigned nr_threads;		/* vCPUs with a thread */
	char source[32];		/* "thread names", "qmp", ... */
	uint32_t other_pid;		/* another process with "CPU n/" threads */
};

void vmpt_guest_vcpus_init(struct vmpt_guest_vcpus *vc, uint32_t pid);
void vmpt_guest_vcpus_free(struct vmpt_guest_vcpus *vc);

/* Learn from a host COMM record: a thread of pid named "CPU n/ACCEL" runs
 * vCPU n.  0, or -VMPT_ERR_FORMAT with err naming both threads when two
 * claim one vCPU (perf: "Two threads found with the same VCPU").
 */
int vmpt_guest_vcpus_comm(struct vmpt_guest_vcpus *vc, const struct vmpt_perf_event *ev,
			  const char *file, char *err, size_t errlen);

/* Read a saved vCPU map (replaces what COMM records said).  0, or a
 * negative vmpt_err with err naming the file and line.
 */
int vmpt_guest_vcpus_read_map(struct vmpt_guest_vcpus *vc, const char *path,
			      char *err, size_t errlen);

/* The vCPU run by thread tid, or -1. */
int vmpt_guest_vcpus_of_tid(const struct vmpt_guest_vcpus *vc, uint32_t tid);

/* Learn from a host context switch: a thread of pid switched in (its own
 * SWITCH or SWITCH_CPU_WIDE record) or about to be (a CPU-wide switch out
 * naming it as next).  Records without a CPU or time teach nothing.
 * COMM records may come later: the switches wait for vmpt_guest_vcpus_sort.
 */
int vmpt_guest_vcpus_switch(struct vmpt_guest_vcpus *vc, const struct vmpt_perf_event *ev,
			    uint64_t seq);

/* Give each vCPU its thread's switches, sorted by time (then file order). */
int vmpt_guest_vcpus_sort(struct vmpt_guest_vcpus *vc);

/* The host CPU vCPU n's thread ran on at host time t: that of its last
 * switch in at or before t; 0 before the first, as perf inject says.
 */
uint32_t vmpt_guest_vcpus_host_cpu(const struct vmpt_guest_vcpus *vc, unsigned vcpu,
				   uint64_t t);

#endif
