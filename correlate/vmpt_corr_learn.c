/* SPDX-License-Identifier: MIT */
/* vmpt's learning in the correlator: the segments of the records, the
 * host threads and vCPUs they ran on, KVM's values preferred and checked
 * against the trace, and the patches.
 */
#include "vmpt/error.h"
#include "vmpt_corr_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SEVEN_BYTES 0xffffffffffffffull

/* Where a record is, for messages: "FILE: offset 0x..." in the recording. */
const char *vmpt_corr_where(const struct vmpt_corr *c, size_t buf, uint64_t off,
			    char *out, size_t len);

static int64_t sext56(uint64_t v)
{
	return (int64_t)(v << 8) >> 8;
}

static int thread_of(const struct vmpt_corr *c, size_t buf, uint64_t tsc, int *pid)
{
	int tid = -1;

	*pid = -1;
	if (c->cfg.thread_at)
		tid = c->cfg.thread_at(c->cfg.ctx, buf, tsc, pid);
	return tid >= 0 ? tid : c->bufs[buf].tid;
}

/* The VM of every guest TSC: its thread's process at its host time. */
static int owners(struct vmpt_corr *c)
{
	struct vmpt_tsc_learn *l = &c->learn;

	l->owner = malloc((l->n_recs ? l->n_recs : 1) * sizeof(*l->owner));
	if (!l->owner)
		return -VMPT_ERR_NOMEM;
	for (size_t i = 0; i < l->n_recs; i++) {
		int pid = -1;

		if (l->st[i] & VMPT_TSC_GUEST)
			thread_of(c, l->recs[i].buf, l->expected[i], &pid);
		l->owner[i] = pid;
	}
	return 0;
}

static void add_tid(struct vmpt_tsc_segment *s, int tid)
{
	if (tid < 0)
		return;
	for (int i = 0; i < s->n_tids; i++)
		if (s->tids[i] == tid)
			return;
	if (s->n_tids < VMPT_CORR_MAX_TIDS)
		s->tids[s->n_tids++] = tid;
}

static int find_segment(const struct vmpt_tsc_learn *l, uint64_t vmcs, int owner)
{
	for (size_t k = 0; k < l->n_segs; k++)
		if (l->segs[k].vmcs == vmcs && l->segs[k].pid == owner)
			return (int)k;
	return -1;
}

static uint64_t rec_vmcs(const struct vmpt_tsc_rec *r)
{
	return r->vmcs == VMPT_NO_VMCS ? 0 : r->vmcs;
}

/* A segment without samples for each VMCS whose guest TSCs have none:
 * KVM's values may still be known for it.
 */
static int placeholders(struct vmpt_corr *c)
{
	struct vmpt_tsc_learn *l = &c->learn;

	for (size_t i = 0; i < l->n_recs; i++) {
		struct vmpt_tsc_segment *s;
		uint64_t vmcs = rec_vmcs(&l->recs[i]);

		if (!(l->st[i] & VMPT_TSC_GUEST) || find_segment(l, vmcs, l->owner[i]) >= 0)
			continue;
		if (vmpt_corr_grow((void **)&l->segs, &l->segs_cap, l->n_segs,
				   sizeof(*l->segs)) < 0)
			return -VMPT_ERR_NOMEM;
		s = &l->segs[l->n_segs++];
		memset(s, 0, sizeof(*s));
		s->vmcs = vmcs;
		s->source = VMPT_TSC_UNKNOWN;
		s->vcpu = -1;
		s->pid = l->owner[i];
		s->first = UINT64_MAX;
	}
	return 0;
}

/* Threads, and the time span of segments without samples. */
static void threads(struct vmpt_corr *c)
{
	struct vmpt_tsc_learn *l = &c->learn;

	for (size_t i = 0; i < l->n_recs; i++) {
		const struct vmpt_tsc_rec *r = &l->recs[i];
		struct vmpt_tsc_segment *s;
		uint64_t t;
		int k = l->seg[i], pid;

		if (!(l->st[i] & VMPT_TSC_GUEST))
			continue;
		if (k < 0)
			k = find_segment(l, rec_vmcs(r), l->owner[i]);
		if (k < 0)
			continue;
		s = &l->segs[k];
		t = l->st[i] & VMPT_TSC_PATCHED ? l->host[i] :
		    l->st[i] & VMPT_TSC_EXPECTED ? l->expected[i] : 0;
		add_tid(s, thread_of(c, r->buf, t, &pid));
		if (s->pid < 0)
			s->pid = pid;
		if (s->source == VMPT_TSC_UNKNOWN && t) {
			if (t < s->first)
				s->first = t;
			if (t > s->last)
				s->last = t;
		}
	}
	for (size_t k = 0; k < l->n_segs; k++)
		if (l->segs[k].first == UINT64_MAX)
			l->segs[k].first = 0;
}

