/* SPDX-License-Identifier: MIT */
/* Join single-process synthesized recordings (vmpt-synth's perf.data) into
 * one per-cpu recording, as `perf record -a` would write it: each input
 * runs on the CPU given with it; a later input on a CPU already used comes
 * in by a context switch (SWITCH_CPU_WIDE out naming it) and its trace is
 * that CPU's next AUXTRACE buffer.  Inputs need distinct pids (--pid) and
 * times (--tsc0), later inputs on one CPU after the earlier ones ended.
 * CPU:PERF.DATA:PPID makes the input a child forked from PPID that has not
 * exec'd: its COMM and MMAPs are left out, a FORK comes instead, so it
 * runs in its parent's address space under its parent's name.
 * The first and last record times go to HEADER_SAMPLE_TIME, as perf
 * record --timestamp-boundary writes them (perf script's --time with
 * percentages needs them).
 * usage: percpu_merge OUT CPU:PERF.DATA[:PPID]...
 */
#include "vmpt/error.h"
#include "vmpt/perf_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IN 8

struct input {
	struct vmpt_perf_data pd;
	unsigned cpu;
	int pid, ppid;
};

static int die(const char *what, int ret)
{
	fprintf(stderr, "percpu_merge: %s: %s\n", what, vmpt_strerror(ret));
	return 1;
}

