/* SPDX-License-Identifier: MIT */
/* perf's VM time correlation (perf 6.1, intel-pt-decoder.c:
 * intel_pt_vm_time_correlation and its helpers), replayed from the packet
 * pass's records: the same decisions in the same order, so the same
 * messages and the same rewritten TSC payloads.  The facts are perf's,
 * the code is not.
 *
 * perf relates a TSC packet to the host TSC its CTC says (expected TSC:
 * the TSC at the last TMA's MTC boundary + the CTC ticks since + the new
 * TMA's fast counter); the difference is the TSC offset of the VMCS when
 * the packet is a guest's.  It trusts ("reliable") an offset found in a
 * PSB+ with a PIP while tracing ran on since the last TSC in the same
 * buffer, and keeps it from then on.
 */
#include "vmpt_tsc_perf.h"
#include "vmpt/error.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SEVEN_BYTES 0xffffffffffffffull
#define TSC_SLIP 0x10000

/* One decoder's state (perf keeps a decoder per queue). */
struct perf_q {
	const struct vmpt_tsc_perf *p;
	uint64_t timestamp, tsc_timestamp, ctc_timestamp;
	uint64_t ref_timestamp, buf_timestamp, last_reliable;
	uint8_t reliable;	/* vm_tm_corr_reliable */
	uint8_t printed_unk_vmcs, printed_erange;
};

/* perf's p_log: a line on stderr, here the stream given. */
static void plog(const struct vmpt_tsc_perf *p, const char *msg)
{
	if (p->log)
		fprintf(p->log, "%s\n", msg);
}

static uint64_t ctc_to_tsc(const struct vmpt_tsc_perf *p, uint64_t ctc)
{
	if (!p->ratio_d)
		return 0;
	return ctc / p->ratio_d * p->ratio_n + ctc % p->ratio_d * p->ratio_n / p->ratio_d;
}

/* The 7-byte TSC made whole with the 8th byte of a nearby timestamp. */
static uint64_t tsc_8b(uint64_t tsc, uint64_t ref)
{
	tsc |= ref & (0xffull << 56);
	if (tsc < ref) {
		if (ref - tsc > (1ull << 55))
			tsc += 1ull << 56;
	} else if (tsc - ref > (1ull << 55)) {
		tsc -= 1ull << 56;
	}
	return tsc;
}

static int in_range(const struct perf_q *q, uint64_t ts)
{
	/* perf computes a fallback maximum but compares with the buffer's
	 * timestamp (0 when the recording has none: never in range).
	 */
	return ts >= q->last_reliable && ts < q->buf_timestamp;
}

static struct vmpt_perf_vmcs *find(const struct vmpt_tsc_perf *p, uint64_t vmcs)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].vmcs == vmcs)
			return &p->v[i];
	return NULL;
}

static struct vmpt_perf_vmcs *findnew(struct vmpt_tsc_perf *p, uint64_t vmcs,
				      uint64_t offset, int *err)
{
	struct vmpt_perf_vmcs *v = find(p, vmcs);

	if (v)
		return v;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		struct vmpt_perf_vmcs *nv = realloc(p->v, cap * sizeof(*nv));

		if (!nv) {
			*err = -VMPT_ERR_NOMEM;
			return NULL;
		}
		p->v = nv;
		p->cap = cap;
	}
	v = &p->v[p->n++];
	memset(v, 0, sizeof(*v));
	v->vmcs = vmcs;
	v->offset = offset;
	v->reliable = offset != 0;
	return v;
}

int vmpt_tsc_perf_set(struct vmpt_tsc_perf *p, uint64_t vmcs, uint64_t offset)
{
	struct vmpt_perf_vmcs *v;
	int err = 0;

	if (vmcs == VMPT_NO_VMCS) {
		p->dflt_offset = offset;
		return 0;
	}
	if (!vmcs)
		return -VMPT_ERR_INVAL;
	v = findnew(p, vmcs, offset, &err);
	return v ? 0 : err;
}

/* intel_pt_findnew_vmcs_info: none for VMCS 0 unless a default is set. */
static struct vmpt_perf_vmcs *lookup(struct vmpt_tsc_perf *p, uint64_t vmcs, int *err)
{
	if (!vmcs && !p->dflt_offset)
		return NULL;
	return findnew(p, vmcs, p->dflt_offset, err);
}

/* The packet's payload as perf leaves it; *patched when it was rewritten. */
struct tsc_out {
	uint64_t payload;
	int patched;
};

static void translate(struct tsc_out *o, uint64_t offset)
{
	o->payload = (o->payload - offset) & SEVEN_BYTES;
	o->patched = 1;
}

/* intel_pt_vm_tm_corr_first_tsc: no CTC timestamp yet, nothing expected. */
static void first_tsc(struct perf_q *q, const struct vmpt_tsc_rec *r,
		      const struct vmpt_perf_vmcs *v, uint64_t host_tsc,
		      struct tsc_out *o)
{
	const struct vmpt_tsc_perf *p = q->p;

