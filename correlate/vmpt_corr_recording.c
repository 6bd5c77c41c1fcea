/* SPDX-License-Identifier: MIT */
/* A recording opened for the correlator (vmpt_corr_open): its Intel PT
 * buffers and settings, who ran on each CPU (context switches), the vCPU
 * threads ("CPU n/KVM" COMMs, the vcpus file) and KVM's values.
 */
#include "vmpt/correlate.h"
#include "vmpt/error.h"
#include "vmpt/perf_data.h"
#include "vmpt_corr_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct task_rec {
	int cpu, pid, tid;
	uint64_t time;
};

struct vmpt_corr_recording {
	struct vmpt_perf_data pd;
	struct vmpt_perf_time_conv tc;
	int have_tc;
	struct task_rec *sw;		/* by cpu, then time */
	size_t n_sw, sw_cap;
	struct task_rec *tasks;		/* pid of each tid seen */
	size_t n_tasks, tasks_cap;
	char *path;
};

static uint64_t rec_time(void *ctx, uint64_t tsc)
{
	const struct vmpt_corr_recording *r = ctx;

	return r->have_tc ? vmpt_perf_tsc_to_time(&r->tc, tsc) : 0;
}

static int cmp_sw(const void *a, const void *b)
{
	const struct task_rec *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

static int pid_of(const struct vmpt_corr_recording *r, int tid)
{
	for (size_t k = 0; k < r->n_tasks; k++)
		if (r->tasks[k].tid == tid)
			return r->tasks[k].pid;
	return -1;
}

/* The thread buffer buf ran at host TSC tsc: a per-thread buffer's, or
 * on a CPU the one the context switches say.
 */
static int thread_at(void *ctx, size_t buf, uint64_t tsc, int *pid)
{
	const struct vmpt_corr *c = ctx;
	const struct vmpt_corr_recording *r = c->rec;
	int cpu = c->bufs[buf].cpu, tid = c->bufs[buf].tid;
	size_t lo = 0, hi = r->n_sw;
	uint64_t t;

	*pid = -1;
	if (tid < 0 && cpu >= 0 && r->n_sw) {
		/* The last switch on cpu at or before t (else its first). */
		t = rec_time(c->rec, tsc);
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (r->sw[mid].cpu < cpu ||
			    (r->sw[mid].cpu == cpu && r->sw[mid].time <= t))
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo > 0 && r->sw[lo - 1].cpu == cpu)
			tid = r->sw[lo - 1].tid, *pid = r->sw[lo - 1].pid;
		else if (lo < r->n_sw && r->sw[lo].cpu == cpu)
			tid = r->sw[lo].tid, *pid = r->sw[lo].pid;
	}
	if (tid >= 0 && *pid < 0)
		*pid = pid_of(r, tid);
	return tid;
}

static int add_task(struct task_rec **arr, size_t *n, size_t *cap, struct task_rec t)
{
	if (vmpt_corr_grow((void **)arr, cap, *n, sizeof(**arr)) < 0)
		return -VMPT_ERR_NOMEM;
	(*arr)[(*n)++] = t;
	return 0;
}

static int sid_int(uint32_t v)
{
	return v == UINT32_MAX ? -1 : (int)v;
}

/* One record of the data section. */
static int record(struct vmpt_corr *c, const struct vmpt_perf_event *ev,
		  struct vmpt_perf_intel_pt_info *info, int *have_info)
{
	struct vmpt_corr_recording *r = c->rec;
	struct task_rec t = { -1, -1, -1, 0 };
	int vcpu;

