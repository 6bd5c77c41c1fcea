/* SPDX-License-Identifier: MIT */
/* Who runs on each vCPU, and with which mappings: see
 * include/vmpt/guest_tasks.h.
 *
 * Reading keeps guest perf times; vmpt_guest_tasks_place turns them into
 * host perf times per vCPU and sorts: switches by vCPU then time, COMMs by
 * thread then time (a fork's child named as its parent was, as perf
 * does), each process's execs by time.
 */
#include "vmpt_guest_tasks_int.h"
#include "vmpt/error.h"
#include "vmpt/guest_merge.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RECORD_KSYMBOL 17		/* perf_event.h of Linux 5.1+ */
#define KSYMBOL_TYPE_BPF 1

int gt_fail(struct vmpt_guest_tasks *gt, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(gt->err, gt->errlen, fmt, ap);
	va_end(ap);
	return -err;
}

static int push(void **arr, size_t *n, size_t size, const void *val)
{
	/* Powers of two: grow when n reaches one. */
	if (!(*n & (*n - 1)) && (*n >= 16 || *n == 0)) {
		void *p = realloc(*arr, (*n ? 2 * *n : 16) * size);

		if (!p)
			return -VMPT_ERR_NOMEM;
		*arr = p;
	}
	memcpy((char *)*arr + *n * size, val, size);
	(*n)++;
	return 0;
}

#define PUSH(gt, arr, n, val) push((void **)&(gt)->arr, &(gt)->n, sizeof(*(gt)->arr), (val))

static struct gt_proc *find_proc(const struct vmpt_guest_tasks *gt, int pid)
{
	size_t lo = 0, hi = gt->n_procs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (gt->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < gt->n_procs && gt->procs[lo].pid == pid ? &gt->procs[lo] : NULL;
}

/* The process, added (kept sorted) when new.  NULL: no memory. */
static struct gt_proc *get_proc(struct vmpt_guest_tasks *gt, int pid)
{
	struct gt_proc *p = find_proc(gt, pid), np = { .pid = pid, .parent = -1 };
	size_t at = 0;

