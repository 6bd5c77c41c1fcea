/* SPDX-License-Identifier: MIT */
/* The VM exits of a trace, from the flow items of each stream:
 * - an exit is the asynchronous branch that leaves a guest (PIP.NR 1 -> 0)
 *   at the guest RIP, on the vCPU whose VMCS is current;
 * - its reason comes from Event Trace when recorded (the CFE VMEXIT or
 *   VMEXIT_INTR before it, with EVD VMXR's basic reason and VMXQ's
 *   qualification), and from the KVM handler the host code reaches after
 *   it (vmpt_exit_reason_of_handler) either way, so both can be compared;
 * - it ends at the next VM entry (VMLAUNCH/VMRESUME) of its stream: host
 *   time; guest time is from the entry before the exit.
 * Then the aggregates: per reason, per vCPU, percentiles and histograms.
 */
#include "vmpt_report_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* vCPU of the exit: "CPU N/KVM" (QEMU's thread names), else the VMCS in
 * the order the trace shows them.
 */
static int vcpu_of(struct vmpt_report *r, const struct vmpt_consumer *c)
{
	int n;

	if (c->task.comm && sscanf(c->task.comm, "CPU %d/KVM", &n) == 1 && n >= 0)
		return n;
	for (size_t i = 0; i < r->n_vcpu_vmcs; i++)
		if (r->vcpu_vmcs[i] == c->vmcs)
			return (int)i;
	uint64_t *v = realloc(r->vcpu_vmcs, (r->n_vcpu_vmcs + 1) * sizeof(*v));

	if (!v)
		return -1;
	r->vcpu_vmcs = v;
	v[r->n_vcpu_vmcs] = c->vmcs;
	return (int)r->n_vcpu_vmcs++;
}

static void exit_at(struct vmpt_consumer *c, const struct vmpt_flow_item *e)
{
	struct vmpt_report *r = c->r;
	struct vmpt_vm_exit x = {
		.tsc = e->time, .pid = c->task.pid, .tid = c->task.tid, .vmcs = c->vmcs,
		.rip = e->ip, .reason = -1, .vector = -1, .handler_reason = -1,
		.prev_entry_tsc = c->last_entry,
	};

	if (c->cfe_on) {
		x.reason = c->cfe_reason;
		x.qual = c->cfe_qual;
		x.has_qual = c->cfe_has_qual;
		x.vector = c->cfe_vector;
		x.source = x.reason >= 0 ? VMPT_EXIT_SOURCE_EVENT_TRACE : VMPT_EXIT_SOURCE_NONE;
		c->cfe_on = 0;
	}
	pthread_mutex_lock(&r->lock);
	x.vcpu = vcpu_of(r, c);
	if (r->n_exits == r->cap_exits) {
		size_t cap = r->cap_exits ? 2 * r->cap_exits : 256;
		struct vmpt_vm_exit *v = realloc(r->exits, cap * sizeof(*v));

		if (!v) {
			pthread_mutex_unlock(&r->lock);
			return;
		}
		r->exits = v;
		r->cap_exits = cap;
	}
	r->exits[r->n_exits++] = x;
	c->open = r->n_exits;
	c->want_handler = 1;
	r->sorted = 0;
	pthread_mutex_unlock(&r->lock);
}

static void entry_at(struct vmpt_consumer *c, uint64_t time)
{
	struct vmpt_report *r = c->r;

	c->last_entry = time;
	if (!c->open)
		return;
	pthread_mutex_lock(&r->lock);
	r->exits[c->open - 1].entry_tsc = time;
	pthread_mutex_unlock(&r->lock);
	c->open = 0;
	c->want_handler = 0;
}

/* Host code after an exit: the first KVM handler it reaches. */
static void look_for_handler(struct vmpt_consumer *c, const struct vmpt_flow_item *b)
{
	const char *dso, *sym;
	uint64_t addr;
	int reason;

	if (report_symbol(c->r, c, b->ip, 0, &dso, &sym, &addr) < 0 || !sym)
		return;
	reason = vmpt_exit_reason_of_handler(sym);
	if (reason < 0)
		return;
	pthread_mutex_lock(&c->r->lock);
	c->r->exits[c->open - 1].handler = sym;
	c->r->exits[c->open - 1].handler_reason = reason;
	if (c->r->exits[c->open - 1].source == VMPT_EXIT_SOURCE_NONE)
		c->r->exits[c->open - 1].source = VMPT_EXIT_SOURCE_HANDLER;
	pthread_mutex_unlock(&c->r->lock);
	c->want_handler = 0;
}

