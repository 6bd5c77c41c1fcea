/* SPDX-License-Identifier: MIT */
/* Walking the packets of one trace buffer, or of a trace in parts (a
 * queue's consecutive buffers, as perf reads them: one stream), with sync
 * to PSBs.  A part is read in place up to its last VMPT_PKT_MAX_SIZE - 1
 * bytes; a packet starting there may go on in the next part, so those
 * bytes are read from the seam, a copy of them followed by the next
 * part's first bytes.
 */
#include "vmpt/packet.h"
#include "vmpt/error.h"
#include "vmpt_packet_fast.h"

#include <string.h>

void vmpt_pkt_decoder_init(struct vmpt_pkt_decoder *dec, const uint8_t *buf,
			   size_t size)
{
	memset(dec, 0, offsetof(struct vmpt_pkt_decoder, seam));
	dec->begin = buf;
	/* An empty file maps to (NULL, 0): NULL + 0 is undefined in C. */
	dec->end = size ? buf + size : buf;
	dec->pos = buf;
	dec->limit = dec->end;
	dec->sync = UINT64_MAX;
	dec->ctx = VMPT_CTX_NONE;
}

static uint64_t part_size(const struct vmpt_pkt_part *p)
{
	return (uint64_t)(p->end - p->begin);
}

/* Stand at offset off of part k (at part_base): in the part, or in the
 * seam when a packet starting there may run into the next part.
 */
static void set_part(struct vmpt_pkt_decoder *dec, size_t k, uint64_t part_base,
		     uint64_t off)
{
	const struct vmpt_pkt_part *p = &dec->parts[k];
	uint64_t size = part_size(p), tail = size - off;
	size_t len = 0;

	dec->part = k;
	dec->part_base = part_base;
	if (k + 1 == dec->n_parts || tail >= VMPT_PKT_MAX_SIZE) {
		dec->begin = p->begin;
		dec->end = p->end;
		dec->pos = p->begin + off;
		dec->base = part_base;
		dec->limit = k + 1 == dec->n_parts ? p->end :
			     p->end - (VMPT_PKT_MAX_SIZE - 1);
		return;
	}
	/* The tail, then enough of the parts after it for any packet
	 * starting in the tail.
	 */
	memcpy(dec->seam, p->begin + off, tail);
	len = tail;
	for (size_t j = k + 1; j < dec->n_parts && len < tail + VMPT_PKT_MAX_SIZE; j++) {
		uint64_t n = part_size(&dec->parts[j]);

		if (n > tail + VMPT_PKT_MAX_SIZE - len)
			n = tail + VMPT_PKT_MAX_SIZE - len;
		memcpy(dec->seam + len, dec->parts[j].begin, n);
		len += n;
	}
	dec->begin = dec->pos = dec->seam;
	dec->end = dec->seam + len;
	dec->limit = dec->seam + tail;
	dec->base = part_base + off;
}

void vmpt_pkt_decoder_init_parts(struct vmpt_pkt_decoder *dec,
				 const struct vmpt_pkt_part *parts, size_t n)
{
	vmpt_pkt_decoder_init(dec, n ? parts[0].begin : NULL,
			      n ? (size_t)part_size(&parts[0]) : 0);
	if (n < 2)
		return;
	dec->parts = parts;
	dec->n_parts = n;
	set_part(dec, 0, 0, 0);
}

/* Stand at stream offset off, from the part at hand on (back to the
 * first part when off is before it).  -VMPT_ERR_INVAL past the end.
 */
static int stand_at(struct vmpt_pkt_decoder *dec, uint64_t off)
{
	size_t k = dec->part;
	uint64_t base = dec->part_base;

	if (off < base) {
		k = 0;
		base = 0;
	}
	while (off - base >= part_size(&dec->parts[k]) && k + 1 < dec->n_parts) {
		base += part_size(&dec->parts[k]);
		k++;
	}
	if (off - base > part_size(&dec->parts[k]))
		return -VMPT_ERR_INVAL;
	set_part(dec, k, base, off - base);
	return 0;
}

