/* SPDX-License-Identifier: MIT */
/* A binary's separate debug file: where Debian's -dbgsym packages,
 * `objcopy --only-keep-debug` with `--add-gnu-debuglink`, and perf's
 * build-id cache put the symbols and DWARF a stripped binary lacks.
 */
#ifndef VMPT_DEBUG_FILE_H
#define VMPT_DEBUG_FILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the debug file must hold. */
#define VMPT_DEBUG_SYMTAB	1u	/* a .symtab */
#define VMPT_DEBUG_DWARF	2u	/* a .debug_info with contents */

/* The debug file of the ELF binary at path (its contents: data, size), in
 * perf 6.1's order: the .gnu_debuglink name (as is, beside the binary,
 * in its .debug/, under /usr/lib/debug/ + its directory), perf's build-id
 * cache (~/.debug/.build-id/ab/cdef.../debug, or $PERF_BUILDID_DIR),
 * /usr/lib/debug/PATH.debug, /usr/lib/debug/PATH,
 * /usr/lib/debug/.build-id/ab/cdef....debug, the debuginfod servers of
 * $DEBUGINFOD_URLS (vmpt/debuginfod.h); the first regular ELF file
 * holding `want` whose build-id is the binary's (when both have one).
 * 0 with its path in out, or -VMPT_ERR_NOT_FOUND.
 */
int vmpt_debug_file_find(const char *path, const uint8_t *data, size_t size,
			 unsigned want, char *out, size_t cap);

/* The build-id of an ELF image in memory, from its notes (sections or
 * segments: a debug file's segments may point at nothing), as hex.  0 or
 * -VMPT_ERR_NOT_FOUND.
 */
int vmpt_debug_file_build_id(const uint8_t *data, size_t size, char hex[41]);

#ifdef __cplusplus
}
#endif

#endif
