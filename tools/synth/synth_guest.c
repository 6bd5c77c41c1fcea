/* SPDX-License-Identifier: MIT */
/* A real guest recording as the guest of the VM scenario (see
 * synth_guest.h).  Guest perf time becomes guest TSC by the guest's
 * TIME_CONV (its inverse, as perf's perf_time_to_tsc), and host TSC =
 * guest TSC - the vCPU's offset.  The guest is hostile input: paths are
 * taken beneath its root/ only, with no "." or ".." component.
 */
#include "synth_guest.h"
#include "vmpt/error.h"
#include "vmpt/perf_data.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The model's CR3s: one per process, one for kernel threads. */
#define GUEST_KERNEL_CR3 0x2a0c000ull
#define GUEST_CR3_BASE 0x40000000ull

enum gev_kind { GEV_COMM, GEV_FORK, GEV_MMAP, GEV_SWITCH_IN };

/* A sideband record as the schedule needs it. */
struct gev {
	uint64_t ns, seq;
	uint32_t cpu, pid, tid, ppid;
	int kind, exec;
	uint64_t start, len, pgoff;
	char comm[64];
	char *path;
};

static int cmp_gev(const void *a, const void *b)
{
	const struct gev *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* perf's tsc_to_perf_time (u64 arithmetic wraps: time_zero may be
 * "negative") */
static uint64_t guest_time(const struct synth_grec *g, uint64_t tsc)
{
	uint64_t quot = tsc >> g->tc.shift;
	uint64_t rem = tsc & ((1ull << g->tc.shift) - 1);

	return g->tc.zero + quot * g->tc.mult + ((rem * g->tc.mult) >> g->tc.shift);
}

uint64_t synth_grec_host_tsc(const struct synth_grec *g, unsigned n, uint64_t ns)
{
	uint64_t t, quot, rem, tsc;
	int64_t off = g->offset[n < SYNTH_MAX_VCPUS ? n : 0];

	/* perf_time_to_tsc, then up to the first TSC perf puts at ns or
	 * later: an event at ns comes before everything from there on */
	if (!g->tc.mult)
		return 0;
	t = ns - g->tc.zero;
	quot = t / g->tc.mult;
	rem = t % g->tc.mult;
	tsc = (quot << g->tc.shift) + (rem << g->tc.shift) / g->tc.mult;
	while ((int64_t)(guest_time(g, tsc) - ns) < 0)
		tsc++;
	/* records from before the host's time 0 (synthesized from /proc) */
	if (off > 0 && tsc < (uint64_t)off)
		return 0;
	return tsc - (uint64_t)off;
}

static struct gtask *task(struct synth_grec *g, uint32_t pid, uint32_t tid)
{
	struct gtask **v, *t;

	for (size_t i = 0; i < g->n_tasks; i++)
		if (g->tasks[i]->tid == tid) {
			if (pid)
				g->tasks[i]->pid = pid;
			return g->tasks[i];
		}
	v = realloc(g->tasks, (g->n_tasks + 1) * sizeof(*v));
	if (!v)
		return NULL;
	g->tasks = v;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	g->tasks[g->n_tasks++] = t;
	t->pid = pid;
	t->tid = tid;
	return t;
}

static int add_comm(struct gtask *t, uint64_t from, const char *comm)
{
	struct gcomm *c = realloc(t->comms, (t->n_comms + 1) * sizeof(*c));

	if (!c)
		return -VMPT_ERR_NOMEM;
	t->comms = c;
	c = &t->comms[t->n_comms++];
	c->from = from;
	snprintf(c->comm, sizeof(c->comm), "%s", comm);
	return 0;
}

