/* SPDX-License-Identifier: MIT */
/* The correlator's packet pass: see vmpt_tsc_scan.h.
 *
 * Two views of the CTC are kept side by side.  perf's (last_ctc,
 * ctc_delta, counted only while its decoder "has TMA") is what perf's
 * expected TSC is made of; vmpt's is a CTC position per stretch of trace
 * that nothing interrupted (no new buffer, OVF, bad byte or TraceStop), so
 * that any two TSC packets of a stretch can be related, forwards or
 * backwards.
 */
#include "vmpt_tsc_scan.h"
#include "vmpt/error.h"
#include "vmpt/packet.h"
#include "../decoder/packet/vmpt_packet_fast.h"

#include <stdlib.h>
#include <string.h>

/* What perf's decoder looked ahead for in a PSB+ (intel_pt_vm_tm_corr_psb). */
struct psb_data {
	uint8_t tsc, tma, pip, nr, vmcs, psbend;
	uint16_t tma_ctc, tma_fc;
	uint64_t vmcs_payload;
	uint64_t ctc_delta;
	uint32_t last_ctc;
};

struct scan {
	struct vmpt_tsc_recs *out;
	const struct vmpt_tsc_scan_cfg *cfg;
	/* The buffer's bytes; joined, the next buffers' first bytes follow
	 * up to end, and packets starting at limit and on are theirs.
	 */
	const uint8_t *begin, *end, *limit;
	uint32_t buf;
	unsigned ctx;			/* the packet context at p */
	/* perf's decoder */
	uint8_t pge, in_psb, cont, same_buf, nr;
	uint8_t have_tma, fixup, mtc_counted;
	uint8_t no_psbend;		/* the next TSC follows a PSB without PSBEND */
	uint8_t unsynced;		/* no PSB yet in a buffer perf repositions at */
	uint64_t vmcs;
	uint32_t last_ctc, last_mtc;
	uint64_t ctc_delta;
	struct psb_data data;
	/* vmpt's CTC positions */
	uint8_t have_base;
	int64_t boundary;
	/* The TSC record its TMA is still to come for, or -1. */
	long pending;
};

int vmpt_tsc_recs_push(struct vmpt_tsc_recs *o, const struct vmpt_tsc_rec *r)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 1024;
		struct vmpt_tsc_rec *p = realloc(o->r, cap * sizeof(*p));

		if (!p)
			return -VMPT_ERR_NOMEM;
		o->r = p;
		o->cap = cap;
	}
	o->r[o->n++] = *r;
	return 0;
}

static void new_stretch(struct scan *s)
{
	s->out->stretches++;
	s->have_base = 0;
	s->pending = -1;
}

/* Decode the packet at p; <= 0 for what perf takes as a bad packet (a
 * reserved opcode, a malformed or a cut-off packet).
 */
static int decode(const struct scan *s, const uint8_t *p, unsigned ctx,
		  struct vmpt_packet *pkt)
{
	int n = vmpt_pkt_decode(p, s->end, ctx, pkt);

	return n > 0 ? n : 0;
}

/* perf's intel_pt_fixup_last_mtc: TMA has CTC[15:0]; with an MTC period
 * above 8 the MTC's upper bits are not in it: take the least difference
 * that puts the last MTC before this one.
 */
static uint32_t fixup_last_mtc(uint32_t mtc, unsigned shift, uint32_t last)
{
	uint32_t first_missing = 1u << (16 - shift);
	uint32_t mask = ~(first_missing - 1);

	last |= mtc & mask;
	if (last >= mtc) {
		last -= first_missing;
		last &= 0xff;
	}
	return last;
}

/* The MTC's CTC ticks, counted by perf while it has a TMA, and by vmpt's
 * positions (which a TMA relates to its stretch).  Both follow the same
 * last MTC: perf's goes unused from a TSC to its TMA, which sets it anew.
 */
