/* SPDX-License-Identifier: MIT */
/* vmpt's correlation: see vmpt_tsc_offset.h and docs/correlate.md.
 *
 * The CTC runs on in root and non-root operation alike, so within a
 * stretch of trace the host TSC at any TMA follows from any host TSC
 * packet of the stretch: at the MTC boundary before its TMA the TSC was
 * TSC - FastCounter - (CTC mod MTC period) * TSC:CTC, and every CTC tick
 * adds TSC:CTC.  That is perf's expected TSC, taken from a host TSC packet
 * only (never through a guest's), forwards or, before the first one,
 * backwards.  A guest TSC packet in a PSB+ with PIP.NR=1 is then a sample
 * (host, guest) of its VMCS's scale; runs of samples that one offset (or
 * one ratio and offset) fits exactly are the segments.
 */
#include "vmpt_tsc_offset.h"
#include "vmpt_tsc_fit.h"
#include "vmpt/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SEVEN_BYTES VMPT_SEVEN_BYTES

typedef __int128 s128;

/* The 7-byte TSC made whole with the 8th byte of a nearby value. */
static uint64_t whole(uint64_t tsc, uint64_t near)
{
	return near + (uint64_t)vmpt_sext56((tsc - near) & SEVEN_BYTES);
}

/* The TSC ticks of ctc CTC ticks (may be negative), rounded down. */
static int64_t ctc_ticks(const struct vmpt_tsc_learn *l, int64_t ctc)
{
	s128 t = (s128)ctc * l->ratio_n;
	s128 q = t / l->ratio_d;

	if (t % l->ratio_d < 0)
		q--;
	return (int64_t)q;
}

/* Jitter of the CTC's estimate: one tick when TSC:CTC is no integer. */
static uint64_t tolerance(const struct vmpt_tsc_learn *l)
{
	return l->ratio_d && l->ratio_n % l->ratio_d ? 1 : 0;
}

uint64_t vmpt_tsc_to_host(const struct vmpt_tsc_scale *s, uint64_t g, uint64_t near)
{
	struct vmpt_tsc_scale z = *s;
	uint64_t gv;

	/* The guest's value near the host TSC near, then back through the
	 * scale (exact without scaling).
	 */
	z.offset = 0;
	gv = whole((g - s->offset) & SEVEN_BYTES, vmpt_guest_tsc(&z, near));
	return vmpt_host_tsc(&z, gv);
}

/* ---- relating TSC packets to the host's ---- */

struct anchor {
	uint64_t tsc;		/* host TSC at the MTC boundary before its TMA */
	int64_t boundary;	/* that boundary's CTC position */
	uint32_t stretch;
	int valid;
};

static void anchor_of(const struct vmpt_tsc_learn *l, const struct vmpt_tsc_rec *r,
		      uint64_t host, struct anchor *a)
{
	uint32_t rem = r->tma_ctc & ((1u << l->mtc_period) - 1);

	a->tsc = host - r->tma_fc - (uint64_t)ctc_ticks(l, rem);
	a->boundary = r->ctc_pos - rem;
	a->stretch = r->stretch;
	a->valid = 1;
}

static uint64_t expect(const struct vmpt_tsc_learn *l, const struct anchor *a,
		       const struct vmpt_tsc_rec *r)
{
	return a->tsc + (uint64_t)ctc_ticks(l, r->ctc_pos - a->boundary) + r->tma_fc;
}

/* A TSC packet for vmpt's learning (not a TMA alone, nor something read
 * before the buffer's first PSB).
 */
static int is_tsc(const struct vmpt_tsc_rec *r)
{
	return !(r->flags & (VMPT_REC_TMA_ONLY | VMPT_REC_UNSYNCED));
}

/* A TSC packet outside a PSB+ comes after tracing was off (TraceEn 0 -> 1)
 * or the core slept (a C-state): no MTC told the CTC's ticks meanwhile,
 * and its TMA places it in the stretch only modulo 2^16 CTC ticks.  CTC
 * positions on both sides of it relate only through a host TSC after it.
 */
static int after_gap(const struct vmpt_tsc_rec *r)
{
	return !(r->flags & VMPT_REC_IN_PSB);
}

/* Does host TSC host differ from r's expected one by k >= 1 whole wraps
 * of the TMA's 16-bit CTC (what a gap without MTCs leaves)?
 */
