/* SPDX-License-Identifier: MIT */
/* The guest's own sideband on the host's time line: a perf.data recorded
 * cpu-wide inside a guest (MMAP, COMM, FORK/EXIT, context switches)
 * merged into the host's recording of the guest's QEMU process, as
 * `perf inject --guest-data` does, into a perf.data perf 6.1 reads.
 *
 * Time: guest perf time -> guest TSC (the guest's TIME_CONV) -> host TSC
 * (that vCPU's TSC offset and multiplier, struct vmpt_tsc_scale) -> host
 * perf time (the host's TIME_CONV).  vCPUs: the guest's CPU n is vCPU n,
 * run by the host thread QEMU names "CPU n/KVM" (or "CPU n/TCG"), or the
 * one vmpt record's saved map names.  docs/guest-merge.md tells the rest.
 *
 * The clock is plain data the caller fills; the merge is one call.
 */
#ifndef VMPT_GUEST_MERGE_H
#define VMPT_GUEST_MERGE_H

#include "vmpt/guest_time.h"
#include "vmpt/perf_data.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A guest's perf clock seen from the host. */
struct vmpt_guest_clock {
	struct vmpt_perf_time_conv guest, host;	/* the two TIME_CONVs */
	const struct vmpt_tsc_scale *tsc;	/* per vCPU, indexed by vCPU */
	size_t nr_tsc;		/* 1: one for all vCPUs; 0: offset 0, no scaling */
};

/* The host perf time of guest perf time t on vCPU vcpu.  0 stays 0: the
 * records perf synthesizes at the start carry no time.
 */
uint64_t vmpt_guest_clock_host_time(const struct vmpt_guest_clock *c, unsigned vcpu,
				    uint64_t t);

/* Why a TIME_CONV cannot turn perf time into TSC, or NULL when it can. */
const char *vmpt_guest_clock_unusable(const struct vmpt_perf_time_conv *tc);

struct vmpt_guest_merge_config {
	const char *host;	/* the host's perf.data (file or directory form) */
	const char *guest;	/* the guest's, recorded cpu-wide (perf record -a) */
	const char *output;	/* written under a temporary name, then renamed */
	uint32_t machine_pid;	/* the QEMU process in the host recording */
	const struct vmpt_tsc_scale *tsc;	/* as in struct vmpt_guest_clock */
	size_t nr_tsc;
	/* A vCPU map ("vcpu N tid T source S" lines); NULL: HOST.vcpus or
	 * HOST/vcpus when there is one, else QEMU's thread names in the
	 * host's COMM records. */
	const char *vcpu_map;
};

/* What a merge did (printed by the command, checked by the tests). */
#define VMPT_GUEST_MERGE_TYPES 32	/* PERF_RECORD_* types counted */
struct vmpt_guest_merge_stats {
	uint64_t host_records;
	uint64_t guest_in;	/* guest sideband records read ... */
	uint64_t guest_out;	/* ... and written: always the same */
	/* Guest records perf inject does not merge either, by type
	 * (PERF_RECORD_SAMPLE, BPF KSYMBOLs, AUX, ...). */
	uint64_t guest_skipped;
	uint64_t guest_by_type[VMPT_GUEST_MERGE_TYPES];	/* merged, by type */
	unsigned nr_vcpus;	/* vCPUs with a thread */
	char vcpu_source[32];	/* "thread names", or the map's source */
	unsigned guest_build_ids;
	int dir;		/* written in the directory form (kcore_dir__PID) */
};

/* Merge; 0, or a negative vmpt_err with err one line naming the file (and
 * offset) and what to do.  The inputs are only read.
 */
int vmpt_guest_merge(const struct vmpt_guest_merge_config *cfg,
		     struct vmpt_guest_merge_stats *stats, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
