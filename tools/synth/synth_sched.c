/* SPDX-License-Identifier: MIT */
/* The machine around the walk.  Either one traced thread writing one
 * trace buffer (a program, or the VMM of the VM scenario running all its
 * vCPUs), or, with vCPU threads, a VMM process whose vCPUs are threads,
 * as QEMU runs them: each enters KVM_RUN from its own thread, and the
 * threads are scheduled on host CPUs.  Recorded per thread (a buffer per
 * thread, TraceEn 0 while it is off its CPU) or per CPU (a buffer per CPU,
 * with cpu-wide context switch records).
 *
 * The CPUs run concurrently: the simulation always advances the CPU whose
 * clock is earliest by one time slice of a thread (the thread's KVM_RUN
 * calls until it is preempted in the VMM), so a thread never runs on two
 * CPUs at once.  The scheduler, the idle loop and the VMM's user space are
 * outside the model: nothing of them is traced.
 */
#include "synth_guest.h"
#include "synth_walk.h"
#include "vmpt/error.h"

#include <stdlib.h>
#include <string.h>

#define SYNTH_MAX_CPUS 64

/* Mean untraced ticks in the VMM between KVM_RUN calls of a slice, and at
 * either end of a slice (a context switch lies between them). */
#define VMM_TIME 5000
#define SWITCH_TIME 2500

struct thr {
	struct cpu c;
	struct synth_stream *s;	/* per thread: its buffer */
	uint64_t ready_at;	/* off its last CPU from then on */
	int last_cpu;		/* -1: has not run yet */
};

struct machine {
	struct synth_walk_config *cfg;
	struct synth_out *out;
	struct synth_stats *st;
	struct thr thr[SYNTH_MAX_VCPUS];
	unsigned n_thr;
	struct hcpu hc[SYNTH_MAX_CPUS];
	uint64_t clock[SYNTH_MAX_CPUS];
	int32_t on_cpu[SYNTH_MAX_CPUS];	/* tid, 0 idle */
	struct synth_insn_cache *cache_user, *cache_kernel, *cache_guest;
	struct synth_insn_cache *cache_exec;
	struct synth_host host;
	uint64_t rng;
	int oom;
};

static int check_image(struct synth_image *img, const char *what, char *err,
		       size_t errlen)
{
	if (img && img->n_funcs)
		return 0;
	snprintf(err, errlen, "no %s code to walk", what);
	return -VMPT_ERR_INVAL;
}

static int check_config(struct synth_walk_config *cfg, char *err,
			size_t errlen)
{
	int ret;

	if (!cfg->vm) {
		if ((ret = check_image(cfg->user, "user", err, errlen)))
			return ret;
		if (cfg->exec && (ret = check_image(cfg->exec, "exec", err, errlen)))
			return ret;
		if (cfg->libc && !synth_image_symbol(cfg->libc, "execve", NULL)) {
			snprintf(err, errlen, "%s: no execve symbol", cfg->libc->path);
			return -VMPT_ERR_INVAL;
		}
		if (cfg->trace_kernel &&
		    (!synth_image_symbol(cfg->kernel, "entry_SYSCALL_64", NULL) ||
		     !synth_image_symbol(cfg->kernel, "asm_common_interrupt", NULL))) {
			snprintf(err, errlen, "%s: no entry_SYSCALL_64 and "
				 "asm_common_interrupt symbols", cfg->kernel->path);
			return -VMPT_ERR_INVAL;
		}
		return 0;
	}
	if ((ret = check_image(cfg->kernel, "host kernel", err, errlen)) ||
	    (ret = check_image(cfg->guest, "guest", err, errlen)))
		return ret;
	if (!synth_image_symbol(cfg->kernel, "entry_SYSCALL_64", NULL) ||
	    !synth_image_symbol(cfg->kernel, "vmx_vmexit", NULL)) {
		snprintf(err, errlen, "%s: no entry_SYSCALL_64/vmx_vmexit "
			 "symbols (not a VMM model)", cfg->kernel->path);
		return -VMPT_ERR_INVAL;
	}
	for (unsigned i = 0; i < cfg->n_vcpus; i++)
		cfg->vcpus[i].guest_ip = cfg->guest_start ?
			cfg->guest_start : cfg->guest->entry;
	return 0;
}