static int whole_wraps(const struct vmpt_tsc_learn *l, const struct anchor *a,
		       const struct vmpt_tsc_rec *r, uint64_t host, uint64_t tol)
{
	struct vmpt_tsc_rec w = *r;
	uint64_t span = (uint64_t)ctc_ticks(l, 1 << 16), res = host - expect(l, a, r), k;
	int64_t d;

	if ((int64_t)res <= 0 || !span)
		return 0;
	/* A wild gap (a crafted TSC) is no whole number of wraps where the
	 * CTC position it asks for leaves 64 bits.
	 */
	k = (res + span / 2) / span;
	if (k > (uint64_t)INT64_MAX >> 16 ||
	    __builtin_add_overflow(w.ctc_pos, (int64_t)(k << 16), &w.ctc_pos) ||
	    __builtin_sub_overflow(w.ctc_pos, a->boundary, &d))
		return 0;
	return host - expect(l, a, &w) + tol <= 2 * tol;
}

#define NO_GAP SIZE_MAX

static void relate_queue(struct vmpt_tsc_learn *l, const struct vmpt_tsc_queue *q)
{
	uint64_t tol = tolerance(l), near = 0, last_host = 0;
	struct anchor a = { 0 };
	size_t last_anchor = 0, gap = NO_GAP;

	/* Forwards: class, host TSCs, expected TSCs from the host TSC before
	 * (unsure once a gap lies between).
	 */
	for (size_t i = q->rec_from; i < q->rec_to; i++) {
		const struct vmpt_tsc_rec *r = &l->recs[i];
		int wraps = 0;

		if (!is_tsc(r))
			continue;
		if (a.valid && a.stretch != r->stretch)
			a.valid = 0;
		if (!a.valid)
			gap = NO_GAP;
		else if (gap == NO_GAP && after_gap(r))
			gap = i;
		if (!near)
			near = l->bufs[r->buf].reference;
		if (r->flags & VMPT_REC_PIP)
			l->st[i] = r->flags & VMPT_REC_NR ? VMPT_TSC_GUEST : VMPT_TSC_HOST;
		if (a.valid && (r->flags & VMPT_REC_OWN_TMA)) {
			l->expected[i] = expect(l, &a, r);
			l->st[i] |= VMPT_TSC_EXPECTED | (gap != NO_GAP ? VMPT_TSC_UNSURE : 0);
		}
		/* No PIP (tracing was off): the host's when the CTC says so
		 * (up to whole wraps of it when this TSC ends a gap), or,
		 * first in its stretch, when it lies between the host TSC
		 * before and the buffer's end (perf's guess too).
		 */
		if (!(r->flags & VMPT_REC_PIP) && (r->flags & VMPT_REC_OWN_TMA)) {
			uint64_t ref = l->bufs[r->buf].reference, h = near ? whole(r->tsc, near) :
								  r->tsc;

			if (l->st[i] & VMPT_TSC_EXPECTED) {
				uint64_t g = whole(r->tsc, l->expected[i]);

				if (g - l->expected[i] + tol > 2 * tol && after_gap(r) &&
				    (!ref || g <= ref))
					wraps = whole_wraps(l, &a, r, g, tol);
				if (wraps || g - l->expected[i] + tol <= 2 * tol)
					l->st[i] |= VMPT_TSC_HOST | VMPT_TSC_NO_PIP;
			} else if (h >= last_host && (!ref || h <= ref)) {
				l->st[i] |= VMPT_TSC_HOST | VMPT_TSC_NO_PIP;
			}
		}
		if (!(l->st[i] & VMPT_TSC_HOST)) {
			if (l->st[i] & VMPT_TSC_EXPECTED)
				near = l->expected[i];
			continue;
		}
		l->host[i] = near ? whole(r->tsc, near) : r->tsc;
		near = last_host = l->host[i];
		if (!(r->flags & VMPT_REC_OWN_TMA))
			continue;
		if (l->st[i] & VMPT_TSC_EXPECTED) {
			uint64_t res = l->host[i] - l->expected[i];

			if (res + tol <= 2 * tol) {
				/* The CTC held: what lies between is sure. */
				for (size_t k = last_anchor + 1; k < i; k++)
					l->st[k] &= (uint8_t)~VMPT_TSC_UNSURE;
			} else if (gap == NO_GAP ||
				   !(wraps || whole_wraps(l, &a, r, l->host[i], tol))) {
				/* Lost MTCs between the two: what lies
				 * between has no host time it can trust.
				 */
				l->host_residuals++;
				if ((int64_t)res < 0)
					res = -res;
				if (res > l->max_host_residual)
					l->max_host_residual = res;
				for (size_t k = last_anchor + 1; k < i; k++)
					l->st[k] |= VMPT_TSC_BROKEN;
			}
			/* else tracing was off (no MTC): what came after the
			 * gap stays unsure, what came before it is sure.
			 */
		}
		l->st[i] &= (uint8_t)~VMPT_TSC_UNSURE;
		anchor_of(l, r, l->host[i], &a);
		last_anchor = i;
		gap = NO_GAP;
	}
	/* Backwards: before a stretch's first host TSC, from the one after
	 * (unsure across a gap: the anchor's side of it is not this one's).
	 */
	a.valid = 0;
	gap = NO_GAP;
	for (size_t i = q->rec_to; i-- > q->rec_from;) {
		const struct vmpt_tsc_rec *r = &l->recs[i];

		if (!is_tsc(r))
			continue;
		if (a.valid && a.stretch != r->stretch)
			a.valid = 0;
		if ((l->st[i] & VMPT_TSC_HOST) && (r->flags & VMPT_REC_OWN_TMA)) {
			anchor_of(l, r, l->host[i], &a);
			gap = after_gap(r) ? i : NO_GAP;
			continue;
		}
		if (a.valid && (r->flags & VMPT_REC_OWN_TMA) &&
		    !(l->st[i] & VMPT_TSC_EXPECTED)) {
			l->expected[i] = expect(l, &a, r);
			l->st[i] |= VMPT_TSC_EXPECTED | (gap != NO_GAP ? VMPT_TSC_UNSURE : 0);
		}
		if (after_gap(r))
			gap = i;
	}
}