static int add_map(struct synth_grec *g, uint32_t pid, uint64_t from,
		   uint64_t start, uint64_t len, uint64_t pgoff, const char *path)
{
	struct gmap *m = realloc(g->maps, (g->n_maps + 1) * sizeof(*m));
	uint32_t *p;

	if (!m)
		return -VMPT_ERR_NOMEM;
	g->maps = m;
	p = realloc(g->maps_pid, (g->n_maps + 1) * sizeof(*p));
	if (!p)
		return -VMPT_ERR_NOMEM;
	g->maps_pid = p;
	m = &g->maps[g->n_maps];
	memset(m, 0, sizeof(*m));
	m->from = from;
	m->to = UINT64_MAX;
	m->start = start;
	m->len = len;
	m->pgoff = pgoff;
	m->path = strdup(path);
	if (!m->path)
		return -VMPT_ERR_NOMEM;
	g->maps_pid[g->n_maps++] = pid;
	return 0;
}

/* A new process: its parent's mappings at that time, from then on. */
static int fork_maps(struct synth_grec *g, uint32_t parent, uint32_t child,
		     uint64_t t)
{
	size_t n = g->n_maps;
	int ret = 0;

	for (size_t i = 0; !ret && i < n; i++) {
		struct gmap m = g->maps[i];

		if (g->maps_pid[i] == parent && m.from <= t && t < m.to)
			ret = add_map(g, child, t, m.start, m.len, m.pgoff, m.path);
	}
	return ret;
}

static void exec_maps(struct synth_grec *g, uint32_t pid, uint64_t t)
{
	for (size_t i = 0; i < g->n_maps; i++)
		if (g->maps_pid[i] == pid && g->maps[i].to == UINT64_MAX)
			g->maps[i].to = t;
}

static int add_slice(struct synth_grec *g, unsigned cpu, uint64_t from,
		     struct gtask *t)
{
	struct gslice *s;
	size_t n = g->n_slices[cpu];

	if (n && g->slices[cpu][n - 1].to == UINT64_MAX)
		g->slices[cpu][n - 1].to = from;
	if (!t)		/* the idle task */
		return 0;
	s = realloc(g->slices[cpu], (n + 1) * sizeof(*s));
	if (!s)
		return -VMPT_ERR_NOMEM;
	g->slices[cpu] = s;
	s[n].from = from;
	s[n].to = UINT64_MAX;
	s[n].task = t;
	g->n_slices[cpu]++;
	return 0;
}

static int read_events(struct synth_grec *g, const char *path,
		       struct gev **out, size_t *n_out, char *err, size_t errlen)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	struct gev *v = NULL;
	size_t n = 0, cap = 0;
	int ret, have_tc = 0;

	ret = vmpt_perf_open(&pd, path);
	if (ret) {
		snprintf(err, errlen, "%s", pd.errmsg);
		vmpt_perf_close(&pd);
		return ret;
	}
	vmpt_perf_cursor_init(&pd, &cur);
	while ((ret = vmpt_perf_next(&pd, &cur, &ev)) == 1) {
		struct gev e = { .ns = ev.sid.time, .seq = n, .cpu = ev.sid.cpu };

		switch (ev.type) {
		case VMPT_PERF_RECORD_TIME_CONV:
			g->tc.shift = ev.time_conv.time_shift;
			g->tc.mult = ev.time_conv.time_mult;
			g->tc.zero = ev.time_conv.time_zero;
			g->time_mult = g->tc.mult;
			g->time_shift = g->tc.shift;
			have_tc = 1;
			continue;
		case PERF_RECORD_COMM:
			e.kind = GEV_COMM;
			e.pid = ev.comm.pid;
			e.tid = ev.comm.tid;
			e.exec = !!(ev.misc & PERF_RECORD_MISC_COMM_EXEC);
			snprintf(e.comm, sizeof(e.comm), "%s", ev.comm.comm);
			break;
		case PERF_RECORD_FORK:
			e.kind = GEV_FORK;
			e.pid = ev.fork.pid;
			e.tid = ev.fork.tid;
			e.ppid = ev.fork.ppid;
			break;
		case PERF_RECORD_MMAP:
		case PERF_RECORD_MMAP2:
			if (ev.type == PERF_RECORD_MMAP2 && !(ev.mmap.prot & 4))
				continue;
			e.kind = GEV_MMAP;
			e.pid = ev.mmap.pid;
			e.start = ev.mmap.start;
			e.len = ev.mmap.len;
			e.pgoff = ev.mmap.pgoff;
			e.path = strdup(ev.mmap.filename);
			if (!e.path)
				ret = -VMPT_ERR_NOMEM;
			break;
		case PERF_RECORD_SWITCH_CPU_WIDE:
			if (ev.sw.out)
				continue;
			e.kind = GEV_SWITCH_IN;
			e.pid = ev.sid.pid;
			e.tid = ev.sid.tid;
			break;
		default:
			continue;
		}
		if (ret < 0)
			break;
		if (n == cap) {
			struct gev *nv;

			cap = cap ? cap * 2 : 1024;
			nv = realloc(v, cap * sizeof(*nv));
			if (!nv) {
				free(e.path);
				ret = -VMPT_ERR_NOMEM;
				break;
			}
			v = nv;
		}
		v[n++] = e;
	}
	if (ret < 0 && ret != -VMPT_ERR_NOMEM)
		snprintf(err, errlen, "%s", pd.errmsg);
	else if (!ret && !have_tc) {
		snprintf(err, errlen, "%s: no TIME_CONV record: guest time cannot "
			 "be turned into TSC (boot the guest with no-kvmclock)", path);
		ret = -VMPT_ERR_FORMAT;
	}
	vmpt_perf_close(&pd);
	qsort(v, n, sizeof(*v), cmp_gev);
	*out = v;
	*n_out = n;
	return ret < 0 ? ret : 0;
}