	if (ev->sid.present & PERF_SAMPLE_TIME)
		t.time = ev->sid.time;
	if (ev->sid.present & PERF_SAMPLE_CPU)
		t.cpu = sid_int(ev->sid.cpu);
	switch (ev->type) {
	case VMPT_PERF_RECORD_AUXTRACE_INFO:
		if (vmpt_perf_intel_pt_info(ev, info) == 0) {
			*have_info = 1;
			snprintf(c->info_where, sizeof(c->info_where),
				 "%.500s: offset %#" PRIx64 ": ", r->path, ev->offset);
		}
		return 0;
	case VMPT_PERF_RECORD_TIME_CONV:
		r->tc = ev->time_conv;
		r->have_tc = 1;
		return 0;
	case VMPT_PERF_RECORD_AUXTRACE: {
		struct vmpt_corr_buffer b = {
			.data = ev->auxtrace.data, .size = ev->auxtrace.size,
			.reference = ev->auxtrace.reference, .idx = ev->auxtrace.idx,
			.cpu = sid_int(ev->auxtrace.cpu), .tid = sid_int(ev->auxtrace.tid),
			.file = ev->part, .file_offset = ev->auxtrace.data_offset,
		};

		return vmpt_corr_add_buffer(c, &b);
	}
	case PERF_RECORD_COMM:
		t.pid = sid_int(ev->comm.pid);
		t.tid = sid_int(ev->comm.tid);
		/* QEMU names its vCPU threads "CPU n/KVM". */
		if (sscanf(ev->comm.comm, "CPU %d/KVM", &vcpu) == 1 && vcpu >= 0) {
			struct vmpt_vcpu_thread v = { t.pid, t.tid, vcpu };

			if (vmpt_corr_add_vcpu(c, &v) < 0)
				return -VMPT_ERR_NOMEM;
		}
		return add_task(&r->tasks, &r->n_tasks, &r->tasks_cap, t);
	case PERF_RECORD_FORK:
		t.pid = sid_int(ev->fork.pid);
		t.tid = sid_int(ev->fork.tid);
		return add_task(&r->tasks, &r->n_tasks, &r->tasks_cap, t);
	case PERF_RECORD_ITRACE_START:
		t.pid = sid_int(ev->itrace_start.pid);
		t.tid = sid_int(ev->itrace_start.tid);
		break;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (ev->sw.out) {
			/* Switching out names the task coming in. */
			t.pid = sid_int(ev->sw.next_prev_pid);
			t.tid = sid_int(ev->sw.next_prev_tid);
			break;
		}
		/* fall through */
	case PERF_RECORD_SWITCH:
		if ((ev->type == PERF_RECORD_SWITCH && ev->sw.out) ||
		    !(ev->sid.present & PERF_SAMPLE_TID))
			return 0;
		t.pid = sid_int(ev->sid.pid);
		t.tid = sid_int(ev->sid.tid);
		break;
	default:
		return 0;
	}
	if (t.cpu < 0)
		return 0;
	return add_task(&r->sw, &r->n_sw, &r->sw_cap, t);
}

/* perf's settings checks: timeless decoding (no TSC) and MTC. */
static void settings(struct vmpt_corr *c, const struct vmpt_perf_intel_pt_info *info)
{
	const struct vmpt_perf_data *pd = &c->rec->pd;
	const uint64_t *priv = info->priv;
	uint64_t tsc_bit = priv[VMPT_INTEL_PT_TSC_BIT], mtc_bit = priv[VMPT_INTEL_PT_MTC_BIT];
	uint64_t mtc_mask = priv[VMPT_INTEL_PT_MTC_FREQ_BITS];
	int timeless = !tsc_bit || !priv[VMPT_INTEL_PT_CAP_USER_TIME_ZERO], first = 1;

	c->cfg.tsc_ctc_ratio_n = (uint32_t)priv[VMPT_INTEL_PT_TSC_CTC_N];
	c->cfg.tsc_ctc_ratio_d = (uint32_t)priv[VMPT_INTEL_PT_TSC_CTC_D];
	c->cfg.not_consecutive = priv[VMPT_INTEL_PT_SNAPSHOT_MODE] != 0;
	for (size_t i = 0; i < pd->nr_attrs; i++) {
		const struct perf_event_attr *a = &pd->attrs[i].attr;

		if (!(a->sample_type & PERF_SAMPLE_TIME))
			timeless = 1;
		if (a->type != priv[VMPT_INTEL_PT_PMU_TYPE])
			continue;
		if (!(a->config & tsc_bit))
			timeless = 1;
		if (a->config & mtc_bit)
			c->cfg.have_mtc = 1;
		if (a->aux_sample_size)
			c->cfg.not_consecutive = 1;
		if (first && mtc_mask)
			c->cfg.mtc_period = (uint8_t)((a->config & mtc_mask) >>
						      __builtin_ctzll(mtc_mask));
		first = 0;
	}
	c->cfg.have_tsc = !timeless;
	c->perf.ratio_n = c->cfg.tsc_ctc_ratio_n;
	c->perf.ratio_d = c->cfg.tsc_ctc_ratio_n ? c->cfg.tsc_ctc_ratio_d : 0;
	c->perf.mtc_period = c->cfg.mtc_period;
}