static inline void on_mtc(struct scan *s, uint8_t mtc)
{
	unsigned shift = s->cfg->mtc_period;
	uint8_t d;
	uint64_t ticks;

	if (__builtin_expect(s->fixup, 0)) {
		s->fixup = 0;
		if (shift > 8)
			s->last_mtc = fixup_last_mtc(mtc, shift, s->last_mtc);
	}
	/* An MTC equal to the last one is a whole wrap later. */
	d = (uint8_t)(mtc - s->last_mtc);
	ticks = (uint64_t)(d ? d : 256) << shift;
	s->last_mtc = mtc;
	s->boundary += (int64_t)ticks;
	if (s->have_tma) {
		s->ctc_delta += ticks;
		s->mtc_counted = 1;
	}
}

static int on_tma(struct scan *s, uint64_t off, uint16_t ctc, uint16_t fc)
{
	unsigned shift = s->cfg->mtc_period;
	uint32_t rem = ctc & ((1u << shift) - 1);
	struct vmpt_tsc_rec r = { 0 };
	int64_t pos;

	if (s->cfg->have_ratio) {
		s->last_ctc = ctc - rem;
		s->ctc_delta = 0;
		s->have_tma = 1;
		s->mtc_counted = 0;
	}
	s->last_mtc = (ctc >> shift) & 0xff;
	s->fixup = 1;
	/* vmpt: the TMA's place in the stretch (a TSC may slip past an MTC,
	 * so the difference is taken signed).
	 */
	pos = s->have_base ? s->boundary + (int16_t)(uint16_t)(ctc - (uint16_t)s->boundary) :
			     (int64_t)ctc;
	s->boundary = pos - rem;
	s->have_base = 1;
	if (s->pending >= 0) {
		struct vmpt_tsc_rec *t = &s->out->r[s->pending];

		s->pending = -1;
		t->flags |= VMPT_REC_OWN_TMA;
		t->tma_ctc = ctc;
		t->tma_fc = fc;
		t->ctc_pos = pos;
		t->stretch = s->out->stretches;
		return 0;
	}
	r.off = off;
	r.buf = s->buf;
	r.stretch = s->out->stretches;
	r.flags = VMPT_REC_TMA_ONLY | VMPT_REC_OWN_TMA | (s->unsynced ? VMPT_REC_UNSYNCED : 0);
	r.tma_ctc = ctc;
	r.tma_fc = fc;
	r.ctc_pos = pos;
	return vmpt_tsc_recs_push(s->out, &r);
}

/* perf's intel_pt_vm_psb_lookahead_cb over the PSB+ after p. */
static void psb_lookahead(struct scan *s, const uint8_t *p, unsigned ctx)
{
	struct psb_data *d = &s->data;
	struct vmpt_packet pkt;
	int n;

	memset(d, 0, sizeof(*d));
	d->ctc_delta = s->ctc_delta;
	d->last_ctc = s->last_ctc;
	for (; (n = decode(s, p, ctx, &pkt)) > 0; p += n) {
		ctx = vmpt_pkt_next_ctx(ctx, &pkt);
		switch (pkt.type) {
		case VMPT_PKT_PAD:
		case VMPT_PKT_MNT:
		case VMPT_PKT_MODE_EXEC:
		case VMPT_PKT_MODE_TSX:
		case VMPT_PKT_MTC:
		case VMPT_PKT_FUP:
		case VMPT_PKT_CYC:
		case VMPT_PKT_CBR:
			continue;
		case VMPT_PKT_TSC:
			d->tsc = 1;
			continue;
		case VMPT_PKT_TMA:
			d->tma = 1;
			d->tma_ctc = pkt.tma.ctc;
			d->tma_fc = pkt.tma.fc;
			continue;
		case VMPT_PKT_PIP:
			d->pip = 1;
			d->nr = pkt.pip.nr;
			continue;
		case VMPT_PKT_VMCS:
			d->vmcs = 1;
			d->vmcs_payload = pkt.vmcs >> 12;
			continue;
		case VMPT_PKT_PSBEND:
			d->psbend = 1;
			break;
		default:
			break;
		}
		break;
	}
	if (d->tsc && !d->psbend)
		s->no_psbend = 1;
	s->in_psb = d->psbend;
}