static int build(struct synth_grec *g, struct gev *v, size_t n)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < n; i++) {
		struct gev *e = &v[i];
		uint64_t t = synth_grec_host_tsc(g, e->cpu, e->ns);
		struct gtask *tk;

		switch (e->kind) {
		case GEV_COMM:
			if (!(tk = task(g, e->pid, e->tid)))
				return -VMPT_ERR_NOMEM;
			if (e->exec) {
				exec_maps(g, e->pid, t);
				if (!g->first_exec && e->ns)
					g->first_exec = t;
			}
			ret = add_comm(tk, t, e->comm);
			break;
		case GEV_FORK: {
			struct gtask *parent = task(g, e->ppid, e->ppid);

			if (!parent || !(tk = task(g, e->pid, e->tid)))
				return -VMPT_ERR_NOMEM;
			/* the child has its parent's name until it changes it */
			if (!tk->n_comms && parent->n_comms)
				ret = add_comm(tk, t, parent->comms[parent->n_comms - 1].comm);
			if (!ret && e->pid == e->tid && e->pid != e->ppid)
				ret = fork_maps(g, e->ppid, e->pid, t);
			break;
		}
		case GEV_MMAP:
			ret = add_map(g, e->pid, t, e->start, e->len, e->pgoff, e->path);
			break;
		case GEV_SWITCH_IN:
			if (e->cpu >= g->guest_cpus)
				g->guest_cpus = e->cpu + 1;
			if (e->cpu >= g->n_cpus)
				break;
			tk = e->tid ? task(g, e->pid, e->tid) : NULL;
			if (e->tid && !tk)
				return -VMPT_ERR_NOMEM;
			ret = add_slice(g, e->cpu, t, tk);
			break;
		}
	}
	return ret;
}

