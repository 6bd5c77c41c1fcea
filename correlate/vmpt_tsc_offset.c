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
#include "vmpt/error.h"

#include <stdlib.h>
#include <string.h>

#define SEVEN_BYTES 0xffffffffffffffull
#define ONE (1ull << 48)	/* a ratio of 1.0 with KVM's 48 fraction bits */

typedef unsigned __int128 u128;
typedef __int128 s128;

static int64_t sext56(uint64_t v)
{
	return (int64_t)(v << 8) >> 8;
}

/* The 7-byte TSC made whole with the 8th byte of a nearby value. */
static uint64_t whole(uint64_t tsc, uint64_t near)
{
	return near + (uint64_t)sext56((tsc - near) & SEVEN_BYTES);
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
	return l->ratio_n % l->ratio_d ? 1 : 0;
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

static int is_tsc(const struct vmpt_tsc_rec *r)
{
	return !(r->flags & VMPT_REC_TMA_ONLY);
}

static void relate_queue(struct vmpt_tsc_learn *l, const struct vmpt_tsc_queue *q)
{
	uint64_t tol = tolerance(l), near = 0, last_host = 0;
	struct anchor a = { 0 };
	size_t last_anchor = 0;

	/* Forwards: class, host TSCs, expected TSCs from the host TSC before. */
	for (size_t i = q->rec_from; i < q->rec_to; i++) {
		const struct vmpt_tsc_rec *r = &l->recs[i];

		if (!is_tsc(r))
			continue;
		if (a.valid && a.stretch != r->stretch)
			a.valid = 0;
		if (!near)
			near = l->bufs[r->buf].reference;
		if (r->flags & VMPT_REC_PIP)
			l->st[i] = r->flags & VMPT_REC_NR ? VMPT_TSC_GUEST : VMPT_TSC_HOST;
		if (a.valid && (r->flags & VMPT_REC_OWN_TMA)) {
			l->expected[i] = expect(l, &a, r);
			l->st[i] |= VMPT_TSC_EXPECTED;
		}
		/* No PIP (tracing was off): the host's when the CTC says so,
		 * or, first in its stretch, when it lies between the host
		 * TSC before and the buffer's end (perf's guess too).
		 */
		if (!(r->flags & VMPT_REC_PIP) && (r->flags & VMPT_REC_OWN_TMA)) {
			uint64_t ref = l->bufs[r->buf].reference, h = near ? whole(r->tsc, near) :
								  r->tsc;

			if (l->st[i] & VMPT_TSC_EXPECTED ?
			    whole(r->tsc, l->expected[i]) - l->expected[i] + tol <= 2 * tol :
			    h >= last_host && (!ref || h <= ref))
				l->st[i] |= VMPT_TSC_HOST | VMPT_TSC_NO_PIP;
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

			if (res + tol > 2 * tol) {
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
		}
		anchor_of(l, r, l->host[i], &a);
		last_anchor = i;
	}
	/* Backwards: before a stretch's first host TSC, from the one after. */
	a.valid = 0;
	for (size_t i = q->rec_to; i-- > q->rec_from;) {
		const struct vmpt_tsc_rec *r = &l->recs[i];

		if (!is_tsc(r))
			continue;
		if (a.valid && a.stretch != r->stretch)
			a.valid = 0;
		if ((l->st[i] & VMPT_TSC_HOST) && (r->flags & VMPT_REC_OWN_TMA)) {
			anchor_of(l, r, l->host[i], &a);
			continue;
		}
		if (a.valid && (r->flags & VMPT_REC_OWN_TMA) &&
		    !(l->st[i] & VMPT_TSC_EXPECTED)) {
			l->expected[i] = expect(l, &a, r);
			l->st[i] |= VMPT_TSC_EXPECTED;
		}
	}
}

/* ---- fitting a scale ---- */

/* The simplest fraction p/q in [an/ad, bn/bd] (continued fractions). */
static void simplest(u128 an, u128 ad, u128 bn, u128 bd, u128 *p, u128 *q)
{
	u128 p0 = 0, p1 = 1, q0 = 1, q1 = 0;

	for (int depth = 0; depth < 128; depth++) {
		u128 t = an / ad, np, nq;

		if (an % ad == 0 || (t + 1) * bd <= bn) {
			if (an % ad)
				t++;	/* an integer lies inside */
			*p = t * p1 + p0;
			*q = t * q1 + q0;
			return;
		}
		/* Both in (t, t+1): go on with 1 / (x - t), ends swapped. */
		np = t * p1 + p0;
		nq = t * q1 + q0;
		p0 = p1;
		q0 = q1;
		p1 = np;
		q1 = nq;
		{
			u128 na = bd, nad = bn - t * bd, nb = ad, nbd = an - t * ad;

			an = na;
			ad = nad;
			bn = nb;
			bd = nbd;
		}
	}
	*p = an;
	*q = ad;
}

/* Multipliers m (48 fraction bits) with (dg - slack) < dh * m / 2^48 <
 * (dg + slack): the guest ran dg ticks while the host ran dh.
 */
static void mult_range(uint64_t dh, int64_t dg, uint64_t slack, uint64_t *lo, uint64_t *hi)
{
	s128 nlo = ((s128)dg - (s128)slack) * (s128)ONE;
	s128 nhi = ((s128)dg + (s128)slack) * (s128)ONE;
	s128 l, h;

	l = nlo < 0 ? 0 : nlo / (s128)dh + 1;
	h = nhi <= 0 ? -1 : (nhi + (s128)dh - 1) / (s128)dh - 1;
	if (h > (s128)UINT64_MAX)
		h = (s128)UINT64_MAX;
	*lo = l > (s128)UINT64_MAX ? UINT64_MAX : (uint64_t)l;
	*hi = h < 0 ? 0 : (uint64_t)h;
	if (h < 0)
		*lo = 1, *hi = 0;
}

/* ceil(a / b), b > 0. */
static s128 div_up(s128 a, s128 b)
{
	s128 q = a / b;

	return q * b < a ? q + 1 : q;
}

/* The multipliers m with which, c being the guest's value at host[0]
 * less the offset, every guest[i] - offset is (host[i] * m) >> 48 within
 * slack: the interval [*a, *b] (empty when *a > *b).
 */
static void exact_range(const uint64_t *host, const uint64_t *guest, size_t n,
			uint64_t slack, s128 c, s128 *a, s128 *b)
{
	*a = 0;
	*b = (s128)UINT64_MAX;
	for (size_t i = 0; i < n && *a <= *b; i++) {
		s128 k = c + sext56(guest[i] - guest[0]);
		s128 l = div_up((k - (s128)slack) * (s128)ONE, (s128)host[i]);
		s128 h = div_up((k + (s128)slack + 1) * (s128)ONE, (s128)host[i]) - 1;

		if (l > *a)
			*a = l;
		if (h < *b)
			*b = h;
	}
}

/* Is fraction p/q simpler than r/t (smaller denominator, then numerator)? */
static int simpler(u128 p, u128 q, u128 r, u128 t)
{
	return q < t || (q == t && p < r);
}

/* Does multiplier m, with the offset of the first sample, give every
 * guest TSC within slack?
 */
static int fits(const uint64_t *host, const uint64_t *guest, size_t n, uint64_t slack,
		uint64_t m)
{
	struct vmpt_tsc_scale s = { 0, m, 48 };
	uint64_t off = guest[0] - vmpt_guest_tsc(&s, host[0]);

	for (size_t i = 1; i < n; i++) {
		uint64_t d = (guest[i] - vmpt_guest_tsc(&s, host[i]) - off) & SEVEN_BYTES;

		if ((uint64_t)(sext56(d) + (int64_t)slack) > 2 * slack)
			return 0;
	}
	return 1;
}

/* Candidate values of c tried at most (beyond, the pairwise range). */
#define MAX_CANDIDATES 65536

static size_t fit(const uint64_t *host, const uint64_t *guest, size_t n, uint64_t slack,
		  struct vmpt_tsc_scale *s, uint64_t *plo, uint64_t *phi)
{
	uint64_t lo = 1, hi = UINT64_MAX, off0, m = 0;
	u128 bp = 0, bq = 0;
	size_t agree = 0;
	u128 p, q;
	s128 c0, c1;

	/* Necessary: what each pair with the first sample allows. */
	for (size_t i = 1; i < n; i++) {
		uint64_t dh = host[i] - host[0], l, h;

		if (!dh)
			continue;
		mult_range(dh, sext56(guest[i] - guest[0]), 1 + slack, &l, &h);
		if (l > lo)
			lo = l;
		if (h < hi)
			hi = h;
	}
	if (lo > hi) {
		*plo = lo;
		*phi = hi;
		return 0;
	}
	/* The simplest fraction of that range fits exactly most of the time
	 * (1/1 without scaling, KVM's ratios of round frequencies).
	 */
	simplest(lo, ONE, (((u128)hi + 1) << 16) - 1, (u128)ONE << 16, &p, &q);
	m = (uint64_t)(p * ONE / q);
	if (m > hi)
		m = hi;
	if (fits(host, guest, n, slack, m))
		goto found;
	/* Exact: for each integer the guest's TSC (less the offset) may have
	 * had at the first sample, the multipliers all samples allow; the
	 * simplest fraction of them all wins.
	 */
	c0 = (s128)(((u128)host[0] * lo) >> 48);
	c1 = (s128)(((u128)host[0] * hi) >> 48);
	if (c1 - c0 < MAX_CANDIDATES && n > 1) {
		uint64_t elo = UINT64_MAX, ehi = 0;

		for (s128 c = c0; c <= c1; c++) {
			s128 a, b;

			exact_range(host, guest, n, slack, c, &a, &b);
			if (a > b)
				continue;
			if ((uint64_t)a < elo)
				elo = (uint64_t)a;
			if ((uint64_t)b > ehi)
				ehi = (uint64_t)b;
			/* m stands for [m, m + 1) / 2^48, as KVM rounds down
			 * (guest kHz << 48) / host kHz: the fraction below
			 * b + 1 (b + 1 - 2^-16 will do), then rounded down.
			 */
			simplest((u128)a, ONE, (((u128)b + 1) << 16) - 1, (u128)ONE << 16,
				 &p, &q);
			if (!bq || simpler(p, q, bp, bq)) {
				bp = p;
				bq = q;
				m = (uint64_t)(p * ONE / q);
				if (m > (uint64_t)b)
					m = (uint64_t)b;
			}
		}
		if (elo <= ehi) {
			lo = elo;
			hi = ehi;
		}
	}
	if (!bq) {
		/* Nothing exact (or too many candidates): the simplest of
		 * the pairwise range, which fits some samples.
		 */
		simplest(lo, ONE, (((u128)hi + 1) << 16) - 1, (u128)ONE << 16, &p, &q);
		m = (uint64_t)(p * ONE / q);
		if (m > hi)
			m = hi;
	}
found:
	*plo = lo;
	*phi = hi;
	s->mult = m;
	s->frac_bits = 48;
	s->offset = 0;
	off0 = (guest[0] - vmpt_guest_tsc(s, host[0])) & SEVEN_BYTES;
	s->offset = (uint64_t)sext56(off0);
	for (size_t i = 0; i < n; i++) {
		uint64_t d = (guest[i] - vmpt_guest_tsc(s, host[i])) & SEVEN_BYTES;

		if ((uint64_t)(sext56(d) + (int64_t)slack) <= 2 * slack)
			agree++;
	}
	if (s->mult == ONE)
		s->mult = 0;
	return agree;
}

size_t vmpt_tsc_fit_scale(const uint64_t *host, const uint64_t *guest, size_t n,
			  struct vmpt_tsc_scale *s, uint64_t *lo, uint64_t *hi)
{
	return n ? fit(host, guest, n, 0, s, lo, hi) : 0;
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
	g->agree = fit(hbuf, gbuf, n, slack, &g->scale, &g->mult_lo, &g->mult_hi);
	g->scaled = g->scale.mult != 0;
	for (size_t i = 0; i < n; i++) {
		int64_t d = sext56(gbuf[i] - vmpt_guest_tsc(&g->scale, hbuf[i]));
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

	return (uint64_t)(sext56(d) + (int64_t)tolerance(l)) <= 2 * tolerance(l);
}

/* Does sample x fit the scaled run s[0..n-1] (its multiplier range)? */
static int fits_scaled(const struct vmpt_tsc_learn *l, const struct sample *s, size_t n,
		       const struct sample *x, uint64_t *lo, uint64_t *hi)
{
	uint64_t dh = x->host - s[0].host, a, b;

	(void)n;
	if (!dh)
		return 0;
	mult_range(dh, sext56(x->guest - s[0].guest), 1 + tolerance(l), &a, &b);
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

static int learn_segments(struct vmpt_tsc_learn *l)
{
	struct sample *s;
	uint64_t *hbuf, *gbuf;
	size_t n = 0;
	int ret = 0;

	for (size_t i = 0; i < l->n_recs; i++)
		if ((l->st[i] & VMPT_TSC_GUEST) && (l->st[i] & VMPT_TSC_EXPECTED) &&
		    !(l->st[i] & VMPT_TSC_BROKEN) && (l->recs[i].flags & VMPT_REC_PSB_PIP))
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
		if (!((l->st[i] & VMPT_TSC_GUEST) && (l->st[i] & VMPT_TSC_EXPECTED) &&
		      !(l->st[i] & VMPT_TSC_BROKEN) && (l->recs[i].flags & VMPT_REC_PSB_PIP)))
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
