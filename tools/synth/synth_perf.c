/* SPDX-License-Identifier: MIT */
/* Write a synthesized trace as perf record would have: an intel_pt event
 * and its dummy sideband event, AUXTRACE_INFO with the trace unit's
 * settings, TIME_CONV, the process's COMM/MMAP2 (and an exec's; the host
 * kernel's MMAP for the VM scenario), ITRACE_START, AUX and one AUXTRACE
 * buffer (per-thread mode).  With vCPU threads: the VMM process and its threads
 * (COMM, FORK, COMM "CPU n/KVM"), a buffer per thread (perf record
 * --per-thread) or per CPU (perf record -a, with cpu-wide context switch
 * records).
 */
#include "synth_guest.h"
#include "synth_perf.h"
#include "vmpt/error.h"
#include "vmpt/packet.h"
#include "vmpt/perf_data.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ID_PT 1
#define ID_SIDEBAND 2
/* vCPU threads: buffer i's events */
#define ID_PT_BASE 100
#define ID_SB_BASE 200

/* intel_pt format terms (sysfs .../intel_pt/format). */
#define CFG_PT (1ull << 0)
#define CFG_CYC (1ull << 1)
#define CFG_PWR_EVT (1ull << 4)
#define CFG_FUP_ON_PTW (1ull << 5)
#define CFG_MTC (1ull << 9)
#define CFG_TSC (1ull << 10)
#define CFG_NORETCOMP (1ull << 11)
#define CFG_PTW (1ull << 12)
#define CFG_BRANCH (1ull << 13)
#define CFG_MTC_PERIOD_SHIFT 14
#define CFG_CYC_THRESH_SHIFT 19
#define CFG_PSB_PERIOD_SHIFT 24
#define CFG_EVENT (1ull << 31)

static uint64_t pt_config(const struct synth_pt_config *c)
{
	uint64_t cfg = CFG_PT | CFG_BRANCH;
	unsigned code = 0;

	if (c->tsc)
		cfg |= CFG_TSC;
	if (!c->retcomp)
		cfg |= CFG_NORETCOMP;
	if (c->mtc)
		cfg |= CFG_MTC | ((uint64_t)c->mtc_freq << CFG_MTC_PERIOD_SHIFT);
	if (c->cyc)
		cfg |= CFG_CYC | ((uint64_t)c->cyc_thresh << CFG_CYC_THRESH_SHIFT);
	if (c->pwr_evt)
		cfg |= CFG_PWR_EVT;
	if (c->ptw)
		cfg |= CFG_PTW | (c->fup_on_ptw ? CFG_FUP_ON_PTW : 0);
	if (c->event)
		cfg |= CFG_EVENT;
	/* psb_period=N means 2^(N+11) bytes */
	while (code < 15 && (2048u << code) < c->psb_period)
		code++;
	return cfg | ((uint64_t)code << CFG_PSB_PERIOD_SHIFT);
}

static void time_conv(const struct synth_pt_config *c,
		      struct vmpt_perf_time_conv *tc)
{
	memset(tc, 0, sizeof(*tc));
	tc->time_shift = SYNTH_PERF_TIME_SHIFT;
	/* ns per tick = 10 / cbr (TSC runs at cbr * 100 MHz) */
	tc->time_mult = (10ull << SYNTH_PERF_TIME_SHIFT) / c->cbr;
	tc->time_zero = 0;
	tc->time_mask = UINT64_MAX;
	tc->cap_user_time_zero = 1;
	tc->cap_user_time_short = 0;
	tc->extended = 1;
}

static uint64_t tsc_to_ns(const struct vmpt_perf_time_conv *tc, uint64_t tsc)
{
	uint64_t quot = tsc >> tc->time_shift;
	uint64_t rem = tsc & ((1ull << tc->time_shift) - 1);

	return tc->time_zero + quot * tc->time_mult +
	       ((rem * tc->time_mult) >> tc->time_shift);
}

static void sid(struct vmpt_perf_event *ev, const struct synth_perf_params *pp,
		uint64_t time, uint64_t id)
{
	ev->sid.present = 1;
	ev->sid.pid = pp->pid;
	ev->sid.tid = pp->pid;
	ev->sid.time = time;
	ev->sid.id = id;
	ev->sid.cpu = 0;
}