int synth_grec_open(struct synth_grec *g, const char *dir,
		    const int64_t *offsets, unsigned n_vcpus, char *err,
		    size_t errlen)
{
	char path[4096], ks[4200];
	struct stat st;
	struct gev *v = NULL;
	size_t n = 0;
	int ret;

	memset(g, 0, sizeof(*g));
	snprintf(path, sizeof(path), "%s/guest/perf.data", dir);
	g->dir = stat(path, &st) == 0 ? malloc(strlen(dir) + 7) : strdup(dir);
	if (!g->dir)
		return -VMPT_ERR_NOMEM;
	if (stat(path, &st) == 0)
		sprintf(g->dir, "%s/guest", dir);
	for (unsigned i = 0; i < n_vcpus && i < SYNTH_MAX_VCPUS; i++)
		g->offset[i] = offsets[i];
	g->n_cpus = n_vcpus;
	snprintf(path, sizeof(path), "%s/kcore_dir/kcore", g->dir);
	snprintf(ks, sizeof(ks), "%s/kcore_dir/kallsyms", g->dir);
	ret = synth_image_load_kcore(&g->kernel, path, ks, err, errlen);
	if (ret)
		return ret;
	g->k_syscall = synth_image_symbol(&g->kernel, "entry_SYSCALL_64", NULL);
	g->k_sysret = synth_image_symbol(&g->kernel, "syscall_return_via_sysret", NULL);
	if (!g->k_syscall) {
		snprintf(err, errlen, "%s: no entry_SYSCALL_64 in the guest kernel", ks);
		return -VMPT_ERR_FORMAT;
	}
	snprintf(path, sizeof(path), "%s/perf.data", g->dir);
	ret = read_events(g, path, &v, &n, err, errlen);
	if (!ret) {
		ret = build(g, v, n);
		if (ret)
			snprintf(err, errlen, "%s: %s", path, vmpt_strerror(ret));
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
	return ret;
}

void synth_grec_close(struct synth_grec *g)
{
	for (size_t i = 0; i < g->n_tasks; i++) {
		free(g->tasks[i]->comms);
		free(g->tasks[i]->ustack.v);
		free(g->tasks[i]->kstack.v);
		free(g->tasks[i]);
	}
	for (size_t i = 0; i < g->n_maps; i++) {
		free(g->maps[i].path);
		if (g->maps[i].img) {
			synth_image_free(g->maps[i].img);
			free(g->maps[i].img);
		}
		synth_insn_cache_free(g->maps[i].cache);
	}
	for (unsigned i = 0; i < SYNTH_MAX_VCPUS; i++)
		free(g->slices[i]);
	free(g->tasks);
	free(g->maps);
	free(g->maps_pid);
	synth_image_free(&g->kernel);
	free(g->dir);
	memset(g, 0, sizeof(*g));
}

const struct gslice *synth_grec_slice(const struct synth_grec *g, unsigned n,
				      uint64_t t, const struct gslice **next)
{
	*next = NULL;
	if (n >= g->n_cpus)
		return NULL;
	for (size_t i = 0; i < g->n_slices[n]; i++) {
		const struct gslice *s = &g->slices[n][i];

		if (t < s->from) {
			*next = s;
			return NULL;
		}
		if (t < s->to) {
			*next = i + 1 < g->n_slices[n] ? s + 1 : NULL;
			return s;
		}
	}
	return NULL;
}

/* A guest path beneath the guest directory: "[vdso]" is its vdso file,
 * an absolute path is under root/; nothing with "." or ".." components. */
static int guest_file(const struct synth_grec *g, const char *name, char *out,
		      size_t len)
{
	struct stat st;

	if (!strcmp(name, "[vdso]")) {
		snprintf(out, len, "%s/vdso", g->dir);
	} else {
		if (name[0] != '/' || strstr(name, "/./") || strstr(name, "/../") ||
		    (strlen(name) >= 3 && !strcmp(name + strlen(name) - 3, "/..")) ||
		    (strlen(name) >= 2 && !strcmp(name + strlen(name) - 2, "/.")))
			return -1;
		snprintf(out, len, "%s/root%s", g->dir, name);
	}
	return stat(out, &st) == 0 && S_ISREG(st.st_mode) ? 0 : -1;
}

/* The mapping's code, loaded on first use (NULL: none to run). */
static struct gmap *map_code(struct synth_grec *g, struct gmap *m)
{
	char path[4096], err[512];

	if (!m->tried) {
		m->tried = 1;
		m->img = calloc(1, sizeof(*m->img));
		m->cache = synth_insn_cache_new();
		if (!m->img || !m->cache ||
		    guest_file(g, m->path, path, sizeof(path)) ||
		    synth_image_load_mapped(m->img, path, m->start, m->pgoff, err,
					    sizeof(err)) || !m->img->n_funcs) {
			if (m->img)
				synth_image_free(m->img);
			free(m->img);
			m->img = NULL;
		}
	}
	return m->img ? m : NULL;
}

/* The maps of pid valid at t, each in turn (*i from 0). */
static struct gmap *next_map(struct synth_grec *g, uint32_t pid, uint64_t t,
			     size_t *i)
{
	for (; *i < g->n_maps; (*i)++) {
		struct gmap *m = &g->maps[*i];

		if (g->maps_pid[*i] == pid && m->from <= t && t < m->to) {
			(*i)++;
			return m;
		}
	}
	return NULL;
}

static struct gmap *map_at(struct synth_grec *g, const struct gtask *task,
			   uint64_t t, uint64_t ip)
{
	struct gmap *m;
	size_t i = 0;

	while ((m = next_map(g, task->pid, t, &i)))
		if (ip >= m->start && ip - m->start < m->len)
			return map_code(g, m);
	return NULL;
}

const struct synth_insn *synth_grec_insn(struct synth_grec *g,
					 const struct gtask *task, uint64_t t,
					 uint64_t ip)
{
	struct gmap *m = map_at(g, task, t, ip);

	return m ? synth_insn_get(m->cache, m->img, ip) : NULL;
}

const uint8_t *synth_grec_code(struct synth_grec *g, const struct gtask *task,
			       uint64_t t, uint64_t ip, size_t *avail)
{
	struct gmap *m = map_at(g, task, t, ip);

	return m ? synth_image_code(m->img, ip, avail) : NULL;
}

uint64_t synth_grec_random_func(struct synth_grec *g, const struct gtask *task,
				uint64_t t, uint64_t ip, uint64_t rnd)
{
	struct gmap *m = ip ? map_at(g, task, t, ip) : NULL, *pick[64];
	size_t i = 0, n = 0;

	/* half the time the same binary, else any binary mapped (libraries) */
	if (!m || (rnd >> 40) & 1) {
		while (n < 64 && (m = next_map(g, task->pid, t, &i)))
			if (map_code(g, m))
				pick[n++] = m;
		if (!n)
			return 0;
		m = pick[(rnd >> 20) % n];
	}
	return m->img->funcs[rnd % m->img->n_funcs];
}

uint64_t synth_grec_cr3(const struct synth_grec *g, const struct gtask *task,
			uint64_t t)
{
	size_t i = 0;

	if (!next_map((struct synth_grec *)g, task->pid, t, &i))
		return GUEST_KERNEL_CR3;
	return GUEST_CR3_BASE + (uint64_t)task->pid * 0x4000;
}

static const char *comm_at(const struct gtask *t, uint64_t tsc)
{
	const char *c = NULL;

	for (size_t i = 0; i < t->n_comms; i++)
		if (t->comms[i].from <= tsc || !c)
			c = t->comms[i].comm;
	return c ? c : "[unknown]";
}

void synth_grec_truth(struct synth_grec *g, FILE *f, const struct cpu *c,
		      uint64_t ip)
{
	uint64_t t = c->pt->tsc;
	const struct synth_sym *sym = NULL;
	const char *dso = "[unknown]";

	if (c->ctx == CTX_KERNEL) {
		sym = synth_image_sym_at(c->cfg->kernel, ip);
		fprintf(f, "%llx\t%llu\t%u\thost\t%u\t%d\tCPU %u/KVM\t[kernel.kallsyms]\t%s\n",
			(unsigned long long)ip, (unsigned long long)t, c->vcpu,
			c->cfg->pid, (int)c->truth->tid, c->vcpu,
			sym ? sym->name : "[unknown]");
		return;
	}
	if (c->ctx == CTX_GUEST) {
		sym = synth_image_sym_at(&g->kernel, ip);
		dso = "[guest.kernel.kallsyms]";
	} else {
		struct gmap *m = map_at(g, c->gtask, t, ip);

		if (m) {
			sym = synth_image_sym_at(m->img, ip);
			dso = m->path;
		}
	}
	fprintf(f, "%llx\t%llu\t%u\tguest\t%u\t%u\t%s\t%s\t%s\n",
		(unsigned long long)ip, (unsigned long long)t, c->vcpu,
		c->gtask->pid, c->gtask->tid, comm_at(c->gtask, t), dso,
		sym ? sym->name : "[unknown]");
}

/* Guest recording: the task the guest CPU runs now enters, where it was
 * (or, the first time, at a function of its code: user space when it has
 * any). */
void synth_grec_enter(struct cpu *c, struct synth_vcpu *v)
{
	struct synth_grec *g = c->cfg->grec;
	struct gtask *t = c->slice->task;

	if (!t->started) {
		uint64_t f = synth_grec_random_func(g, t, c->pt->tsc, 0, synth_rnd(c));

		t->started = 1;
		t->user = f != 0;
		t->ip = f ? f : g->kernel.funcs[synth_rnd(c) % g->kernel.n_funcs];
	}
	c->gtask = t;
	v->guest_ip = t->ip;
	v->guest_cr3 = synth_grec_cr3(g, t, c->pt->tsc);
	c->kernel_exit_at = t->kexit_at;
}

/* In guest user space only CPUID exits: HLT, port I/O and MSR accesses
 * fault there (#GP), which the guest kernel handles. */
int synth_grec_user_cpuid(struct cpu *c)
{
	size_t avail = 0;
	const uint8_t *b = synth_grec_code(c->cfg->grec, c->gtask, c->pt->tsc,
					   c->ip, &avail);

	return b && avail >= 2 && b[0] == 0x0f && b[1] == 0xa2;
}

/* Guest recording, before a VM entry: the task the guest CPU runs now, or
 * none (idle, or its slice had its share of guest instructions: the host
 * does not run the vCPU for the rest of it), and then the vCPU thread
 * sleeps until the next slice begins (forever when none does).
 */
int synth_grec_wait(struct cpu *c)
{
	const struct gslice *next, *s;

	s = synth_grec_slice(c->cfg->grec, c->vcpu, c->pt->tsc, &next);
	if (s && s == c->slice && c->slice_used >= c->slice_budget)
		s = NULL;
	if (s) {
		if (s != c->slice) {
			c->slice = s;
			c->slice_used = 0;
			c->slice_budget = synth_rnd_period(c, c->cfg->grec->slice_insns);
		}
		return 0;
	}
	c->block_until = next ? next->from : UINT64_MAX;
	return 1;
}

/* Regular files and directories of src into dst (created). */
static int copy_tree(const char *src, const char *dst, char *err, size_t errlen)
{
	DIR *d = opendir(src);
	struct dirent *de;
	int ret = 0;

	if (!d || (mkdir(dst, 0755) && errno != EEXIST)) {
		snprintf(err, errlen, "%s: %s", d ? dst : src, strerror(errno));
		if (d)
			closedir(d);
		return -VMPT_ERR_IO;
	}
	while (!ret && (de = readdir(d))) {
		char s[4096], t[4096];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(s, sizeof(s), "%s/%s", src, de->d_name);
		snprintf(t, sizeof(t), "%s/%s", dst, de->d_name);
		if (lstat(s, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			ret = copy_tree(s, t, err, errlen);
		} else if (S_ISREG(st.st_mode)) {
			int in = open(s, O_RDONLY), out = in < 0 ? -1 :
				open(t, O_WRONLY | O_CREAT | O_TRUNC, st.st_mode & 0777);
			char buf[65536];
			ssize_t r = 0;

			while (out >= 0 && (r = read(in, buf, sizeof(buf))) > 0)
				if (write(out, buf, (size_t)r) != r)
					r = -1;
			if (in < 0 || out < 0 || r < 0 || close(out)) {
				snprintf(err, errlen, "%s: %s", t, strerror(errno));
				ret = -VMPT_ERR_IO;
			}
			if (in >= 0)
				close(in);
		}
	}
	closedir(d);
	return ret;
}

int synth_grec_copy(const struct synth_grec *g, const char *dst, char *err,
		    size_t errlen)
{
	return copy_tree(g->dir, dst, err, errlen);
}