static int machine_init(struct machine *m, char *err, size_t errlen)
{
	struct synth_walk_config *cfg = m->cfg;
	int ret;

	m->rng = cfg->seed * 0x9e3779b97f4a7c15ull + 0x1234567;
	if (!m->rng)
		m->rng = 1;
	m->cache_user = synth_insn_cache_new();
	m->cache_kernel = synth_insn_cache_new();
	m->cache_guest = synth_insn_cache_new();
	if (!m->cache_user || !m->cache_kernel || !m->cache_guest)
		return -VMPT_ERR_NOMEM;
	if (cfg->exec && !(m->cache_exec = synth_insn_cache_new()))
		return -VMPT_ERR_NOMEM;
	if ((ret = check_config(cfg, err, errlen)))
		return ret;
	if (cfg->vm && (ret = synth_host_init(&m->host, cfg->kernel, err, errlen)))
		return ret;
	if (cfg->vm && cfg->guest == cfg->user) {
		synth_insn_cache_free(m->cache_guest);
		m->cache_guest = m->cache_user;
	}
	return 0;
}

static void machine_fini(struct machine *m)
{
	if (m->cache_guest != m->cache_user)
		synth_insn_cache_free(m->cache_guest);
	synth_insn_cache_free(m->cache_user);
	synth_insn_cache_free(m->cache_kernel);
	synth_insn_cache_free(m->cache_exec);
	for (unsigned t = 0; t < SYNTH_MAX_VCPUS; t++) {
		struct cpu *c = &m->thr[t].c;

		free(c->ustack.v);
		free(c->kstack.v);
		for (unsigned i = 0; i < SYNTH_MAX_VCPUS; i++)
			free(c->gstack[i].v);
	}
}

static void cpu_init(struct machine *m, struct cpu *c,
		     struct synth_truth *truth)
{
	c->cfg = m->cfg;
	c->truth = truth;
	c->st = m->st;
	c->rng = &m->rng;
	c->cache_user = m->cache_user;
	c->cache_kernel = m->cache_kernel;
	c->cache_guest = m->cache_guest;
	c->cache_exec = m->cache_exec;
	c->host = &m->host;
	c->block_start = 1;
}

static void stream_init(struct synth_stream *s, const struct synth_pt_config *ptc,
			uint64_t tsc0, int32_t tid, int32_t cpu,
			const struct synth_walk_config *cfg)
{
	memset(s, 0, sizeof(*s));
	synth_pt_init(&s->pt, ptc, tsc0);
	s->tid = tid;
	s->cpu = cpu;
	if (cfg->vm) {
		s->pt.vmx = 1;
		s->pt.os = 1;
		s->pt.cr3 = cfg->kernel_cr3;
	} else {
		/* a process CR3 for PSB+'s PIP when the kernel is traced */
		s->pt.os = cfg->trace_kernel;
		s->pt.cr3 = cfg->trace_kernel ? cfg->kernel_cr3 : 0;
	}
}

static int alloc_streams(struct synth_out *out, size_t n)
{
	out->streams = calloc(n, sizeof(*out->streams));
	if (!out->streams)
		return -VMPT_ERR_NOMEM;
	out->n_streams = n;
	return 0;
}

void synth_out_free(struct synth_out *out)
{
	for (size_t i = 0; i < out->n_streams; i++)
		synth_pt_fini(&out->streams[i].pt);
	free(out->streams);
	free(out->switches);
	synth_snapshots_free(&out->snap);
	memset(out, 0, sizeof(*out));
}

