/* SPDX-License-Identifier: MIT */
#ifndef VMPT_KVM_TSC_H
#define VMPT_KVM_TSC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* KVM's debugfs view of each vCPU's TSC: DEBUGFS/kvm/PID-FD/vcpuN/
 * {tsc-offset, tsc-scaling-ratio, tsc-scaling-ratio-frac-bits}, the ground
 * truth for guest/host time correlation.
 */

struct vmpt_kvm_tsc {
	char vm[32];		/* "PID-FD" */
	int vcpu;
	int64_t offset;
	uint64_t ratio;		/* 0 when the file is absent */
	unsigned frac_bits;
	int has_ratio;
	int has_time;		/* a recording's: time is when it held from */
	uint64_t time;		/* perf time (ns, the recording's sample clock) */
};

/* All vCPUs of the VMs of process pid (has_time 0).  Returns the count
 * (up to max), -VMPT_ERR_NOT_FOUND when debugfs has no kvm directory, or
 * -VMPT_ERR_PERM.
 */
int vmpt_kvm_tsc_read(const char *debugfs_root, pid_t pid,
		      struct vmpt_kvm_tsc *out, size_t max);

/* The first DEBUGFS/kvm/PID-FD directory of process pid into dir: 0, or
 * -VMPT_ERR_NOT_FOUND when KVM has no VM of that process.
 */
int vmpt_kvm_tsc_vm_dir(const char *debugfs_root, pid_t pid, char *dir, size_t len);

/* One line per entry, in the order given (a recording's: per vCPU each
 * value seen, in time order): "vm PID-FD vcpu N tsc-offset V
 * [tsc-scaling-ratio R frac-bits B] [time NS]", the ratio when KVM has
 * one, the time when known (a line without it holds for the whole
 * recording).  Written 0600.
 */
int vmpt_kvm_tsc_write(const char *path, const struct vmpt_kvm_tsc *t, size_t n);

#endif
