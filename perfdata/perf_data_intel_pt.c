/* SPDX-License-Identifier: MIT */
/* intel_pt attrs and AUXTRACE_INFO as perf record sets them up
 * (tools/perf/arch/x86/util/intel-pt.c).
 */
#include "vmpt/perf_data.h"

#include <string.h>

/* Bit positions of the intel_pt format terms (sysfs .../intel_pt/format,
 * the same on every Intel PT machine).  perf stores the term's config
 * value, not the bit number.
 */
#define PT_CYC (1ULL << 1)
#define PT_MTC (1ULL << 9)
#define PT_TSC (1ULL << 10)
#define PT_NORETCOMP (1ULL << 11)
#define PT_MTC_PERIOD_MASK (0xfULL << 14)

#define SAMPLE_TYPE (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
		     PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

/* What every attr vmpt records with has, as perf record sets it: a
 * sample_id on each record (time, cpu, identifier) and ids to read.
 */
static void record_attr(struct perf_event_attr *attr, uint32_t type, uint64_t config)
{
	memset(attr, 0, sizeof(*attr));
	attr->type = type;
	attr->size = sizeof(*attr);
	attr->config = config;
	attr->sample_period = 1;
	attr->sample_type = SAMPLE_TYPE;
	attr->read_format = PERF_FORMAT_ID;
	attr->sample_id_all = 1;
}

void vmpt_perf_intel_pt_attr(struct perf_event_attr *attr, uint32_t pmu_type,
			     uint64_t config)
{
	record_attr(attr, pmu_type, config);
	attr->disabled = 1;
	attr->enable_on_exec = 1;
}

void vmpt_perf_sideband_attr(struct perf_event_attr *attr)
{
	record_attr(attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY);
	attr->mmap = 1;
	attr->mmap2 = 1;
	attr->comm = 1;
	attr->comm_exec = 1;
	attr->task = 1;
	attr->context_switch = 1;
}

void vmpt_perf_intel_pt_info_init(struct vmpt_perf_intel_pt_info *info,
				  uint32_t pmu_type,
				  const struct vmpt_perf_time_conv *tc,
				  uint32_t tsc_ctc_n, uint32_t tsc_ctc_d,
				  uint32_t max_nonturbo_ratio, int per_cpu_mmaps)
{
	uint64_t *p = info->priv;

	memset(info, 0, sizeof(*info));
	p[VMPT_INTEL_PT_PMU_TYPE] = pmu_type;
	p[VMPT_INTEL_PT_TIME_SHIFT] = tc->time_shift;
	p[VMPT_INTEL_PT_TIME_MULT] = tc->time_mult;
	p[VMPT_INTEL_PT_TIME_ZERO] = tc->time_zero;
	p[VMPT_INTEL_PT_CAP_USER_TIME_ZERO] = tc->cap_user_time_zero;
	p[VMPT_INTEL_PT_TSC_BIT] = PT_TSC;
	p[VMPT_INTEL_PT_NORETCOMP_BIT] = PT_NORETCOMP;
	/* The sideband attr records context switches: perf's 3 (cpu-wide)
	 * or 2 (per-thread). */
	p[VMPT_INTEL_PT_HAVE_SCHED_SWITCH] = per_cpu_mmaps ? 3 : 2;
	p[VMPT_INTEL_PT_SNAPSHOT_MODE] = 0;
	p[VMPT_INTEL_PT_PER_CPU_MMAPS] = !!per_cpu_mmaps;
	p[VMPT_INTEL_PT_MTC_BIT] = PT_MTC;
	p[VMPT_INTEL_PT_MTC_FREQ_BITS] = PT_MTC_PERIOD_MASK;
	p[VMPT_INTEL_PT_TSC_CTC_N] = tsc_ctc_n;
	p[VMPT_INTEL_PT_TSC_CTC_D] = tsc_ctc_d;
	p[VMPT_INTEL_PT_CYC_BIT] = PT_CYC;
	p[VMPT_INTEL_PT_MAX_NONTURBO_RATIO] = max_nonturbo_ratio;
	p[VMPT_INTEL_PT_FILTER_STR_LEN] = 0;
}
