/* SPDX-License-Identifier: MIT */
/* The correlator's learning pass over PSB+s only (internal to
 * correlate/): the records of the TSC packets in PSB+s, with CTC
 * positions and stretches as the packet pass (vmpt_tsc_scan.h) would
 * give them where two host PSB+s less than a CTC wrap apart bracket
 * them; the bytes around PSB+s no such pair brackets are walked by the
 * packet pass.  For learning only: TSC packets outside PSB+s are not read.
 */
#ifndef VMPT_TSC_PSB_H
#define VMPT_TSC_PSB_H

#include "vmpt_tsc_scan.h"

struct vmpt_tsc_psb_stats {
	uint64_t psbs;		/* PSBs found */
	uint64_t ambiguous;	/* PSB+s no host PSB+ pair brackets (walked) */
	uint64_t walked_bytes;	/* bytes walked for them */
	uint64_t bad;		/* PSB+s without PSBEND or with a bad packet */
};

/* Append the records of queue bufs[idx[0..n-1]] (buffers read apart);
 * *sync: the position in idx of the first buffer with a PSB (n: none).
 * 0 or -VMPT_ERR_NOMEM.
 */
int vmpt_tsc_psb_queue(struct vmpt_tsc_recs *out, const struct vmpt_corr_buffer *bufs,
		       const size_t *idx, size_t n, uint32_t ratio_n, uint32_t ratio_d,
		       uint8_t mtc_period, size_t *sync, struct vmpt_tsc_psb_stats *st);

#endif
