/* SPDX-License-Identifier: MIT */
/* The correlator: buffers in, per VMCS segments and per buffer patch
 * lists out (include/vmpt/correlate.h).  The packet pass runs once per
 * queue, its consecutive buffers joined, for vmpt's learning; perf's
 * decisions (its messages, or its patches with --vm-time-correlation)
 * come from the same records, or, where a queue has several buffers,
 * from a pass that reads them apart as perf does.
 */
#include "vmpt/correlate.h"
#include "vmpt/error.h"
#include "vmpt_corr_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct vmpt_corr *vmpt_corr_new(const struct vmpt_corr_config *cfg)
{
	struct vmpt_corr *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cfg = *cfg;
	c->perf.ratio_n = cfg->tsc_ctc_ratio_n;
	c->perf.ratio_d = cfg->tsc_ctc_ratio_n ? cfg->tsc_ctc_ratio_d : 0;
	/* MTCFreq is 4 bits: more would shift past the CTC's width. */
	if (c->cfg.mtc_period > 15)
		c->cfg.mtc_period = 15;
	c->perf.mtc_period = c->cfg.mtc_period;
	c->perf.log = cfg->perf_log;
	return c;
}

void vmpt_corr_free(struct vmpt_corr *c)
{
	if (!c)
		return;
	vmpt_corr_recording_close(c);
	for (size_t i = 0; i < c->n_msgs; i++)
		free(c->msgs[i]);
	free(c->msgs);
	free(c->bufs);
	free(c->queue_bufs);
	free(c->queues);
	free(c->patches);
	free(c->patch_at);
	free(c->vcpus);
	free(c->kvm);
	vmpt_tsc_recs_free(&c->recs);
	vmpt_tsc_recs_free(&c->own_perf_recs);
	vmpt_tsc_perf_free(&c->perf);
	vmpt_tsc_learn_free(&c->learn);
	free(c);
}

int vmpt_corr_grow(void **arr, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? 2 * *cap : 16;
	void *p = realloc(*arr, nc * size);

	if (!p)
		return -VMPT_ERR_NOMEM;
	*arr = p;
	*cap = nc;
	return 0;
}

int vmpt_corr_add_buffer(struct vmpt_corr *c, const struct vmpt_corr_buffer *b)
{
	if (vmpt_corr_grow((void **)&c->bufs, &c->bufs_cap, c->n_bufs, sizeof(*b)) < 0)
		return -VMPT_ERR_NOMEM;
	c->bufs[c->n_bufs++] = *b;
	return 0;
}

int vmpt_corr_set_offset(struct vmpt_corr *c, uint64_t vmcs, uint64_t offset)
{
	return vmpt_tsc_perf_set(&c->perf, vmcs, offset);
}

int vmpt_corr_add_vcpu(struct vmpt_corr *c, const struct vmpt_vcpu_thread *v)
{
	if (vmpt_corr_grow((void **)&c->vcpus, &c->vcpus_cap, c->n_vcpus, sizeof(*v)) < 0)
		return -VMPT_ERR_NOMEM;
	c->vcpus[c->n_vcpus++] = *v;
	return 0;
}

int vmpt_corr_add_kvm(struct vmpt_corr *c, const struct vmpt_kvm_value *v)
{
	if (vmpt_corr_grow((void **)&c->kvm, &c->kvm_cap, c->n_kvm, sizeof(*v)) < 0)
		return -VMPT_ERR_NOMEM;
	c->kvm[c->n_kvm++] = *v;
	return 0;
}

void vmpt_corr_set_time(struct vmpt_corr *c, uint64_t (*to_time)(void *ctx, uint64_t tsc),
			void *ctx)
{
	c->to_time = to_time;
	c->time_ctx = ctx;
}

void vmpt_corr_msg(struct vmpt_corr *c, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (vmpt_corr_grow((void **)&c->msgs, &c->msgs_cap, c->n_msgs, sizeof(*c->msgs)) < 0)
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) >= 0)
		c->msgs[c->n_msgs++] = s;
	va_end(ap);
}

const char *const *vmpt_corr_messages(const struct vmpt_corr *c, size_t *n)
{
	*n = c->n_msgs;
	return (const char *const *)c->msgs;
}

const char *vmpt_corr_errmsg(const struct vmpt_corr *c)
{
	return c->errmsg;
}

const struct vmpt_tsc_segment *vmpt_corr_segments(const struct vmpt_corr *c, size_t *n)
{
	*n = c->learn.n_segs;
	return c->learn.segs;
}

struct vmpt_tsc_patches vmpt_corr_patches(const struct vmpt_corr *c, size_t buf)
{
	struct vmpt_tsc_patches pl = { NULL, 0 };

	if (c->patch_at && buf < c->n_bufs) {
		pl.p = c->patches + c->patch_at[buf];
		pl.n = c->patch_at[buf + 1] - c->patch_at[buf];
	}
	return pl;
}

