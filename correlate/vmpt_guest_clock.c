/* SPDX-License-Identifier: MIT */
/* A guest's perf time on the host's time line: see
 * include/vmpt/guest_merge.h.
 */
#include "vmpt/guest_merge.h"

static const struct vmpt_tsc_scale no_scaling;

uint64_t vmpt_guest_clock_host_time(const struct vmpt_guest_clock *c, unsigned vcpu,
				    uint64_t t)
{
	const struct vmpt_tsc_scale *s = &no_scaling;
	uint64_t guest_tsc;

	if (!t)
		return 0;
	if (c->nr_tsc == 1)
		s = &c->tsc[0];
	else if (vcpu < c->nr_tsc)
		s = &c->tsc[vcpu];
	guest_tsc = vmpt_perf_time_to_tsc(&c->guest, t);
	return vmpt_perf_tsc_to_time(&c->host, vmpt_host_tsc(s, guest_tsc));
}

const char *vmpt_guest_clock_unusable(const struct vmpt_perf_time_conv *tc)
{
	/* perf writes TIME_CONV only with cap_user_time_zero; its 32-byte
	 * form (perf < 5.10) has no flag to say so. */
	if (tc->extended && !tc->cap_user_time_zero)
		return "cap_user_time_zero is 0: the perf clock is not the TSC";
	if (!tc->time_mult)
		return "time_mult is 0";
	if (tc->time_shift >= 64)
		return "time_shift is 64 or more";
	return NULL;
}
