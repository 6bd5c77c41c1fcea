/* SPDX-License-Identifier: MIT */
/* Source lines of code addresses from DWARF (elfutils' libdw), as perf
 * script's srcline field shows them: the line table's file:line of an
 * address, the innermost inlined one; per binary, looked up once per
 * address.
 */
#ifndef VMPT_SRCLINE_H
#define VMPT_SRCLINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vmpt_srcline;

/* The source lines of the ELF binary at path (data, size: its contents,
 * kept by the caller while the object lives), from its DWARF or its
 * debug file's (vmpt/debug_file.h, the one perf takes symbols from).
 * NULL: no memory.  A binary without DWARF is no error: its lookups fail.
 */
struct vmpt_srcline *vmpt_srcline_open(const char *path, const uint8_t *data, size_t size);
void vmpt_srcline_free(struct vmpt_srcline *sl);

/* The address objdump shows for file offset off of the binary (perf's
 * map__rip_2objdump: .text's address minus its offset).
 */
uint64_t vmpt_srcline_addr(const struct vmpt_srcline *sl, uint64_t off);

/* The file (its base name, valid while sl lives) and line of objdump
 * address addr, as addr2line answers perf: from the DWARF's line table,
 * else from the symbol table (line 0; file "??" when its symbol names
 * none).  0, or -VMPT_ERR_NOT_FOUND (no DWARF, no function there).
 */
int vmpt_srcline_find(struct vmpt_srcline *sl, uint64_t addr, const char **file,
		      unsigned *line);

/* The same line with its file's path as the DWARF names it (its
 * directory joined, as addr2line prints it to perf: perf script's
 * srccode reads the source there).
 */
int vmpt_srcline_path(struct vmpt_srcline *sl, uint64_t addr, const char **path,
		      unsigned *line);

/* One frame of the inline chain at an address, innermost first: the
 * function inlined (its name demangled as perf shows it) and where it
 * was (file base name, line).
 */
struct vmpt_inline_frame {
	const char *func;
	const char *file;
	unsigned line;
};

/* The frames of the functions inlined at addr, innermost first, then the
 * function they were inlined into (addr2line -i's records); valid while
 * sl lives.  Returns the count: 1, the function alone (nothing inlined
 * there); 0, no DWARF there.
 */
size_t vmpt_srcline_inlines(struct vmpt_srcline *sl, uint64_t addr,
			    const struct vmpt_inline_frame **frames);

#ifdef __cplusplus
}
#endif

#endif