	if (p)
		return p;
	if (PUSH(gt, procs, n_procs, &np) < 0)
		return NULL;
	while (at < gt->n_procs - 1 && gt->procs[at].pid < pid)
		at++;
	memmove(&gt->procs[at + 1], &gt->procs[at], (gt->n_procs - 1 - at) * sizeof(*gt->procs));
	gt->procs[at] = np;
	return &gt->procs[at];
}

static int sid_int(uint32_t v)
{
	return v == UINT32_MAX ? -1 : (int)v;
}

/* The guest CPU a record was written on: its sample id's, else its
 * event id's in the ID_INDEX; -1 unknown.
 */
static int record_cpu(const struct vmpt_guest_tasks *gt, const struct vmpt_perf_event *ev)
{
	if (ev->sid.present & PERF_SAMPLE_CPU)
		return sid_int(ev->sid.cpu);
	for (size_t i = 0; i < gt->n_ids; i++)
		if (gt->ids[i].id == ev->sid.id)
			return gt->ids[i].cpu;
	return -1;
}

static int id_index(struct vmpt_guest_tasks *gt, const struct vmpt_perf_event *ev)
{
	int ret = gt_check_id_index(gt, ev);

	for (uint64_t i = 0; ret == 0 && i < ev->id_index.nr; i++) {
		struct vmpt_perf_id_entry e;
		struct { uint64_t id; int cpu; } v;

		vmpt_perf_id_index_entry(ev, i, &e);
		v.id = e.id;
		v.cpu = (int)e.cpu;
		ret = PUSH(gt, ids, n_ids, &v);
	}
	return ret;
}

/* The exec'th address space of pid a mapping at guest time t (file order
 * seq) belongs to: the execs before it.
 */
static unsigned exec_count(const struct gt_proc *p, uint64_t t, uint64_t seq)
{
	unsigned n = 0;

	for (size_t i = 0; i < p->n_gexecs; i++)
		if (p->gexecs[i].gtime < t || (p->gexecs[i].gtime == t && p->gexecs[i].seq < seq))
			n++;
	return n;
}

static int mapping(struct vmpt_guest_tasks *gt, const struct vmpt_perf_event *ev,
		   uint64_t seq)
{
	unsigned cpumode = ev->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	int pid = sid_int(ev->mmap.pid);
	struct vmpt_guest_map m = {
		.pid = pid, .start = ev->mmap.start, .len = ev->mmap.len,
		.pgoff = ev->mmap.pgoff, .name = ev->mmap.filename, .offset = ev->offset,
	};
	uint64_t t = ev->sid.present & PERF_SAMPLE_TIME ? ev->sid.time : 0;
	unsigned exec;
	struct gt_proc *p;

	/* Code only; the kernel's maps (pid -1, kernel mode) are kcore_dir's. */
	if (ev->type == PERF_RECORD_MMAP2 && !(ev->mmap.prot & 4))
		return 0;
	if (pid <= 0 || cpumode == PERF_RECORD_MISC_KERNEL)
		return 0;
	p = get_proc(gt, pid);
	if (!p)
		return -VMPT_ERR_NOMEM;
	exec = exec_count(p, t, seq);
	m.space = vmpt_guest_space(pid, exec);
	if (exec < 64)
		p->maps_in |= 1ull << exec;
	gt->st.maps++;
	return PUSH(gt, maps, n_maps, &m);
}

/* One guest record: switches, names, forks, execs, mappings. */
static int guest_record(struct vmpt_guest_tasks *gt, const struct vmpt_perf_event *ev,
			uint64_t seq)
{
	struct gt_rec r = { .r.seq = seq, .r.ptid = -1 };
	int cpu = record_cpu(gt, ev);

	r.gtime = ev->sid.present & PERF_SAMPLE_TIME ? ev->sid.time : 0;
	r.r.cpu = cpu;
	if (cpu >= 0 && (unsigned)cpu + 1 > gt->guest_cpus) {
		gt->guest_cpus = (unsigned)cpu + 1;
		gt->cpu_offset = ev->offset;
	}
	switch (ev->type) {
	case PERF_RECORD_SWITCH:
		if (!gt->per_thread_switch)
			gt->per_thread_switch = ev->offset;
		return 0;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (cpu < 0)
			return 0;
		if (ev->sw.out) {
			/* Switching out names the task coming in. */
			r.r.pid = sid_int(ev->sw.next_prev_pid);
			r.r.tid = sid_int(ev->sw.next_prev_tid);
		} else {
			r.r.pid = sid_int(ev->sid.pid);
			r.r.tid = sid_int(ev->sid.tid);
		}
		gt->st.switches++;
		return PUSH(gt, switches, n_switches, &r);
	case PERF_RECORD_COMM:
		r.r.pid = sid_int(ev->comm.pid);
		r.r.tid = sid_int(ev->comm.tid);
		r.r.comm = ev->comm.comm;
		r.exec = !!(ev->misc & PERF_RECORD_MISC_COMM_EXEC);
		gt->st.comms++;
		if (r.exec && r.r.tid == r.r.pid) {
			struct gt_proc *p = get_proc(gt, r.r.pid);
			void *e;

			if (!p)
				return -VMPT_ERR_NOMEM;
			e = realloc(p->gexecs, (p->n_gexecs + 1) * sizeof(*p->gexecs));
			if (!e)
				return -VMPT_ERR_NOMEM;
			p->gexecs = e;
			p->gexecs[p->n_gexecs].gtime = r.gtime;
			p->gexecs[p->n_gexecs++].seq = seq;
		}
		return PUSH(gt, comms, n_comms, &r);
	case PERF_RECORD_FORK: {
		struct gt_proc *p;

		r.r.pid = sid_int(ev->fork.pid);
		r.r.tid = sid_int(ev->fork.tid);
		r.r.ptid = sid_int(ev->fork.ptid);
		if (ev->fork.pid != ev->fork.ppid) {
			p = get_proc(gt, r.r.pid);
			if (!p)
				return -VMPT_ERR_NOMEM;
			p->parent = sid_int(ev->fork.ppid);
		}
		return PUSH(gt, forks, n_forks, &r);
	}
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return mapping(gt, ev, seq);
	case RECORD_KSYMBOL:
		/* addr, len, ksym_type: a JIT-compiled BPF program */
		if (ev->size >= 8 + 14 &&
		    (ev->raw[8 + 12] | ev->raw[8 + 13] << 8) == KSYMBOL_TYPE_BPF)
			gt->st.bpf_ksymbols++;
		return 0;
	default:
		return 0;
	}
}

static int read_guest(struct vmpt_guest_tasks *gt)
{
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	uint64_t seq = 0;
	int ret;

	/* The ID_INDEX first: records may come before it. */
	vmpt_perf_cursor_init(&gt->guest, &cur);
	while ((ret = vmpt_perf_next(&gt->guest, &cur, &ev)) > 0) {
		if (ev.type == VMPT_PERF_RECORD_ID_INDEX && (ret = id_index(gt, &ev)) < 0)
			return ret;
		if (ev.type == VMPT_PERF_RECORD_TIME_CONV && !gt->guest_tc_offset) {
			gt->guest_tc = ev.time_conv;
			gt->guest_tc_offset = ev.offset;
		}
	}
	if (ret < 0)
		goto bad;
	vmpt_perf_cursor_init(&gt->guest, &cur);
	while ((ret = vmpt_perf_next(&gt->guest, &cur, &ev)) > 0) {
		gt->st.records++;
		/* Mappings need the execs before them: COMMs first. */
		if (ev.type == PERF_RECORD_MMAP || ev.type == PERF_RECORD_MMAP2)
			continue;
		if ((ret = guest_record(gt, &ev, ++seq)) < 0)
			return ret;
	}
	if (ret < 0)
		goto bad;
	seq = 0;
	vmpt_perf_cursor_init(&gt->guest, &cur);
	while ((ret = vmpt_perf_next(&gt->guest, &cur, &ev)) > 0) {
		seq++;
		if ((ev.type == PERF_RECORD_MMAP || ev.type == PERF_RECORD_MMAP2) &&
		    (ret = guest_record(gt, &ev, seq)) < 0)
			return ret;
	}
	if (ret == 0)
		return 0;
bad:
	return gt_fail(gt, -ret, "%s", gt->guest.errmsg[0] ? gt->guest.errmsg : vmpt_strerror(ret));
}

/* The vCPU map beside the host recording (REC.vcpus, REC/vcpus), or
 * QEMU's thread names: the process whose threads are "CPU n/...".
 */
static int find_vcpus(struct vmpt_guest_tasks *gt)
{
	const struct vmpt_perf_data *pd = gt->cfg->host_pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	char map[4096 + 8];
	struct stat st;
	int ret, pid = -1;

	vmpt_perf_cursor_init((struct vmpt_perf_data *)pd, &cur);
	/* The process of the first thread named "CPU n/...": QEMU. */
	while (pid < 0 && (ret = vmpt_perf_next((struct vmpt_perf_data *)pd, &cur, &ev)) > 0)
		if (ev.type == PERF_RECORD_COMM && !strncmp(ev.comm.comm, "CPU ", 4) &&
		    strchr(ev.comm.comm, '/'))
			pid = sid_int(ev.comm.pid);
	snprintf(map, sizeof(map), stat(gt->cfg->host, &st) == 0 && S_ISDIR(st.st_mode) ?
		 "%s/vcpus" : "%s.vcpus", gt->cfg->host);
	if (stat(map, &st) == 0) {
		vmpt_guest_vcpus_init(&gt->vcpus, pid < 0 ? 0 : (uint32_t)pid);
		ret = vmpt_guest_vcpus_read_map(&gt->vcpus, map, gt->err, gt->errlen);
		if (ret < 0)
			return ret;
		/* The process of the map's threads, from the host's COMMs. */
		vmpt_perf_cursor_init((struct vmpt_perf_data *)pd, &cur);
		while (pid < 0 && gt->vcpus.nr &&
		       (ret = vmpt_perf_next((struct vmpt_perf_data *)pd, &cur, &ev)) > 0)
			if ((ev.type == PERF_RECORD_COMM &&
			     vmpt_guest_vcpus_of_tid(&gt->vcpus, ev.comm.tid) >= 0))
				pid = sid_int(ev.comm.pid);
		gt->machine_pid = pid;
		return 0;
	}
	gt->machine_pid = pid;
	vmpt_guest_vcpus_init(&gt->vcpus, pid < 0 ? 0 : (uint32_t)pid);
	vmpt_perf_cursor_init((struct vmpt_perf_data *)pd, &cur);
	while ((ret = vmpt_perf_next((struct vmpt_perf_data *)pd, &cur, &ev)) > 0)
		if (ev.type == PERF_RECORD_COMM &&
		    (ret = vmpt_guest_vcpus_comm(&gt->vcpus, &ev, pd->path, gt->err,
						 gt->errlen)) < 0)
			return ret;
	return ret < 0 ? gt_fail(gt, -ret, "%s", pd->errmsg) : 0;
}

int vmpt_guest_tasks_open(struct vmpt_guest_tasks **out,
			  const struct vmpt_guest_tasks_config *cfg, char *err, size_t errlen)
{
	struct vmpt_guest_tasks *gt = calloc(1, sizeof(*gt));
	int ret;

	*out = gt;
	if (!gt) {
		snprintf(err, errlen, "out of memory");
		return -VMPT_ERR_NOMEM;
	}
	gt->cfg = cfg;
	gt->err = err;
	gt->errlen = errlen;
	gt->machine_pid = -1;
	err[0] = 0;
	ret = vmpt_perf_open(&gt->guest, cfg->guest);
	if (ret < 0)
		return gt_fail(gt, -ret, "%s", gt->guest.errmsg);
	if (!(ret = gt_check_attrs(gt)) && !(ret = read_guest(gt)) &&
	    !(ret = gt_check_records(gt)) && !(ret = find_vcpus(gt)))
		ret = gt_check_vcpus(gt);
	if (ret == -VMPT_ERR_NOMEM && !err[0])
		snprintf(err, errlen, "out of memory");
	return ret;
}

void vmpt_guest_tasks_free(struct vmpt_guest_tasks *gt)
{
	if (!gt)
		return;
	for (size_t i = 0; i < gt->n_procs; i++) {
		free(gt->procs[i].execs);
		free(gt->procs[i].gexecs);
	}
	free(gt->procs);
	free(gt->switches);
	free(gt->comms);
	free(gt->forks);
	free(gt->maps);
	free(gt->ids);
	vmpt_guest_vcpus_free(&gt->vcpus);
	vmpt_perf_close(&gt->guest);
	free(gt);
}

int vmpt_guest_tasks_machine_pid(const struct vmpt_guest_tasks *gt)
{
	return gt->machine_pid;
}

unsigned vmpt_guest_tasks_nr_vcpus(const struct vmpt_guest_tasks *gt)
{
	return gt->vcpus.nr;
}

const char *vmpt_guest_tasks_vcpu_source(const struct vmpt_guest_tasks *gt)
{
	return gt->vcpus.source;
}

int vmpt_guest_tasks_vcpu_of_tid(const struct vmpt_guest_tasks *gt, int tid)
{
	return tid > 0 ? vmpt_guest_vcpus_of_tid(&gt->vcpus, (uint32_t)tid) : -1;
}

int vmpt_guest_tasks_tid_of_vcpu(const struct vmpt_guest_tasks *gt, unsigned vcpu)
{
	return vcpu < gt->vcpus.nr && gt->vcpus.v[vcpu].tid ? (int)gt->vcpus.v[vcpu].tid : -1;
}

int vmpt_guest_tasks_place(struct vmpt_guest_tasks *gt, const struct vmpt_tsc_scale *tsc,
			   size_t nr_tsc, const struct vmpt_perf_time_conv *host_tc)
{
	struct vmpt_guest_clock clock = {
		.guest = gt->guest_tc, .host = *host_tc, .tsc = tsc, .nr_tsc = nr_tsc,
	};
	struct gt_rec *sets[] = { gt->switches, gt->comms, gt->forks };
	size_t ns[] = { gt->n_switches, gt->n_comms, gt->n_forks };

	for (size_t k = 0; k < 3; k++)
		for (size_t i = 0; i < ns[k]; i++) {
			struct gt_rec *r = &sets[k][i];

			/* A vCPU without an offset of its own: no offset. */
			clock.nr_tsc = r->r.cpu >= 0 && (size_t)r->r.cpu < nr_tsc ? nr_tsc : 0;
			r->r.time = vmpt_guest_clock_host_time(&clock, r->r.cpu < 0 ? 0 :
							       (unsigned)r->r.cpu, r->gtime);
		}
	vmpt_task_recs_sort(gt->switches, gt->n_switches, sizeof(*gt->switches),
			    VMPT_TASK_BY_CPU);
	vmpt_task_recs_sort(gt->forks, gt->n_forks, sizeof(*gt->forks), VMPT_TASK_BY_TIME);
	vmpt_task_recs_sort(gt->comms, gt->n_comms, sizeof(*gt->comms), VMPT_TASK_BY_TID);
	for (size_t i = 0; i < gt->n_switches; i++) {
		uint64_t t = gt->switches[i].r.time;

		if (!t)
			continue;
		if (!gt->st.first || t < gt->st.first)
			gt->st.first = t;
		if (t > gt->st.last)
			gt->st.last = t;
	}
	for (size_t i = 0; i < gt->n_forks; i++) {
		const struct vmpt_task_rec *f = &gt->forks[i].r;
		struct gt_proc *p = find_proc(gt, f->pid);

		if (p && f->pid != f->ptid)
			p->fork_time = f->time;
	}
	for (size_t i = 0; i < gt->n_comms; i++) {
		const struct gt_rec *r = &gt->comms[i];
		struct gt_proc *p = r->exec && r->r.tid == r->r.pid ? find_proc(gt, r->r.pid) : NULL;
		uint64_t *e;

		if (!p)
			continue;
		e = realloc(p->execs, (p->n_execs + 1) * sizeof(*e));
		if (!e)
			return -VMPT_ERR_NOMEM;
		p->execs = e;
		p->execs[p->n_execs++] = r->r.time;
	}
	/* A forked thread is named as its parent was at the fork. */
	return vmpt_task_recs_inherit_comms((void **)&gt->comms, &gt->n_comms,
					    sizeof(*gt->comms), gt->forks, gt->n_forks);
}

/* The address space pid runs in at host time t: its own once it mapped
 * code since its last exec, before that its parent's at the fork.
 */
static uint64_t space_at(const struct vmpt_guest_tasks *gt, int pid, uint64_t t,
			 uint64_t *until)
{
	for (int depth = 0; depth < 64 && pid > 0; depth++) {
		const struct gt_proc *p = find_proc(gt, pid);
		unsigned exec = 0;

		if (!p)
			return 0;
		while (exec < p->n_execs && p->execs[exec] <= t)
			exec++;
		if (exec < p->n_execs && p->execs[exec] < *until)
			*until = p->execs[exec];
		if (exec < 64 && (p->maps_in >> exec & 1))
			return vmpt_guest_space(pid, exec);
		if (exec || p->parent <= 0)
			return 0;
		t = p->fork_time;
		pid = p->parent;
	}
	return 0;
}

void vmpt_guest_tasks_at(const struct vmpt_guest_tasks *gt, unsigned vcpu, uint64_t time,
			 struct vmpt_guest_task *t, uint64_t *until)
{
	const struct vmpt_task_rec *r;
	uint64_t until2;

	t->pid = t->tid = -1;
	t->comm = NULL;
	t->space = 0;
	r = vmpt_task_recs_at(gt->switches, gt->n_switches, sizeof(*gt->switches),
			      VMPT_TASK_BY_CPU, (int)vcpu, time, until);
	if (!r)
		return;
	t->pid = r->pid;
	t->tid = r->tid;
	r = vmpt_task_recs_at(gt->comms, gt->n_comms, sizeof(*gt->comms), VMPT_TASK_BY_TID,
			      t->tid, time, &until2);
	if (r)
		t->comm = r->comm;
	else if (t->tid == 0)
		t->comm = "swapper";	/* perf's name for the idle task */
	if (until2 < *until)
		*until = until2;
	t->space = space_at(gt, t->pid, time, until);
}

const struct vmpt_guest_map *vmpt_guest_tasks_maps(const struct vmpt_guest_tasks *gt,
						   size_t *n)
{
	*n = gt->n_maps;
	return gt->maps;
}

void vmpt_guest_tasks_stats(const struct vmpt_guest_tasks *gt,
			    struct vmpt_guest_tasks_stats *st)
{
	*st = gt->st;
}