static int write_mmaps(struct vmpt_perf_writer *pw,
		       const struct synth_perf_params *pp,
		       const struct synth_image *img, uint64_t time, uint64_t id)
{
	for (size_t i = 0; i < img->n_segs; i++) {
		struct vmpt_perf_event ev;
		const struct synth_seg *s = &img->segs[i];
		int ret;

		memset(&ev, 0, sizeof(ev));
		ev.type = PERF_RECORD_MMAP2;
		ev.misc = PERF_RECORD_MISC_USER;
		ev.mmap.pid = pp->pid;
		ev.mmap.tid = pp->pid;
		/* perf maps whole pages: the segment's page and file page. */
		ev.mmap.start = s->vaddr & ~0xfffull;
		ev.mmap.len = ((s->vaddr + s->size + 0xfff) & ~0xfffull) -
			      ev.mmap.start;
		ev.mmap.pgoff = s->file_offset & ~0xfffull;
		ev.mmap.prot = 5;	/* PROT_READ | PROT_EXEC */
		ev.mmap.flags = 2;	/* MAP_PRIVATE */
		ev.mmap.filename = img->path;
		sid(&ev, pp, time, id);
		if ((ret = vmpt_perf_write_record(pw, &ev)))
			return ret;
	}
	return 0;
}

/* An exec as perf record sees it (--exec): while the kernel runs the
 * execve, the COMM with PERF_RECORD_MISC_COMM_EXEC naming the new program
 * (the kernel's comm: its file name, 15 characters at most), then the new
 * program's mappings.  Nothing unmaps the old program's: perf's MMAP2 of
 * the new one replaces what it overlaps, and libc stays.
 */
static int write_exec(struct vmpt_perf_writer *pw,
		      const struct synth_perf_params *pp,
		      const struct synth_walk_config *w,
		      const struct vmpt_perf_time_conv *tc)
{
	uint64_t from = tsc_to_ns(tc, w->exec_syscall_tsc);
	uint64_t to = tsc_to_ns(tc, w->exec_start_tsc);
	const char *name = strrchr(w->exec->path, '/');
	struct vmpt_perf_event ev;
	char comm[16];
	int ret;

	snprintf(comm, sizeof(comm), "%s", name ? name + 1 : w->exec->path);
	memset(&ev, 0, sizeof(ev));
	ev.type = PERF_RECORD_COMM;
	ev.misc = PERF_RECORD_MISC_COMM_EXEC;
	ev.comm.pid = pp->pid;
	ev.comm.tid = pp->pid;
	ev.comm.comm = comm;
	sid(&ev, pp, from + (to - from) / 4, ID_SIDEBAND);
	if ((ret = vmpt_perf_write_record(pw, &ev)))
		return ret;
	return write_mmaps(pw, pp, w->exec, from + (to - from) / 2, ID_SIDEBAND);
}

/* The host kernel's text, or (guest) the default guest machine's (pid 0,
 * as `perf kvm record` writes it; perf script finds the code with
 * --guestvmlinux).
 */
static int write_kernel_mmap(struct vmpt_perf_writer *pw,
			     const struct synth_perf_params *pp,
			     const struct synth_image *k, uint64_t time,
			     int guest, uint64_t id)
{
	struct vmpt_perf_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = PERF_RECORD_MMAP;
	ev.misc = guest ? PERF_RECORD_MISC_GUEST_KERNEL : PERF_RECORD_MISC_KERNEL;
	ev.mmap.pid = guest ? 0 : UINT32_MAX;
	ev.mmap.tid = 0;
	ev.mmap.start = k->lo;
	ev.mmap.len = k->hi - k->lo;
	ev.mmap.pgoff = k->lo;
	ev.mmap.filename = guest ? "[guest.kernel.kallsyms]_text" :
				   "[kernel.kallsyms]_text";
	sid(&ev, pp, time, id);
	ev.sid.pid = guest ? 0 : UINT32_MAX;
	ev.sid.tid = guest ? 0 : UINT32_MAX;
	return vmpt_perf_write_record(pw, &ev);
}

/* The VMM process and its vCPU threads, as perf record synthesizes an
 * existing process: COMM (exec) of the process, then FORK and COMM of
 * each thread, all with time 0 (perf delivers such records as it reads
 * them, before anything it orders by time).
 */
