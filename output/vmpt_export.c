/* SPDX-License-Identifier: MIT */
/* vmpt export: vmpt script's samples and sideband numbered as perf's
 * db-export.c numbers them (events, machines, threads, comms, dsos,
 * symbols, samples in order of first use: the objects are
 * vmpt_export_objects.c's) and handed to a format (vmpt_export_FORMAT.c);
 * each thread's stack is kept by vmpt_export_stack.c.
 */
#include "vmpt_export_int.h"
#include "vmpt/build_id.h"
#include "vmpt/error.h"
#include "vmpt/image.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- A small map ---- */

static size_t map_hash(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;

	h ^= c * 0x94d049bb133111ebull;
	return (size_t)(h ^ (h >> 31));
}

void *export_map_get(const struct export_map *m, uint64_t a, uint64_t b, uint64_t c)
{
	if (!m->cap)
		return NULL;
	for (size_t i = map_hash(a, b, c) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		const struct export_slot *s = &m->slot[i];

		if (!s->v)
			return NULL;
		if (s->k[0] == a && s->k[1] == b && s->k[2] == c)
			return s->v;
	}
}

int export_map_put(struct export_map *m, uint64_t a, uint64_t b, uint64_t c, void *v)
{
	if ((m->n + 1) * 2 > m->cap) {
		struct export_map bigger = { NULL, 0, m->cap ? m->cap * 2 : 64 };

		bigger.slot = calloc(bigger.cap, sizeof(*bigger.slot));
		if (!bigger.slot)
			return -VMPT_ERR_NOMEM;
		for (size_t i = 0; i < m->cap; i++)
			if (m->slot[i].v)
				export_map_put(&bigger, m->slot[i].k[0], m->slot[i].k[1],
					       m->slot[i].k[2], m->slot[i].v);
		free(m->slot);
		*m = bigger;
	}
	for (size_t i = map_hash(a, b, c) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct export_slot *s = &m->slot[i];

		if (!s->v) {
			*s = (struct export_slot){ { a, b, c }, v };
			m->n++;
			return 0;
		}
	}
}

void export_map_free(struct export_map *m)
{
	free(m->slot);
	memset(m, 0, sizeof(*m));
}

/* ---- Errors and names ---- */

void export_fail(struct vmpt_export *x, const char *fmt, ...)
{
	va_list ap;

	if (x->failed)
		return;
	x->failed = 1;
	va_start(ap, fmt);
	vsnprintf(x->err, sizeof(x->err), fmt, ap);
	va_end(ap);
}

int export_entry_shown(const struct vmpt_export *x, const struct export_thread *t,
		       const struct export_entry *e)
{
	/* a guest's calls are above its host thread's and the guest slice */
	size_t depth = (size_t)(e - t->stack) + (t->host ? t->host->cnt + 1 : 0);

	return (!t->host || t->open) && (!x->o->max_depth || depth < x->o->max_depth);
}

void export_frame_name(const struct export_call_path *cp, char *buf, size_t size)
{
	if (cp->sym && strcmp(cp->sym->name, "unknown"))
		snprintf(buf, size, "%s", cp->sym->name);
	else if (cp->sym)
		snprintf(buf, size, "0x%" PRIx64, cp->sym->addr);
	else if (cp->ip)
		snprintf(buf, size, "0x%" PRIx64, cp->ip);
	else
		snprintf(buf, size, "[trace end]");
}

static const char *event_name(const struct vmpt_script_opts *o, enum vmpt_script_event ev,
			      char *buf, size_t size)
{
	/* the names perf's evlist has (branches:uH) */
	snprintf(buf, size, "%s", o->ev_name[ev] ? o->ev_name[ev] : "unknown");
	return buf;
}

/* ---- Samples ---- */

static struct export_machine *machine_of_sample(struct vmpt_export *x, int guest,
						const struct vmpt_script_sample *s)
{
	if (!guest)
		return export_machine_export(x, export_machine_of(x, VMPT_MACHINE_HOST, -1));
	return export_machine_export(x, export_machine_of(x, s->vmcs ? s->vmcs : VMPT_MACHINE_GUEST,
							  s->task->pid));
}

/* Timelines show a guest's vCPU on its host thread's: in the guest from
 * its first guest sample to the host thread's next one.
 */
