/* SPDX-License-Identifier: MIT */
/* Walking the packets of one trace buffer, with sync to PSBs. */
#include "vmpt/packet.h"
#include "vmpt/error.h"
#include "vmpt_packet_fast.h"

void vmpt_pkt_decoder_init(struct vmpt_pkt_decoder *dec, const uint8_t *buf,
			   size_t size)
{
	dec->begin = buf;
	dec->end = buf + size;
	dec->pos = buf;
	dec->sync = NULL;
	dec->ctx = VMPT_CTX_NONE;
}

int vmpt_pkt_sync_forward(struct vmpt_pkt_decoder *dec)
{
	const uint8_t *from = dec->pos;
	const uint8_t *psb;

	/* Past the PSB synced to; an empty buffer (begin == end == NULL)
	 * has none.
	 */
	if (dec->sync && from == dec->sync)
		from++;
	psb = from < dec->end ? vmpt_pkt_find_psb(from, dec->end) : NULL;
	if (!psb) {
		dec->pos = dec->end;
		return -VMPT_ERR_EOS;
	}
	dec->pos = dec->sync = psb;
	dec->ctx = VMPT_CTX_NONE;
	return 0;
}

int vmpt_pkt_seek(struct vmpt_pkt_decoder *dec, uint64_t offset)
{
	if (offset > (uint64_t)(dec->end - dec->begin))
		return -VMPT_ERR_INVAL;
	dec->pos = dec->begin + offset;
	dec->ctx = VMPT_CTX_NONE;
	return 0;
}

int vmpt_pkt_next(struct vmpt_pkt_decoder *dec, struct vmpt_packet *pkt)
{
	const uint8_t *pos = dec->pos;
	int n;

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