static int write_threads(struct vmpt_perf_writer *pw,
			 const struct synth_perf_params *pp,
			 const struct synth_walk_config *w, uint64_t time)
{
	struct vmpt_perf_event ev;
	char comm[32];
	int ret;

	memset(&ev, 0, sizeof(ev));
	ev.type = PERF_RECORD_COMM;
	ev.misc = PERF_RECORD_MISC_COMM_EXEC;
	ev.comm.pid = pp->pid;
	ev.comm.tid = pp->pid;
	ev.comm.comm = SYNTH_VMM_COMM;
	sid(&ev, pp, time, ID_SB_BASE);
	if ((ret = vmpt_perf_write_record(pw, &ev)))
		return ret;
	for (unsigned i = 0; i < w->n_vcpus; i++) {
		uint32_t tid = pp->pid + 1 + i;

		memset(&ev, 0, sizeof(ev));
		ev.type = PERF_RECORD_FORK;
		ev.fork.pid = ev.fork.ppid = pp->pid;
		ev.fork.tid = tid;
		ev.fork.ptid = pp->pid;
		sid(&ev, pp, time, ID_SB_BASE);
		ev.sid.tid = tid;
		if ((ret = vmpt_perf_write_record(pw, &ev)))
			return ret;
		/* QEMU names its vCPU threads so (-name debug-threads=on) */
		snprintf(comm, sizeof(comm), "CPU %u/KVM", i);
		memset(&ev, 0, sizeof(ev));
		ev.type = PERF_RECORD_COMM;
		ev.comm.pid = pp->pid;
		ev.comm.tid = tid;
		ev.comm.comm = comm;
		sid(&ev, pp, time, ID_SB_BASE);
		ev.sid.tid = tid;
		if ((ret = vmpt_perf_write_record(pw, &ev)))
			return ret;
	}
	return 0;
}

static int cmp_switch(const void *a, const void *b)
{
	const struct synth_switch *x = a, *y = b;

	if (x->tsc != y->tsc)
		return x->tsc < y->tsc ? -1 : 1;
	return x->cpu - y->cpu;
}

/* A context switch as perf record -a has it: the switch out of prev
 * (preempted, unless it is the idle task) naming next, then the switch
 * into next naming prev, both on the CPU with its sample_id.
 */
static int write_switch(struct vmpt_perf_writer *pw,
			const struct synth_perf_params *pp,
			const struct vmpt_perf_time_conv *tc,
			const struct synth_switch *sw)
{
	struct vmpt_perf_event ev;
	uint64_t t = tsc_to_ns(tc, sw->tsc);
	uint32_t prev_pid = sw->prev_tid ? pp->pid : 0;
	uint32_t next_pid = sw->next_tid ? pp->pid : 0;
	int ret;

	memset(&ev, 0, sizeof(ev));
	ev.type = PERF_RECORD_SWITCH_CPU_WIDE;
	ev.sw.out = 1;
	ev.sw.preempt = sw->prev_tid != 0;
	ev.sw.next_prev_pid = next_pid;
	ev.sw.next_prev_tid = (uint32_t)sw->next_tid;
	sid(&ev, pp, t, ID_SB_BASE + (uint64_t)sw->cpu);
	ev.sid.pid = prev_pid;
	ev.sid.tid = (uint32_t)sw->prev_tid;
	ev.sid.cpu = (uint32_t)sw->cpu;
	if ((ret = vmpt_perf_write_record(pw, &ev)))
		return ret;
	memset(&ev, 0, sizeof(ev));
	ev.type = PERF_RECORD_SWITCH_CPU_WIDE;
	ev.sw.next_prev_pid = prev_pid;
	ev.sw.next_prev_tid = (uint32_t)sw->prev_tid;
	sid(&ev, pp, t + 1, ID_SB_BASE + (uint64_t)sw->cpu);
	ev.sid.pid = next_pid;
	ev.sid.tid = (uint32_t)sw->next_tid;
	ev.sid.cpu = (uint32_t)sw->cpu;
	return vmpt_perf_write_record(pw, &ev);
}

/* Buffer i's ITRACE_START, AUX record and AUXTRACE data, with its events'
 * ids: per thread the thread's, per CPU the CPU's (starting on the idle
 * task: the switch records say who runs).
 */
