/* SPDX-License-Identifier: MIT */
/* vmpt's and libipt's packet decoders in lockstep over one buffer (tests and
 * the fuzzer).
 */
#ifndef VMPT_TESTS_PKT_LOCKSTEP_H
#define VMPT_TESTS_PKT_LOCKSTEP_H

#include <stddef.h>
#include <stdint.h>

struct pkt_lockstep_stats {
	uint64_t packets;	/* decoded alike */
	uint64_t errors;	/* both failed at the same offset */
	uint64_t newer;		/* a packet libipt 2.0.5 does not know */
	uint64_t backward;	/* libipt 2.0.5 synced back to an earlier PSB */
};

/* Decode buf with both from the first PSB, each resyncing at the next PSB
 * after an error as ptdump does.  Returns 0 when they agree on every offset,
 * type, size, error and resync point up to the documented differences
 * (docs/packets.md), else the offset of the first disagreement + 1.
 */
uint64_t pkt_lockstep(const uint8_t *buf, size_t size, struct pkt_lockstep_stats *st);

#endif
