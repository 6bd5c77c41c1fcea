/* SPDX-License-Identifier: MIT */
#ifndef VMPT_VCPU_H
#define VMPT_VCPU_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Finding the threads that run a VM's vCPUs. */

#define VMPT_MAX_VCPUS 1024

struct vmpt_vcpu {
	int index;	/* QEMU cpu-index = the KVM vcpu id = the guest's CPU number */
	pid_t tid;
};

struct vmpt_vcpus {
	pid_t pid;	/* the hypervisor process */
	size_t nr;
	struct vmpt_vcpu vcpu[VMPT_MAX_VCPUS];
	char source[64];	/* "QMP query-cpus-fast", "/proc thread names", ... */
	const char *kind;	/* the same in a word: "qmp", "libvirt", "thread-names" */
};

/* Parse a QMP query-cpus-fast reply ({"return": [{"cpu-index": 0,
 * "thread-id": 123, "props": {...}}, ...]}).  Only the top-level keys of
 * each entry count (props has a "thread-id" of its own: the SMT thread).
 * Returns the vCPU count or -VMPT_ERR_FORMAT.
 */
int vmpt_vcpus_parse_qmp(const char *json, struct vmpt_vcpus *out);

/* Ask a QEMU QMP unix socket (capabilities handshake, then
 * query-cpus-fast).  timeout_ms bounds the whole exchange.
 */
int vmpt_vcpus_from_qmp(const char *socket_path, int timeout_ms,
			struct vmpt_vcpus *out, char *err, size_t errlen);

/* The QMP socket a QEMU process was started with (-qmp unix:PATH,... or a
 * control -mon on a -chardev socket), from /proc/PID/cmdline.
 */
int vmpt_qemu_qmp_socket(const char *procfs_root, pid_t pid, char *path,
			 size_t len);

/* Threads named "CPU N/ACCEL" (QEMU -name debug-threads=on) of pid. */
int vmpt_vcpus_from_proc(const char *procfs_root, pid_t pid,
			 struct vmpt_vcpus *out, char *err, size_t errlen);

/* A libvirt domain's vCPUs through libvirt-qemu (query-cpus-fast on the
 * domain's monitor); the QEMU pid from the threads' Tgid.
 */
int vmpt_vcpus_from_libvirt(const char *uri, const char *domain,
			    struct vmpt_vcpus *out, char *err, size_t errlen);

/* QMP first (the socket from the command line), then /proc; err says why
 * each failed when both do.
 */
int vmpt_vcpus_for_pid(const char *procfs_root, pid_t pid, const char *qmp,
		       struct vmpt_vcpus *out, char *err, size_t errlen);

/* The map as a recording keeps it (REC.vcpus), a line per vCPU:
 * "vcpu N tid T source KIND", N the QEMU cpu-index (= the KVM vcpu id =
 * the guest's CPU number).  Written 0600.  0 or -VMPT_ERR_IO (errno set).
 */
int vmpt_vcpus_write(const char *path, const struct vmpt_vcpus *v);

#ifdef __cplusplus
}
#endif

#endif
