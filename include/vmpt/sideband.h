/* SPDX-License-Identifier: MIT */
#ifndef VMPT_SIDEBAND_H
#define VMPT_SIDEBAND_H

#include "vmpt/perf_data.h"

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sideband for what already runs when a recording starts: the kernel only
 * reports comm and mmap changes made after the events are enabled, so
 * perf synthesizes the rest from /proc.  Same here.
 */

/* Receives one record (type, misc and the union fields set; sid.pid and
 * sid.tid set, the rest left to the caller).  Non-zero return stops.
 */
typedef int (*vmpt_sideband_emit)(void *ctx, struct vmpt_perf_event *ev);

/* COMM of every thread of pid, then MMAP2 of each executable mapping in
 * /proc/PID/maps.  Returns the record count or -VMPT_ERR_NOT_FOUND.
 */
int vmpt_sideband_process(const char *procfs_root, pid_t pid,
			  vmpt_sideband_emit emit, void *ctx);

/* The kernel map perf expects: MMAP "[kernel.kallsyms]_text" from _text to
 * the top of the address space.  Returns 1, or 0 when kallsyms shows no
 * _text address.
 */
int vmpt_sideband_kernel(const char *procfs_root, vmpt_sideband_emit emit,
			 void *ctx);

/* After a write error a perf.data has its attrs, data_size 0 and a cut
 * last record: cut the file (PATH, or PATH/data for the directory form)
 * after its last whole record, set data_size and clear the feature bits
 * (their sections would follow the data), so perf reads what was kept.  Returns the records kept (kept_bytes: their size) or a negative
 * vmpt_err.
 */
int64_t vmpt_perf_salvage(const char *path, uint64_t *kept_bytes);

#ifdef __cplusplus
}
#endif

#endif