void vmpt_pkt_move_on(struct vmpt_pkt_decoder *dec)
{
	if (dec->n_parts)
		stand_at(dec, vmpt_pkt_offset(dec));
}

/* The stream's bytes at off and off + 1 are 02 82 (PSB's pair); off is
 * at or after the part at hand.
 */
static int psb_pair_at(const struct vmpt_pkt_decoder *dec, uint64_t off)
{
	static const uint8_t pair[2] = { 0x02, 0x82 };
	uint64_t base = dec->part_base;
	size_t k = dec->part;

	for (int i = 0; i < 2; i++, off++) {
		while (k < dec->n_parts && off - base >= part_size(&dec->parts[k])) {
			base += part_size(&dec->parts[k]);
			k++;
		}
		if (k == dec->n_parts || dec->parts[k].begin[off - base] != pair[i])
			return 0;
	}
	return 1;
}

/* At the end of the bytes at hand (the stream's end: nothing more). */
static int at_end(const struct vmpt_pkt_decoder *dec)
{
	return !dec->n_parts || (dec->part + 1 == dec->n_parts && dec->begin != dec->seam);
}

int vmpt_pkt_sync_forward(struct vmpt_pkt_decoder *dec)
{
	const uint8_t *from = dec->pos;

	/* Past the PSB synced to; an empty buffer (begin == end == NULL)
	 * has none.
	 */
	if (dec->sync == vmpt_pkt_offset(dec))
		from++;
	for (;;) {
		const uint8_t *psb = from < dec->end ? vmpt_pkt_find_psb(from, dec->end) : NULL;

		if (psb) {
			uint64_t off;

			dec->pos = psb;
			dec->ctx = VMPT_CTX_NONE;
			off = vmpt_pkt_offset(dec);
			/* A run of 02 82 is a PSB at its end (as found in one
			 * buffer): the run may go on in the next part.
			 */
			while (dec->n_parts && psb_pair_at(dec, off + VMPT_PKT_MAX_SIZE))
				off += 2;
			dec->sync = off;
			/* Past the seam's tail: in the next part. */
			if (off != vmpt_pkt_offset(dec) || psb >= dec->limit)
				stand_at(dec, off);
			return 0;
		}
		if (at_end(dec)) {
			dec->pos = dec->end;
			return -VMPT_ERR_EOS;
		}
		/* On in the seam (a PSB may straddle the parts), then in
		 * the next part.
		 */
		dec->pos = from > dec->limit ? from : dec->limit;
		vmpt_pkt_move_on(dec);
		from = dec->pos;
	}
}

int vmpt_pkt_seek(struct vmpt_pkt_decoder *dec, uint64_t offset)
{
	dec->ctx = VMPT_CTX_NONE;
	if (dec->n_parts)
		return stand_at(dec, offset);
	if (offset > (uint64_t)(dec->end - dec->begin))
		return -VMPT_ERR_INVAL;
	dec->pos = dec->begin + offset;
	return 0;
}

int vmpt_pkt_next(struct vmpt_pkt_decoder *dec, struct vmpt_packet *pkt)
{
	const uint8_t *pos;
	int n;

	if (__builtin_expect(dec->pos >= dec->limit, 0))
		vmpt_pkt_move_on(dec);
	pos = dec->pos;
	/* Fast packets keep the context at none: no update needed. */
	if (dec->ctx == VMPT_CTX_NONE && dec->end - pos >= VMPT_PKT_FAST_READ) {
		n = vmpt_pkt_decode_fast(pos, pkt);
		if (n) {
			dec->pos = pos + n;
			return n;
		}
	}
	n = vmpt_pkt_decode(pos, dec->end, dec->ctx, pkt);
	if (n < 0)
		return n;
	dec->pos += n;
	dec->ctx = vmpt_pkt_next_ctx(dec->ctx, pkt);
	return n;
}