static void guest_switch(struct vmpt_export *x, struct export_thread *t, uint64_t time)
{
	struct export_thread *g;

	if (!x->ops->guest)
		return;
	if (t->host) {
		if (!t->open) {
			/* one guest at a time on a vCPU thread */
			for (size_t i = 0; i < x->n_threads; i++) {
				g = x->thread_list[i];
				if (g != t && g->host == t->host && g->open) {
					g->open = 0;
					x->ops->guest(x, g, 0, time);
				}
			}
			t->open = 1;
			x->ops->guest(x, t, 1, time);
		}
		t->host->open = 1;
		return;
	}
	if (!t->open)
		return;
	t->open = 0;
	for (size_t i = 0; i < x->n_threads; i++) {
		g = x->thread_list[i];
		if (g->host == t && g->open) {
			g->open = 0;
			x->ops->guest(x, g, 0, time);
		}
	}
}

/* A decoding error: timelines mark it on the thread's track (perf's
 * tables have no place for it; perf prints it).
 */
static void export_error(struct vmpt_export *x, const struct vmpt_script_sample *s,
			 uint64_t time)
{
	struct export_machine *m;
	struct export_thread *t;
	char what[160];

	x->stats.errors++;
	if (!x->ops->error)
		return;
	m = export_machine_of(x, s->guest ? (s->vmcs ? s->vmcs : VMPT_MACHINE_GUEST) :
			      VMPT_MACHINE_HOST, s->task->pid);
	t = m ? export_thread_of(x, m, s->task->pid, s->task->tid, s->task->cpu) : NULL;
	if (!t)
		return;
	if (s->guest && !t->host)
		t->host = export_thread_of(x, export_machine_of(x, VMPT_MACHINE_HOST, -1),
					   s->task->pid, s->task->tid, s->task->cpu);
	if (!t->name)
		t->name = export_own_str(x, s->guest ? "[guest]" : s->task->comm);
	snprintf(what, sizeof(what), "error: %s at 0x%" PRIx64 " (trace offset 0x%" PRIx64 ")",
		 vmpt_strerror(s->err), s->ip, s->offset);
	x->ops->error(x, t, time, what);
}

void vmpt_export_sample(void *ctx, const struct vmpt_script_sample *s)
{
	struct vmpt_export *x = ctx;
	const struct vmpt_script_opts *o = x->o->script;
	struct export_sample es = { .s = s };
	struct export_dso *d_ip = NULL, *d_to = NULL;
	struct export_machine *m;
	struct export_thread *t;
	char name[128];

	if (x->failed)
		return;
	es.time = vmpt_script_time(o, s->time);
	if (s->err) {
		export_error(x, s, es.time);
		return;
	}
	if (!x->evsel_db_id[s->ev]) {
		x->evsel_db_id[s->ev] = ++x->last_id[EK_EVSEL];
		if (x->ops->evsel)
			x->ops->evsel(x, x->evsel_db_id[s->ev],
				      event_name(o, s->ev, name, sizeof(name)));
	}
	es.evsel_db_id = x->evsel_db_id[s->ev];
	m = machine_of_sample(x, s->guest, s);
	if (!m)
		return;
	t = export_thread_of(x, m, s->task->pid, s->task->tid, s->task->cpu);
	if (!t)
		return;
	if (s->guest && !t->host)
		t->host = export_thread_of(x, export_machine_of(x, VMPT_MACHINE_HOST, -1),
					   s->task->pid, s->task->tid, s->task->cpu);
	if (!t->name)
		t->name = export_own_str(x, s->guest ? "[guest]" : s->task->comm);
	es.thread = t;
	es.comm = export_threads_export(x, t, s->guest ? NULL : s->task->comm);
	es.db_id = ++x->last_id[EK_SAMPLE];
	/* perf script resolves ip, then addr; db-export makes the unknown
	 * symbols of ip, then of addr
	 */
	es.sym = export_sym_find(x, s->sec, s->ip, m, s->task->pid, &d_ip);
	if (s->addr) {
		struct export_machine *am = machine_of_sample(x, s->addr_guest, s);

		if (am)
			es.to_sym = export_sym_find(x, s->addr_sec, s->addr, am, s->task->pid, &d_to);
	}
	if (d_ip && !es.sym)
		es.sym = export_sym_unknown(x, d_ip, s->sec, s->ip);
	export_sym_export(x, es.sym);
	if (d_to && !es.to_sym)
		es.to_sym = export_sym_unknown(x, d_to, s->addr_sec, s->addr);
	export_sym_export(x, es.to_sym);
	x->stats.samples++;
	guest_switch(x, t, es.time);
	if (s->ev == VMPT_SE_BRANCHES)
		export_stack_sample(x, t, &es);
	if (x->ops->sample)
		x->ops->sample(x, &es);
}