static void vcpu_of(const struct vmpt_corr *c, struct vmpt_tsc_segment *s)
{
	for (int t = 0; t < s->n_tids; t++)
		for (size_t i = 0; i < c->n_vcpus; i++)
			if (c->vcpus[i].tid == s->tids[t]) {
				s->vcpu = c->vcpus[i].vcpu;
				if (s->pid < 0)
					s->pid = c->vcpus[i].pid;
				return;
			}
}

/* KVM's value for the segment's vCPU at its start. */
static const struct vmpt_kvm_value *kvm_value(const struct vmpt_corr *c,
					      const struct vmpt_tsc_segment *s,
					      int *changes)
{
	const struct vmpt_kvm_value *best = NULL;
	uint64_t t0 = c->to_time ? c->to_time(c->time_ctx, s->first) : 0;
	uint64_t t1 = c->to_time ? c->to_time(c->time_ctx, s->last) : 0;

	*changes = 0;
	for (size_t i = 0; i < c->n_kvm; i++) {
		const struct vmpt_kvm_value *v = &c->kvm[i];

		if (v->vcpu != s->vcpu || (s->pid >= 0 && v->pid != s->pid))
			continue;
		if (v->from && c->to_time && v->from > t0) {
			if (v->from <= t1)
				(*changes)++;
			continue;
		}
		if (!best || v->from >= best->from)
			best = v;
	}
	return best;
}

static struct vmpt_tsc_scale kvm_scale(const struct vmpt_kvm_value *v)
{
	struct vmpt_tsc_scale s = { (uint64_t)v->offset, 0, 48 };

	if (v->ratio && v->frac_bits && v->frac_bits < 64 && v->ratio != 1ull << v->frac_bits) {
		s.mult = v->ratio;
		s.frac_bits = (uint8_t)v->frac_bits;
	}
	return s;
}

static void fmt_scale(char *buf, size_t len, const struct vmpt_tsc_scale *s)
{
	int n = snprintf(buf, len, "TSC offset %#" PRIx64, s->offset);

	if (s->mult && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " ratio %.9f (%#" PRIx64 ")",
			 (double)s->mult / (double)(1ull << s->frac_bits), s->mult);
}

/* KVM's values preferred, checked against the samples of the segment. */
static int apply_kvm(struct vmpt_corr *c)
{
	struct vmpt_tsc_learn *l = &c->learn;
	int changed = 0;

	for (size_t k = 0; k < l->n_segs; k++) {
		struct vmpt_tsc_segment *s = &l->segs[k];
		const struct vmpt_kvm_value *v;
		struct vmpt_tsc_scale ks;
		uint64_t fit = 0, n = 0;
		char a[96], b[96];
		int changes;

		vcpu_of(c, s);
		if (s->vcpu < 0 || !(v = kvm_value(c, s, &changes)))
			continue;
		ks = kvm_scale(v);
		for (size_t i = 0; i < l->n_recs; i++) {
			if (!(l->st[i] & VMPT_TSC_SAMPLE) || l->seg[i] != (int32_t)k)
				continue;
			n++;
			if (((vmpt_guest_tsc(&ks, l->expected[i]) ^ l->recs[i].tsc) &
			     SEVEN_BYTES) == 0)
				fit++;
		}
		if (changes)
			vmpt_corr_msg(c, "VMCS %#" PRIx64 " (vCPU %d): KVM's values change %d "
				      "time(s) within one stretch of the trace's; the first holds",
				      s->vmcs, s->vcpu, changes);
		if (n && fit != n && s->agree == n && !s->trace_scale.offset &&
		    !s->trace_scale.mult) {
			/* Every guest TSC is the host's: corrected before. */
			fmt_scale(a, sizeof(a), &ks);
			vmpt_corr_msg(c, "VMCS %#" PRIx64 " (vCPU %d of pid %d): the guest TSC "
				      "packets hold host TSCs already (a corrected recording): "
				      "KVM's %s not applied", s->vmcs, s->vcpu, v->pid, a);
			continue;
		}
		if (n && fit != n) {
			fmt_scale(a, sizeof(a), &ks);
			fmt_scale(b, sizeof(b), &s->trace_scale);
			s->kvm_disagrees = 1;
			vmpt_corr_msg(c, "VMCS %#" PRIx64 " (vCPU %d of pid %d): KVM's %s "
				      "disagrees with the trace's %s (%" PRIu64 " of %" PRIu64
				      " samples fit KVM's); using KVM's", s->vmcs, s->vcpu,
				      v->pid, a, b, fit, n);
		}
		s->scale = ks;
		s->scaled = ks.mult != 0;
		s->source = VMPT_TSC_FROM_KVM;
		changed = 1;
	}
	return changed;
}