static int write_itrace_start(struct vmpt_perf_writer *pw,
			      const struct synth_perf_params *pp,
			      const struct synth_stream *s, size_t i,
			      uint64_t time)
{
	struct vmpt_perf_event ev;
	uint32_t tid = s->cpu >= 0 ? 0 : (uint32_t)s->tid;

	memset(&ev, 0, sizeof(ev));
	ev.type = PERF_RECORD_ITRACE_START;
	ev.itrace_start.pid = tid ? pp->pid : 0;
	ev.itrace_start.tid = tid;
	sid(&ev, pp, time, ID_PT_BASE + i);
	ev.sid.pid = ev.itrace_start.pid;
	ev.sid.tid = tid;
	ev.sid.cpu = s->cpu >= 0 ? (uint32_t)s->cpu : 0;
	return vmpt_perf_write_record(pw, &ev);
}

static int write_aux(struct vmpt_perf_writer *pw,
		     const struct synth_perf_params *pp,
		     const struct synth_stream *s, size_t i, uint64_t time)
{
	struct vmpt_perf_event ev;
	uint32_t tid = s->cpu >= 0 ? 0 : (uint32_t)s->tid;

	memset(&ev, 0, sizeof(ev));
	ev.type = PERF_RECORD_AUX;
	ev.aux.aux_size = s->pt.len;
	sid(&ev, pp, time, ID_PT_BASE + i);
	ev.sid.pid = tid ? pp->pid : 0;
	ev.sid.tid = tid;
	ev.sid.cpu = s->cpu >= 0 ? (uint32_t)s->cpu : 0;
	return vmpt_perf_write_record(pw, &ev);
}

static int write_attrs(struct vmpt_perf_writer *pw,
		       const struct synth_pt_config *cfg,
		       const struct synth_walk_config *w, size_t n)
{
	struct perf_event_attr attr;
	uint64_t *ids = calloc(2 * n, sizeof(*ids));
	/* the rest of the environment comes from this machine */
	struct vmpt_perf_env env = {
		.pmu_mappings = "intel_pt=10,software=1,tracepoint=2,breakpoint=5",
		.clockid = -1,
	};
	int ret;

	if (!ids)
		return -VMPT_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		ids[i] = n > 1 || w->threads ? ID_PT_BASE + i : ID_PT;
		ids[n + i] = n > 1 || w->threads ? ID_SB_BASE + i : ID_SIDEBAND;
	}
	vmpt_perf_intel_pt_attr(&attr, SYNTH_PERF_PMU_TYPE, pt_config(cfg));
	attr.exclude_kernel = !w->trace_kernel;
	attr.exclude_user = !w->trace_user;
	attr.exclude_guest = !w->vm;
	attr.exclude_hv = 1;
	ret = vmpt_perf_writer_add_attr(pw, &attr, w->vm ? (w->trace_user ?
					"intel_pt//" : "intel_pt//k") :
					"intel_pt//u", ids, n);
	if (!ret)
		ret = vmpt_perf_writer_set_env(pw, &env);
	vmpt_perf_sideband_attr(&attr);
	attr.exclude_kernel = !w->trace_kernel;
	attr.exclude_user = !w->trace_user;
	if (!ret)
		ret = vmpt_perf_writer_add_attr(pw, &attr, w->vm ? (w->trace_user ?
						"dummy" : "dummy:k") :
						"dummy:u", ids + n, n);
	free(ids);
	return ret;
}

