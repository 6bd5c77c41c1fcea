/* SPDX-License-Identifier: MIT */
/* TSC packets to read as other values: the correlator's answer (the host
 * TSC of each guest TSC packet of a buffer, correlate.h) in the form the
 * flow decoder takes it (vmpt_flow_config.tsc_patches), so the decoder
 * needs no perf.data and every way of applying it gives the same times.
 * Plain data: a sorted array the caller owns.
 */
#ifndef VMPT_TSC_PATCH_H
#define VMPT_TSC_PATCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The TSC packet at offset (in its buffer) holds tsc (7 bytes) instead. */
struct vmpt_tsc_patch {
	uint64_t offset;
	uint64_t tsc;
};

/* A buffer's patches, sorted by offset. */
struct vmpt_tsc_patches {
	const struct vmpt_tsc_patch *p;
	size_t n;
};

/* The patched value of the TSC packet at offset: 0 with *tsc set, or -1. */
static inline int vmpt_tsc_patch_find(const struct vmpt_tsc_patches *pl, uint64_t offset,
				      uint64_t *tsc)
{
	size_t lo = 0, hi = pl->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pl->p[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == pl->n || pl->p[lo].offset != offset)
		return -1;
	*tsc = pl->p[lo].tsc;
	return 0;
}

#ifdef __cplusplus
}
#endif

#endif
