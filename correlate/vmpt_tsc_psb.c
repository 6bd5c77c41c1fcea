/* SPDX-License-Identifier: MIT */
/* The correlator's learning pass over PSB+s only: see vmpt_tsc_psb.h.
 *
 * Samples are guest TSC packets in PSB+s, and their expected host TSC
 * comes from the host PSB+s around them.  TMA's CTC[15:0] is the
 * crystal clock itself (not offset in VMX non-root), so between two host
 * PSB+s less than one CTC wrap apart, every PSB+ is placed exactly by
 * its TMA's CTC difference modulo 2^16: no MTC needs to be counted, and
 * the bytes between PSB+s are never read.
 */
#include "vmpt_tsc_psb.h"
#include "vmpt_tsc_fit.h"
#include "vmpt/error.h"
#include "vmpt/packet.h"

#include <stdlib.h>
#include <string.h>

/* The PSB+ after the PSB at p (p + 16 on): its TSC record in *r.  1: one
 * with a TSC; 0: none; -1: a PSB+ without PSBEND, or a bad packet in it.
 */
static int read_psb(const uint8_t *begin, const uint8_t *p, const uint8_t *end,
		    struct vmpt_tsc_rec *r, uint64_t *vmcs)
{
	struct vmpt_packet pkt;
	unsigned ctx = VMPT_CTX_NONE;
	int n, tsc = 0;

	for (; p < end; p += n) {
		n = vmpt_pkt_decode(p, end, ctx, &pkt);
		if (n <= 0)
			return -1;
		ctx = vmpt_pkt_next_ctx(ctx, &pkt);
		switch (pkt.type) {
		case VMPT_PKT_TSC:
			tsc = 1;
			r->off = (uint64_t)(p - begin);
			r->tsc = pkt.tsc;
			continue;
		case VMPT_PKT_TMA:
			r->flags |= VMPT_REC_TMA | VMPT_REC_OWN_TMA;
			r->tma_ctc = pkt.tma.ctc;
			r->tma_fc = pkt.tma.fc;
			continue;
		case VMPT_PKT_PIP:
			r->flags |= VMPT_REC_PIP | VMPT_REC_PSB_PIP |
				    (pkt.pip.nr ? VMPT_REC_NR : 0);
			continue;
		case VMPT_PKT_VMCS:
			*vmcs = pkt.vmcs >> 12;
			continue;
		case VMPT_PKT_PSBEND:
			r->vmcs = *vmcs;
			return tsc;
		case VMPT_PKT_PSB:
			return -1;
		default:
			continue;
		}
	}
	return -1;
}

static int is_host(const struct vmpt_tsc_rec *r)
{
	return (r->flags & (VMPT_REC_PIP | VMPT_REC_NR | VMPT_REC_OWN_TMA)) ==
	       (VMPT_REC_PIP | VMPT_REC_OWN_TMA);
}

static int is_guest(const struct vmpt_tsc_rec *r)
{
	return (r->flags & (VMPT_REC_PIP | VMPT_REC_NR)) == (VMPT_REC_PIP | VMPT_REC_NR);
}

/* One buffer's PSB+ records (psb[i]: where each one's PSB starts). */
struct psbs {
	struct vmpt_tsc_rec *r;
	uint64_t *psb;
	size_t n, cap;
};

struct placer {
	struct vmpt_tsc_recs *out;
	const struct vmpt_corr_buffer *b;
	uint32_t buf;
	uint64_t wrap;
	uint8_t mtc_period;
	struct vmpt_tsc_psb_stats *st;
	/* The stretch the last record went to, and its CTC position. */
	uint32_t stretch;
	int64_t pos;
	uint16_t ctc;
	int have;
};

/* r into the current stretch, placed by its TMA's CTC difference. */
static int emit(struct placer *pl, struct vmpt_tsc_rec r)
{
	if (r.flags & VMPT_REC_OWN_TMA) {
		if (!pl->have) {
			pl->stretch = ++pl->out->stretches;
			pl->pos = r.tma_ctc;
			pl->have = 1;
		} else {
			pl->pos += (uint16_t)(r.tma_ctc - pl->ctc);
		}
		pl->ctc = r.tma_ctc;
		r.ctc_pos = pl->pos;
	}
	r.stretch = pl->have ? pl->stretch : ++pl->out->stretches;
	return vmpt_tsc_recs_push(pl->out, &r);
}

/* Bytes [from, to) of the buffer walked packet by packet (the packet
 * pass, vmpt_tsc_scan.c), for guest PSB+s that no two host PSB+s a CTC
 * wrap apart bracket.  The walk's first stretch goes on from the current
 * one when from is the PSB of the record emitted last (*joins).
 */