static int add_patch(struct vmpt_corr *c, const struct vmpt_tsc_rec *r, uint64_t tsc)
{
	if (vmpt_corr_grow((void **)&c->patches, &c->patches_cap, c->n_patches,
			   sizeof(*c->patches)) < 0 ||
	    vmpt_corr_grow((void **)&c->patch_buf, &c->patch_buf_cap, c->n_patches,
			   sizeof(*c->patch_buf)) < 0)
		return -VMPT_ERR_NOMEM;
	c->patches[c->n_patches].offset = r->off;
	c->patches[c->n_patches].tsc = tsc & SEVEN_BYTES;
	c->patch_buf[c->n_patches++] = r->buf;
	return 0;
}

static void report(struct vmpt_corr *c)
{
	const struct vmpt_tsc_learn *l = &c->learn;
	uint64_t no_tma = 0, no_pip = 0;
	size_t first_no_tma = 0, first_no_pip = 0;
	char where[700];

	for (size_t i = 0; i < l->n_recs; i++) {
		const struct vmpt_tsc_rec *r = &l->recs[i];

		if (r->flags & (VMPT_REC_TMA_ONLY | VMPT_REC_UNSYNCED))
			continue;
		if (!(r->flags & VMPT_REC_OWN_TMA) && !no_tma++)
			first_no_tma = i;
		if (!(l->st[i] & (VMPT_TSC_HOST | VMPT_TSC_GUEST | VMPT_TSC_PATCHED)) &&
		    (!(l->st[i] & VMPT_TSC_EXPECTED) ||
		     sext56((r->tsc - l->expected[i]) & SEVEN_BYTES)) && !no_pip++)
			first_no_pip = i;
	}
	if (c->recs.bad_packets)
		vmpt_corr_msg(c, "%s: %" PRIu64 " byte(s) of trace are no packet (a bad or cut "
			      "one): stepped over, as perf does; no host time across them",
			      vmpt_corr_where(c, c->recs.bad_buf, c->recs.bad_off, where,
					      sizeof(where)), c->recs.bad_packets);
	if (no_tma)
		vmpt_corr_msg(c, "%s: TSC without TMA (%" PRIu64 " TSC packets)",
			      vmpt_corr_where(c, l->recs[first_no_tma].buf,
					      l->recs[first_no_tma].off, where, sizeof(where)),
			      no_tma);
	if (no_pip)
		vmpt_corr_msg(c, "%s: %" PRIu64 " TSC packet(s) neither the host's nor a known "
			      "guest's (no PIP): left as they are",
			      vmpt_corr_where(c, l->recs[first_no_pip].buf,
					      l->recs[first_no_pip].off, where, sizeof(where)),
			      no_pip);
	if (l->host_residuals)
		vmpt_corr_msg(c, "%" PRIu64 " host TSC packet(s) differ from the CTC's count by up "
			      "to %" PRIu64 " ticks (MTCs lost): the guest TSCs between are no "
			      "samples", l->host_residuals, l->max_host_residual);
	for (size_t k = 0; k < l->n_segs; k++) {
		const struct vmpt_tsc_segment *s = &l->segs[k];

		if (s->source != VMPT_TSC_UNKNOWN)
			continue;
		for (size_t i = 0; i < l->n_recs; i++)
			if (l->seg[i] == (int32_t)k) {
				vmpt_corr_msg(c, "%s: Unknown TSC Offset for VMCS %#" PRIx64
					      " (no guest TSC in a PSB+ with PIP): %" PRIu64
					      " TSC packet(s) take the CTC's host TSC",
					      vmpt_corr_where(c, l->recs[i].buf, l->recs[i].off,
							      where, sizeof(where)),
					      s->vmcs, s->tsc_packets);
				break;
			}
	}
}

int vmpt_corr_learn(struct vmpt_corr *c)
{
	struct vmpt_tsc_learn *l = &c->learn;
	int ret;

	l->recs = c->recs.r;
	l->n_recs = c->recs.n;
	l->bufs = c->bufs;
	l->queues = c->queues;
	l->n_queues = c->n_queues;
	l->ratio_n = c->cfg.tsc_ctc_ratio_n;
	l->ratio_d = c->cfg.tsc_ctc_ratio_n ? c->cfg.tsc_ctc_ratio_d : 0;
	l->mtc_period = c->cfg.mtc_period;
	ret = vmpt_tsc_relate(l);
	if (ret == 0)
		ret = owners(c);
	if (ret == 0)
		ret = vmpt_tsc_learn(l);
	if (ret < 0)
		return ret;
	ret = placeholders(c);
	if (ret < 0)
		return ret;
	vmpt_tsc_learn_convert(l);
	threads(c);
	if (apply_kvm(c))
		vmpt_tsc_learn_convert(l);
	for (size_t i = 0; i < l->n_recs; i++)
		if (l->st[i] & (VMPT_TSC_GUEST | VMPT_TSC_PATCHED))
			c->guest_tscs++;
	report(c);
	if (c->cfg.perf_patches)
		return 0;
	for (size_t i = 0; i < l->n_recs; i++)
		if ((l->st[i] & VMPT_TSC_PATCHED) &&
		    (ret = add_patch(c, &l->recs[i], l->host[i])) < 0)
			return ret;
	return 0;
}
