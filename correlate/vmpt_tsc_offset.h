/* SPDX-License-Identifier: MIT */
/* vmpt's own correlation (internal to correlate/): from the packet pass's
 * records, the host TSC every TSC packet was written at (the CTC relates
 * it to the host TSC packets of its stretch), the samples (guest TSC
 * packets in a PSB+ with PIP.NR=1), per VMCS the segments of one offset
 * (and scaling ratio) each, and the host TSC of every guest TSC packet.
 */
#ifndef VMPT_TSC_OFFSET_H
#define VMPT_TSC_OFFSET_H

#include "vmpt_tsc_scan.h"

/* One queue's records and buffers. */
struct vmpt_tsc_queue {
	size_t rec_from, rec_to;	/* its records in the record array */
	size_t perf_from, perf_to;	/* in perf's (struct vmpt_corr) */
	const size_t *bufs;		/* indexes of its buffers, in order */
	size_t n_bufs;
	size_t sync;			/* bufs[sync] has its first PSB (perf's) */
};

enum {
	VMPT_TSC_EXPECTED = 1 << 0,	/* expected[] holds the CTC's host TSC */
	VMPT_TSC_HOST = 1 << 1,		/* written in root operation */
	VMPT_TSC_GUEST = 1 << 2,	/* written in a guest */
	VMPT_TSC_SAMPLE = 1 << 3,	/* a guest TSC in a PSB+ with PIP: learns */
	VMPT_TSC_BROKEN = 1 << 4,	/* the CTC did not hold between host TSCs */
	VMPT_TSC_PATCHED = 1 << 5,	/* host[] is its host TSC */
	VMPT_TSC_NO_PIP = 1 << 6,	/* taken for the host's without a PIP */
	/* Its expected host TSC was carried across a possible gap in the
	 * MTCs that no host TSC after it confirmed: no sample.
	 */
	VMPT_TSC_UNSURE = 1 << 7,
};

struct vmpt_tsc_learn {
	/* in */
	const struct vmpt_tsc_rec *recs;
	size_t n_recs;
	const struct vmpt_corr_buffer *bufs;
	const struct vmpt_tsc_queue *queues;
	size_t n_queues;
	uint32_t ratio_n, ratio_d;
	uint8_t mtc_period;
	/* The VM (host pid) a guest TSC's thread belongs to, -1 unknown:
	 * a VMCS is known by its address within one VM only.
	 */
	int32_t *owner;
	/* out, per record */
	uint64_t *expected;	/* host TSC from the CTC */
	uint64_t *host;		/* the host TSC it is rewritten to (full) */
	int32_t *seg;		/* segment that converted it, -1 none */
	uint8_t *st;		/* VMPT_TSC_* */
	/* out */
	struct vmpt_tsc_segment *segs;
	size_t n_segs, segs_cap;
	uint64_t host_residuals;	/* host TSCs the CTC missed */
	uint64_t max_host_residual;
};

/* Relate every TSC packet to the host's (expected, host TSCs).  0 or
 * -VMPT_ERR_NOMEM.
 */
int vmpt_tsc_relate(struct vmpt_tsc_learn *l);

/* Sample and learn the segments (by VMCS and owner, then time), and
 * convert.  0 or -VMPT_ERR_NOMEM.
 */
int vmpt_tsc_learn(struct vmpt_tsc_learn *l);

/* Set a segment's scale from outside (KVM's or the user's values) and
 * convert its TSC packets again.
 */
void vmpt_tsc_learn_convert(struct vmpt_tsc_learn *l);

void vmpt_tsc_learn_free(struct vmpt_tsc_learn *l);

/* The host TSC of guest TSC payload g (7 bytes) under s, near host TSC
 * near (which picks the upper bits the packet does not hold).
 */
uint64_t vmpt_tsc_to_host(const struct vmpt_tsc_scale *s, uint64_t g, uint64_t near);

#endif