int vmpt_corr_psb_only(const struct vmpt_corr *c, uint64_t *psbs, uint64_t *ambiguous,
		       uint64_t *walked)
{
	*walked = c->psb.walked_bytes;
	*psbs = c->psb.psbs;
	*ambiguous = c->psb.ambiguous;
	return c->cfg.psb_only && !c->walked;
}

void vmpt_corr_counts(const struct vmpt_corr *c, uint64_t *guest_tscs, uint64_t *patched)
{
	*guest_tscs = c->guest_tscs;
	*patched = c->n_patches;
}

/* Queues by perf's mmap index, buffers in file order. */
static int make_queues(struct vmpt_corr *c)
{
	c->queue_bufs = malloc((c->n_bufs ? c->n_bufs : 1) * sizeof(*c->queue_bufs));
	c->queues = calloc(c->n_bufs ? c->n_bufs : 1, sizeof(*c->queues));
	if (!c->queue_bufs || !c->queues)
		return -VMPT_ERR_NOMEM;
	/* Sorted by idx, then file order: each queue's buffers in a row. */
	for (size_t i = 0; i < c->n_bufs; i++)
		c->queue_bufs[i] = i;
	for (size_t i = 1; i < c->n_bufs; i++) {
		size_t v = c->queue_bufs[i], k = i;

		while (k > 0 && c->bufs[c->queue_bufs[k - 1]].idx > c->bufs[v].idx) {
			c->queue_bufs[k] = c->queue_bufs[k - 1];
			k--;
		}
		c->queue_bufs[k] = v;
	}
	for (size_t i = 0; i < c->n_bufs;) {
		struct vmpt_tsc_queue *q = &c->queues[c->n_queues++];
		size_t j = i;

		while (j < c->n_bufs && c->bufs[c->queue_bufs[j]].idx ==
					c->bufs[c->queue_bufs[i]].idx)
			j++;
		q->bufs = &c->queue_bufs[i];
		q->n_bufs = j - i;
		i = j;
	}
	return 0;
}

struct patch_rec {
	uint32_t buf;
	uint64_t offset, tsc;
};

static int add_patch(void *ctx, const struct vmpt_tsc_rec *r, uint64_t tsc)
{
	struct vmpt_corr *c = ctx;

	if (vmpt_corr_grow((void **)&c->patches, &c->patches_cap, c->n_patches,
			   sizeof(*c->patches)) < 0 ||
	    vmpt_corr_grow((void **)&c->patch_buf, &c->patch_buf_cap, c->n_patches,
			   sizeof(*c->patch_buf)) < 0)
		return -VMPT_ERR_NOMEM;
	c->patches[c->n_patches].offset = r->off;
	c->patches[c->n_patches].tsc = tsc & 0xffffffffffffffull;
	c->patch_buf[c->n_patches++] = r->buf;
	return 0;
}

/* Patches sorted by buffer, then offset; patch_at[b] starts buffer b's. */
static int index_patches(struct vmpt_corr *c)
{
	size_t *at = calloc(c->n_bufs + 1, sizeof(*at));
	struct vmpt_tsc_patch *sorted = malloc((c->n_patches ? c->n_patches : 1) *
					       sizeof(*sorted));
	size_t *fill = calloc(c->n_bufs + 1, sizeof(*fill));

	if (!at || !sorted || !fill) {
		free(at);
		free(sorted);
		free(fill);
		return -VMPT_ERR_NOMEM;
	}
	for (size_t i = 0; i < c->n_patches; i++)
		at[c->patch_buf[i] + 1]++;
	for (size_t b = 0; b < c->n_bufs; b++)
		at[b + 1] += at[b];
	for (size_t i = 0; i < c->n_patches; i++) {
		uint32_t b = c->patch_buf[i];

		sorted[at[b] + fill[b]++] = c->patches[i];
	}
	/* Within a buffer they came in trace order already. */
	free(fill);
	free(c->patches);
	free(c->patch_buf);
	c->patch_buf = NULL;
	c->patches = sorted;
	c->patch_at = at;
	return 0;
}

