/* SPDX-License-Identifier: MIT */
#ifndef VMPT_KCORE_H
#define VMPT_KCORE_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* perf's kcore_dir: DIR/kcore (an ELF core of the kernel text and the
 * module text only, cut from /proc/kcore), DIR/kallsyms, DIR/modules,
 * all read at the same moment so addresses agree.
 */

struct vmpt_kcore_stats {
	uint64_t text_start, text_end;		/* kernel text (_stext.._etext) */
	uint64_t modules_start, modules_end;	/* 0 when no modules */
	unsigned nr_segments;
	uint64_t bytes;
};

int vmpt_kcore_copy(const char *procfs_root, const char *dir,
		    struct vmpt_kcore_stats *stats, char *err, size_t errlen);

/* The pieces below serve both vmpt_kcore_copy and the guest agent's
 * in-memory kcore.
 */
struct vmpt_kcore_range {
	uint64_t start, end;	/* [start, end); start == end: empty */
};

/* The page-rounded span of all modules in a /proc/modules file.  Returns 1,
 * or 0 with an empty range when the file is missing or lists no address.
 */
int vmpt_kcore_module_range(const char *path, struct vmpt_kcore_range *mods);

/* The parts of the PT_LOAD segments ph[0..nph) that lie inside the wanted
 * ranges, range by range, at most max into out: addresses and sizes cut,
 * p_offset still into the source core.  Returns how many.
 */
unsigned vmpt_kcore_clip(const Elf64_Phdr *ph, unsigned nph,
			 const struct vmpt_kcore_range *want, unsigned nwant,
			 Elf64_Phdr *out, unsigned max);

#ifdef __cplusplus
}
#endif

#endif
