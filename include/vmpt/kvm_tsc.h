/* SPDX-License-Identifier: MIT */
#ifndef VMPT_KVM_TSC_H
#define VMPT_KVM_TSC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

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
};

/* All vCPUs of the VMs of process pid.  Returns the count (up to max),
 * -VMPT_ERR_NOT_FOUND when debugfs has no kvm directory, or -VMPT_ERR_PERM.
 */
int vmpt_kvm_tsc_read(const char *debugfs_root, pid_t pid,
		      struct vmpt_kvm_tsc *out, size_t max);

/* One line per vCPU: "vm PID-FD vcpu N tsc-offset V tsc-scaling-ratio R
 * frac-bits B" (ratio fields only when present).
 */
int vmpt_kvm_tsc_write(const char *path, const struct vmpt_kvm_tsc *t, size_t n);

#ifdef __cplusplus
}
#endif

#endif
