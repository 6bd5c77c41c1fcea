/* SPDX-License-Identifier: MIT */
/* Guest TSC <-> host TSC under VMX TSC offsetting and scaling.
 *
 * In VMX non-root operation RDTSC, and the TSC packets of Intel PT, read
 * guest = ((host * mult) >> frac_bits) + offset (mod 2^64), with the
 * multiplier and offset of the current VMCS (Intel SDM Vol. 3C, "Timestamp
 * Counter Offsetting and Scaling").  KVM keeps the multiplier with 48
 * fraction bits on VMX (debugfs tsc-scaling-ratio, -frac-bits); 1.0 is
 * 1 << 48.  MTC and CTC, the crystal clock, are neither offset nor scaled.
 */
#ifndef VMPT_GUEST_TIME_H
#define VMPT_GUEST_TIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vmpt_tsc_scale {
	uint64_t offset;	/* as a u64, the way perf and KVM print it */
	uint64_t mult;		/* 0: no scaling (1.0) */
	uint8_t frac_bits;	/* of mult; 48 on VMX */
};

/* The guest's TSC when the host's reads host_tsc. */
uint64_t vmpt_guest_tsc(const struct vmpt_tsc_scale *s, uint64_t host_tsc);

/* The host TSC at which the guest's first reads guest_tsc: exact without
 * scaling; with it, the first host tick whose guest TSC is guest_tsc or
 * later (a multiplier below 1.0 maps several host ticks to one guest
 * tick).
 */
uint64_t vmpt_host_tsc(const struct vmpt_tsc_scale *s, uint64_t guest_tsc);

#ifdef __cplusplus
}
#endif

#endif