static int walk(struct placer *pl, uint64_t from, uint64_t to, int joins)
{
	struct vmpt_corr_buffer sub = *pl->b;
	struct vmpt_tsc_scan_cfg cfg = { .mtc_period = pl->mtc_period, .have_ratio = 1 };
	struct vmpt_tsc_recs w = { 0 };
	size_t zero = 0, sync, k = 0;
	uint32_t mapped;
	int64_t shift = 0;
	int ret;

	sub.data += from;
	sub.size = to - from;
	pl->st->walked_bytes += to - from;
	ret = vmpt_tsc_scan_queue(&w, &cfg, &sub, &zero, 1, 0, &sync);
	if (ret < 0 || !w.n) {
		vmpt_tsc_recs_free(&w);
		return ret;
	}
	/* The walk's first record is the last one emitted: it continues. */
	if (joins && pl->have && (w.r[0].flags & VMPT_REC_OWN_TMA) &&
	    !(w.r[0].flags & VMPT_REC_TMA_ONLY) &&
	    from + w.r[0].off == pl->out->r[pl->out->n - 1].off) {
		shift = pl->pos - w.r[0].ctc_pos;
		mapped = pl->stretch;
		k = 1;
	} else {
		mapped = ++pl->out->stretches;
		pl->have = 0;
	}
	for (uint32_t cur = w.r[0].stretch; k < w.n; k++) {
		struct vmpt_tsc_rec r = w.r[k];

		if (r.stretch != cur) {
			cur = r.stretch;
			mapped = ++pl->out->stretches;
			shift = 0;
			pl->have = 0;
		}
		r.buf = pl->buf;
		r.off += from;
		r.stretch = mapped;
		r.ctc_pos += shift;
		if (vmpt_tsc_recs_push(pl->out, &r) < 0) {
			vmpt_tsc_recs_free(&w);
			return -VMPT_ERR_NOMEM;
		}
		pl->stretch = mapped;
		if (r.flags & VMPT_REC_OWN_TMA) {
			pl->pos = r.ctc_pos;
			pl->ctc = r.tma_ctc;
			pl->have = 1;
		}
	}
	vmpt_tsc_recs_free(&w);
	return 0;
}

static int any_guest(const struct psbs *t, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (is_guest(&t->r[i]))
			return 1;
	return 0;
}

/* The buffer's PSB+ records into the output: between host PSB+s less
 * than a CTC wrap apart by their TMAs; what no such pair brackets (with a
 * guest PSB+ in it) walked.
 */
static int place(struct placer *pl, const struct psbs *t)
{
	size_t last = SIZE_MAX;	/* the last host PSB+ emitted */
	int ret = 0;

	for (size_t i = 0; i <= t->n && ret == 0; i++) {
		size_t from = last == SIZE_MAX ? 0 : last + 1;

		if (i < t->n && !is_host(&t->r[i]))
			continue;
		if (i < t->n && last != SIZE_MAX &&
		    ((t->r[i].tsc - t->r[last].tsc) & VMPT_SEVEN_BYTES) < pl->wrap) {
			for (size_t k = from; k <= i && ret == 0; k++)
				ret = emit(pl, t->r[k]);
		} else if (any_guest(t, from, i)) {
			uint64_t a = last == SIZE_MAX ? (t->n ? t->psb[0] : 0) : t->psb[last];
			uint64_t z = i + 1 < t->n ? t->psb[i + 1] : pl->b->size;

			pl->st->ambiguous += (uint64_t)(i - from);
			ret = walk(pl, a, z, last != SIZE_MAX);
		} else {
			/* Nothing to learn between: a new stretch from here. */
			for (size_t k = from; k < i && ret == 0; k++) {
				pl->have = 0;
				ret = emit(pl, t->r[k]);
			}
			pl->have = 0;
			if (i < t->n && ret == 0)
				ret = emit(pl, t->r[i]);
		}
		last = i;
	}
	return ret;
}

static void psbs_free(struct psbs *t)
{
	free(t->r);
	free(t->psb);
}

int vmpt_tsc_psb_queue(struct vmpt_tsc_recs *out, const struct vmpt_corr_buffer *bufs,
		       const size_t *idx, size_t n, uint32_t ratio_n, uint32_t ratio_d,
		       uint8_t mtc_period, size_t *sync, struct vmpt_tsc_psb_stats *st)
{
	/* One CTC wrap in TSC ticks, less a tick of slack each side. */
	uint64_t wrap = ((uint64_t)ratio_n << 16) / ratio_d - 2 * ((ratio_n + ratio_d - 1) / ratio_d);
	struct psbs t = { 0 };
	int ret = 0;

	*sync = n;
	for (size_t i = 0; i < n && ret == 0; i++) {
		const struct vmpt_corr_buffer *b = &bufs[idx[i]];
		const uint8_t *p = b->data, *end = b->data + b->size;
		struct placer pl = { .out = out, .b = b, .buf = (uint32_t)idx[i], .wrap = wrap,
				     .mtc_period = mtc_period, .st = st };
		uint64_t vmcs = 0;

		t.n = 0;
		while ((p = vmpt_pkt_find_psb(p, end)) != NULL) {
			struct vmpt_tsc_rec r = { .buf = (uint32_t)idx[i],
						  .flags = VMPT_REC_IN_PSB };
			int got;

			if (*sync == n)
				*sync = i;
			st->psbs++;
			got = read_psb(b->data, p + 16, end, &r, &vmcs);
			if (got < 0) {
				st->bad++;
				break;
			}
			if (got > 0) {
				if (t.n == t.cap) {
					size_t cap = t.cap ? 2 * t.cap : 256;
					void *a = realloc(t.r, cap * sizeof(*t.r));

					if (a)
						t.r = a;
					a = a ? realloc(t.psb, cap * sizeof(*t.psb)) : NULL;
					if (!a) {
						psbs_free(&t);
						return -VMPT_ERR_NOMEM;
					}
					t.psb = a;
					t.cap = cap;
				}
				t.psb[t.n] = (uint64_t)(p - b->data);
				t.r[t.n++] = r;
			}
			p += 16;
		}
		ret = place(&pl, &t);
	}
	psbs_free(&t);
	return ret;
}