static int write_header_records(struct vmpt_perf_writer *pw,
				const struct synth_pt_config *cfg,
				const struct synth_walk_config *w,
				const struct synth_out *out,
				const struct vmpt_perf_time_conv *tc)
{
	size_t n = out->n_streams;
	struct vmpt_perf_id_entry *ids = calloc(2 * n, sizeof(*ids));
	struct vmpt_perf_intel_pt_info info;
	char filter[4200];
	int ret;

	if (!ids)
		return -VMPT_ERR_NOMEM;
	for (size_t i = 0; i < 2 * n; i++) {
		const struct synth_stream *s = &out->streams[i % n];
		int sb = i >= n;

		if (w->threads)
			ids[i].id = (sb ? ID_SB_BASE : ID_PT_BASE) + i % n;
		else
			ids[i].id = sb ? ID_SIDEBAND : ID_PT;
		ids[i].idx = i % n;
		ids[i].cpu = s->cpu >= 0 ? (uint64_t)s->cpu : UINT64_MAX;
		ids[i].tid = s->cpu >= 0 ? UINT64_MAX : (uint64_t)s->tid;
		ids[i].machine_pid = -1;
		ids[i].vcpu = -1;
	}
	vmpt_perf_intel_pt_info_init(&info, SYNTH_PERF_PMU_TYPE, tc,
				     cfg->tsc_ctc_n, cfg->tsc_ctc_d, cfg->cbr,
				     w->threads && !w->per_thread);
	/* perf takes the thread from the AUXTRACE buffer only when
	 * have_sched_switch is 0 (per thread); per CPU from the cpu-wide
	 * context switch records (3). */
	info.priv[VMPT_INTEL_PT_HAVE_SCHED_SWITCH] =
		w->threads && !w->per_thread ? 3 : 0;
	info.priv[VMPT_INTEL_PT_SNAPSHOT_MODE] = out->snap.aux_size != 0;
	if (w->filter_hi) {
		/* perf's address filter: START/SIZE@FILE, START in the
		 * file's own addresses (perf applies the load bias). */
		snprintf(filter, sizeof(filter), "filter 0x%llx/0x%llx@%s",
			 (unsigned long long)(w->filter_lo - w->user->base),
			 (unsigned long long)(w->filter_hi - w->filter_lo),
			 w->user->path);
		info.filter = filter;
	}
	if (!(ret = vmpt_perf_write_time_conv(pw, tc)) &&
	    !(ret = vmpt_perf_write_intel_pt_info(pw, &info)))
		ret = vmpt_perf_write_id_index(pw, ids, 2 * n);
	free(ids);
	return ret;
}

/* A trace as perf record writes it: one AUXTRACE buffer, or (aux_buffer)
 * buffers that continue one another, each of the first packets that
 * reach aux_buffer bytes (the AUX head moves with whole packets: the
 * hardware has flushed them when the kernel reads it), padded by the
 * writer.
 */
static int write_trace(struct vmpt_perf_writer *pw, const struct synth_perf_params *pp,
		       const uint8_t *data, size_t len, uint64_t reference, uint32_t idx,
		       uint32_t tid, uint32_t cpu)
{
	struct vmpt_pkt_decoder pd;
	struct vmpt_packet pkt;
	uint64_t from = 0;

	if (!pp->aux_buffer)
		return vmpt_perf_write_auxtrace(pw, data, len, 0, reference, idx, tid, cpu);
	vmpt_pkt_decoder_init(&pd, data, len);
	while (from < len) {
		uint64_t to = from;
		int ret;

		while (to < len && to - from < pp->aux_buffer) {
			if (vmpt_pkt_next(&pd, &pkt) < 0) {
				to = len;	/* no packets (--corrupt): the rest */
				break;
			}
			to = vmpt_pkt_offset(&pd);
		}
		ret = vmpt_perf_write_auxtrace(pw, data + from, to - from, from, reference,
					       idx, tid, cpu);
		if (ret)
			return ret;
		from = to;
	}
	return 0;
}

/* perf record -S: each snapshot as an AUX record (overwrite mode) and the
 * AUXTRACE buffer perf read, with the TSC of the read as reference.
 */
static int write_snapshots(struct vmpt_perf_writer *pw,
			   const struct synth_perf_params *pp,
			   const struct synth_snapshots *ss,
			   const struct vmpt_perf_time_conv *tc)
{
	for (size_t i = 0; i < ss->n; i++) {
		const struct synth_snapshot *sn = &ss->v[i];
		struct vmpt_perf_event ev;
		int ret;

		memset(&ev, 0, sizeof(ev));
		ev.type = PERF_RECORD_AUX;
		ev.aux.aux_offset = sn->head;
		ev.aux.aux_size = sn->size;
		ev.aux.flags = VMPT_PERF_AUX_OVERWRITE;
		sid(&ev, pp, tsc_to_ns(tc, sn->tsc), ID_PT);
		if ((ret = vmpt_perf_write_record(pw, &ev)) ||
		    (ret = vmpt_perf_write_auxtrace(pw, sn->data, sn->size,
						    sn->offset, sn->tsc + 1, 0,
						    pp->pid, UINT32_MAX)) ||
		    (ret = vmpt_perf_write_finished_round(pw)))
			return ret;
	}
	return 0;
}