/* A thread's comm from now on (perf's thread__set_comm). */
static void set_comm(struct vmpt_export *x, struct export_thread *t, const char *name,
		     uint64_t time, int exec)
{
	struct export_comm *c = export_comm_new(x, name, time, exec);

	if (!c)
		return;
	t = export_ident(t);
	t->comm_set = 1;
	for (size_t i = 0; i < x->comms.cap; i++) {
		struct export_slot *sl = &x->comms.slot[i];

		if (sl->v && sl->k[0] == 1 && sl->k[1] == (uint64_t)(uintptr_t)t) {
			sl->v = c;
			return;
		}
	}
	export_keep(x, &x->comms, 1, (uint64_t)(uintptr_t)t, 0, c);
}

/* perf's db_export__pid_tid: a thread named by the sideband, exported
 * with its process; 0 when not known so.
 */
static uint64_t switch_thread(struct vmpt_export *x, struct export_machine *m, int pid, int tid,
			      int cpu, struct export_comm **comm, int *idle)
{
	struct export_thread *t = export_map_get(&x->threads, m->key,
						 (uint64_t)(uint32_t)pid << 32 | (uint32_t)tid,
						 !pid && !tid && cpu > 0 ? (uint64_t)(int64_t)cpu : 0);

	*comm = NULL;
	*idle = 0;
	if (!t && !pid && !tid)
		t = export_map_get(&x->threads, m->key, 0, (uint64_t)(int64_t)-1);
	if (!t || !export_ident(t)->comm_set)
		return 0;
	*idle = !pid && !tid;
	*comm = export_threads_export(x, t, NULL);
	return t->db_id;
}