	if (!(r->flags & VMPT_REC_IN_PSB))
		plog(p, "ERROR: First TSC is not in PSB+");
	if (r->flags & VMPT_REC_PIP) {
		if (r->flags & VMPT_REC_NR) {
			if (v && v->offset) {
				translate(o, v->offset);
				q->reliable = 1;
			} else {
				plog(p, "ERROR: First TSC, unknown TSC Offset");
			}
		} else {
			q->reliable = 1;
		}
		return;
	}
	q->reliable = 0;
	if (in_range(q, host_tsc))
		return;
	if (v && v->offset)
		translate(o, v->offset);
	else
		plog(p, "ERROR: First TSC, no PIP, unknown TSC Offset");
}

/* intel_pt_vm_tm_corr_tsc. */
static int corr_tsc(struct perf_q *q, const struct vmpt_tsc_rec *r, struct tsc_out *o)
{
	struct vmpt_tsc_perf *p = (struct vmpt_tsc_perf *)q->p;
	uint64_t vmcs = r->vmcs, host_tsc, expected, tsc_offset;
	int in_psb = !!(r->flags & VMPT_REC_IN_PSB), pip = !!(r->flags & VMPT_REC_PIP);
	int reliable = 1, assign = 0, assign_reliable = 0, err = 0;
	struct vmpt_perf_vmcs *v;

	if (!(r->flags & VMPT_REC_TMA)) {
		plog(p, "ERROR: TSC without TMA");
		return 0;
	}
	if (vmcs == VMPT_NO_VMCS)
		vmcs = 0;
	v = lookup(p, vmcs, &err);
	if (err)
		return err;
	host_tsc = tsc_8b(r->tsc, q->timestamp ? q->timestamp : q->buf_timestamp);
	if (!q->ctc_timestamp) {
		first_tsc(q, r, v, host_tsc, o);
		return 0;
	}
	expected = q->ctc_timestamp + ctc_to_tsc(p, r->perf_ticks) + r->tma_fc;
	tsc_offset = host_tsc - expected;
	if (pip) {
		if (!(r->flags & VMPT_REC_NR)) {
			q->last_reliable = host_tsc;
			q->reliable = 1;
			return 0;
		}
		if (!v) {
			/* PIP.NR=1 without a VMCS cannot happen. */
			plog(p, "ERROR: Missing VMCS");
			translate(o, tsc_offset);
			q->reliable = 0;
			return 0;
		}
	} else {
		reliable = 0;	/* host or guest is a guess */
		if (in_psb) {
			if (!tsc_offset)
				return 0;	/* no offset: the host */
			/* Only 7 bytes of the guest's TSC are known. */
			if (v && (tsc_offset & SEVEN_BYTES) == (v->offset & SEVEN_BYTES))
				goto guest;
		}
		if (host_tsc >= expected && in_range(q, host_tsc)) {
			q->reliable = 0;
			return 0;
		}
	}
guest:
	if (v && v->vmcs) {
		if (v->offset && v->reliable) {
			assign = 0;
		} else if (in_psb && pip && q->reliable && (r->flags & VMPT_REC_CONT) &&
			   (r->flags & VMPT_REC_SAME_BUF)) {
			/* Continuous tracing: a TSC in a PSB is no time loss. */
			assign = 1;
			assign_reliable = 1;
		} else if (in_psb && pip && (r->flags & VMPT_REC_SAME_BUF)) {
			assign = 1;
		}
	}
	if (assign && (v->offset != tsc_offset || v->reliable != assign_reliable)) {
		int print = v->offset != tsc_offset;

		v->offset = tsc_offset;
		v->reliable = (uint8_t)assign_reliable;
		if (print && p->log)
			fprintf(p->log, "VMCS: %#" PRIx64 "  TSC Offset %#" PRIx64 "\n",
				v->vmcs, v->offset);
	}
	if (v && v->offset) {
		if (!v->reliable)
			reliable = 0;
		translate(o, v->offset);
	} else {
		reliable = 0;
		if (v) {
			if (!v->error_printed) {
				if (p->log)
					fprintf(p->log, "ERROR: Unknown TSC Offset for VMCS %#"
						PRIx64 "\n", v->vmcs);
				v->error_printed = 1;
			}
		} else if (!q->printed_unk_vmcs) {
			q->printed_unk_vmcs = 1;
			plog(p, "ERROR: Unknown VMCS");
		}
		translate(o, tsc_offset);
	}
	q->reliable = (uint8_t)reliable;
	return 0;
}

