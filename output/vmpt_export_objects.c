/* SPDX-License-Identifier: MIT */
/* vmpt export's objects as perf's db-export.c numbers them: machines,
 * threads (a guest's vCPU thread beside its host thread), comms, dsos and
 * symbols, each made and handed to the format on first use.
 */
#include "vmpt_export_int.h"
#include "vmpt/build_id.h"
#include "vmpt/error.h"
#include "vmpt/image.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

const char *export_own_str(struct vmpt_export *x, const char *s)
{
	char **v = realloc(x->strings, (x->n_strings + 1) * sizeof(*v));
	char *copy = strdup(s ? s : "");

	if (!v || !copy) {
		free(copy);
		if (v)
			x->strings = v;
		export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
		return "";
	}
	x->strings = v;
	v[x->n_strings++] = copy;
	return copy;
}

static void *zalloc_obj(struct vmpt_export *x, size_t size)
{
	void *p = calloc(1, size);

	if (!p)
		export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
	return p;
}

int export_keep(struct vmpt_export *x, struct export_map *m, uint64_t a, uint64_t b,
		uint64_t c, void *v)
{
	if (export_map_put(m, a, b, c, v) < 0) {
		free(v);
		export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
		return -1;
	}
	return 0;
}

/* ---- perf's db-export objects ---- */

struct export_machine *export_machine_of(struct vmpt_export *x, uint64_t key, int pid)
{
	struct export_machine *m = export_map_get(&x->machines, key, 0, 0);

	if (m)
		return m;
	m = zalloc_obj(x, sizeof(*m));
	if (!m || export_keep(x, &x->machines, key, 0, 0, m) < 0)
		return NULL;
	m->key = key;
	m->pid = key == VMPT_MACHINE_HOST ? -1 : pid;
	return m;
}

/* perf's db_export__machine: numbered when a sample or switch uses it. */
struct export_machine *export_machine_export(struct vmpt_export *x, struct export_machine *m)
{
	if (!m || m->db_id)
		return m;
	m->db_id = ++x->last_id[EK_MACHINE];
	if (x->ops->machine)
		x->ops->machine(x, m);
	return m;
}

struct export_comm *export_comm_new(struct vmpt_export *x, const char *name, uint64_t time,
				    int exec)
{
	struct export_comm *c = zalloc_obj(x, sizeof(*c));

	if (!c)
		return NULL;
	if (export_keep(x, &x->comms, (uint64_t)(uintptr_t)c, 0, 0, c) < 0)
		return NULL;
	c->name = export_own_str(x, name);
	c->time = time;
	c->exec = exec;
	return c;
}

/* perf's comm_thread rows: a comm's thread (exported once per pair). */
static void comm_thread(struct vmpt_export *x, struct export_comm *c, struct export_thread *t)
{
	uint64_t id = ++x->last_id[EK_COMM_THREAD];

	if (x->ops->comm_thread)
		x->ops->comm_thread(x, id, c, t);
}

static void comm_export(struct vmpt_export *x, struct export_comm *c, struct export_thread *t)
{
	if (c->db_id)
		return;
	c->db_id = ++x->last_id[EK_COMM];
	c->thread = t;
	if (x->ops->comm)
		x->ops->comm(x, c);
	comm_thread(x, c, t);
}

/* The idle task is one thread with a stack per CPU: its CPUs' stacks
 * after the first are twins of it.
 */
struct export_thread *export_ident(struct export_thread *t)
{
	return t->twin ? t->twin : t;
}

static void thread_export(struct vmpt_export *x, struct export_thread *t)
{
	if (t->twin) {
		thread_export(x, t->twin);
		t->db_id = t->twin->db_id;
		return;
	}
	if (t->db_id)
		return;
	t->db_id = ++x->last_id[EK_THREAD];
	x->stats.threads++;
	if (x->ops->thread)
		x->ops->thread(x, t);
}