static int budget_left(const struct machine *m, const struct cpu *c)
{
	/* an emulated PTWRITE is walked to its end: perf reports one
	 * without all of its bits as broken */
	return (m->st->branches < m->cfg->max_branches || synth_cpu_in_eptw(c)) &&
	       !c->oom &&
	       !(c->pt && c->pt->oom);
}

/* perf record -S takes a snapshot: it disables the event (TraceEn 1 -> 0:
 * FUP and TIP.PGD if packets were on), copies the AUX area, and enables it
 * again (TSC, TMA, CBR, then MODE.Exec and TIP.PGE).  The traced thread is
 * held meanwhile: it resumes where it stopped.
 */
static int snapshot(struct machine *m, struct cpu *c)
{
	int was_on = c->pt->packet_en, ret;

	if (was_on)
		synth_cpu_disable(c);
	synth_pt_flush_tnt(c->pt);
	ret = synth_snapshot_take(&m->out->snap, c->pt, c->truth->n_insn,
				  c->truth->n_branch);
	synth_pt_resume(c->pt, c->pt->tsc + synth_rnd_period(c, 3000), 0);
	if (was_on)
		synth_cpu_enable(c, 0);
	return ret;
}

/* One traced thread, one buffer: the walk as it always was. */
static int run_single(struct machine *m, struct cpu *c, char *err,
		      size_t errlen)
{
	uint64_t next_snap = m->cfg->snapshot_every;
	int ret;

	struct synth_walk_config *cfg = m->cfg;
	struct synth_vcpu *v0 = &cfg->vcpus[0];

	if (cfg->vm) {
		c->ctx = CTX_KERNEL;
		c->ip = synth_image_symbol(cfg->kernel, "entry_SYSCALL_64", NULL);
		c->pt->vmcs = v0->vmcs;
		c->pt->tsc_offset = v0->tsc_offset;
		c->pt->tsc_mult = v0->tsc_mult;
	} else {
		c->ctx = CTX_USER;
		c->ip = cfg->start ? cfg->start : cfg->user->entry;
	}
	if (cfg->irq_period)
		c->next_irq = synth_rnd_period(c, cfg->irq_period);
	/* Tracing is switched on before the traced code runs: PSB+ without
	 * FUP, then TIP.PGE where it starts. */
	c->s->started = 1;
	synth_pt_maybe_psb(c->pt, c->ip);
	if (synth_cpu_in_filter(c, c->ip))
		synth_cpu_enable(c, 0);
	while (budget_left(m, c)) {
		if (next_snap && m->st->insns >= next_snap && !synth_cpu_losing(c)) {
			if ((ret = snapshot(m, c)))
				return ret;
			next_snap += m->cfg->snapshot_every;
		}
		synth_cpu_step(c);
	}
	if (synth_cpu_losing(c))
		synth_cpu_overflow_end(c);
	if (cfg->exec && !c->execed) {
		snprintf(err, errlen, "no exec: the walk made no system call "
			 "between branch %llu and the last",
			 (unsigned long long)cfg->exec_after);
		return -VMPT_ERR_INVAL;
	}
	return 0;
}

static int add_switch(struct machine *m, unsigned k, int32_t next)
{
	struct synth_out *out = m->out;
	struct synth_switch *sw;

	if (m->on_cpu[k] == next)
		return 0;
	if (out->n_switches == out->cap_switches) {
		size_t ncap = out->cap_switches ? out->cap_switches * 2 : 256;

		sw = realloc(out->switches, ncap * sizeof(*sw));
		if (!sw)
			return -VMPT_ERR_NOMEM;
		out->switches = sw;
		out->cap_switches = ncap;
	}
	sw = &out->switches[out->n_switches++];
	sw->tsc = m->clock[k];
	sw->cpu = (int32_t)k;
	sw->prev_tid = m->on_cpu[k];
	sw->next_tid = next;
	m->on_cpu[k] = next;
	m->st->switches++;
	return 0;
}