/* perf's intel_pt_tma_lookahead_cb: a TMA within 16 CYC/MTC after a TSC
 * outside a PSB+.
 */
static int tma_lookahead(const struct scan *s, const uint8_t *p, unsigned ctx,
			 uint16_t *ctc, uint16_t *fc)
{
	struct vmpt_packet pkt;
	int n, left = 16;

	for (; (n = decode(s, p, ctx, &pkt)) > 0; p += n) {
		ctx = vmpt_pkt_next_ctx(ctx, &pkt);
		if (pkt.type == VMPT_PKT_PAD)
			continue;
		if (pkt.type == VMPT_PKT_CYC || pkt.type == VMPT_PKT_MTC) {
			if (!--left)
				return 0;
			continue;
		}
		if (pkt.type != VMPT_PKT_TMA)
			return 0;
		*ctc = pkt.tma.ctc;
		*fc = pkt.tma.fc;
		return 1;
	}
	return 0;
}

/* perf's intel_pt_ovf_fup_lookahead: tracing goes on after an OVF when a
 * FUP comes (within 16 CYC/MTC/TSC).
 */
static int ovf_fup_lookahead(const struct scan *s, const uint8_t *p, unsigned ctx)
{
	struct vmpt_packet pkt;
	int n, left = 16;

	for (; (n = decode(s, p, ctx, &pkt)) > 0; p += n) {
		ctx = vmpt_pkt_next_ctx(ctx, &pkt);
		if (pkt.type == VMPT_PKT_PAD)
			continue;
		if (pkt.type == VMPT_PKT_CYC || pkt.type == VMPT_PKT_MTC ||
		    pkt.type == VMPT_PKT_TSC) {
			if (!--left)
				return 0;
			continue;
		}
		return pkt.type == VMPT_PKT_FUP;
	}
	return 0;
}

static int on_tsc(struct scan *s, const uint8_t *p, int n, unsigned ctx, uint64_t tsc)
{
	struct vmpt_tsc_rec r = { 0 };
	struct psb_data d = s->data;
	int ret;

	r.off = (uint64_t)(p - s->begin);
	r.tsc = tsc;
	r.buf = s->buf;
	r.stretch = s->out->stretches;
	r.vmcs = s->vmcs;
	if (s->no_psbend)
		r.flags |= VMPT_REC_NO_PSBEND;
	if (s->unsynced)
		r.flags |= VMPT_REC_UNSYNCED;
	s->no_psbend = 0;
	if (s->in_psb) {
		r.flags |= VMPT_REC_IN_PSB;
		if (d.vmcs)
			r.vmcs = d.vmcs_payload;
		if (d.pip)
			r.flags |= VMPT_REC_PIP | VMPT_REC_PSB_PIP | (d.nr ? VMPT_REC_NR : 0);
	} else {
		memset(&d, 0, sizeof(d));
		d.ctc_delta = s->ctc_delta;
		d.last_ctc = s->last_ctc;
		d.tma = (uint8_t)tma_lookahead(s, p + n, ctx, &d.tma_ctc, &d.tma_fc);
		if (s->pge)
			r.flags |= VMPT_REC_PIP | (s->nr ? VMPT_REC_NR : 0);
	}
	if (d.tma) {
		uint32_t last = d.last_ctc + (uint32_t)d.ctc_delta;

		r.flags |= VMPT_REC_TMA;
		r.tma_ctc = d.tma_ctc;
		r.tma_fc = d.tma_fc;
		r.perf_ticks = d.ctc_delta +
			(uint64_t)(int64_t)(int16_t)(uint16_t)(d.tma_ctc - (uint16_t)last);
	}
	r.perf_mtc_ticks = s->ctc_delta;
	if (s->mtc_counted)
		r.flags |= VMPT_REC_MTC;
	r.flags |= (s->pge ? VMPT_REC_PGE : 0) | (s->cont ? VMPT_REC_CONT : 0) |
		   (s->same_buf ? VMPT_REC_SAME_BUF : 0);
	ret = vmpt_tsc_recs_push(s->out, &r);
	if (ret < 0)
		return ret;
	s->pending = (long)s->out->n - 1;
	/* perf's calc_tsc_timestamp, then the correlation's bookkeeping. */
	s->have_tma = 0;
	s->same_buf = 1;
	s->cont = s->pge;
	return 0;
}

