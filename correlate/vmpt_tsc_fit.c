/* SPDX-License-Identifier: MIT */
/* Fitting a VMX TSC scale to samples: see vmpt_tsc_fit.h and
 * docs/correlate.md ("What is learned when", 5).
 */
#include "vmpt_tsc_fit.h"

#define ONE (1ull << 48)	/* a ratio of 1.0 with KVM's 48 fraction bits */
#define SEVEN_BYTES VMPT_SEVEN_BYTES

typedef unsigned __int128 u128;
typedef __int128 s128;

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
void vmpt_tsc_mult_range(uint64_t dh, int64_t dg, uint64_t slack, uint64_t *lo, uint64_t *hi)
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

/* ceil(v * 2^48 / d) for 0 < v < 2^80, d > 0, in 128 bits; anything past
 * 2^64 (no multiplier) as 2^64.
 */
static s128 scaled_up(s128 v, uint64_t d)
{
	u128 num = (u128)v << 48, q = num / d;

	if (q * d < num)
		q++;
	return q > (u128)1 << 64 ? (s128)1 << 64 : (s128)q;
}

/* The multipliers m with which, c being the guest's value at host[0]
 * less the offset, every guest[i] - offset is (host[i] * m) >> 48 within
 * slack: the interval [*a, *b] (empty when *a > *b).  c reaches 2^80 (a
 * host TSC times the largest multiplier): the bounds are worked out in
 * unsigned 128 bits, where (k +- slack) * 2^48 still fits.
 */
static void exact_range(const uint64_t *host, const uint64_t *guest, size_t n,
			uint64_t slack, s128 c, s128 *a, s128 *b)
{
	const s128 top = (s128)1 << 80;	/* k * 2^48 / host past 2^64 above */

	*a = 0;
	*b = (s128)UINT64_MAX;
	for (size_t i = 0; i < n && *a <= *b; i++) {
		s128 k = c + vmpt_sext56(guest[i] - guest[0]);
		s128 kl = k - (s128)slack, kh = k + (s128)slack + 1;

		/* m * host / 2^48 must lie in [kl, kh): not below 0, and
		 * (with host 0) 0 itself.
		 */
		if (kh <= 0 || kl >= top || (!host[i] && kl > 0)) {
			*a = 1;
			*b = 0;
			break;
		}
		if (!host[i])
			continue;
		if (kl > 0 && scaled_up(kl, host[i]) > *a)
			*a = scaled_up(kl, host[i]);
		if (kh < top && scaled_up(kh, host[i]) - 1 < *b)
			*b = scaled_up(kh, host[i]) - 1;
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

		if ((uint64_t)(vmpt_sext56(d) + (int64_t)slack) > 2 * slack)
			return 0;
	}
	return 1;
}

/* Candidate values of c tried at most (beyond, the pairwise range). */
#define MAX_CANDIDATES 65536

size_t vmpt_tsc_fit(const uint64_t *host, const uint64_t *guest, size_t n, uint64_t slack,
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
		vmpt_tsc_mult_range(dh, vmpt_sext56(guest[i] - guest[0]), 1 + slack, &l, &h);
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
	s->offset = (uint64_t)vmpt_sext56(off0);
	for (size_t i = 0; i < n; i++) {
		uint64_t d = (guest[i] - vmpt_guest_tsc(s, host[i])) & SEVEN_BYTES;

		if ((uint64_t)(vmpt_sext56(d) + (int64_t)slack) <= 2 * slack)
			agree++;
	}
	if (s->mult == ONE)
		s->mult = 0;
	return agree;
}

size_t vmpt_tsc_fit_scale(const uint64_t *host, const uint64_t *guest, size_t n,
			  struct vmpt_tsc_scale *s, uint64_t *lo, uint64_t *hi)
{
	return n ? vmpt_tsc_fit(host, guest, n, 0, s, lo, hi) : 0;
}