/* The CPU whose clock is earliest runs next. */
static unsigned earliest_cpu(const struct machine *m)
{
	unsigned k = 0;

	for (unsigned i = 1; i < m->cfg->n_cpus; i++)
		if (m->clock[i] < m->clock[k])
			k = i;
	return k;
}

/* A thread that is off every CPU at CPU k's time, chosen at random; else
 * -1 and *wake the earliest time one is. */
static int pick_thread(struct machine *m, unsigned k, uint64_t *wake)
{
	unsigned ready[SYNTH_MAX_VCPUS], n = 0;

	*wake = UINT64_MAX;
	for (unsigned t = 0; t < m->n_thr; t++) {
		if (m->thr[t].ready_at <= m->clock[k])
			ready[n++] = t;
		else if (m->thr[t].ready_at < *wake)
			*wake = m->thr[t].ready_at;
	}
	if (!n)
		return -1;
	return (int)ready[synth_rnd(&m->thr[0].c) % n];
}

/* CPU k has nothing to run until wake: the idle task (untraced). */
static int idle(struct machine *m, unsigned k, uint64_t wake)
{
	int ret = add_switch(m, k, 0);

	if (!m->cfg->per_thread)
		synth_pt_idle(&m->out->streams[k].pt, wake - m->clock[k]);
	m->clock[k] = wake;
	return ret;
}

/* Thread t moves to CPU k: KVM clears its VMCS on the old CPU, so the next
 * entry is a VMLAUNCH after VMPTRLD on the new one. */
static void migrate(struct machine *m, struct thr *t, unsigned k)
{
	struct synth_vcpu *v = &m->cfg->vcpus[t->c.vcpu];

	if (t->last_cpu >= 0 && (unsigned)t->last_cpu != k) {
		if (m->hc[t->last_cpu].loaded_vmcs == v->vmcs)
			m->hc[t->last_cpu].loaded_vmcs = 0;
		v->launched = 0;
		m->st->migrations++;
	}
	t->last_cpu = (int)k;
}

/* A time slice of thread t on CPU k: it is in the VMM (preempted there),
 * calls KVM_RUN until it has made entries_per_vcpu VM entries, and is
 * preempted in the VMM again. */
static void run_slice(struct machine *m, struct thr *t, unsigned k)
{
	struct synth_walk_config *cfg = m->cfg;
	struct cpu *c = &t->c;

	c->s = cfg->per_thread ? t->s : &m->out->streams[k];
	c->pt = &c->s->pt;
	c->hcpu = &m->hc[k];
	c->truth->tid = (int32_t)(cfg->pid + 1 + c->vcpu);
	c->truth->cpu = (int32_t)k;
	migrate(m, t, k);
	if (cfg->per_thread) {
		/* TraceEn 0 -> 1: the thread's event is scheduled in */
		c->pt->vmcs = m->hc[k].loaded_vmcs;
		synth_pt_resume(c->pt, m->clock[k], !c->s->started);
		c->s->started = 1;
	}
	while (budget_left(m, c)) {
		synth_cpu_untraced(c, c->entries_on_vcpu ? VMM_TIME : SWITCH_TIME);
		c->in_user = 0;
		synth_cpu_syscall_entry(c);
		while (!c->in_user && budget_left(m, c))
			synth_cpu_step(c);
		if (c->entries_on_vcpu >= cfg->entries_per_vcpu) {
			c->entries_on_vcpu = 0;
			break;
		}
	}
	if (budget_left(m, c))
		synth_cpu_untraced(c, SWITCH_TIME);
	/* a lost window ends before the thread leaves its CPU */
	if (synth_cpu_losing(c))
		synth_cpu_overflow_end(c);
	synth_pt_flush_tnt(c->pt);
	m->clock[k] = c->pt->tsc;
	t->ready_at = c->pt->tsc;
}

