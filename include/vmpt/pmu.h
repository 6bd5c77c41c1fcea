/* SPDX-License-Identifier: MIT */
#ifndef VMPT_PMU_H
#define VMPT_PMU_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A perf PMU as sysfs describes it: /sys/bus/event_source/devices/NAME/
 * {type, format/TERM, caps/CAP}.  The sysfs root is a parameter so tests
 * can point it at fixture trees.
 */

#define VMPT_PMU_MAX_FORMATS 64

/* One format/TERM file: "config:14-17" -> field 0, bits 14..17. */
struct vmpt_pmu_format {
	char name[32];
	int field;		/* 0 config, 1 config1, 2 config2 */
	unsigned lo, hi;	/* bit range, inclusive */
};

struct vmpt_pmu {
	char name[64];
	char dir[4096];		/* .../devices/NAME */
	uint32_t type;
	struct vmpt_pmu_format formats[VMPT_PMU_MAX_FORMATS];
	size_t nr_formats;
};

/* Read sysfs_root/bus/event_source/devices/name.  Returns 0,
 * -VMPT_ERR_NOT_FOUND when the PMU is absent, -VMPT_ERR_FORMAT when a file
 * is malformed (err says which), -VMPT_ERR_IO otherwise.
 */
int vmpt_pmu_open(struct vmpt_pmu *pmu, const char *sysfs_root,
		  const char *name, char *err, size_t errlen);

/* The format of a config term, or NULL. */
const struct vmpt_pmu_format *vmpt_pmu_format(const struct vmpt_pmu *pmu,
					      const char *term);

/* Mask of a format within its config word. */
uint64_t vmpt_pmu_format_mask(const struct vmpt_pmu_format *fmt);

/* caps/NAME read as hexadecimal (the kernel prints caps with "%x").
 * Returns 0, or -VMPT_ERR_NOT_FOUND when the file is absent.
 */
int vmpt_pmu_cap(const struct vmpt_pmu *pmu, const char *cap, uint64_t *value);

/* A small sysfs/procfs file read whole into buf (NUL-terminated, trailing
 * newline removed).  Returns its length or -VMPT_ERR_NOT_FOUND/-IO.
 */
int vmpt_read_small_file(const char *path, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