/* The vcpus file has no pid: the COMMs know each thread's. */
static void vcpu_pids(struct vmpt_corr *c)
{
	for (size_t i = 0; i < c->n_vcpus; i++)
		if (c->vcpus[i].pid < 0)
			c->vcpus[i].pid = pid_of(c->rec, c->vcpus[i].tid);
}

int vmpt_corr_open(struct vmpt_corr **out, const char *path,
		   const struct vmpt_corr_config *opts)
{
	struct vmpt_perf_intel_pt_info info;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	struct vmpt_corr *c;
	int have_info = 0, ret;

	*out = c = vmpt_corr_new(opts);
	if (!c)
		return -VMPT_ERR_NOMEM;
	c->rec = calloc(1, sizeof(*c->rec));
	if (!c->rec || !(c->rec->path = strdup(path)))
		return -VMPT_ERR_NOMEM;
	ret = vmpt_perf_open(&c->rec->pd, path);
	if (ret < 0) {
		snprintf(c->errmsg, sizeof(c->errmsg), "%s", c->rec->pd.errmsg);
		return ret;
	}
	vmpt_perf_cursor_init(&c->rec->pd, &cur);
	while ((ret = vmpt_perf_next(&c->rec->pd, &cur, &ev)) > 0) {
		ret = record(c, &ev, &info, &have_info);
		if (ret < 0)
			break;
	}
	if (ret < 0) {
		snprintf(c->errmsg, sizeof(c->errmsg), "%s",
			 c->rec->pd.errmsg[0] ? c->rec->pd.errmsg : vmpt_strerror(ret));
		return ret;
	}
	if (!have_info || !c->n_bufs) {
		snprintf(c->errmsg, sizeof(c->errmsg), "%.500s: no Intel PT trace (%s)", path,
			 have_info ? "no AUXTRACE data" : "no intel_pt AUXTRACE_INFO");
		return -VMPT_ERR_FORMAT;
	}
	settings(c, &info);
	if (c->rec->n_sw)
		qsort(c->rec->sw, c->rec->n_sw, sizeof(*c->rec->sw), cmp_sw);
	c->cfg.thread_at = thread_at;
	c->cfg.ctx = c;
	vmpt_corr_set_time(c, rec_time, c->rec);
	ret = vmpt_corr_read_vcpu_files(c, path, -1);
	if (ret < 0)
		return ret;
	vcpu_pids(c);
	return 0;
}

void vmpt_corr_recording_close(struct vmpt_corr *c)
{
	struct vmpt_corr_recording *r = c->rec;

	if (!r)
		return;
	vmpt_perf_close(&r->pd);
	free(r->sw);
	free(r->tasks);
	free(r->path);
	free(r);
	c->rec = NULL;
}

const char *vmpt_corr_file(const struct vmpt_corr *c, unsigned file)
{
	const struct vmpt_perf_data *pd;

	if (!c->rec)
		return NULL;
	pd = &c->rec->pd;
	if (file == 0)
		return pd->map.path;
	return file <= pd->nr_parts ? pd->parts[file - 1].path : NULL;
}

const char *vmpt_corr_path(const struct vmpt_corr *c)
{
	return c->rec ? c->rec->path : NULL;
}

const char *vmpt_corr_where(const struct vmpt_corr *c, size_t buf, uint64_t off,
			    char *out, size_t len)
{
	const struct vmpt_corr_buffer *b = &c->bufs[buf];
	const char *file = vmpt_corr_file(c, b->file);

	if (file)
		snprintf(out, len, "%.500s: offset %#" PRIx64, file, b->file_offset + off);
	else
		snprintf(out, len, "AUXTRACE buffer %zu: offset %#" PRIx64, buf, off);
	return out;
}

uint64_t vmpt_corr_tsc_to_time(const struct vmpt_corr *c, uint64_t tsc)
{
	return c->to_time ? c->to_time(c->time_ctx, tsc) : 0;
}