/* What the pass does with a packet, by its first byte (outside a block
 * context): most of a trace needs one table lookup.
 */
enum {
	ACT_SKIP = 1,	/* PAD, one-byte CYC */
	ACT_PGE,	/* TNT-8, TIP, TIP.PGE: packet generation is on */
	ACT_PGD,	/* TIP.PGD */
	ACT_FUP,	/* on in a PSB+ */
	ACT_MTC,
	ACT_SLOW,	/* decode it */
};

static uint8_t act[256], act_len[256];
/* Packet generation after an action (outside a PSB+, in one), by the
 * state before: pge | cont << 1.
 */
static uint8_t pge_next[2][ACT_SLOW + 1][4];

__attribute__((constructor)) static void fill_act(void)
{
	/* After the packet decoder's table (filled by its constructor,
	 * which may run later: so derive from the full decoder here).
	 */
	for (unsigned b = 0; b < 256; b++) {
		uint8_t bytes[VMPT_PKT_MAX_SIZE] = { (uint8_t)b };
		struct vmpt_packet pkt;
		int n = vmpt_pkt_decode(bytes, bytes + sizeof(bytes), VMPT_CTX_NONE, &pkt);

		act[b] = ACT_SLOW;
		if (n <= 0)
			continue;
		/* Only packets whose size the first byte tells. */
		for (unsigned k = 1; k < sizeof(bytes); k++) {
			struct vmpt_packet other;

			bytes[k] = 0xff;
			if (vmpt_pkt_decode(bytes, bytes + sizeof(bytes), VMPT_CTX_NONE,
					    &other) != n || other.type != pkt.type)
				n = 0;
		}
		if (n <= 0)
			continue;
		act_len[b] = (uint8_t)n;
		switch (pkt.type) {
		case VMPT_PKT_PAD:
		case VMPT_PKT_CYC:
			act[b] = ACT_SKIP;
			break;
		case VMPT_PKT_TNT8:
		case VMPT_PKT_TIP:
		case VMPT_PKT_TIP_PGE:
			act[b] = ACT_PGE;
			break;
		case VMPT_PKT_TIP_PGD:
			act[b] = ACT_PGD;
			break;
		case VMPT_PKT_FUP:
			act[b] = ACT_FUP;
			break;
		case VMPT_PKT_MTC:
			act[b] = ACT_MTC;
			break;
		default:
			break;
		}
	}
	for (unsigned in_psb = 0; in_psb < 2; in_psb++)
		for (unsigned a = 0; a <= ACT_SLOW; a++)
			for (unsigned st = 0; st < 4; st++) {
				unsigned pge = st & 1, cont = st >> 1;

				if (a == ACT_PGE || (a == ACT_FUP && in_psb))
					pge = 1;
				if (a == ACT_PGD)
					pge = cont = 0;
				pge_next[in_psb][a][st] = (uint8_t)(pge | cont << 1);
			}
}

/* The packets perf's correlation does nothing with but packet
 * generation and the CTC, as fast as they come; returns where another
 * one starts (or the buffer's last bytes).  No branch depends on the
 * packet's type but leaving: packet generation (pge, cont) and the MTC
 * ticks go through tables and masks, and the ticks are shared out when
 * it leaves (nothing between changes whether perf counts them).
 */
