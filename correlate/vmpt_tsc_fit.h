/* SPDX-License-Identifier: MIT */
/* Fitting a VMX TSC scale to samples (internal to correlate/): guest =
 * ((host * m) >> 48) + offset, 7 bytes of guest TSC each, exactly.
 */
#ifndef VMPT_TSC_FIT_H
#define VMPT_TSC_FIT_H

#include "vmpt/guest_time.h"

#include <stddef.h>
#include <stdint.h>

#define VMPT_SEVEN_BYTES 0xffffffffffffffull

/* A 56-bit value (a TSC packet's, a difference of two) sign-extended. */
static inline int64_t vmpt_sext56(uint64_t v)
{
	return (int64_t)(v << 8) >> 8;
}

/* Multipliers m (48 fraction bits) with (dg - slack) < dh * m / 2^48 <
 * (dg + slack): the guest ran dg ticks while the host ran dh.  *lo > *hi
 * when there are none.
 */
void vmpt_tsc_mult_range(uint64_t dh, int64_t dg, uint64_t slack, uint64_t *lo,
			 uint64_t *hi);

/* Fit (multiplier, offset) to n (host, guest) pairs, host ascending:
 * the simplest fraction (as KVM rounds it) that fits every guest TSC
 * within slack ticks, in the feasible interval returned in [*lo, *hi].
 * Returns how many pairs the fit holds for, 0 when no multiplier fits.
 */
size_t vmpt_tsc_fit(const uint64_t *host, const uint64_t *guest, size_t n, uint64_t slack,
		    struct vmpt_tsc_scale *s, uint64_t *lo, uint64_t *hi);

/* The same, exactly (slack 0). */
size_t vmpt_tsc_fit_scale(const uint64_t *host, const uint64_t *guest, size_t n,
			  struct vmpt_tsc_scale *s, uint64_t *lo, uint64_t *hi);

#endif