/* ---- segments ---- */

struct sample {
	uint64_t vmcs, host, guest;
	size_t rec;
	int owner;
};

static int cmp_sample(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;

	if (x->vmcs != y->vmcs)
		return x->vmcs < y->vmcs ? -1 : 1;
	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	if (x->host != y->host)
		return x->host < y->host ? -1 : 1;
	return x->rec < y->rec ? -1 : x->rec > y->rec;
}

static int push_seg(struct vmpt_tsc_learn *l)
{
	if (l->n_segs == l->segs_cap) {
		size_t nc = l->segs_cap ? 2 * l->segs_cap : 16;
		struct vmpt_tsc_segment *s = realloc(l->segs, nc * sizeof(*s));

		if (!s)
			return -VMPT_ERR_NOMEM;
		l->segs = s;
		l->segs_cap = nc;
	}
	memset(&l->segs[l->n_segs], 0, sizeof(l->segs[0]));
	l->segs[l->n_segs].vcpu = l->segs[l->n_segs].pid = -1;
	l->n_segs++;
	return 0;
}

/* Fit samples s[0..n-1] (one VMCS, host ascending) as one segment. */
static int add_segment(struct vmpt_tsc_learn *l, const struct sample *s, size_t n,
		       uint64_t *hbuf, uint64_t *gbuf)
{
	struct vmpt_tsc_segment *g;
	uint64_t slack = tolerance(l), max = 0;
	int ret = push_seg(l);

	if (ret < 0)
		return ret;
	g = &l->segs[l->n_segs - 1];
	for (size_t i = 0; i < n; i++) {
		hbuf[i] = s[i].host;
		gbuf[i] = s[i].guest;
	}
	g->vmcs = s[0].vmcs;
	g->pid = s[0].owner;
	g->source = VMPT_TSC_FROM_TRACE;
	g->first = s[0].host;
	g->last = s[n - 1].host;
	g->samples = n;
	g->agree = vmpt_tsc_fit(hbuf, gbuf, n, slack, &g->scale, &g->mult_lo, &g->mult_hi);
	g->scaled = g->scale.mult != 0;
	for (size_t i = 0; i < n; i++) {
		int64_t d = vmpt_sext56(gbuf[i] - vmpt_guest_tsc(&g->scale, hbuf[i]));
		uint64_t a = d < 0 ? (uint64_t)-d : (uint64_t)d;

		if (a > max)
			max = a;
		l->seg[s[i].rec] = (int32_t)(l->n_segs - 1);
	}
	g->max_residual = max;
	g->trace_scale = g->scale;
	return 0;
}

static int same_offset(const struct vmpt_tsc_learn *l, const struct sample *a,
		       const struct sample *b)
{
	uint64_t d = ((a->guest - a->host) - (b->guest - b->host)) & SEVEN_BYTES;

	return (uint64_t)(vmpt_sext56(d) + (int64_t)tolerance(l)) <= 2 * tolerance(l);
}

