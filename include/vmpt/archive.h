/* SPDX-License-Identifier: MIT */
/* vmpt archive: the binaries a recording maps, copied into its sysroot
 * (vmpt_session_sysroot: DIR/root, or FILE.root) by path and by build-id,
 * as perf archive packs ~/.debug's copies, so that the recording decodes
 * on another machine.  The kernel's text (kcore_dir) is host/'s
 * vmpt_kcore_copy.
 */
#ifndef VMPT_ARCHIVE_H
#define VMPT_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vmpt_archive_stats {
	size_t files;		/* copied (or there already) */
	uint64_t bytes;		/* copied */
	size_t missing;		/* found nowhere here */
	size_t changed;		/* here with another build-id: not copied */
	int kernel;		/* the recording traced kernel code */
	int have_kcore;		/* it has a kcore_dir (its own, or archived) */
};

/* Copy the code of every executable mapping of the recording's host
 * processes: from perf's build-id cache (~/.debug, $PERF_BUILDID_DIR) or
 * the path itself, a file only when its build-id is the recorded one (or
 * none was recorded); the vdso from the cache or this process's own when
 * it is the recorded one.  Each file found, missing or changed gets a
 * line on report (NULL: none).  0, or a negative vmpt_err with err set
 * (the recording unreadable, the sysroot not writable).
 */
int vmpt_archive(const char *recording, struct vmpt_archive_stats *st, FILE *report,
		 char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
