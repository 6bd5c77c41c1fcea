/* SPDX-License-Identifier: MIT */
#include "vmpt/aux.h"
#include "vmpt/error.h"

#include <stdlib.h>
#include <string.h>

/* The kernel writes the data, then the head; read the head, then the
 * data (acquire).  We read the data, then release the tail. */
static uint64_t load_acquire(const __u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store_release(__u64 *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

int64_t vmpt_aux_read(struct vmpt_aux_area *a, vmpt_aux_sink sink, void *ctx)
{
	uint64_t head = load_acquire(&a->pc->aux_head);
	uint64_t tail = a->pc->aux_tail, from = tail;

	if (head - tail > a->size)
		return -VMPT_ERR_OVERFLOW;	/* the kernel never does this */
	/* Slice by slice, each released before the next is written: the
	 * hardware gets space back while a long write goes on. */
	while (tail != head) {
		uint64_t len = head - tail;

		if (a->slice && len > a->slice)
			len = a->slice;
		uint64_t start = tail & (a->size - 1);
		uint64_t first = len < a->size - start ? len : a->size - start;

		if (sink(ctx, tail, a->base + start, first, a->base, len - first))
			return -VMPT_ERR_IO;
		tail += len;
		store_release(&a->pc->aux_tail, tail);
	}
	return (int64_t)(tail - from);
}

int64_t vmpt_aux_snapshot(struct vmpt_aux_area *a, vmpt_aux_sink sink, void *ctx)
{
	uint64_t head = load_acquire(&a->pc->aux_head) & (a->size - 1);
	if (head < a->snap_prev_head)
		a->snap_wrapped = 1;
	if (!a->snap_wrapped)
		for (uint64_t i = head; i < a->size; i++)
			if (a->base[i]) {
				a->snap_wrapped = 1;
				break;
			}
	a->snap_prev_head = head;
	int rc;
	uint64_t len;
	if (a->snap_wrapped) {
		len = a->size;
		rc = sink(ctx, a->snap_offset, a->base + head, a->size - head,
			  a->base, head);
	} else {
		len = head;
		if (!len)
			return 0;
		rc = sink(ctx, a->snap_offset, a->base, head, NULL, 0);
	}
	if (rc)
		return -VMPT_ERR_IO;
	a->snap_offset += len;
	return (int64_t)len;
}

uint64_t vmpt_aux_count_record(struct vmpt_aux_counts *c,
			       const struct perf_event_header *h)
{
	const uint64_t *u = (const uint64_t *)(h + 1);
	if (h->type == PERF_RECORD_AUX && h->size >= sizeof(*h) + 24) {
		c->aux_records++;
		c->truncated += !!(u[2] & PERF_AUX_FLAG_TRUNCATED);
		c->partial += !!(u[2] & PERF_AUX_FLAG_PARTIAL);
		c->collision += !!(u[2] & PERF_AUX_FLAG_COLLISION);
		return u[2];
	}
	if (h->type == PERF_RECORD_LOST && h->size >= sizeof(*h) + 16) {
		c->lost_records++;
		c->lost_events += u[1];
	}
	return 0;
}

int64_t vmpt_data_ring_read(struct vmpt_data_ring *r, vmpt_record_sink sink,
			    void *ctx)
{
	uint64_t head = load_acquire(&r->pc->data_head);
	uint64_t tail = r->pc->data_tail;
	int64_t count = 0;
	int err = 0;
	if (head - tail > r->size)
		return -VMPT_ERR_OVERFLOW;
	while (tail < head) {
		uint64_t off = tail & (r->size - 1);
		struct perf_event_header hdr;
		uint64_t first = r->size - off;
		if (first >= sizeof(hdr)) {
			memcpy(&hdr, r->base + off, sizeof(hdr));
		} else {
			memcpy(&hdr, r->base + off, first);
			memcpy((uint8_t *)&hdr + first, r->base, sizeof(hdr) - first);
		}
		if (hdr.size < sizeof(hdr) || hdr.size > head - tail) {
			err = -VMPT_ERR_FORMAT;
			break;
		}
		const struct perf_event_header *rec;
		if (off + hdr.size <= r->size) {
			rec = (const void *)(r->base + off);
		} else {
			if (!r->bounce && !(r->bounce = malloc(65536))) {
				err = -VMPT_ERR_NOMEM;
				break;
			}
			memcpy(r->bounce, r->base + off, first);
			memcpy(r->bounce + first, r->base, hdr.size - first);
			rec = (const void *)r->bounce;
		}
		if (sink(ctx, rec)) {
			err = -VMPT_ERR_IO;
			break;
		}
		tail += hdr.size;
		count++;
	}
	store_release(&r->pc->data_tail, tail);
	return err ? err : count;
}
