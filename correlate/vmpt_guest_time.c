/* SPDX-License-Identifier: MIT */
/* Guest TSC <-> host TSC: see include/vmpt/guest_time.h. */
#include "vmpt/guest_time.h"

static int scaled(const struct vmpt_tsc_scale *s)
{
	return s->mult && s->mult != 1ull << s->frac_bits;
}

uint64_t vmpt_guest_tsc(const struct vmpt_tsc_scale *s, uint64_t host_tsc)
{
	if (!scaled(s))
		return host_tsc + s->offset;
	return (uint64_t)(((unsigned __int128)host_tsc * s->mult) >> s->frac_bits) +
	       s->offset;
}

uint64_t vmpt_host_tsc(const struct vmpt_tsc_scale *s, uint64_t guest_tsc)
{
	uint64_t g = guest_tsc - s->offset;

	if (!scaled(s))
		return g;
	/* The least h with (h * mult) >> frac >= g: ceil((g << frac) / mult). */
	unsigned __int128 num = (unsigned __int128)g << s->frac_bits;

	return (uint64_t)((num + s->mult - 1) / s->mult);
}
