/* SPDX-License-Identifier: MIT */
/* Snapshot mode (perf record -S): each AUXTRACE buffer is a copy of the
 * AUX ring at a snapshot, so it repeats what the one before holds.  As
 * perf's decoder (intel_pt_find_overlap), a buffer is decoded from where
 * the one before ends: with TSC, at the PSB+ whose TSC is the last one the
 * buffer before has, at the same distance from its end (less the up to 7
 * PADs perf record appends); without, after the buffer before's bytes
 * from one of its PSBs on.  Such a buffer goes on from the one before (one
 * stream, no new sync); one found to overlap nothing starts at its first
 * PSB, decoded anew.
 */
#include "vmpt_session_int.h"
#include "vmpt/error.h"
#include "vmpt/packet.h"

#include <stdlib.h>
#include <string.h>

static const uint8_t psb[16] = {
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
};

/* The PSB at or after *p (*len shrinks to it): 0 if none. */
static int next_psb(const uint8_t **p, size_t *len)
{
	const uint8_t *n = memmem(*p, *len, psb, sizeof(psb));

	if (!n)
		return 0;
	*len -= (size_t)(n - *p);
	*p = n;
	return 1;
}

/* The PSB after the one at *p. */
static int step_psb(const uint8_t **p, size_t *len)
{
	const uint8_t *n;

	if (!*len)
		return 0;
	n = memmem(*p + 1, *len - 1, psb, sizeof(psb));
	if (!n)
		return 0;
	*len -= (size_t)(n - *p);
	*p = n;
	return 1;
}

static const uint8_t *last_psb(const uint8_t *p, size_t len)
{
	size_t k;

	if (len < sizeof(psb))
		return NULL;
	k = len - sizeof(psb) + 1;
	for (;;) {
		const uint8_t *q = memrchr(p, psb[0], k);

		if (!q)
			return NULL;
		if (!memcmp(q + 1, psb + 1, sizeof(psb) - 1))
			return q;
		k = (size_t)(q - p);
		if (!k)
			return NULL;
	}
}

/* The TSC in the PSB+ at p, and the bytes from it to the end (rem). */
static int psb_tsc(const uint8_t *p, size_t len, uint64_t *tsc, size_t *rem)
{
	const uint8_t *end = p + len;
	unsigned ctx = VMPT_CTX_NONE;

	while (p < end) {
		struct vmpt_packet pkt;
		int n = vmpt_pkt_decode(p, end, ctx, &pkt);

		if (n <= 0)
			return 0;
		if (pkt.type == VMPT_PKT_TSC) {
			*tsc = pkt.tsc;
			*rem = (size_t)(end - p);
			return 1;
		}
		if (pkt.type == VMPT_PKT_PSBEND)
			return 0;
		ctx = vmpt_pkt_next_ctx(ctx, &pkt);
		p += n;
	}
	return 0;
}

/* TSCs compared across their 56-bit wrap. */
static int tsc_cmp(uint64_t a, uint64_t b)
{
	const uint64_t half = 1ull << 55;

	if (a == b)
		return 0;
	return a < b ? (b - a < half ? -1 : 1) : (a - b < half ? 1 : -1);
}

/* Back over the PADs perf record may have put at a's end. */
static const uint8_t *after_padding(const uint8_t *start, const uint8_t *a, size_t alen)
{
	const uint8_t *p = start - 7, *q = a + alen - 7;
	int i;

	for (i = 7; i; i--, p++, q++)
		if (*p != *q)
			break;
	return p;
}

static const uint8_t *overlap_tsc(const uint8_t *a, size_t alen, const uint8_t *b,
				  size_t blen, int *consecutive)
{
	const uint8_t *p = last_psb(a, alen);
	uint64_t tsc_a, tsc_b;
	size_t rem_a, rem_b;

	if (!p)
		return b;
	if (!psb_tsc(p, alen - (size_t)(p - a), &tsc_a, &rem_a)) {
		/* a's last PSB+ is cut: the one before */
		alen = (size_t)(p - a);
		p = last_psb(a, alen);
		if (!p || !psb_tsc(p, alen - (size_t)(p - a), &tsc_a, &rem_a))
			return b;
	}
	for (;;) {
		if (psb_tsc(b, blen, &tsc_b, &rem_b)) {
			int cmp = tsc_cmp(tsc_a, tsc_b);

			if (!cmp && rem_b >= rem_a) {
				*consecutive = 1;
				return after_padding(b + blen - (rem_b - rem_a), a, alen);
			}
			if (cmp < 0)
				return b;
		}
		if (!step_psb(&b, &blen))
			return b + blen;
	}
}

size_t session_snapshot_skip(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
			     int have_tsc, int *consecutive)
{
	const uint8_t *b0 = b, *found;

	*consecutive = 0;
	if (!next_psb(&b, &blen))
		return (size_t)(b - b0) + blen;
	if (!next_psb(&a, &alen))
		return (size_t)(b - b0);
	if (have_tsc && (found = overlap_tsc(a, alen, b, blen, consecutive)))
		return (size_t)(found - b0);
	/* b cannot end inside a: compare a's last blen bytes on */
	while (blen < alen)
		if (!step_psb(&a, &alen))
			return (size_t)(b - b0);
	for (;;) {
		if (!memcmp(a, b, alen)) {
			*consecutive = 1;
			return (size_t)(b - b0) + alen;
		}
		if (!step_psb(&a, &alen))
			return (size_t)(b - b0);
	}
}

/* What each of a queue's n buffers (indexes into s->bufs) has that the one
 * before has not, and whether it goes on from it; a buffer with nothing
 * new is left out (n shrinks), and the next one is compared with the last
 * one that had something (as perf's output shows: a snapshot of what came
 * since the one before, which holds no PSB, adds nothing, and the next
 * whole ring goes on from the last snapshot decoded).
 */
int session_snapshot_plan(const struct vmpt_session *s, size_t *bufs, size_t *n,
			  size_t **skip_out, uint8_t **cont_out)
{
	int have_tsc = s->intel_pt && s->have_info &&
		       (s->intel_pt->config & s->info.priv[VMPT_INTEL_PT_TSC_BIT]);
	size_t *skip = calloc(*n ? *n : 1, sizeof(*skip)), kept = 0, last = 0;
	uint8_t *cont = calloc(*n ? *n : 1, sizeof(*cont));

	*skip_out = skip;
	*cont_out = cont;
	if (!skip || !cont)
		return -VMPT_ERR_NOMEM;
	for (size_t i = 1; i < *n; i++) {
		const struct vmpt_session_buffer *a = &s->bufs[bufs[last]];
		const struct vmpt_session_buffer *b = &s->bufs[bufs[i]];
		int c;

		skip[i] = session_snapshot_skip(a->data, a->size, b->data, b->size, have_tsc, &c);
		cont[i] = (uint8_t)c;
		if (skip[i] < b->size)
			last = i;
	}
	for (size_t i = 0; i < *n; i++)
		if (skip[i] < s->bufs[bufs[i]].size) {
			bufs[kept] = bufs[i];
			skip[kept] = skip[i];
			cont[kept] = kept ? cont[i] : 0;
			kept++;
		}
	*n = kept;
	return 0;
}