struct export_thread *export_thread_of(struct vmpt_export *x, struct export_machine *m,
					      int pid, int tid, int cpu)
{
	/* The idle task (pid = tid = 0) has a stack per CPU (perf's). */
	uint64_t key_cpu = !pid && !tid && cpu > 0 ? (uint64_t)(int64_t)cpu :
			   !pid && !tid ? (uint64_t)(int64_t)-1 : 0;
	struct export_thread *t = export_map_get(&x->threads, m->key,
						 (uint64_t)(uint32_t)pid << 32 | (uint32_t)tid,
						 key_cpu);
	struct export_thread **list;

	if (t)
		return t;
	t = zalloc_obj(x, sizeof(*t));
	if (!t || export_keep(x, &x->threads, m->key, (uint64_t)(uint32_t)pid << 32 | (uint32_t)tid,
			      key_cpu, t) < 0)
		return NULL;
	list = realloc(x->thread_list, (x->n_threads + 1) * sizeof(*list));
	if (!list) {
		export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
		return NULL;
	}
	x->thread_list = list;
	list[x->n_threads++] = t;
	t->machine = m;
	t->pid = pid;
	t->tid = tid;
	t->cpu = cpu;
	t->retpoline = 1;
	t->main = t;
	if (key_cpu && key_cpu != (uint64_t)(int64_t)-1) {
		t->twin = export_thread_of(x, m, 0, 0, -1);
		if (!t->twin)
			return NULL;
		t->main = t->twin;
	}
	if (pid != tid && pid >= 0) {
		t->main = export_thread_of(x, m, pid, pid, cpu);
		if (!t->main)
			t->main = t;
	}
	return t;
}

/* The comm a thread has now: from the COMM records seen (perf's
 * thread comm list), else the task's name from the session.
 */
struct export_comm *export_current_comm(struct vmpt_export *x, struct export_thread *t,
					const char *name)
{
	struct export_comm *c;
	char tmp[32];

	t = export_ident(t);
	c = export_map_get(&x->comms, 1, (uint64_t)(uintptr_t)t, 0);
	if (c)
		return c;
	if (!name) {
		snprintf(tmp, sizeof(tmp), ":%d", t->tid);
		name = tmp;
	}
	c = export_comm_new(x, name, 0, 0);
	if (c && export_keep(x, &x->comms, 1, (uint64_t)(uintptr_t)t, 0, c) < 0)
		return NULL;
	return c;
}

/* perf's db_export__threads: the main thread and its exec comm first. */
struct export_comm *export_threads_export(struct vmpt_export *x, struct export_thread *t,
					  const char *name)
{
	struct export_comm *exec = NULL, *cur;
	int new_thread;

	if (t->twin) {
		cur = export_threads_export(x, t->twin, name);
		t->db_id = t->twin->db_id;
		return cur;
	}
	new_thread = !t->db_id;

	thread_export(x, t->main);
	exec = export_current_comm(x, t->main, t->main == t ? name : NULL);
	if (exec && !exec->db_id)
		comm_export(x, exec, t->main);
	if (t != t->main) {
		thread_export(x, t);
		if (exec && new_thread)
			comm_thread(x, exec, t);
	}
	cur = export_current_comm(x, t, name);
	if (cur)
		comm_export(x, cur, t);
	return exec ? exec : cur;
}

/* The dso of a section (by its name: one per file and machine). */
static struct export_dso *dso_of(struct vmpt_export *x, const struct vmpt_section *sec,
				 struct export_machine *m, int pid, uint64_t addr)
{
	const struct vmpt_script_opts *o = x->o->script;
	struct vmpt_map_ref map;
	char id[41];
	struct export_dso *d = export_map_get(&x->dsos, (uint64_t)(uintptr_t)sec->name,
					      m->key, 0);
	const char *slash;

	if (d)
		return d;
	d = zalloc_obj(x, sizeof(*d));
	if (!d || export_keep(x, &x->dsos, (uint64_t)(uintptr_t)sec->name, m->key, 0, d) < 0)
		return NULL;
	d->long_name = sec->name;
	slash = strrchr(sec->name, '/');
	d->short_name = slash && sec->name[0] != '[' ? slash + 1 : sec->name;
	d->build_id = "";
	d->kernel = sec->name[0] == '[';
	if (x->o->vmlinux && m->key == VMPT_MACHINE_HOST &&
	    !strcmp(sec->name, "[kernel.kallsyms]")) {
		d->long_name = x->o->vmlinux;
		d->kernel = 0;
	}
	/* the build-id the recording names for the file */
	if (m->key == VMPT_MACHINE_HOST && o->map_of &&
	    o->map_of(o->map_ctx, pid, 0, addr, &map) == 0 && map.build_id &&
	    !strcmp(map.name, sec->name))
		d->build_id = export_own_str(x, map.build_id);
	else if (sec->name[0] == '/' && vmpt_build_id_of_file(sec->name, id) == 0)
		d->build_id = export_own_str(x, id);	/* perf reads the file's */
	d->machine = m;
	return d;
}

