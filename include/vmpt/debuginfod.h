/* SPDX-License-Identifier: MIT */
/* Binaries and debug files fetched by build-id from debuginfod servers
 * (elfutils' libdebuginfod), as perf and gdb fetch them: the servers of
 * $DEBUGINFOD_URLS, off when it is unset or empty; what was fetched stays
 * in debuginfod's client cache ($DEBUGINFOD_CACHE_PATH, else
 * ~/.cache/debuginfod_client).  libdebuginfod.so.1 is opened at the first
 * lookup; without it, lookups find nothing, as with no servers, and the
 * first says why on the stream vmpt_debuginfod_set_warn gave (none: it
 * says nothing).
 */
#ifndef VMPT_DEBUGINFOD_H
#define VMPT_DEBUGINFOD_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vmpt_debuginfod_what {
	VMPT_DEBUGINFOD_EXECUTABLE,	/* the binary itself */
	VMPT_DEBUGINFOD_DEBUGINFO,	/* its separate debug file */
};

/* The local path of what the servers have for build-id (hex): 0 with the
 * path in out, or -VMPT_ERR_NOT_FOUND (no servers, none has it, or it
 * does not fit cap).
 */
int vmpt_debuginfod_find(const char *build_id, enum vmpt_debuginfod_what what,
			 char *out, size_t cap);

/* Where the first lookup says that libdebuginfod cannot be opened while
 * DEBUGINFOD_URLS is set (the CLI: stderr); NULL, the default: nowhere.
 */
void vmpt_debuginfod_set_warn(FILE *f);

#ifdef __cplusplus
}
#endif

#endif