/* perf's db_export__switch: a context_switches row. */
static void context_switch(struct vmpt_export *x, const struct vmpt_perf_event *ev,
			   const struct vmpt_task *task)
{
	int out = !!(ev->misc & PERF_RECORD_MISC_SWITCH_OUT);
	int flags = out | (out && (ev->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? 2 : 0);
	struct export_comm *ca, *cb = NULL;
	struct export_machine *m = export_machine_export(x, export_machine_of(x, VMPT_MACHINE_HOST, -1));
	uint64_t a, b = 0;
	int idle_a, idle_b = 0;

	if (!m || !x->ops->context_switch)
		return;
	a = switch_thread(x, m, task->pid, task->tid, task->cpu, &ca, &idle_a);
	if (ev->type == PERF_RECORD_SWITCH_CPU_WIDE)
		b = switch_thread(x, m, (int)ev->sw.next_prev_pid, (int)ev->sw.next_prev_tid,
				  task->cpu, &cb, &idle_b);
	/* nothing known traced on either side */
	if ((!a || idle_a) && (!b || idle_b))
		return;
	x->ops->context_switch(x, ++x->last_id[EK_SWITCH], m->db_id, ev->sid.time, task->cpu,
			       out ? a : b, out ? (ca ? ca->db_id : 0) : (cb ? cb->db_id : 0),
			       out ? b : a, out ? (cb ? cb->db_id : 0) : (ca ? ca->db_id : 0),
			       flags);
}

void vmpt_export_sideband(struct vmpt_export *x, const struct vmpt_perf_event *ev,
			  const struct vmpt_task *task)
{
	struct export_machine *m;
	struct export_thread *t, *parent;

	if (x->failed)
		return;
	switch (ev->type) {
	case PERF_RECORD_COMM:
		m = export_machine_of(x, VMPT_MACHINE_HOST, -1);
		t = m ? export_thread_of(x, m, (int)ev->comm.pid, (int)ev->comm.tid,
					 task->cpu) : NULL;
		if (t)
			set_comm(x, t, ev->comm.comm, ev->sid.time,
				 !!(ev->misc & PERF_RECORD_MISC_COMM_EXEC));
		break;
	case PERF_RECORD_FORK:
		/* the child starts with its parent's comm */
		m = export_machine_of(x, VMPT_MACHINE_HOST, -1);
		if (!m)
			break;
		parent = export_thread_of(x, m, (int)ev->fork.ppid, (int)ev->fork.ptid, task->cpu);
		t = export_thread_of(x, m, (int)ev->fork.pid, (int)ev->fork.tid, task->cpu);
		if (t && parent && parent->comm_set)
			set_comm(x, t, export_current_comm(x, parent, NULL)->name,
				 ev->sid.present ? ev->sid.time : ev->fork.time, 0);
		break;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		context_switch(x, ev, task);
		break;
	default:
		break;
	}
}

/* ---- The exporter ---- */

int vmpt_export_format_parse(const char *name)
{
	static const char *const names[] = { "folded", "chrome", "perfetto", "sqlite",
					      "postgresql" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return (int)i;
	return -1;
}

struct vmpt_export *vmpt_export_new(const struct vmpt_export_opts *opts, char *err,
				    size_t errlen)
{
	static const struct export_format_ops *const ops[] = {
		[VMPT_EXPORT_FOLDED] = &export_folded_ops,
		[VMPT_EXPORT_CHROME] = &export_chrome_ops,
		[VMPT_EXPORT_PERFETTO] = &export_perfetto_ops,
		[VMPT_EXPORT_SQLITE] = &export_sqlite_ops,
		[VMPT_EXPORT_POSTGRESQL] = &export_postgresql_ops,
	};
	struct vmpt_export *x = calloc(1, sizeof(*x));

	if (err && errlen)
		err[0] = 0;
	if (!x)
		return NULL;
	x->o = opts;
	x->ops = ops[opts->format];
	x->kernel_start = opts->script && opts->script->kernel_start ?
			  opts->script->kernel_start : 1ull << 63;
	/* perf's idle thread: pid 0 named swapper from the start */
	{
		struct export_machine *host = export_machine_of(x, VMPT_MACHINE_HOST, -1);
		struct export_thread *idle = host ? export_thread_of(x, host, 0, 0, -1) : NULL;

		if (idle)
			set_comm(x, idle, "swapper", 0, 0);
	}
	if (x->ops->begin && x->ops->begin(x) < 0) {
		if (err)
			snprintf(err, errlen, "%s", x->err);
		vmpt_export_free(x);
		return NULL;
	}
	return x;
}

/* The order perf's machines__for_each_thread visits threads: the host
 * first, then by its table (tid % 256), then by tid.
 */
static int cmp_flush(const void *pa, const void *pb)
{
	const struct export_thread *a = *(struct export_thread *const *)pa;
	const struct export_thread *b = *(struct export_thread *const *)pb;
	int ha = a->machine->key == VMPT_MACHINE_HOST, hb = b->machine->key == VMPT_MACHINE_HOST;

	if (ha != hb)
		return hb - ha;
	if (a->machine->key != b->machine->key)
		return a->machine->db_id < b->machine->db_id ? -1 : 1;
	if ((unsigned)a->tid % 256 != (unsigned)b->tid % 256)
		return (unsigned)a->tid % 256 < (unsigned)b->tid % 256 ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return a->cpu - b->cpu;
}

int vmpt_export_finish(struct vmpt_export *x, struct vmpt_export_stats *st, char *err,
		       size_t errlen)
{
	struct export_thread **order = malloc((x->n_threads + 1) * sizeof(*order));

	/* perf flushes every thread's stack at the end: "no return". */
	if (!order) {
		export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
	} else {
		memcpy(order, x->thread_list, x->n_threads * sizeof(*order));
		qsort(order, x->n_threads, sizeof(*order), cmp_flush);
		for (size_t i = 0; i < x->n_threads; i++)
			export_stack_flush(x, order[i]);
		free(order);
	}
	for (size_t i = 0; i < x->n_threads; i++)
		if (x->thread_list[i]->host && x->thread_list[i]->open && x->ops->guest)
			x->ops->guest(x, x->thread_list[i], 0, x->thread_list[i]->last_time);
	if (x->ops->end && !x->failed)
		x->ops->end(x);
	if (st)
		*st = x->stats;
	if (x->failed) {
		snprintf(err, errlen, "%s", x->err);
		return -VMPT_ERR_IO;
	}
	return 0;
}

void vmpt_export_free(struct vmpt_export *x)
{
	if (!x)
		return;
	/* After the test: &x->machines of NULL is undefined (UBSan says so). */
	struct export_map *maps[] = { &x->machines, &x->dsos, &x->syms, &x->paths, &x->comms };
	if (x->ops->free)
		x->ops->free(x);
	for (size_t k = 0; k < sizeof(maps) / sizeof(maps[0]); k++) {
		for (size_t i = 0; i < maps[k]->cap; i++) {
			struct export_slot *s = &maps[k]->slot[i];

			/* the comms map holds each comm twice: free it once */
			if (s->v && !(maps[k] == &x->comms && s->k[0] == 1))
				free(s->v);
		}
		export_map_free(maps[k]);
	}
	for (size_t i = 0; i < x->n_threads; i++) {
		free(x->thread_list[i]->stack);
		free(x->thread_list[i]);
	}
	export_map_free(&x->threads);
	free(x->thread_list);
	for (size_t i = 0; i < x->n_strings; i++)
		free(x->strings[i]);
	free(x->strings);
	free(x);
}