static const uint8_t *scan_fast(struct scan *s, const uint8_t *p)
{
	const uint8_t *end = s->end - s->limit >= VMPT_PKT_MAX_SIZE ? s->limit :
			     s->end - VMPT_PKT_MAX_SIZE;
	unsigned shift = s->cfg->mtc_period, fixup = s->fixup;
	const uint8_t (*next)[4] = pge_next[!!s->in_psb];
	uint8_t gen = (uint8_t)((s->pge ? 1 : 0) | (s->cont ? 2 : 0)), last = (uint8_t)s->last_mtc, mtcs = 0;
	uint64_t periods = 0;	/* MTC periods */

	while (p < end) {
		unsigned b = *p, a = act[b], is_mtc = a == ACT_MTC, d;

		if (a > ACT_MTC || (is_mtc & fixup)) {
			/* PIP and VMCS, frequent in a VM's trace, here too. */
			if (b != 0x02)
				break;
			if (p[1] == 0x43) {
				s->nr = p[2] & 1;
				p += 8;
				continue;
			}
			if (p[1] != 0xc8)
				break;
			d = 0;
			memcpy(&d, p + 2, 4);
			if (d != 0xffffffff || p[6] != 0xff)
				s->vmcs = d | (uint64_t)p[6] << 32;
			p += 7;
			continue;
		}
		gen = next[a][gen];
		/* An MTC equal to the last one is a whole wrap later. */
		d = (uint8_t)(p[1] - last) - 1u;
		periods += is_mtc ? (uint8_t)d + 1u : 0;
		last = is_mtc ? p[1] : last;
		mtcs |= (uint8_t)is_mtc;
		p += act_len[b];
	}
	s->pge = gen & 1;
	s->cont = gen >> 1;
	s->last_mtc = last;
	s->boundary += (int64_t)(periods << shift);
	if (s->have_tma) {
		s->ctc_delta += periods << shift;
		s->mtc_counted |= mtcs;
	}
	return p;
}

/* The packets of one buffer from p on, perf's way; returns where the
 * packets stop (past limit: in the next buffer), or NULL: no memory.
 */
static const uint8_t *scan_packets(struct scan *s, const uint8_t *p)
{
	unsigned ctx = s->ctx;
	struct vmpt_packet pkt;
	int n, ret;

	while (p < s->limit) {
		if (ctx == VMPT_CTX_NONE)
			p = scan_fast(s, p);
		if (p >= s->limit)
			break;
		n = decode(s, p, ctx, &pkt);
		if (!n) {
			/* perf steps over one byte and starts its
			 * correlation state anew.
			 */
			if (!s->out->bad_packets++) {
				s->out->bad_buf = s->buf;
				s->out->bad_off = (uint64_t)(p - s->begin);
			}
			s->have_tma = 0;
			new_stretch(s);
			p++;
			ctx = VMPT_CTX_NONE;
			if (s->in_psb)
				psb_lookahead(s, p, ctx);
			continue;
		}
		ctx = vmpt_pkt_next_ctx(ctx, &pkt);
		ret = 0;
		switch (pkt.type) {
		case VMPT_PKT_TIP_PGD:
			s->pge = 0;
			s->cont = 0;
			break;
		case VMPT_PKT_TNT8:
		case VMPT_PKT_TNT64:
		case VMPT_PKT_TIP:
		case VMPT_PKT_TIP_PGE:
			s->pge = 1;
			break;
		case VMPT_PKT_OVF:
			s->out->ovf++;
			s->in_psb = 0;
			s->pge = (uint8_t)ovf_fup_lookahead(s, p + n, ctx);
			if (!s->pge)
				s->cont = 0;
			new_stretch(s);
			break;
		case VMPT_PKT_FUP:
			if (s->in_psb)
				s->pge = 1;
			break;
		case VMPT_PKT_STOP:
			s->pge = 0;
			s->cont = 0;
			s->have_tma = 0;
			new_stretch(s);
			break;
		case VMPT_PKT_PSB:
			s->unsynced = 0;
			psb_lookahead(s, p + n, ctx);
			break;
		case VMPT_PKT_PIP:
			s->nr = pkt.pip.nr;
			break;
		case VMPT_PKT_MTC:
			on_mtc(s, pkt.mtc);
			break;
		case VMPT_PKT_TSC:
			ret = on_tsc(s, p, n, ctx, pkt.tsc);
			break;
		case VMPT_PKT_TMA:
			ret = on_tma(s, (uint64_t)(p - s->begin), pkt.tma.ctc, pkt.tma.fc);
			break;
		case VMPT_PKT_PSBEND:
			s->in_psb = 0;
			break;
		case VMPT_PKT_VMCS:
			if ((pkt.vmcs >> 12) != VMPT_NO_VMCS)
				s->vmcs = pkt.vmcs >> 12;
			break;
		default:
			break;
		}
		if (ret < 0)
			return NULL;
		p += n;
	}
	s->ctx = ctx;
	return p;
}