/* intel_pt_calc_tsc_timestamp with the payload as perf left it. */
static void calc_tsc_timestamp(struct perf_q *q, uint64_t payload)
{
	uint64_t ts;
	int bad = 0;

	if (q->ref_timestamp) {
		ts = tsc_8b(payload, q->ref_timestamp);
		q->tsc_timestamp = q->timestamp = ts;
		q->ref_timestamp = 0;
		return;
	}
	if (!q->timestamp)
		return;
	ts = payload | (q->timestamp & (0xffull << 56));
	q->tsc_timestamp = ts;
	if (ts < q->timestamp && q->timestamp - ts < TSC_SLIP)
		ts = q->timestamp;
	if (ts < q->timestamp) {
		if (!q->buf_timestamp || ts + (1ull << 56) < q->buf_timestamp) {
			ts += 1ull << 56;
			q->tsc_timestamp = ts;
		} else {
			ts = q->timestamp;
			bad = 1;
		}
	}
	if ((bad || !in_range(q, ts)) && !q->printed_erange) {
		q->printed_erange = 1;
		plog(q->p, "Timestamp out of range");
	}
	q->timestamp = ts;
}

/* intel_pt_calc_tma: the TSC at the TMA's MTC boundary. */
static void calc_tma(struct perf_q *q, const struct vmpt_tsc_rec *r)
{
	const struct vmpt_tsc_perf *p = q->p;
	uint32_t rem = r->tma_ctc & ((1u << p->mtc_period) - 1);

	if (!p->ratio_d)
		return;
	q->ctc_timestamp = q->tsc_timestamp - r->tma_fc - ctc_to_tsc(p, rem);
}

int vmpt_tsc_perf_queue(struct vmpt_tsc_perf *p, const struct vmpt_tsc_rec *recs, size_t n,
			const struct vmpt_corr_buffer *bufs, const size_t *idx, size_t nb,
			size_t sync, int consecutive,
			int (*patch)(void *ctx, const struct vmpt_tsc_rec *r, uint64_t tsc),
			void *ctx)
{
	struct perf_q q = { .p = p, .last_reliable = 0 };
	size_t k = 0;
	int ret;

	for (size_t i = 0; i < nb; i++) {
		const struct vmpt_corr_buffer *b = &bufs[idx[i]];

		q.buf_timestamp = b->reference;
		if (i == 0 || !consecutive) {
			q.timestamp = 0;
			q.ref_timestamp = b->reference;
		}
		/* perf's sync starts the correlation at timestamp 1. */
		if (i == sync && !q.timestamp)
			q.timestamp = 1;
		for (; k < n && recs[k].buf == idx[i]; k++) {
			const struct vmpt_tsc_rec *r = &recs[k];
			struct tsc_out o = { r->tsc, 0 };

			if (r->flags & VMPT_REC_TMA_ONLY) {
				calc_tma(&q, r);
				continue;
			}
			if (r->flags & VMPT_REC_NO_PSBEND)
				plog(p, "ERROR: PSB without PSBEND");
			/* The MTCs before it moved the timestamp on. */
			if (r->flags & VMPT_REC_MTC) {
				uint64_t ts = q.ctc_timestamp + ctc_to_tsc(p, r->perf_mtc_ticks);

				if (ts >= q.timestamp)
					q.timestamp = ts;
			}
			ret = corr_tsc(&q, r, &o);
			if (ret < 0)
				return ret;
			if (o.patched && patch && (ret = patch(ctx, r, o.payload)) < 0)
				return ret;
			calc_tsc_timestamp(&q, o.payload);
			if (r->flags & VMPT_REC_OWN_TMA)
				calc_tma(&q, r);
		}
	}
	return 0;
}

/* auxtrace_heap__add/__pop with every queue at timestamp 1 (perf's VM
 * time correlation decodes a queue whole once it is taken).
 */
void vmpt_tsc_perf_order(size_t n, size_t *order)
{
	size_t *heap = order, cnt = n, out = 0;
	size_t *taken = malloc(n * sizeof(*taken));

	if (!taken) {
		for (size_t i = 0; i < n; i++)
			order[i] = i;
		return;
	}
	/* Equal keys never move up: the heap is 0, 1, ..., n-1. */
	for (size_t i = 0; i < n; i++)
		heap[i] = i;
	while (cnt) {
		size_t pos = 0, heap_cnt = cnt, last;

		taken[out++] = heap[0];
		cnt--;
		/* A child moves up, the right one on ties; the last item
		 * fills the hole it leaves.
		 */
		for (;;) {
			size_t left = 2 * pos + 1, right = left + 1;

			if (left >= heap_cnt)
				break;
			if (right >= heap_cnt) {
				heap[pos] = heap[left];
				goto next;
			}
			heap[pos] = heap[right];
			pos = right;
		}
		last = heap_cnt - 1;
		heap[pos] = heap[last];
next:;
	}
	memcpy(order, taken, n * sizeof(*order));
	free(taken);
}

void vmpt_tsc_perf_free(struct vmpt_tsc_perf *p)
{
	free(p->v);
	memset(p, 0, sizeof(*p));
}