/* One traced thread and one buffer. */
static int write_single(struct vmpt_perf_writer *pw,
			const struct synth_perf_params *pp,
			const struct synth_walk_config *w,
			const struct synth_out *out,
			const struct vmpt_perf_time_conv *tc, uint64_t t0)
{
	const struct synth_pt *pt = &out->streams[0].pt;
	uint64_t t_end = tsc_to_ns(tc, pt->tsc);
	const struct synth_image *prog = w->vm ? (pp->guest_code ? w->user : NULL)
					       : w->user;
	struct vmpt_perf_event ev;
	int ret;

	memset(&ev, 0, sizeof(ev));
	ev.type = PERF_RECORD_COMM;
	ev.misc = PERF_RECORD_MISC_COMM_EXEC;
	ev.comm.pid = pp->pid;
	ev.comm.tid = pp->pid;
	ev.comm.comm = "synth";
	sid(&ev, pp, t0 - 2000, ID_SIDEBAND);
	if ((ret = vmpt_perf_write_record(pw, &ev)))
		return ret;
	if (prog && (ret = write_mmaps(pw, pp, prog, t0 - 1500, ID_SIDEBAND)))
		return ret;
	if (w->libc && (ret = write_mmaps(pw, pp, w->libc, t0 - 1500, ID_SIDEBAND)))
		return ret;
	if (w->kernel && (ret = write_kernel_mmap(pw, pp, w->kernel, t0 - 1500,
						  0, ID_SIDEBAND)))
		return ret;
	if (w->vm && w->guest != w->user &&
	    (ret = write_kernel_mmap(pw, pp, w->guest, t0 - 1500, 1,
				     ID_SIDEBAND)))
		return ret;

	memset(&ev, 0, sizeof(ev));
	ev.type = PERF_RECORD_ITRACE_START;
	ev.itrace_start.pid = pp->pid;
	ev.itrace_start.tid = pp->pid;
	sid(&ev, pp, t0 - 1000, ID_PT);
	if ((ret = vmpt_perf_write_record(pw, &ev)) ||
	    (w->exec && (ret = write_exec(pw, pp, w, tc))) ||
	    (ret = vmpt_perf_write_finished_round(pw)))
		return ret;
	if (out->snap.aux_size)
		return write_snapshots(pw, pp, &out->snap, tc);

	memset(&ev, 0, sizeof(ev));
	ev.type = PERF_RECORD_AUX;
	ev.aux.aux_offset = 0;
	ev.aux.aux_size = pt->len;
	sid(&ev, pp, t_end + 1000, ID_PT);
	if ((ret = vmpt_perf_write_record(pw, &ev)) ||
	    /* The reference is the TSC when perf read the buffer: after
	     * its last packet (perf's VM time correlation relies on it). */
	    (ret = write_trace(pw, pp, pt->buf, pt->len, pt->tsc + 1, 0, pp->pid,
			       UINT32_MAX)))
		return ret;
	return vmpt_perf_write_finished_round(pw);
}

/* The VMM's vCPU threads: a buffer per thread or per CPU.  The AUXTRACE
 * data goes before the round ends, so perf has it queued when it
 * delivers the switch records of that round.
 */
static int write_threaded(struct vmpt_perf_writer *pw,
			  const struct synth_perf_params *pp,
			  const struct synth_walk_config *w,
			  struct synth_out *out,
			  const struct vmpt_perf_time_conv *tc, uint64_t t0)
{
	static const struct perf_event_header finished_init = {
		.type = VMPT_PERF_RECORD_FINISHED_INIT,
		.size = sizeof(struct perf_event_header),
	};
	int ret;

	if ((ret = write_threads(pw, pp, w, 0)) ||
	    (w->kernel &&
	     (ret = write_kernel_mmap(pw, pp, w->kernel, t0 - 1500, 0,
				      ID_SB_BASE))) ||
	    (pp->guest_code &&
	     (ret = write_mmaps(pw, pp, w->user, t0 - 1500, ID_SB_BASE))) ||
	    (w->guest != w->user &&
	     (ret = write_kernel_mmap(pw, pp, w->guest, t0 - 1500, 1,
				      ID_SB_BASE))))
		return ret;
	for (size_t i = 0; i < out->n_streams; i++)
		if ((ret = write_itrace_start(pw, pp, &out->streams[i], i,
					      t0 - 1000)))
			return ret;
	/* perf record: the synthesized state is complete (perf inject
	 * --guest-data sets up the guest's events there) */
	if ((ret = vmpt_perf_write_event(pw, &finished_init)))
		return ret;
	if (out->n_switches)
		qsort(out->switches, out->n_switches, sizeof(*out->switches),
		      cmp_switch);
	for (size_t i = 0; !w->per_thread && i < out->n_switches; i++)
		if ((ret = write_switch(pw, pp, tc, &out->switches[i])))
			return ret;
	for (size_t i = 0; i < out->n_streams; i++) {
		const struct synth_stream *s = &out->streams[i];

		if (!s->pt.len)
			continue;
		if ((ret = write_aux(pw, pp, s, i,
				     tsc_to_ns(tc, s->pt.tsc) + 1000)) ||
		    (ret = write_trace(pw, pp, s->pt.buf, s->pt.len, s->pt.tsc + 1,
				       (uint32_t)i, (uint32_t)s->tid, (uint32_t)s->cpu)))
			return ret;
	}
	return vmpt_perf_write_finished_round(pw);
}