static int run_perf(struct vmpt_corr *c, int patches)
{
	size_t *order = malloc((c->n_queues ? c->n_queues : 1) * sizeof(*order));
	size_t n = 0;
	int ret = 0;

	if (!order)
		return -VMPT_ERR_NOMEM;
	/* perf's heap holds the queues that have a PSB, by index. */
	for (size_t q = 0; q < c->n_queues; q++)
		if (c->queues[q].sync < c->queues[q].n_bufs)
			order[n++] = q;
	{
		size_t *pos = malloc((n ? n : 1) * sizeof(*pos)), *tmp;

		tmp = malloc((n ? n : 1) * sizeof(*tmp));
		if (!pos || !tmp) {
			free(pos);
			free(tmp);
			free(order);
			return -VMPT_ERR_NOMEM;
		}
		vmpt_tsc_perf_order(n, pos);
		for (size_t i = 0; i < n; i++)
			tmp[i] = order[pos[i]];
		memcpy(order, tmp, n * sizeof(*order));
		free(pos);
		free(tmp);
	}
	for (size_t i = 0; i < n && ret == 0; i++) {
		const struct vmpt_tsc_queue *q = &c->queues[order[i]];

		/* No records at all: r is NULL (no offset from it). */
		ret = vmpt_tsc_perf_queue(&c->perf, c->perf_recs->n ?
					  c->perf_recs->r + q->perf_from : c->perf_recs->r,
					  q->perf_to - q->perf_from, c->bufs, q->bufs, q->n_bufs,
					  q->sync, !c->cfg.not_consecutive,
					  patches ? add_patch : NULL, c);
	}
	free(order);
	return ret;
}

/* Learning from the PSB+s only: 0, or 1 when some queue needs the walk
 * (buffers joined, a PSB+ the pass cannot read, a guest PSB+ no pair of
 * host PSB+s brackets), the records then dropped.
 */
static int run_psb(struct vmpt_corr *c)
{
	int ret = 0;

	for (size_t q = 0; q < c->n_queues && ret == 0; q++) {
		struct vmpt_tsc_queue *tq = &c->queues[q];

		if (tq->n_bufs > 1 && !c->cfg.not_consecutive)
			ret = 1;
		tq->rec_from = tq->perf_from = c->recs.n;
		if (ret == 0)
			ret = vmpt_tsc_psb_queue(&c->recs, c->bufs, tq->bufs, tq->n_bufs,
						 c->cfg.tsc_ctc_ratio_n, c->cfg.tsc_ctc_ratio_d,
						 c->cfg.mtc_period, &tq->sync, &c->psb);
		tq->rec_to = tq->perf_to = c->recs.n;
		if (ret == 0 && (c->psb.bad))
			ret = 1;
	}
	c->perf_recs = &c->recs;
	if (ret > 0) {
		vmpt_tsc_recs_free(&c->recs);
		c->walked = 1;
	}
	return ret;
}

static int run(struct vmpt_corr *c)
{
	struct vmpt_tsc_scan_cfg sc = {
		.mtc_period = c->cfg.mtc_period,
		.have_ratio = c->cfg.tsc_ctc_ratio_n && c->cfg.tsc_ctc_ratio_d,
	};
	int joined = 0, ret;

	/* perf's checks before it decodes anything (MTC's after the pass
	 * here, so that the guest TSCs left as they are can be counted).
	 */
	if (!c->cfg.have_tsc) {
		snprintf(c->errmsg, sizeof(c->errmsg),
			 "%sIntel PT has no time information for VM Time Correlation",
			 c->info_where);
		return -VMPT_ERR_UNSUPPORTED;
	}
	ret = make_queues(c);
	/* vmpt's view (consecutive buffers joined) for learning; perf's
	 * apart, where they may differ (a queue of several buffers).
	 */
	if (ret == 0 && c->cfg.psb_only && !c->cfg.perf_log && !c->cfg.perf_patches &&
	    c->cfg.have_mtc && sc.have_ratio) {
		ret = run_psb(c);
		if (ret <= 0)
			goto learn;
		ret = 0;
	}
	c->walked = 1;
	sc.join = 1;
	for (size_t q = 0; q < c->n_queues && ret == 0; q++) {
		struct vmpt_tsc_queue *tq = &c->queues[q];

		tq->rec_from = c->recs.n;
		ret = vmpt_tsc_scan_queue(&c->recs, &sc, c->bufs, tq->bufs, tq->n_bufs,
					  !c->cfg.not_consecutive, &tq->sync);
		tq->rec_to = c->recs.n;
		tq->perf_from = tq->rec_from;
		tq->perf_to = tq->rec_to;
		joined |= tq->n_bufs > 1 && !c->cfg.not_consecutive;
	}
	c->perf_recs = joined && (c->cfg.perf_log || c->cfg.perf_patches) ? &c->own_perf_recs :
		       &c->recs;
	sc.join = 0;
	for (size_t q = 0; q < c->n_queues && ret == 0 && c->perf_recs != &c->recs; q++) {
		struct vmpt_tsc_queue *tq = &c->queues[q];

		tq->perf_from = c->perf_recs->n;
		ret = vmpt_tsc_scan_queue(&c->own_perf_recs, &sc, c->bufs, tq->bufs, tq->n_bufs,
					  !c->cfg.not_consecutive, &tq->sync);
		tq->perf_to = c->perf_recs->n;
	}
	if (ret == 0 && !c->cfg.have_mtc) {
		for (size_t i = 0; i < c->recs.n; i++)
			if ((c->recs.r[i].flags & (VMPT_REC_PIP | VMPT_REC_NR)) ==
			    (VMPT_REC_PIP | VMPT_REC_NR))
				c->guest_tscs++;
		snprintf(c->errmsg, sizeof(c->errmsg),
			 "%sMTC packets must have been enabled for VM Time Correlation",
			 c->info_where);
		return -VMPT_ERR_UNSUPPORTED;
	}
	if (ret == 0 && (c->cfg.perf_log || c->cfg.perf_patches))
		ret = run_perf(c, c->cfg.perf_patches);
learn:
	if (ret == 0)
		ret = vmpt_corr_learn(c);
	if (ret == 0)
		ret = index_patches(c);
	if (ret < 0 && !c->errmsg[0])
		snprintf(c->errmsg, sizeof(c->errmsg), "%s", vmpt_strerror(ret));
	return ret;
}

