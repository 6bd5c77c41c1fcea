/* SPDX-License-Identifier: MIT */
/* perf.data output of a synthesized trace (libvmpt's perf.data writer). */
#ifndef VMPT_SYNTH_PERF_H
#define VMPT_SYNTH_PERF_H

#include "synth.h"

struct synth_perf_params {
	uint32_t pid;		/* the traced process (thread id = pid) */
	uint64_t tsc0;		/* TSC when the trace starts */
	int vm, guest_code;
	/* guest recording: perf's directory form with the host kernel in
	 * kcore_dir and the guest's side in guest/; TIME_CONV at the guest's
	 * TSC rate (one TSC) */
	const struct synth_grec *grec;
	uint64_t time_mult, time_shift;
	/* Each trace as AUXTRACE buffers of about this many bytes, cut at
	 * packet ends (0: one buffer).
	 */
	uint64_t aux_buffer;
};

/* The PMU type perf record found for intel_pt: a dynamic type, here one
 * that none of the usual fixed PMUs (software 1, tracepoint 2, breakpoint
 * 5) uses; the PMU_MAPPINGS feature names it.
 */
#define SYNTH_PERF_PMU_TYPE 10

/* Time conversion: TSC at cbr * 100 MHz, so ns = tsc * 10 / cbr. */
#define SYNTH_PERF_TIME_SHIFT 31

/* The VMM process's name (its COMM), as QEMU's is. */
#define SYNTH_VMM_COMM "qemu-system-x86"

int synth_perf_write(const char *path, const struct synth_perf_params *pp,
		     const struct synth_pt_config *cfg,
		     const struct synth_walk_config *w,
		     struct synth_out *out, char *err, size_t errlen);

#endif