/* perf record --kcore: the host kernel's text as kcore_dir/kcore (the
 * model's ELF), its kallsyms and an empty module list. */
static int write_kcore_dir(struct vmpt_perf_writer *pw,
			   const struct synth_image *k, char *err, size_t errlen)
{
	const char *dir = vmpt_perf_writer_kcore_dir(pw);
	char path[4096], buf[65536];
	FILE *in, *out;
	size_t n;
	int ret = 0;

	if (!dir) {
		snprintf(err, errlen, "kcore_dir: %s", strerror(errno));
		return -VMPT_ERR_IO;
	}
	snprintf(path, sizeof(path), "%s/kcore", dir);
	in = fopen(k->path, "rb");
	out = fopen(path, "wb");
	while (in && out && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			ret = -1;
	if (!in || !out || ferror(in))
		ret = -1;
	if (in)
		fclose(in);
	if ((out && fclose(out)) || ret)
		goto fail;
	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	out = fopen(path, "w");
	for (size_t i = 0; out && i < k->n_syms; i++)
		fprintf(out, "%016llx T %s\n", (unsigned long long)k->syms[i].addr,
			k->syms[i].name);
	if (!out || fclose(out))
		goto fail;
	snprintf(path, sizeof(path), "%s/modules", dir);
	out = fopen(path, "w");
	if (!out || fclose(out))
		goto fail;
	return 0;
fail:
	snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : EIO));
	return -VMPT_ERR_IO;
}

int synth_perf_write(const char *path, const struct synth_perf_params *pp,
		     const struct synth_pt_config *cfg,
		     const struct synth_walk_config *w,
		     struct synth_out *out, char *err, size_t errlen)
{
	struct vmpt_perf_writer *pw;
	struct vmpt_perf_time_conv tc;
	uint64_t t0;
	int ret;

	struct vmpt_perf_writer_opts opts = { .dir = pp->grec != NULL };

	time_conv(cfg, &tc);
	if (pp->time_mult) {
		tc.time_mult = pp->time_mult;
		tc.time_shift = pp->time_shift;
	}
	t0 = tsc_to_ns(&tc, pp->tsc0);
	ret = vmpt_perf_writer_open(&pw, path, &opts);
	if (ret) {
		snprintf(err, errlen, "%s: %s", path, vmpt_strerror(ret));
		return ret;
	}
	ret = write_attrs(pw, cfg, w, out->n_streams);
	if (!ret)
		ret = write_header_records(pw, cfg, w, out, &tc);
	if (!ret && pp->grec) {
		char gdir[4096];

		ret = write_kcore_dir(pw, w->kernel, err, errlen);
		snprintf(gdir, sizeof(gdir), "%s/guest", path);
		if (!ret)
			ret = synth_grec_copy(pp->grec, gdir, err, errlen);
		if (ret) {
			vmpt_perf_writer_close(pw);
			return ret;
		}
	}
	if (!ret && w->threads)
		ret = write_threaded(pw, pp, w, out, &tc, t0);
	else if (!ret)
		ret = write_single(pw, pp, w, out, &tc, t0);
	if (ret) {
		snprintf(err, errlen, "%s: %s", path, vmpt_strerror(ret));
		vmpt_perf_writer_close(pw);
		return ret;
	}
	ret = vmpt_perf_writer_close(pw);
	if (ret)
		snprintf(err, errlen, "%s: %s", path, vmpt_strerror(ret));
	return ret;
}
