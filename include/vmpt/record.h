/* SPDX-License-Identifier: MIT */
#ifndef VMPT_RECORD_H
#define VMPT_RECORD_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* `vmpt record`: Intel PT (or sideband only) of a VM's vCPU threads into a
 * perf.data perf can read.
 */

struct vmpt_record_opts {
	const char *output;		/* perf.data (a directory with kcore) */
	const char *event;		/* "intel_pt//", "intel_pt/cyc/u", "dummy" */
	const char *filter;		/* address filters, perf's syntax */
	/* Tracepoints recorded beside it ("kvm:kvm_exit", globs "kvm:*"). */
	const char *const *tracepoints;
	size_t nr_tracepoints;
	/* The target: one of these. */
	pid_t pid;			/* a running QEMU */
	const char *qmp;		/* its QMP socket when not on its command line */
	const char *domain, *uri;	/* a libvirt domain */
	/* A command: the hypervisor when it is the only target; with a pid,
	 * domain or CPUs it only times the recording (perf record -p PID --
	 * sleep 1), which ends when it exits. */
	char *const *argv;
	/* Per-CPU (system-wide) instead of the vCPU threads. */
	int all_cpus;
	const char *cpu_list;		/* "0-3,6" */
	unsigned data_pages, aux_pages;	/* 0: defaults (perf's for intel_pt) */
	int snapshot;			/* -S: AUX area overwritten, taken on demand */
	uint64_t snapshot_size;		/* -S SIZE bytes of AUX area (0: default) */
	const char *control_fifo;	/* "snapshot" / "stop" commands */
	double duration;		/* stop after this many seconds; 0: no limit */
	int kcore;			/* copy kernel text, kallsyms, modules */
	const char *sysfs_root, *procfs_root, *debugfs_root;
	volatile sig_atomic_t *stop;	/* set by the caller's SIGINT/SIGTERM */
	volatile sig_atomic_t *snapshot_request;	/* set on SIGUSR2 */
	FILE *log;			/* progress and warnings, or NULL */
};

struct vmpt_record_stats {
	size_t nr_vcpus, nr_events;
	uint64_t records;		/* sideband records written */
	uint64_t aux_records, aux_truncated, aux_partial, aux_collision;
	uint64_t aux_bytes;		/* AUX bytes written */
	uint64_t lost_records, lost_events;
	uint64_t snapshots;
	uint64_t bytes_written;		/* size of the data section */
	int write_error;		/* errno of the failed write, or 0 */
	/* -- COMMAND: its wait status once it ended on its own (as
	 * waitpid gives it), or -1: not run, or stopped by vmpt.
	 */
	int child_status;
	int output_created;		/* the output was made (the previous one kept as .old) */
	uint64_t dropped_records, dropped_aux_bytes;	/* after a write error */
};

/* Record until the target ends or *opts->stop is set.  Returns 0 or a
 * negative vmpt_err with err telling what happened and what to do.
 * Everything read before a write error is accounted for in stats.
 */
int vmpt_record(const struct vmpt_record_opts *opts, struct vmpt_record_stats *stats,
		char *err, size_t errlen);

/* Parse a CPU list ("0-3,6") into a bitmap of up to max CPUs.  Returns the
 * number of CPUs or -VMPT_ERR_INVAL.
 */
int vmpt_parse_cpu_list(const char *list, uint8_t *set, int max);

/* Where a recording's parts go: a file REC has them beside it (REC.WHAT),
 * perf's directory form (dir_form: --kcore) inside (REC/WHAT).  WHAT is
 * "kvm-tsc" (tsc-offset per vCPU over time), "vcpus" (vCPU map) or
 * "guest" (what vmpt record --guest fetched).
 */
void vmpt_record_path(const char *rec, int dir_form, const char *what, char *out,
		      size_t len);

/* Can REC be written: its directory exists and is writable, and has space
 * (*avail: bytes free, UINT64_MAX when unknown or REC is a device)?
 * 0 or a negative vmpt_err with err saying which.
 */
int vmpt_record_output_check(const char *rec, int dir_form, uint64_t *avail,
			     char *err, size_t errlen);

/* Keep a previous recording as REC.old (removing an older REC.old), as perf
 * does; its parts beside it (REC.kvm-tsc, ...) become REC.old.kvm-tsc, ...
 */
int vmpt_record_output_backup(const char *rec, char *err, size_t errlen);

/* Make REC (a file, or the directory form with data and kcore_dir/) for
 * its owner only, 0600 and 0700, as perf creates them.
 */
int vmpt_record_output_create(const char *rec, int dir_form, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