/* Lookaheads read at most this far into the buffers after one (a PSB+,
 * the TMA after a TSC, the FUP after an OVF: some dozen bytes).
 */
#define JOIN_MARGIN (64u << 10)

/* Buffer i of the queue and the first bytes of the ones after it, in
 * one piece (*work, grown as needed): its size, with *len the whole.
 */
static int join_bytes(const struct vmpt_corr_buffer *bufs, const size_t *idx, size_t n,
		      size_t i, uint8_t **work, size_t *cap, size_t *len)
{
	uint64_t size = bufs[idx[i]].size, want = size;

	for (size_t j = i + 1; j < n && want - size < JOIN_MARGIN; j++)
		want += bufs[idx[j]].size;
	if (want - size > JOIN_MARGIN)
		want = size + JOIN_MARGIN;
	if (want > *cap || !*work) {	/* empty buffers: still a piece */
		uint8_t *w = realloc(*work, want ? want : 1);

		if (!w)
			return -VMPT_ERR_NOMEM;
		*work = w;
		*cap = want;
	}
	memcpy(*work, bufs[idx[i]].data, size);
	for (size_t j = i + 1, at = size; at < want; j++) {
		uint64_t k = bufs[idx[j]].size < want - at ? bufs[idx[j]].size : want - at;

		memcpy(*work + at, bufs[idx[j]].data, k);
		at += k;
	}
	*len = want;
	return 0;
}

int vmpt_tsc_scan_queue(struct vmpt_tsc_recs *out, const struct vmpt_tsc_scan_cfg *cfg,
			const struct vmpt_corr_buffer *bufs, const size_t *idx, size_t n,
			int consecutive, size_t *sync)
{
	struct scan s = { .out = out, .cfg = cfg, .pending = -1 };
	int join = cfg->join && consecutive && n > 1, synced = 0, ret = 0;
	uint8_t *work = NULL;
	size_t cap = 0;
	uint64_t carry = 0;	/* of the last buffer's packet into this one */

	*sync = n;
	for (size_t i = 0; i < n; i++) {
		const struct vmpt_corr_buffer *b = &bufs[idx[i]];
		const uint8_t *p;
		size_t len = b->size;

		s.begin = b->data;
		if (join && i + 1 < n) {
			ret = join_bytes(bufs, idx, n, i, &work, &cap, &len);
			if (ret < 0)
				break;
			s.begin = work;
		}
		s.end = s.begin + len;
		s.limit = s.begin + b->size;
		s.buf = (uint32_t)idx[i];
		p = s.begin + (carry < b->size ? carry : b->size);
		carry = carry < b->size ? 0 : carry - b->size;
		if (i == 0 || !consecutive) {
			/* perf repositions: no TMA, not the same buffer. */
			s.have_tma = 0;
			s.same_buf = 0;
			s.unsynced = 1;
			s.ctx = VMPT_CTX_NONE;
			new_stretch(&s);
		}
		if (!synced) {
			/* The queue's first PSB, read as perf's sync does
			 * (joined: one that starts here).
			 */
			p = vmpt_pkt_find_psb(p, s.end);
			if (!p || p >= s.limit)
				continue;
			synced = 1;
			*sync = i;
			s.in_psb = 1;
			s.unsynced = 0;
			s.ctx = VMPT_CTX_NONE;
			psb_lookahead(&s, p + 16, VMPT_CTX_NONE);
			p += 16;
		}
		p = scan_packets(&s, p);
		if (!p) {
			ret = -VMPT_ERR_NOMEM;
			break;
		}
		if (join)
			carry += (uint64_t)(p - s.limit);
	}
	free(work);
	return ret;
}

void vmpt_tsc_recs_free(struct vmpt_tsc_recs *r)
{
	free(r->r);
	memset(r, 0, sizeof(*r));
}
