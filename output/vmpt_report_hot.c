/* SPDX-License-Identifier: MIT */
/* Hot spots: the instructions executed, the branches taken and the cycles
 * (CYC) counted per machine and per perf report sort key tuple (comm, pid,
 * tid, dso, sym), as perf report --itrace=i0ns counts instruction samples
 * (one per instruction, in the symbol of its own address) and
 * --itrace=b branch samples (one per taken branch, in the symbol of its
 * source).
 */
#include "vmpt_report_int.h"

#include <stdlib.h>
#include <string.h>

static const char *intern(struct vmpt_report *r, const char *s)
{
	char **v;

	if (!s)
		return NULL;
	for (size_t i = r->n_strs; i-- > 0;)
		if (!strcmp(r->strs[i], s))
			return r->strs[i];
	v = realloc(r->strs, (r->n_strs + 1) * sizeof(*v));
	if (!v)
		return NULL;
	r->strs = v;
	v[r->n_strs] = strdup(s);
	return v[r->n_strs] ? v[r->n_strs++] : NULL;
}

static int has_key(const struct vmpt_report *r, enum vmpt_report_key k)
{
	for (int i = 0; i < r->o->nkeys; i++)
		if (r->o->keys[i] == k)
			return 1;
	return 0;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	/* pointers are interned or the image's: equal strings, equal pointers
	 * within a run, except names of distinct sections (hashed by text)
	 */
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h * 0x100000001b3ull;
}

static uint64_t row_hash(const struct report_row *k)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)k->guest;

	h = (h ^ (uint64_t)(uint32_t)k->pid) * 0x100000001b3ull;
	h = (h ^ (uint64_t)(uint32_t)k->tid) * 0x100000001b3ull;
	h = hash_str(h, k->comm);
	h = hash_str(h, k->dso);
	return hash_str(h, k->sym);
}

static int str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static int row_eq(const struct report_row *a, const struct report_row *b)
{
	return a->guest == b->guest && a->pid == b->pid && a->tid == b->tid &&
	       str_eq(a->comm, b->comm) && str_eq(a->dso, b->dso) && str_eq(a->sym, b->sym);
}

static int rehash(struct vmpt_report *r, size_t size)
{
	size_t *h = calloc(size, sizeof(*h));

	if (!h)
		return -1;
	for (size_t i = 0; i < r->n_rows; i++) {
		size_t k = row_hash(&r->rows[i]) & (size - 1);

		while (h[k])
			k = (k + 1) & (size - 1);
		h[k] = i + 1;
	}
	free(r->hash);
	r->hash = h;
	r->hash_size = size;
	return 0;
}

/* The row of key k, made if new (NULL: no memory).  Under r->lock. */
static struct report_row *row_get(struct vmpt_report *r, const struct report_row *k)
{
	size_t i;

	if (2 * (r->n_rows + 1) > r->hash_size && rehash(r, r->hash_size ? 2 * r->hash_size : 1024))
		return NULL;
	i = row_hash(k) & (r->hash_size - 1);
	for (; r->hash[i]; i = (i + 1) & (r->hash_size - 1))
		if (row_eq(&r->rows[r->hash[i] - 1], k))
			return &r->rows[r->hash[i] - 1];
	if (r->n_rows == r->cap_rows) {
		size_t cap = r->cap_rows ? 2 * r->cap_rows : 256;
		struct report_row *v = realloc(r->rows, cap * sizeof(*v));

		if (!v)
			return NULL;
		r->rows = v;
		r->cap_rows = cap;
	}
	r->rows[r->n_rows] = *k;
	if (k->comm)
		r->rows[r->n_rows].comm = intern(r, k->comm);
	r->hash[i] = ++r->n_rows;
	return &r->rows[r->n_rows - 1];
}

/* The key of code at ip, with what the sort keys ask for. */
static void key_at(struct vmpt_consumer *c, uint64_t ip, struct report_row *k,
		   uint64_t *span_from, uint64_t *span_to)
{
	struct vmpt_report *r = c->r;
	const struct vmpt_section *sec = NULL;
	struct vmpt_asid space = { VMPT_MACHINE_HOST, VMPT_ASID_ANY };

	memset(k, 0, sizeof(*k));
	k->guest = c->nr;
	k->pid = has_key(r, VMPT_KEY_PID) ? c->task.pid : 0;
	k->tid = has_key(r, VMPT_KEY_TID) ? c->task.tid : 0;
	k->comm = has_key(r, VMPT_KEY_COMM) ? c->task.comm : NULL;
	*span_from = ip;
	*span_to = ip + 1;
	if (c->nr)
		space.machine = c->vmcs ? c->vmcs : VMPT_MACHINE_GUEST;
	else if (c->task.space)
		space.cr3 = c->task.space;
	if (r->o->image)
		sec = vmpt_image_find(r->o->image, &space, ip);
	if (!sec)
		return;
	if (has_key(r, VMPT_KEY_DSO))
		k->dso = sec->name;
	*span_from = sec->vaddr;
	*span_to = sec->vaddr + sec->size;
	if (has_key(r, VMPT_KEY_SYM)) {
		const struct vmpt_symbol *s = vmpt_section_symbol_span(sec, ip, span_from, span_to);

		k->sym = s ? s->name : NULL;
	}
}

