/* SPDX-License-Identifier: MIT */
/* TSC and perf time: the kernel's cap_user_time conversion
 * (perf_event_mmap_page), which TIME_CONV and AUXTRACE_INFO carry.
 */
#include "vmpt/perf_data.h"

uint64_t vmpt_perf_tsc_to_time(const struct vmpt_perf_time_conv *tc, uint64_t tsc)
{
	uint64_t quot, rem;

	if (tc->time_shift >= 64 || !tc->time_mult)
		return 0;
	if (tc->cap_user_time_short)
		tsc = tc->time_cycles + ((tsc - tc->time_cycles) & tc->time_mask);
	/* Split so that the multiplication cannot overflow. */
	quot = tsc >> tc->time_shift;
	rem = tsc & ((1ULL << tc->time_shift) - 1);
	return tc->time_zero + quot * tc->time_mult +
	       ((rem * tc->time_mult) >> tc->time_shift);
}

uint64_t vmpt_perf_time_to_tsc(const struct vmpt_perf_time_conv *tc, uint64_t ns)
{
	uint64_t t, quot, rem;

	if (tc->time_shift >= 64 || !tc->time_mult)
		return 0;
	t = ns - tc->time_zero;
	quot = t / tc->time_mult;
	rem = t % tc->time_mult;
	return (quot << tc->time_shift) + (rem << tc->time_shift) / tc->time_mult;
}