int vmpt_corr_run(struct vmpt_corr *c)
{
	int ret = run(c);

	c->failed = ret < 0;
	return ret;
}

static const char *skip_spaces(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	return p;
}

/* One number of perf's grammar (strtoull base 0); NULL when none. */
static const char *number(const char *p, uint64_t *v)
{
	char *end;

	errno = 0;
	if (*p == '-' || *p == '+')
		return NULL;
	*v = strtoull(p, &end, 0);
	return end == p || errno ? NULL : end;
}

int vmpt_corr_parse_perf_args(struct vmpt_corr *c, const char *arg, int *dry_run)
{
	const char *p = skip_spaces(arg ? arg : "");

	*dry_run = 0;
	if (!strncmp(p, "dry-run", 7)) {
		*dry_run = 1;
		p += 7;
	}
	for (;;) {
		uint64_t offset, vmcs;

		p = skip_spaces(p);
		if (!*p)
			return 0;
		p = number(p, &offset);
		if (!p)
			goto bad;
		p = skip_spaces(p);
		if (*p != ':') {
			vmpt_corr_set_offset(c, VMPT_NO_VMCS, offset);
			continue;
		}
		p++;
		for (;;) {
			p = number(skip_spaces(p), &vmcs);
			if (!p || !vmcs || vmpt_corr_set_offset(c, vmcs, offset) < 0)
				goto bad;
			p = skip_spaces(p);
			if (*p != ',')
				break;
			p++;
		}
	}
bad:
	snprintf(c->errmsg, sizeof(c->errmsg), "Failed to parse VM Time Correlation options");
	return -VMPT_ERR_INVAL;
}

void vmpt_corr_summary(const struct vmpt_corr *c, FILE *f, const char *who)
{
	size_t n, nm;
	const struct vmpt_tsc_segment *s = vmpt_corr_segments(c, &n);
	const char *const *msgs = vmpt_corr_messages(c, &nm);

	if (c->failed) {
		fprintf(f, "%s: %" PRIu64 " guest TSC packet(s) left as they are: %s\n", who,
			c->guest_tscs, c->errmsg);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t t = vmpt_corr_tsc_to_time(c, s[i].first);

		fprintf(f, "%s: VMCS %#" PRIx64 " TSC offset %#" PRIx64, who, s[i].vmcs,
			s[i].scale.offset);
		if (s[i].scale.mult)
			fprintf(f, " ratio %.9f (%#" PRIx64 ")",
				(double)s[i].scale.mult / (double)(1ull << s[i].scale.frac_bits),
				s[i].scale.mult);
		switch (s[i].source) {
		case VMPT_TSC_FROM_TRACE:
			fprintf(f, " (from the trace, %" PRIu64 " of %" PRIu64 " samples agree)",
				s[i].agree, s[i].samples);
			break;
		case VMPT_TSC_FROM_KVM:
			fprintf(f, " (KVM's, saved by vmpt record, vCPU %d%s)", s[i].vcpu,
				s[i].kvm_disagrees ? "; the trace disagrees" :
				s[i].samples ? "; the trace agrees" : "");
			break;
		default:
			fprintf(f, " (unknown: the CTC's host TSC for its %" PRIu64
				" TSC packets)", s[i].tsc_packets);
			break;
		}
		/* A VMCS with several segments: from when each holds. */
		if (t && ((i > 0 && s[i - 1].vmcs == s[i].vmcs && s[i - 1].pid == s[i].pid) ||
			  (i + 1 < n && s[i + 1].vmcs == s[i].vmcs && s[i + 1].pid == s[i].pid)))
			fprintf(f, " from %" PRIu64 ".%06" PRIu64 " s", t / 1000000000,
				t % 1000000000 / 1000);
		fputc('\n', f);
	}
	for (size_t i = 0; i < nm; i++)
		fprintf(f, "%s: %s\n", who, msgs[i]);
}