static void on_cfe(struct vmpt_consumer *c, const struct vmpt_flow_item *e)
{
	unsigned type = VMPT_CFE_TYPE(e->payload);

	if (type != VMPT_CFE_VMEXIT && type != VMPT_CFE_VMEXIT_INTR)
		return;
	c->cfe_on = 1;
	c->cfe_reason = -1;
	c->cfe_has_qual = 0;
	c->cfe_qual = 0;
	c->cfe_vector = type == VMPT_CFE_VMEXIT_INTR ? (int)VMPT_CFE_VECTOR(e->payload) : -1;
	for (uint32_t i = 0; i < e->ninsn; i++) {
		if (e->evd[i].type == VMPT_EVD_VMXR)
			c->cfe_reason = (int)(e->evd[i].payload & 0xffff);
		else if (e->evd[i].type == VMPT_EVD_VMXQ) {
			c->cfe_qual = e->evd[i].payload;
			c->cfe_has_qual = 1;
		}
	}
}

void report_exits_item(struct vmpt_consumer *c, const struct vmpt_flow_item *it)
{
	if (it->kind == VMPT_FLOW_BLOCK) {
		if (c->open && c->want_handler && !c->nr)
			look_for_handler(c, it);
		if (it->iclass == VMPT_IC_VMENTRY && it->taken && !c->nr)
			entry_at(c, it->time);
		return;
	}
	switch (it->ev) {
	case VMPT_EV_PAGING:
		c->from_nr = c->nr;
		c->nr = it->nr;
		break;
	case VMPT_EV_VMCS:
		c->vmcs = it->payload;
		break;
	case VMPT_EV_CFE:
		on_cfe(c, it);
		break;
	case VMPT_EV_ASYNC_BRANCH:
		if (c->from_nr && !c->nr)
			exit_at(c, it);
		c->from_nr = c->nr;
		break;
	case VMPT_EV_OVERFLOW:
	case VMPT_EV_ERROR:
		/* what happened in between is lost: no exit waits for it */
		c->open = 0;
		c->want_handler = 0;
		c->cfe_on = 0;
		c->last_entry = 0;
		break;
	default:
		break;
	}
}

static int cmp_exit(const void *a, const void *b)
{
	const struct vmpt_vm_exit *x = a, *y = b;

	if (x->tsc != y->tsc)
		return x->tsc < y->tsc ? -1 : 1;
	return x->vcpu - y->vcpu;
}

void report_exits_finish(struct vmpt_report *r)
{
	if (r->sorted)
		return;
	qsort(r->exits, r->n_exits, sizeof(*r->exits), cmp_exit);
	/* an exit's reason where Event Trace has none: the handler's */
	for (size_t i = 0; i < r->n_exits; i++)
		if (r->exits[i].source == VMPT_EXIT_SOURCE_NONE && r->exits[i].handler)
			r->exits[i].source = VMPT_EXIT_SOURCE_HANDLER;
	r->sorted = 1;
}

