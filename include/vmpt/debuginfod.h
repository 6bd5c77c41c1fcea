/* SPDX-License-Identifier: MIT */
/* Binaries and debug files fetched by build-id from debuginfod servers
 * (elfutils' libdebuginfod), as perf and gdb fetch them: the servers of
 * $DEBUGINFOD_URLS, off when it is unset or empty; what was fetched stays
 * in debuginfod's client cache ($DEBUGINFOD_CACHE_PATH, else
 * ~/.cache/debuginfod_client).  libdebuginfod.so.1 is opened at the first
 * lookup; without it, lookups find nothing, as with no servers, and the
 * first says why on stderr.
 */
#ifndef VMPT_DEBUGINFOD_H
#define VMPT_DEBUGINFOD_H

#include <stddef.h>

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

#ifdef __cplusplus
}
#endif

#endif
