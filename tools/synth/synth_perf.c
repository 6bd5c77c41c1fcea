/* SPDX-License-Identifier: MIT */
/* Write a synthesized trace as perf record would have: an intel_pt event
 * and its dummy sideband event, AUXTRACE_INFO with the trace unit's
 * settings, TIME_CONV, the process's COMM/MMAP2 (and the host kernel's
 * MMAP for the VM scenario), ITRACE_START, AUX and one AUXTRACE buffer
 * (per-thread mode).
 */
#include "synth_perf.h"
#include "vmpt/error.h"
#include "vmpt/perf_data.h"

#include <string.h>

#define ID_PT 1
#define ID_SIDEBAND 2

/* intel_pt format terms (sysfs .../intel_pt/format). */
#define CFG_PT (1ull << 0)
#define CFG_CYC (1ull << 1)
#define CFG_MTC (1ull << 9)
#define CFG_TSC (1ull << 10)
#define CFG_NORETCOMP (1ull << 11)
#define CFG_BRANCH (1ull << 13)
#define CFG_MTC_PERIOD_SHIFT 14
#define CFG_CYC_THRESH_SHIFT 19
#define CFG_PSB_PERIOD_SHIFT 24

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
		       const struct synth_image *img, uint64_t time)
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
		sid(&ev, pp, time, ID_SIDEBAND);
		if ((ret = vmpt_perf_write_record(pw, &ev)))
			return ret;
	}
	return 0;
}

/* The host kernel's text, or (guest) the default guest machine's (pid 0,
 * as `perf kvm record` writes it; perf script finds the code with
 * --guestvmlinux).
 */
static int write_kernel_mmap(struct vmpt_perf_writer *pw,
			     const struct synth_perf_params *pp,
			     const struct synth_image *k, uint64_t time,
			     int guest)
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
	sid(&ev, pp, time, ID_SIDEBAND);
	ev.sid.pid = guest ? 0 : UINT32_MAX;
	ev.sid.tid = guest ? 0 : UINT32_MAX;
	return vmpt_perf_write_record(pw, &ev);
}

