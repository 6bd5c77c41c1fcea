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

/* Each vCPU's values over a recording, in time order: an entry when a
 * vCPU first shows and whenever its values change, timed by now().
 */
#define VMPT_KVM_TSC_MAX_VCPUS 256

struct vmpt_kvm_tsc_series {
	struct vmpt_kvm_tsc *v;
	size_t nr, max;			/* max: the most values kept */
	size_t last[VMPT_KVM_TSC_MAX_VCPUS];	/* each vCPU's latest entry */
	size_t nr_vcpus;
	int state;			/* 0 not read yet, 1 read, <0 a vmpt_err */
};

/* 0 or -VMPT_ERR_NOMEM. */
int vmpt_kvm_tsc_series_init(struct vmpt_kvm_tsc_series *s, size_t max);
void vmpt_kvm_tsc_series_free(struct vmpt_kvm_tsc_series *s);

/* Read the vCPUs of pid and keep what is new, with the time now() gives
 * (has_time 0 when it fails).  Once unreadable (state < 0) or full it
 * reads no more.  Returns 1 when this read found it full (more values than
 * max, or vCPUs), else 0.
 */
int vmpt_kvm_tsc_series_poll(struct vmpt_kvm_tsc_series *s, const char *debugfs_root,
			     pid_t pid, int (*now)(void *ctx, uint64_t *ns), void *ctx);

/* One line per entry, in the order given (a recording's: per vCPU each
 * value seen, in time order): "vm PID-FD vcpu N tsc-offset V
 * [tsc-scaling-ratio R frac-bits B] [time NS]", the ratio when KVM has
 * one, the time when known (a line without it holds for the whole
 * recording).  Written 0600.
 */
int vmpt_kvm_tsc_write(const char *path, const struct vmpt_kvm_tsc *t, size_t n);

#ifdef __cplusplus
}
#endif

#endif