/* Does sample x fit the scaled run s[0..n-1] (its multiplier range)? */
static int fits_scaled(const struct vmpt_tsc_learn *l, const struct sample *s, size_t n,
		       const struct sample *x, uint64_t *lo, uint64_t *hi)
{
	uint64_t dh = x->host - s[0].host, a, b;

	(void)n;
	if (!dh)
		return 0;
	vmpt_tsc_mult_range(dh, vmpt_sext56(x->guest - s[0].guest), 1 + tolerance(l), &a, &b);
	if (a > *lo)
		*lo = a;
	if (b < *hi)
		*hi = b;
	return *lo <= *hi;
}

/* One VMCS's samples, host ascending, into segments: runs of one offset;
 * where the offset moves at every sample (three or more in a row), runs
 * that one ratio and offset fit (TSC scaling).
 */
static int segment_vmcs(struct vmpt_tsc_learn *l, const struct sample *s, size_t n,
			uint64_t *hbuf, uint64_t *gbuf)
{
	size_t i = 0;
	int ret;

	while (i < n) {
		size_t j = i + 1;

		while (j < n && same_offset(l, &s[i], &s[j]))
			j++;
		if (j - i == 1 && j < n) {
			/* The offset moved at once: a scaled run? */
			uint64_t lo = 1, hi = UINT64_MAX;
			size_t k = j;

			while (k < n && fits_scaled(l, &s[i], k - i, &s[k], &lo, &hi) &&
			       (k + 1 >= n || !same_offset(l, &s[k], &s[k + 1])))
				k++;
			if (k - i >= 3)
				j = k;
		}
		ret = add_segment(l, &s[i], j - i, hbuf, gbuf);
		if (ret < 0)
			return ret;
		i = j;
	}
	return 0;
}

/* A guest TSC in a PSB+ with PIP whose host TSC the CTC gives surely. */
static int is_sample(const struct vmpt_tsc_learn *l, size_t i)
{
	return (l->st[i] & (VMPT_TSC_GUEST | VMPT_TSC_EXPECTED | VMPT_TSC_BROKEN |
			    VMPT_TSC_UNSURE)) == (VMPT_TSC_GUEST | VMPT_TSC_EXPECTED) &&
	       (l->recs[i].flags & VMPT_REC_PSB_PIP);
}

static int learn_segments(struct vmpt_tsc_learn *l)
{
	struct sample *s;
	uint64_t *hbuf, *gbuf;
	size_t n = 0;
	int ret = 0;

	for (size_t i = 0; i < l->n_recs; i++)
		if (is_sample(l, i))
			n++;
	s = malloc((n ? n : 1) * sizeof(*s));
	hbuf = malloc((n ? n : 1) * sizeof(*hbuf));
	gbuf = malloc((n ? n : 1) * sizeof(*gbuf));
	if (!s || !hbuf || !gbuf) {
		ret = -VMPT_ERR_NOMEM;
		goto out;
	}
	n = 0;
	for (size_t i = 0; i < l->n_recs; i++) {
		if (!is_sample(l, i))
			continue;
		l->st[i] |= VMPT_TSC_SAMPLE;
		s[n].vmcs = l->recs[i].vmcs == VMPT_NO_VMCS ? 0 : l->recs[i].vmcs;
		s[n].host = l->expected[i];
		s[n].guest = l->recs[i].tsc;
		s[n].rec = i;
		s[n].owner = l->owner ? l->owner[i] : -1;
		n++;
	}
	if (n)
		qsort(s, n, sizeof(*s), cmp_sample);
	for (size_t i = 0; i < n && ret == 0;) {
		size_t j = i;

		while (j < n && s[j].vmcs == s[i].vmcs && s[j].owner == s[i].owner)
			j++;
		ret = segment_vmcs(l, &s[i], j - i, hbuf, gbuf);
		i = j;
	}
out:
	free(s);
	free(hbuf);
	free(gbuf);
	return ret;
}

/* ---- converting every guest TSC packet ---- */

/* The segment of vmcs for a TSC packet: the one whose scale gives exactly
 * its expected host TSC, else the last to start before it (or the first).
 */
static int pick_segment(const struct vmpt_tsc_learn *l, uint64_t vmcs, int owner,
			uint64_t g, int have_exp, uint64_t exp, uint64_t near)
{
	int best = -1, first = -1;
	uint64_t tol = tolerance(l);

	for (size_t k = 0; k < l->n_segs; k++) {
		const struct vmpt_tsc_segment *s = &l->segs[k];

		if (s->vmcs != vmcs || (owner >= 0 && s->pid >= 0 && s->pid != owner))
			continue;
		if (first < 0)
			first = (int)k;
		if (have_exp && s->source != VMPT_TSC_UNKNOWN) {
			uint64_t h = vmpt_tsc_to_host(&s->scale, g, exp);

			if (h - exp + tol <= 2 * tol)
				return (int)k;
		}
		if (s->first <= near)
			best = (int)k;
	}
	return best >= 0 ? best : first;
}

