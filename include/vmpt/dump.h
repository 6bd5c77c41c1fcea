/* SPDX-License-Identifier: MIT */
/* Packet listings (`vmpt dump`): one line per packet, like libipt's ptdump. */
#ifndef VMPT_DUMP_H
#define VMPT_DUMP_H

#include "vmpt/packet.h"

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vmpt_dump_opts {
	unsigned no_pad : 1;	/* leave PAD packets out of the listing */
	unsigned lastip : 1;	/* show the last-IP register on every line */
	unsigned no_sync : 1;	/* decode from offset 0, not the first PSB */
	unsigned quiet : 1;	/* count only (for --stats) */
};

struct vmpt_dump_stats {
	uint64_t count[VMPT_PKT_TYPE_COUNT];
	uint64_t errors;
	uint64_t bytes_skipped;	/* bytes passed over while resyncing */
};

/* List the packets of one trace buffer.  base is added to every offset
 * printed (the buffer's place in its file).  Errors are reported in the
 * listing as "[offset: error: message]" and decoding resumes at the next
 * PSB; they are counted, never fatal.  Returns 0 or -VMPT_ERR_IO when out
 * cannot be written.
 */
int vmpt_dump_stream(FILE *out, const uint8_t *buf, size_t size, uint64_t base,
		     const struct vmpt_dump_opts *opts,
		     struct vmpt_dump_stats *stats);

/* Print stats as "NAME COUNT" lines (types seen, in packet order) and a
 * final "errors COUNT".
 */
int vmpt_dump_print_stats(FILE *out, const struct vmpt_dump_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