static int run_threads(struct machine *m, const struct synth_pt_config *ptc,
		       uint64_t tsc0, struct synth_truth *truth)
{
	struct synth_walk_config *cfg = m->cfg;
	struct synth_out *out = m->out;
	struct cpu *last = &m->thr[0].c;
	int ret;

	m->n_thr = cfg->n_vcpus;
	ret = alloc_streams(out, cfg->per_thread ? m->n_thr : cfg->n_cpus);
	if (ret)
		return ret;
	for (unsigned i = 0; i < out->n_streams; i++)
		stream_init(&out->streams[i], ptc, tsc0,
			    cfg->per_thread ? (int32_t)(cfg->pid + 1 + i) : -1,
			    cfg->per_thread ? -1 : (int32_t)i, cfg);
	for (unsigned i = 0; i < m->n_thr; i++) {
		struct thr *t = &m->thr[i];

		cpu_init(m, &t->c, truth);
		t->c.vcpu = i;
		t->s = cfg->per_thread ? &out->streams[i] : NULL;
		t->ready_at = tsc0;
		t->last_cpu = -1;
	}
	for (unsigned k = 0; k < cfg->n_cpus; k++) {
		m->clock[k] = tsc0;
		if (!cfg->per_thread) {
			/* each CPU's trace starts with PSB+, no FUP */
			out->streams[k].started = 1;
			synth_pt_maybe_psb(&out->streams[k].pt, 0);
		}
	}
	while (budget_left(m, last)) {
		unsigned k = earliest_cpu(m);
		uint64_t wake;
		int t = pick_thread(m, k, &wake);

		if (t < 0) {
			if ((ret = idle(m, k, wake)))
				return ret;
			continue;
		}
		last = &m->thr[t].c;
		if ((ret = add_switch(m, k, (int32_t)(cfg->pid + 1 + (unsigned)t))))
			return ret;
		run_slice(m, &m->thr[t], k);
	}
	if (last->oom || (last->pt && last->pt->oom))
		return -VMPT_ERR_NOMEM;
	/* The end: an event takes the running thread away from traced code. */
	if (last->pt && last->pt->packet_en)
		synth_cpu_disable(last);
	return 0;
}

/* A real guest recording as the guest (synth_guest.c): vCPU n runs what
 * guest CPU n ran, and each vCPU thread has a host CPU of its own.  A
 * thread sleeps (its event scheduled out: TraceEn 0) while its guest CPU
 * is idle or the host does not run it; KVM_RUN never returns to the VMM.
 */
static int run_grec(struct machine *m, const struct synth_pt_config *ptc,
		    uint64_t tsc0, struct synth_truth *truth)
{
	struct synth_walk_config *cfg = m->cfg;
	struct synth_out *out = m->out;
	uint64_t entry = synth_image_symbol(cfg->kernel, "entry_SYSCALL_64", NULL);
	int ret, done[SYNTH_MAX_VCPUS] = { 0 };

	m->n_thr = cfg->n_vcpus;
	ret = alloc_streams(out, m->n_thr);
	if (ret)
		return ret;
	for (unsigned i = 0; i < m->n_thr; i++) {
		struct thr *t = &m->thr[i];
		const struct gslice *next, *s;

		stream_init(&out->streams[i], ptc, tsc0,
			    (int32_t)(cfg->pid + 1 + i), -1, cfg);
		cpu_init(m, &t->c, truth);
		t->c.vcpu = i;
		t->c.s = &out->streams[i];
		t->c.pt = &t->c.s->pt;
		t->c.hcpu = &m->hc[i];
		/* inside KVM_RUN from the first slice of its guest CPU on */
		t->c.ctx = CTX_KERNEL;
		t->c.ip = entry;
		s = synth_grec_slice(cfg->grec, i, tsc0, &next);
		s = s ? s : next;
		m->clock[i] = s && s->from > tsc0 ? s->from : tsc0;
		done[i] = !s;
	}
	for (;;) {
		unsigned k = m->n_thr;
		struct cpu *c;

		for (unsigned i = 0; i < m->n_thr; i++)
			if (!done[i] && (k == m->n_thr || m->clock[i] < m->clock[k]))
				k = i;
		if (k == m->n_thr)
			break;
		c = &m->thr[k].c;
		truth->tid = (int32_t)(cfg->pid + 1 + k);
		truth->cpu = (int32_t)k;
		/* scheduled in: TraceEn 0 -> 1 */
		synth_pt_resume(c->pt, m->clock[k], !c->s->started);
		c->s->started = 1;
		synth_cpu_enable(c, 0);
		while (!c->block_until && budget_left(m, c))
			synth_cpu_step(c);
		if (c->oom || c->pt->oom)
			return -VMPT_ERR_NOMEM;
		/* scheduled out (or the recording ends): TraceEn 1 -> 0 */
		if (c->pt->packet_en)
			synth_cpu_disable(c);
		synth_pt_flush_tnt(c->pt);
		if (!budget_left(m, c))
			break;
		done[k] = c->block_until == UINT64_MAX;
		m->clock[k] = c->block_until > c->pt->tsc ? c->block_until : c->pt->tsc;
		c->block_until = 0;
	}
	return 0;
}

