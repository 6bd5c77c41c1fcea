/* SPDX-License-Identifier: MIT */
#ifndef VMPT_PT_CONFIG_H
#define VMPT_PT_CONFIG_H

#include "vmpt/pmu.h"

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The intel_pt event as perf spells it ("intel_pt/tsc,psb_period=3/u"),
 * turned into a perf_event_attr and checked against the PMU's format/ and
 * caps/ with perf's wording.
 */

struct vmpt_pt_event {
	struct perf_event_attr attr;	/* type, config, exclude_* set */
	char warning[256];		/* e.g. perf's "pt=0 doesn't make sense" */
	char error[512];		/* why parsing failed */
};

/* perf's default config for this PMU: tsc, mtc with mtc_period 3 (or the
 * nearest lower supported), psb_period 3 (idem), pt and branch.
 */
uint64_t vmpt_pt_default_config(const struct vmpt_pmu *pmu);

/* Parse spec for pmu.  Returns 0 or -VMPT_ERR_INVAL with ev->error set. */
int vmpt_pt_event_parse(const struct vmpt_pmu *pmu, const char *spec,
			struct vmpt_pt_event *ev);

/* The values of a caps bitmap the way perf lists them ("0-5", "0,3,6,9"). */
void vmpt_pt_valid_str(uint64_t valid, char *buf, size_t len);

/* Address filters in perf's syntax ("filter 0x401000/0x200@/usr/bin/x",
 * "start ADDR[@FILE]", "stop ADDR[@FILE]", "tracestop ADDR/SIZE[@FILE]",
 * separated by commas) checked against caps/num_address_ranges and turned
 * into the kernel's filter string for PERF_EVENT_IOC_SET_FILTER.
 * Returns the number of filters, or -VMPT_ERR_INVAL with err set.
 */
int vmpt_pt_addr_filter(const struct vmpt_pmu *pmu, const char *spec,
			char *kernel, size_t kernel_len, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