int main(int argc, char **argv)
{
	struct input in[MAX_IN];
	char comm[MAX_IN][16];
	int prev_pid[MAX_IN], n = argc - 2, ret = 0;
	uint64_t aux_off[MAX_IN] = { 0 }, span[2] = { 0 };
	struct vmpt_perf_writer *w;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;

	if (n < 1 || n > MAX_IN) {
		fprintf(stderr, "usage: percpu_merge OUT CPU:PERF.DATA...\n");
		return 2;
	}
	for (int i = 0; i < MAX_IN; i++)
		prev_pid[i] = -1;
	for (int i = 0; i < n; i++) {
		char *colon = strchr(argv[i + 2], ':'), *ppid;

		if (!colon)
			return 2;
		ppid = strchr(colon + 1, ':');
		in[i].ppid = -1;
		if (ppid) {
			*ppid = '\0';
			in[i].ppid = atoi(ppid + 1);
		}
		in[i].cpu = (unsigned)atoi(argv[i + 2]);
		if (in[i].cpu >= MAX_IN)
			return 2;
		ret = vmpt_perf_open(&in[i].pd, colon + 1);
		if (ret < 0)
			return die(in[i].pd.errmsg, ret);
	}
	ret = vmpt_perf_writer_open(&w, argv[1], NULL);
	if (ret < 0)
		return die(argv[1], ret);
	for (size_t a = 0; a < in[0].pd.nr_attrs && !ret; a++) {
		const struct vmpt_perf_attr *at = &in[0].pd.attrs[a];
		struct perf_event_attr attr = at->attr;

		/* The sideband event records context switches on every CPU. */
		if (a)
			attr.context_switch = 1;
		ret = vmpt_perf_writer_add_attr(w, &attr, at->name, at->ids, at->nr_ids);
	}
	if (!ret)
		ret = vmpt_perf_writer_set_env(w, &in[0].pd.env);
	/* Sideband of all inputs first, then the trace buffers. */
	for (int pass = 0; pass < 2 && !ret; pass++) {
		for (int i = 0; i < n && !ret; i++) {
			unsigned cpu = in[i].cpu;

			vmpt_perf_cursor_init(&in[i].pd, &cur);
			while (!ret && (ret = vmpt_perf_next(&in[i].pd, &cur, &ev)) > 0) {
				ret = 0;
				if (ev.type == VMPT_PERF_RECORD_AUXTRACE) {
					if (pass == 1) {
						ret = vmpt_perf_write_auxtrace(w, ev.auxtrace.data,
							ev.auxtrace.size, aux_off[cpu],
							ev.auxtrace.reference, cpu, UINT32_MAX, cpu);
						/* A gap: the next buffer is not a continuation. */
						aux_off[cpu] += ev.auxtrace.size + 4096;
					}
					continue;
				}
				if (pass == 1 || ev.type == VMPT_PERF_RECORD_FINISHED_ROUND ||
				    ev.type == VMPT_PERF_RECORD_ID_INDEX)
					continue;
				if (ev.type == VMPT_PERF_RECORD_TIME_CONV ||
				    ev.type == VMPT_PERF_RECORD_AUXTRACE_INFO) {
					struct vmpt_perf_intel_pt_info info;

					if (i)
						continue;
					if (ev.type == VMPT_PERF_RECORD_TIME_CONV) {
						ret = vmpt_perf_write_time_conv(w, &ev.time_conv);
						continue;
					}
					ret = vmpt_perf_intel_pt_info(&ev, &info);
					info.priv[VMPT_INTEL_PT_PER_CPU_MMAPS] = 1;
					info.priv[VMPT_INTEL_PT_HAVE_SCHED_SWITCH] = 3;
					if (!ret)
						ret = vmpt_perf_write_intel_pt_info(w, &info);
					continue;
				}
				/* The kernel is mapped once. */
				if (i && ev.type == PERF_RECORD_MMAP && ev.mmap.pid == UINT32_MAX)
					continue;
				ev.sid.cpu = cpu;
				if (in[i].ppid >= 0 && (ev.type == PERF_RECORD_COMM ||
							ev.type == PERF_RECORD_MMAP2 ||
							ev.type == PERF_RECORD_MMAP))
					continue;
				if (in[i].ppid >= 0 && ev.type == PERF_RECORD_ITRACE_START) {
					struct vmpt_perf_event fork = ev;

					fork.type = PERF_RECORD_FORK;
					fork.misc = 0;
					fork.fork.pid = fork.fork.tid = ev.itrace_start.pid;
					fork.fork.ppid = fork.fork.ptid = (uint32_t)in[i].ppid;
					fork.fork.time = ev.sid.time - 1;
					fork.sid.time = ev.sid.time - 1;
					fork.sid.pid = fork.sid.tid = (uint32_t)in[i].ppid;
					ret = vmpt_perf_write_record(w, &fork);
					if (ret)
						break;
				}
				/* Names apart: "proc" and the pid. */
				if (ev.type == PERF_RECORD_COMM) {
					snprintf(comm[i], sizeof(comm[i]), "proc%u", ev.comm.pid);
					ev.comm.comm = comm[i];
				}
				if (ev.type == PERF_RECORD_ITRACE_START) {
					in[i].pid = (int)ev.itrace_start.pid;
					if (prev_pid[cpu] >= 0) {
						/* Switched in after the earlier task. */
						ev.type = PERF_RECORD_SWITCH_CPU_WIDE;
						ev.misc = PERF_RECORD_MISC_SWITCH_OUT;
						ev.sw.next_prev_pid = (uint32_t)in[i].pid;
						ev.sw.next_prev_tid = (uint32_t)in[i].pid;
						ev.sw.out = 1;
						ev.sid.pid = ev.sid.tid = (uint32_t)prev_pid[cpu];
					}
					prev_pid[cpu] = in[i].pid;
				}
				if (ev.sid.present & PERF_SAMPLE_TIME) {
					if (!span[0] || ev.sid.time < span[0])
						span[0] = ev.sid.time;
					if (ev.sid.time > span[1])
						span[1] = ev.sid.time;
				}
				ret = vmpt_perf_write_record(w, &ev);
			}
			if (ret < 0)
				return die(in[i].pd.errmsg, ret);
		}
		if (!ret)
			ret = vmpt_perf_write_finished_round(w);
	}
	if (!ret && span[0])
		ret = vmpt_perf_writer_copy_feature(w, VMPT_PERF_FEAT_SAMPLE_TIME, span,
						    sizeof(span));
	if (ret)
		return die(argv[1], ret);
	ret = vmpt_perf_writer_close(w);
	for (int i = 0; i < n; i++)
		vmpt_perf_close(&in[i].pd);
	return ret ? die(argv[1], ret) : 0;
}