static void dso_export(struct vmpt_export *x, struct export_dso *d)
{
	if (d->db_id)
		return;
	d->db_id = ++x->last_id[EK_DSO];
	x->stats.dsos++;
	if (x->ops->dso)
		x->ops->dso(x, d);
}

/* A symbol of dso d: vs (a real one, at addr), or perf's "unknown" at
 * addr.
 */
static struct export_sym *sym_get(struct vmpt_export *x, struct export_dso *d,
				  const struct vmpt_section *sec, const struct vmpt_symbol *vs,
				  uint64_t addr)
{
	struct export_sym *s;
	uint64_t base;

	s = vs ? export_map_get(&x->syms, (uint64_t)(uintptr_t)vs, 0, 0) :
		 export_map_get(&x->syms, (uint64_t)(uintptr_t)d, addr, 1);
	if (s)
		return s;
	s = zalloc_obj(x, sizeof(*s));
	if (!s || (vs ? export_keep(x, &x->syms, (uint64_t)(uintptr_t)vs, 0, 0, s) :
			export_keep(x, &x->syms, (uint64_t)(uintptr_t)d, addr, 1, s)) < 0)
		return NULL;
	s->dso = d;
	/* perf's symbols are file offsets in a dso (map_ip), addresses in
	 * the kernel.
	 */
	base = d->kernel ? 0 : sec->vaddr - sec->file_offset;
	s->addr = addr;
	s->start = s->addr - base;
	s->end = vs ? s->start + vs->size : s->start;
	s->name = vs ? vs->name : "unknown";
	s->binding = vs ? vs->binding : 0;
	return s;
}

/* The symbol perf's dso__find_symbol gives for addr (NULL: none), with
 * its one-entry cache: the same address again gives what the cache holds,
 * which an "unknown" symbol made since may have taken over (below).
 * *dso: addr's dso (NULL without code: perf has no map there).
 */
struct export_sym *export_sym_find(struct vmpt_export *x, const struct vmpt_section *sec,
				   uint64_t addr, struct export_machine *m, int pid,
				   struct export_dso **dso)
{
	const struct vmpt_symbol *vs;
	struct export_dso *d;
	struct export_sym *s;
	uint64_t from, to;

	*dso = NULL;
	if (!sec || !addr)
		return NULL;
	d = *dso = dso_of(x, sec, m, pid, addr);
	if (!d)
		return NULL;
	if (d->cache_sym && d->cache_addr == addr)
		return d->cache_sym;
	vs = vmpt_section_symbol_span(sec, addr, &from, &to);
	s = vs ? sym_get(x, d, sec, vs, from) :
		 export_map_get(&x->syms, (uint64_t)(uintptr_t)d, addr, 1);
	d->cache_addr = addr;
	d->cache_sym = s;
	return s;
}

/* perf's db-export makes an "unknown" symbol where code has none; perf's
 * dso__insert_symbol then hands it to the cached address when that is at
 * or after it (a zero-size symbol "covers" it there).
 */
struct export_sym *export_sym_unknown(struct vmpt_export *x, struct export_dso *d,
				      const struct vmpt_section *sec, uint64_t addr)
{
	struct export_sym *s = sym_get(x, d, sec, NULL, addr);

	if (s && d->cache_addr >= s->addr)
		d->cache_sym = s;
	return s;
}

void export_sym_export(struct vmpt_export *x, struct export_sym *s)
{
	if (!s)
		return;
	dso_export(x, s->dso);
	if (s->db_id)
		return;
	s->db_id = ++x->last_id[EK_SYMBOL];
	x->stats.symbols++;
	if (x->ops->symbol)
		x->ops->symbol(x, s);
}