void vmpt_tsc_learn_convert(struct vmpt_tsc_learn *l)
{
	for (size_t k = 0; k < l->n_segs; k++)
		l->segs[k].tsc_packets = 0;
	for (size_t qi = 0; qi < l->n_queues; qi++) {
		const struct vmpt_tsc_queue *q = &l->queues[qi];
		uint64_t near = 0;

		for (size_t i = q->rec_from; i < q->rec_to; i++) {
			const struct vmpt_tsc_rec *r = &l->recs[i];
			uint64_t vmcs = r->vmcs == VMPT_NO_VMCS ? 0 : r->vmcs, exp = l->expected[i];
			int have_exp = !!(l->st[i] & VMPT_TSC_EXPECTED), k;

			if (!is_tsc(r))
				continue;
			if (!near)
				near = l->bufs[r->buf].reference;
			l->st[i] &= (uint8_t)~VMPT_TSC_PATCHED;
			if (l->st[i] & VMPT_TSC_HOST) {
				near = l->host[i];
				continue;
			}
			if (have_exp)
				near = exp;
			k = l->st[i] & VMPT_TSC_SAMPLE ? l->seg[i] :
			    pick_segment(l, vmcs, l->owner ? l->owner[i] : -1, r->tsc,
					 have_exp, exp, near);
			if (!(l->st[i] & VMPT_TSC_GUEST)) {
				/* No PIP: the host's own TSC, or a guest's that
				 * its VMCS's scale explains.
				 */
				if (!have_exp || whole(r->tsc, exp) - exp + tolerance(l) <=
						 2 * tolerance(l))
					continue;
				if (k < 0 || l->segs[k].source == VMPT_TSC_UNKNOWN ||
				    vmpt_tsc_to_host(&l->segs[k].scale, r->tsc, exp) -
				    exp + tolerance(l) > 2 * tolerance(l))
					continue;
			}
			l->seg[i] = k;
			if (k >= 0 && l->segs[k].source == VMPT_TSC_UNKNOWN) {
				/* No scale known: the CTC's estimate, as perf. */
				l->segs[k].tsc_packets++;
				if (!have_exp)
					continue;
				l->host[i] = exp;
			} else if (k >= 0) {
				l->host[i] = vmpt_tsc_to_host(&l->segs[k].scale, r->tsc,
							      near ? near : l->segs[k].first);
				l->segs[k].tsc_packets++;
			} else if (have_exp) {
				/* No scale known: the CTC's estimate, as perf. */
				l->host[i] = exp;
			} else {
				continue;
			}
			/* A sample keeps its measured host TSC (a ratio below
			 * 1.0 maps several host ticks to one guest tick).
			 */
			if ((l->st[i] & VMPT_TSC_SAMPLE) && k >= 0 &&
			    l->segs[k].source == VMPT_TSC_FROM_TRACE)
				l->host[i] = exp;
			l->st[i] |= VMPT_TSC_PATCHED;
			near = l->host[i];
		}
	}
}

int vmpt_tsc_relate(struct vmpt_tsc_learn *l)
{
	size_t n = l->n_recs ? l->n_recs : 1;

	l->expected = calloc(n, sizeof(*l->expected));
	l->host = calloc(n, sizeof(*l->host));
	l->seg = malloc(n * sizeof(*l->seg));
	l->st = calloc(n, sizeof(*l->st));
	if (!l->expected || !l->host || !l->seg || !l->st)
		return -VMPT_ERR_NOMEM;
	for (size_t i = 0; i < l->n_recs; i++)
		l->seg[i] = -1;
	if (!l->ratio_d)
		return 0;	/* no CTC ratio: nothing relates */
	for (size_t q = 0; q < l->n_queues; q++)
		relate_queue(l, &l->queues[q]);
	return 0;
}

int vmpt_tsc_learn(struct vmpt_tsc_learn *l)
{
	int ret;

	if (!l->ratio_d)
		return 0;
	ret = learn_segments(l);
	if (ret < 0)
		return ret;
	vmpt_tsc_learn_convert(l);
	return 0;
}

void vmpt_tsc_learn_free(struct vmpt_tsc_learn *l)
{
	free(l->expected);
	free(l->host);
	free(l->seg);
	free(l->st);
	free(l->segs);
	free(l->owner);
	l->expected = l->host = NULL;
	l->seg = l->owner = NULL;
	l->st = NULL;
	l->segs = NULL;
	l->n_segs = l->segs_cap = 0;
}