int synth_perf_write(const char *path, const struct synth_perf_params *pp,
		     const struct synth_pt_config *cfg,
		     const struct synth_walk_config *w,
		     const struct synth_pt *pt, char *err, size_t errlen)
{
	struct vmpt_perf_writer *pw;
	struct perf_event_attr attr;
	struct vmpt_perf_time_conv tc;
	struct vmpt_perf_intel_pt_info info;
	struct vmpt_perf_id_entry ids[2];
	struct vmpt_perf_event ev;
	const struct synth_image *prog = w->vm ? (pp->guest_code ? w->user : NULL)
					       : w->user;
	uint64_t id_pt = ID_PT, id_sb = ID_SIDEBAND;
	uint64_t t0, t_end;
	char filter[4200];
	/* the rest of the environment comes from this machine */
	struct vmpt_perf_env env = {
		.pmu_mappings = "intel_pt=10,software=1,tracepoint=2,breakpoint=5",
		.clockid = -1,
	};
	int ret;

	time_conv(cfg, &tc);
	t0 = tsc_to_ns(&tc, pp->tsc0);
	t_end = tsc_to_ns(&tc, pt->tsc);
	ret = vmpt_perf_writer_open(&pw, path, NULL);
	if (ret) {
		snprintf(err, errlen, "%s: %s", path, vmpt_strerror(ret));
		return ret;
	}
	vmpt_perf_intel_pt_attr(&attr, SYNTH_PERF_PMU_TYPE, pt_config(cfg));
	attr.exclude_kernel = !w->trace_kernel;
	attr.exclude_user = !w->trace_user;
	attr.exclude_guest = !w->vm;
	attr.exclude_hv = 1;
	ret = vmpt_perf_writer_add_attr(pw, &attr, w->vm ? "intel_pt//k" :
					"intel_pt//u", &id_pt, 1);
	if (!ret)
		ret = vmpt_perf_writer_set_env(pw, &env);
	vmpt_perf_sideband_attr(&attr);
	attr.exclude_kernel = !w->trace_kernel;
	attr.exclude_user = !w->trace_user;
	if (!ret)
		ret = vmpt_perf_writer_add_attr(pw, &attr, w->vm ? "dummy:k" :
						"dummy:u", &id_sb, 1);
	if (ret)
		goto out;

	memset(ids, 0, sizeof(ids));
	for (int i = 0; i < 2; i++) {
		ids[i].id = i ? ID_SIDEBAND : ID_PT;
		ids[i].idx = 0;
		ids[i].cpu = UINT64_MAX;
		ids[i].tid = pp->pid;
		ids[i].machine_pid = -1;
		ids[i].vcpu = -1;
	}
	vmpt_perf_intel_pt_info_init(&info, SYNTH_PERF_PMU_TYPE, &tc,
				     cfg->tsc_ctc_n, cfg->tsc_ctc_d, cfg->cbr, 0);
	/* One thread, no context switch records: perf takes the thread
	 * from the AUXTRACE buffer only when have_sched_switch is 0. */
	info.priv[VMPT_INTEL_PT_HAVE_SCHED_SWITCH] = 0;
	if (w->filter_hi) {
		/* perf's address filter: START/SIZE@FILE, START in the
		 * file's own addresses (perf applies the load bias). */
		snprintf(filter, sizeof(filter), "filter 0x%llx/0x%llx@%s",
			 (unsigned long long)(w->filter_lo - w->user->base),
			 (unsigned long long)(w->filter_hi - w->filter_lo),
			 w->user->path);
		info.filter = filter;
	}
	if ((ret = vmpt_perf_write_time_conv(pw, &tc)) ||
	    (ret = vmpt_perf_write_intel_pt_info(pw, &info)) ||
	    (ret = vmpt_perf_write_id_index(pw, ids, 2)))
		goto out;

	memset(&ev, 0, sizeof(ev));
	ev.type = PERF_RECORD_COMM;
	ev.misc = PERF_RECORD_MISC_COMM_EXEC;
	ev.comm.pid = pp->pid;
	ev.comm.tid = pp->pid;
	ev.comm.comm = "synth";
	sid(&ev, pp, t0 - 2000, ID_SIDEBAND);
	if ((ret = vmpt_perf_write_record(pw, &ev)))
		goto out;
	if (prog && (ret = write_mmaps(pw, pp, prog, t0 - 1500)))
		goto out;
	if (w->kernel && (ret = write_kernel_mmap(pw, pp, w->kernel, t0 - 1500, 0)))
		goto out;
	if (w->vm && w->guest != w->user &&
	    (ret = write_kernel_mmap(pw, pp, w->guest, t0 - 1500, 1)))
		goto out;

	memset(&ev, 0, sizeof(ev));
	ev.type = PERF_RECORD_ITRACE_START;
	ev.itrace_start.pid = pp->pid;
	ev.itrace_start.tid = pp->pid;
	sid(&ev, pp, t0 - 1000, ID_PT);
	if ((ret = vmpt_perf_write_record(pw, &ev)) ||
	    (ret = vmpt_perf_write_finished_round(pw)))
		goto out;

	memset(&ev, 0, sizeof(ev));
	ev.type = PERF_RECORD_AUX;
	ev.aux.aux_offset = 0;
	ev.aux.aux_size = pt->len;
	sid(&ev, pp, t_end + 1000, ID_PT);
	if ((ret = vmpt_perf_write_record(pw, &ev)) ||
	    /* The reference is the TSC when perf read the buffer: after
	     * its last packet (perf's VM time correlation relies on it). */
	    (ret = vmpt_perf_write_auxtrace(pw, pt->buf, pt->len, 0,
					    pt->tsc + 1, 0, pp->pid,
					    UINT32_MAX)) ||
	    (ret = vmpt_perf_write_finished_round(pw)))
		goto out;
out:
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