/* Instructions of row (an index: rows move as they grow) since the
 * last IPC point.
 */
static void ran(struct vmpt_consumer *c, size_t row, uint64_t n)
{
	unsigned i;

	for (i = 0; i < c->nran && c->ran[i].row != row; i++)
		;
	if (i == c->nran) {
		if (c->nran == sizeof(c->ran) / sizeof(c->ran[0]))
			i = c->nran - 1;	/* the rest go with the last row */
		else {
			c->ran[c->nran].row = row;
			c->ran[c->nran++].insns = 0;
		}
	}
	c->ran[i].insns += n;
}

/* An IPC point: the cycles since the one before, shared among the rows
 * that ran by their instructions (perf's IPC counts the same cycles).
 */
static void ipc_point(struct vmpt_consumer *c, const struct vmpt_flow_item *it)
{
	struct vmpt_report *r = c->r;
	uint64_t cyc, insns = 0, given = 0;

	if (!it->cyc)
		return;
	if (it->cyc_est || it->cyc <= c->last_cyc || !c->last_cyc) {
		c->last_cyc = it->cyc;
		c->nran = 0;
		return;
	}
	cyc = it->cyc - c->last_cyc;
	c->last_cyc = it->cyc;
	for (unsigned i = 0; i < c->nran; i++)
		insns += c->ran[i].insns;
	if (!insns)
		return;
	for (unsigned i = 0; i < c->nran; i++) {
		uint64_t share = i + 1 == c->nran ? cyc - given :
				 cyc * c->ran[i].insns / insns;

		r->rows[c->ran[i].row].cycles += share;
		given += share;
	}
	r->cycles += cyc;
	c->nran = 0;
}

void report_hot_item(struct vmpt_consumer *c, const struct vmpt_flow_item *it)
{
	struct vmpt_report *r = c->r;
	uint64_t ip = it->ip, from = 0, to = 0;
	struct report_row *row = NULL;

	if (it->kind == VMPT_FLOW_EVENT) {
		if (it->ev == VMPT_EV_PAGING)
			c->nr = it->nr;
		else if (it->ev == VMPT_EV_VMCS)
			c->vmcs = it->payload;
		/* the time of the packet behind it: the walk's from then on */
		if (it->time > c->block_time || !c->have_time) {
			c->block_time = it->time;
			c->have_time = 1;
		}
		pthread_mutex_lock(&r->lock);
		ipc_point(c, it);
		pthread_mutex_unlock(&r->lock);
		return;
	}
	/* perf's sample times: the instructions walked before the branch
	 * that the trace decides have the time before its packet.
	 */
	uint64_t before = c->have_time ? c->block_time : it->time;
	int decided = it->iclass != VMPT_IC_JMP && it->iclass != VMPT_IC_CALL &&
		      it->iclass != VMPT_IC_OTHER;

	c->block_time = it->time;
	c->have_time = 1;
	pthread_mutex_lock(&r->lock);
	for (uint32_t i = 0; i < it->ninsn; i++) {
		uint64_t t = i + 1 == it->ninsn && decided ? it->time : before;

		if (r->o->ntimes && !report_in_time(r, t)) {
			ip += it->isize[i];
			continue;
		}
		if (!row || ip < from || ip >= to) {
			struct report_row k;

			key_at(c, ip, &k, &from, &to);
			row = row_get(r, &k);
			if (!row)
				break;
		}
		row->insns++;
		r->insns++;
		ran(c, (size_t)(row - r->rows), 1);
		if (i + 1 == it->ninsn && it->taken) {
			row->branches++;
			r->branches++;
		}
		ip += it->isize[i];
	}
	ipc_point(c, it);
	pthread_mutex_unlock(&r->lock);
}

static int cmp_row(const void *a, const void *b)
{
	const struct report_row *x = a, *y = b;

	if (x->insns != y->insns)
		return x->insns > y->insns ? -1 : 1;
	if (x->branches != y->branches)
		return x->branches > y->branches ? -1 : 1;
	if (!str_eq(x->sym, y->sym))
		return !x->sym ? 1 : !y->sym ? -1 : strcmp(x->sym, y->sym);
	return 0;
}

void report_hot_finish(struct vmpt_report *r)
{
	if (r->sorted)
		return;
	qsort(r->rows, r->n_rows, sizeof(*r->rows), cmp_row);
	free(r->hash);	/* indexes are stale after sorting */
	r->hash = NULL;
	r->hash_size = 0;
	r->sorted = 1;
}