int synth_walk(struct synth_walk_config *cfg, const struct synth_pt_config *ptc,
	       uint64_t tsc0, struct synth_out *out, struct synth_truth *truth,
	       struct synth_stats *st, char *err, size_t errlen)
{
	struct machine *m = calloc(1, sizeof(*m));
	int ret;

	memset(st, 0, sizeof(*st));
	memset(out, 0, sizeof(*out));
	if (!m)
		return -VMPT_ERR_NOMEM;
	m->cfg = cfg;
	m->out = out;
	m->st = st;
	ret = machine_init(m, err, errlen);
	if (!ret && cfg->grec) {
		truth->threaded = 1;
		ret = run_grec(m, ptc, tsc0, truth);
	} else if (!ret && cfg->threads) {
		truth->threaded = 1;
		ret = run_threads(m, ptc, tsc0, truth);
	} else if (!ret) {
		struct cpu *c = &m->thr[0].c;

		ret = alloc_streams(out, 1);
		if (!ret) {
			stream_init(&out->streams[0], ptc, tsc0,
				    (int32_t)cfg->pid, -1, cfg);
			cpu_init(m, c, truth);
			c->s = &out->streams[0];
			c->pt = &c->s->pt;
			if (cfg->snapshot_size) {
				out->snap.aux_size = cfg->snapshot_size;
				out->snap.every = cfg->snapshot_every;
				c->pt->lines = &truth->n_insn;
				c->pt->blines = &truth->n_branch;
			}
			ret = run_single(m, c, err, errlen);
			if (!ret && (c->oom || c->pt->oom))
				ret = -VMPT_ERR_NOMEM;
			else if (!ret && c->pt->packet_en)
				/* The end: an event takes the CPU away from
				 * the traced code. */
				synth_cpu_disable(c);
		}
	}
	for (size_t i = 0; !ret && i < out->n_streams; i++) {
		struct synth_pt *pt = &out->streams[i].pt;

		synth_pt_flush_tnt(pt);
		st->psbs += pt->psb_count;
		if (pt->tsc > out->tsc_end)
			out->tsc_end = pt->tsc;
		if (pt->oom)
			ret = -VMPT_ERR_NOMEM;
	}
	if (!ret && cfg->vm)
		synth_vmx_finish(cfg, truth);
	/* perf record -S: a last snapshot when recording ends */
	if (!ret && cfg->snapshot_size)
		ret = synth_snapshot_take(&out->snap, &out->streams[0].pt,
					  truth->n_insn, truth->n_branch);
	machine_fini(m);
	free(m);
	return ret;
}