int report_exit_reason(const struct vmpt_vm_exit *x)
{
	if (x->source == VMPT_EXIT_SOURCE_EVENT_TRACE)
		return x->reason;
	if (x->source == VMPT_EXIT_SOURCE_HANDLER)
		return x->handler_reason;
	return -1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest value with at least p% of them at or under. */
static uint64_t percentile(const uint64_t *v, size_t n, unsigned p)
{
	size_t k = (n * p + 99) / 100;

	return n ? v[k ? k - 1 : 0] : 0;
}

void report_exit_stats(struct vmpt_report *r,
		       int (*keep)(const struct vmpt_vm_exit *, long), long arg,
		       struct report_stats *st)
{
	uint64_t *v = malloc((r->n_exits + 1) * sizeof(*v));
	size_t n = 0;

	memset(st, 0, sizeof(*st));
	for (size_t i = 0; i < r->n_exits; i++) {
		const struct vmpt_vm_exit *x = &r->exits[i];
		uint64_t host;
		unsigned b = 0;

		if (!keep(x, arg) || !report_in_time(r, x->tsc))
			continue;
		st->count++;
		if (x->prev_entry_tsc)
			st->guest_total += report_ns(r, x->tsc) - report_ns(r, x->prev_entry_tsc);
		if (!x->entry_tsc)
			continue;
		host = report_ns(r, x->entry_tsc) - report_ns(r, x->tsc);
		st->with_time++;
		st->total += host;
		if (v)
			v[n++] = host;
		while (b + 1 < sizeof(st->hist) / sizeof(st->hist[0]) && (host >> (b + 1)))
			b++;
		st->hist[b]++;
	}
	if (n) {
		qsort(v, n, sizeof(*v), cmp_u64);
		st->min = v[0];
		st->max = v[n - 1];
		st->p50 = percentile(v, n, 50);
		st->p99 = percentile(v, n, 99);
	}
	free(v);
}

/* ---- Selections, labels and the RIPs that exit most ---- */

int report_keep_all(const struct vmpt_vm_exit *x, long arg)
{
	(void)x;
	(void)arg;
	return 1;
}

int report_keep_reason(const struct vmpt_vm_exit *x, long arg)
{
	return report_exit_reason(x) == arg;
}

int report_keep_vcpu(const struct vmpt_vm_exit *x, long arg)
{
	return x->vcpu == arg;
}

void report_reason_label(int reason, char *buf, size_t size)
{
	if (reason < 0)
		snprintf(buf, size, "unknown");
	else if (vmpt_exit_reason_name(reason)[0])
		snprintf(buf, size, "%s (%d)", vmpt_exit_reason_name(reason), reason);
	else
		snprintf(buf, size, "reason %d", reason);
}

size_t report_distinct(struct vmpt_report *r, int (*f)(const struct vmpt_vm_exit *),
		       long **out)
{
	long *v = malloc((r->n_exits + 1) * sizeof(*v));
	size_t n = 0;

	*out = v;
	if (!v)
		return 0;
	for (size_t i = 0; i < r->n_exits; i++) {
		long x;
		size_t k;

		if (!report_in_time(r, r->exits[i].tsc))
			continue;
		x = f(&r->exits[i]);
		for (k = 0; k < n && v[k] != x; k++)
			;
		if (k == n)
			v[n++] = x;
	}
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && v[k - 1] > v[k]; k--) {
			long t = v[k];

			v[k] = v[k - 1];
			v[k - 1] = t;
		}
	return n;
}

int report_reason_of(const struct vmpt_vm_exit *x)
{
	return report_exit_reason(x);
}

int report_vcpu_of(const struct vmpt_vm_exit *x)
{
	return x->vcpu;
}

static int cmp_rip(const void *a, const void *b)
{
	const struct rip_count *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->rip < y->rip ? -1 : x->rip > y->rip;
}

size_t report_top_rips(struct vmpt_report *r, struct rip_count **out)
{
	struct rip_count *v = calloc(r->n_exits + 1, sizeof(*v));
	size_t n = 0;

	*out = v;
	if (!v)
		return 0;
	for (size_t i = 0; i < r->n_exits; i++) {
		const struct vmpt_vm_exit *x = &r->exits[i];
		size_t k;

		if (!report_in_time(r, x->tsc))
			continue;
		for (k = 0; k < n && v[k].rip != x->rip; k++)
			;
		if (k == n)
			v[n++] = (struct rip_count){ x->rip, x->vmcs, 0, 0 };
		v[k].count++;
		if (x->entry_tsc)
			v[k].host += report_ns(r, x->entry_tsc) - report_ns(r, x->tsc);
	}
	qsort(v, n, sizeof(*v), cmp_rip);
	return n;
}

void report_guest_sym(struct vmpt_report *r, uint64_t rip, uint64_t vmcs, char *buf,
		      size_t size, const char **dso)
{
	struct vmpt_consumer tmp = { .r = r, .vmcs = vmcs, .nr = 1 };
	const char *sym;
	uint64_t addr;

	buf[0] = 0;
	if (report_symbol(r, &tmp, rip, 1, dso, &sym, &addr) < 0 || !sym) {
		snprintf(buf, size, "[unknown]");
		return;
	}
	if (rip != addr)
		snprintf(buf, size, "%s+%#" PRIx64, sym, rip - addr);
	else
		snprintf(buf, size, "%s", sym);
}

const char *report_source_name(enum vmpt_exit_source s)
{
	return s == VMPT_EXIT_SOURCE_EVENT_TRACE ? "event-trace" :
	       s == VMPT_EXIT_SOURCE_HANDLER ? "handler" : "none";
}

