/* SPDX-License-Identifier: MIT */
#ifndef VMPT_KCORE_H
#define VMPT_KCORE_H

#include <stddef.h>
#include <stdint.h>

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

#endif
