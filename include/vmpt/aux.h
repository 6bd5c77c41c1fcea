/* SPDX-License-Identifier: MIT */
#ifndef VMPT_AUX_H
#define VMPT_AUX_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reading the two rings of a perf event: the data ring (records) and the
 * AUX area (Intel PT bytes).  Both work on any perf_event_mmap_page, so
 * tests drive them with simulated areas written by the test itself.
 */

struct vmpt_aux_area {
	struct perf_event_mmap_page *pc;	/* aux_head / aux_tail */
	const uint8_t *base;			/* aux_size bytes */
	uint64_t size;				/* a power of two */
	uint64_t slice;		/* full-trace mode: most bytes per sink call (0: all) */
	/* Snapshot mode: the kernel keeps aux_head inside the buffer and never
	 * waits for aux_tail; these remember what was taken before. */
	uint64_t snap_prev_head;
	uint64_t snap_offset;			/* bytes taken so far */
	int snap_wrapped;
};

/* Receives one AUX chunk: at most two pieces (the second when the data
 * wraps around the end of the area), offset = position of the first byte
 * in the stream (perf's AUXTRACE offset).  Non-zero return aborts.
 */
typedef int (*vmpt_aux_sink)(void *ctx, uint64_t offset, const void *a,
			     size_t alen, const void *b, size_t blen);

/* Full-trace mode: hand [aux_tail, aux_head) to sink, in slices of at most
 * a->slice bytes, advancing aux_tail after each so the kernel may reuse the
 * space.  Returns the byte count or a negative vmpt_err (sink failures give
 * -VMPT_ERR_IO; aux_tail then stays after the last slice written).
 */
int64_t vmpt_aux_read(struct vmpt_aux_area *a, vmpt_aux_sink sink, void *ctx);

/* Snapshot mode (the event disabled while this runs): hand the area's
 * current contents, oldest byte first, to sink: from aux_head to the end
 * then from the start once the area has wrapped, else [0, aux_head).
 * Zero bytes past aux_head mean it has not wrapped (Intel PT pads with
 * zero PAD packets, so nothing is lost either way).
 */
int64_t vmpt_aux_snapshot(struct vmpt_aux_area *a, vmpt_aux_sink sink, void *ctx);

/* What the data ring said about the AUX area and itself. */
struct vmpt_aux_counts {
	uint64_t aux_records, truncated, partial, collision;
	uint64_t lost_records, lost_events;
};

/* Account a PERF_RECORD_AUX (flags: truncated = the area filled up before
 * it was read, partial = the hardware stopped mid-buffer) or
 * PERF_RECORD_LOST.  Returns the AUX record's flags, else 0.
 */
uint64_t vmpt_aux_count_record(struct vmpt_aux_counts *c,
			       const struct perf_event_header *h);

struct vmpt_data_ring {
	struct perf_event_mmap_page *pc;
	const uint8_t *base;	/* data_size bytes after the control page */
	uint64_t size;
	uint8_t *bounce;	/* a record that wraps is copied here */
};

/* Receives one record (header first, hdr->size bytes, contiguous). */
typedef int (*vmpt_record_sink)(void *ctx, const struct perf_event_header *hdr);

/* Hand every record in [data_tail, data_head) to sink, then advance
 * data_tail.  Returns the record count or a negative vmpt_err
 * (-VMPT_ERR_FORMAT for a record header that cannot be right).
 */
int64_t vmpt_data_ring_read(struct vmpt_data_ring *r, vmpt_record_sink sink,
			    void *ctx);

#ifdef __cplusplus
}
#endif

#endif
