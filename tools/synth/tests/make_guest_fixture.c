/* SPDX-License-Identifier: MIT */
/* make-guest-fixture OUT KSTART KLEN [SPREAD]: a small guest sideband as vmpt guest collects it
 * (docs/guest.md), made by hand: two guest CPUs, TIME_CONV (a 3.2 GHz
 * TSC), the kernel's text at KSTART (KLEN bytes) as perf record
 * synthesizes it, processes from /proc at time 0 (init, sh, a kworker), then sh
 * forks ls (busybox, static) and bash (PIE, with libc and a second
 * thread), and cpu-wide context switches move them, the kworker and the
 * idle task over both CPUs.  The test puts the binaries under root/ and a
 * kernel in kcore_dir/.  SPREAD (default 1) multiplies the workload's
 * times: the vCPUs then sleep for long spans (no trace, no MTC) while
 * their guest CPUs are idle.
 */
#include "vmpt/error.h"
#include "vmpt/perf_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define T0 10000000ull		/* guest perf time of the workload (ns) */
#define AT(ns) (T0 + (ns) * spread)

/* the first error stays */
#define TRY(x) do { if (!ret) ret = (x); } while (0)

static struct vmpt_perf_writer *w = NULL;
static struct perf_event_attr attr;
static const uint64_t ids[2] = { 11, 12 };	/* one per guest CPU */

static int put(struct vmpt_perf_event *ev, uint32_t pid, uint32_t tid,
	       uint64_t time, uint32_t cpu)
{
	ev->sid.present = attr.sample_type;
	ev->sid.pid = pid;
	ev->sid.tid = tid;
	ev->sid.time = time;
	ev->sid.cpu = cpu;
	ev->sid.id = ids[cpu];
	return vmpt_perf_write_record(w, ev);
}

/* The kernel's text as perf record synthesizes it (pid -1). */
static int kernel_mmap(uint64_t start, uint64_t len)
{
	struct vmpt_perf_event ev = {
		.type = PERF_RECORD_MMAP, .misc = PERF_RECORD_MISC_KERNEL,
	};

	ev.mmap.pid = UINT32_MAX;
	ev.mmap.start = start;
	ev.mmap.len = len;
	ev.mmap.pgoff = start;
	ev.mmap.filename = "[kernel.kallsyms]_text";
	return put(&ev, UINT32_MAX, UINT32_MAX, 0, 0);
}

static int comm(uint32_t pid, uint32_t tid, const char *name, int exec,
		uint64_t time)
{
	struct vmpt_perf_event ev = { .type = PERF_RECORD_COMM };

	ev.misc = exec ? PERF_RECORD_MISC_COMM_EXEC : 0;
	ev.comm.pid = pid;
	ev.comm.tid = tid;
	ev.comm.comm = name;
	return put(&ev, pid, tid, time, 0);
}

static int fork_(uint32_t pid, uint32_t tid, uint32_t ppid, uint32_t ptid,
		 uint64_t time)
{
	struct vmpt_perf_event ev = { .type = PERF_RECORD_FORK };

	ev.fork.pid = pid;
	ev.fork.tid = tid;
	ev.fork.ppid = ppid;
	ev.fork.ptid = ptid;
	ev.fork.time = time;
	return put(&ev, pid, tid, time, 0);
}

static int mmap2(uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		 const char *path, uint64_t time)
{
	struct vmpt_perf_event ev = {
		.type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER,
	};

	ev.mmap.pid = ev.mmap.tid = pid;
	ev.mmap.start = start;
	ev.mmap.len = len;
	ev.mmap.pgoff = pgoff;
	ev.mmap.prot = PROT_READ | PROT_EXEC;
	ev.mmap.flags = MAP_PRIVATE;
	ev.mmap.filename = path;
	return put(&ev, pid, pid, time, 0);
}

/* prev leaves cpu for next (tid 0: the idle task), as perf record -a. */
static int sw(uint32_t cpu, uint64_t time, uint32_t ppid, uint32_t prev,
	      uint32_t npid, uint32_t next)
{
	struct vmpt_perf_event ev = { .type = PERF_RECORD_SWITCH_CPU_WIDE };
	int ret;

	ev.sw.out = 1;
	ev.sw.preempt = prev != 0;
	ev.sw.next_prev_pid = npid;
	ev.sw.next_prev_tid = next;
	if ((ret = put(&ev, ppid, prev, time, cpu)))
		return ret;
	memset(&ev, 0, sizeof(ev));
	ev.type = PERF_RECORD_SWITCH_CPU_WIDE;
	ev.sw.next_prev_pid = ppid;
	ev.sw.next_prev_tid = prev;
	return put(&ev, npid, next, time + 1, cpu);
}

#define BUSYBOX 0x401000, 0x184000, 0x1000, "/bin/busybox"
#define BASH 0x555555583000, 0xc1000, 0x2f000, "/usr/bin/bash"
#define LIBC 0x7ffff7da6000, 0x156000, 0x26000, "/lib/x86_64-linux-gnu/libc.so.6"

int main(int argc, char **argv)
{
	struct vmpt_perf_time_conv tc = {
		.time_shift = 31, .time_mult = 671088640,	/* 10/32 ns a tick */
		.time_zero = 5000000, .time_mask = UINT64_MAX,
		.cap_user_time_zero = 1, .extended = 1,
	};
	const struct vmpt_perf_id_entry index[2] = {
		{ .id = 11, .idx = 0, .cpu = 0, .tid = UINT64_MAX, .machine_pid = -1, .vcpu = -1 },
		{ .id = 12, .idx = 1, .cpu = 1, .tid = UINT64_MAX, .machine_pid = -1, .vcpu = -1 },
	};
	int ret;

	uint64_t kstart, klen, spread = 1;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: make-guest-fixture OUT KSTART KLEN [SPREAD]\n");
		return 2;
	}
	kstart = strtoull(argv[2], NULL, 0);
	klen = strtoull(argv[3], NULL, 0);
	if (argc == 5)
		spread = strtoull(argv[4], NULL, 0);
	vmpt_perf_sideband_attr(&attr);
	attr.exclude_kernel = attr.exclude_user = 0;
	ret = vmpt_perf_writer_open(&w, argv[1], NULL);
	TRY(vmpt_perf_writer_add_attr(w, &attr, "dummy", ids, 2));
	TRY(vmpt_perf_write_time_conv(w, &tc));
	/* which id is which CPU's (perf inject --guest-data needs it) */
	TRY(vmpt_perf_write_id_index(w, index, 2));
	/* what perf synthesizes: the kernel, then from /proc */
	TRY(kernel_mmap(kstart, klen));
	TRY(comm(1, 1, "init", 1, 0));
	TRY(mmap2(1, BUSYBOX, 0));
	TRY(comm(100, 100, "sh", 1, 0));
	TRY(mmap2(100, BUSYBOX, 0));
	TRY(comm(50, 50, "kworker/0:1", 0, 0));
	/* the workload */
	TRY(fork_(200, 200, 100, 100, AT(0)));
	TRY(comm(200, 200, "ls", 1, AT(1000)));
	TRY(mmap2(200, BUSYBOX, AT(1500)));
	TRY(fork_(201, 201, 100, 100, AT(2000)));
	TRY(comm(201, 201, "bash", 1, AT(3000)));
	TRY(mmap2(201, BASH, AT(3500)));
	TRY(mmap2(201, LIBC, AT(3600)));
	TRY(fork_(201, 202, 201, 201, AT(3700)));
	TRY(comm(201, 202, "bash-job", 0, AT(3800)));
	/* who runs where */
	TRY(sw(1, AT(4000), 0, 0, 201, 201));
	TRY(sw(0, AT(5000), 0, 0, 200, 200));
	TRY(sw(1, AT(50000), 201, 201, 201, 202));
	TRY(sw(0, AT(60000), 200, 200, 50, 50));
	TRY(sw(0, AT(80000), 50, 50, 0, 0));
	TRY(sw(1, AT(90000), 201, 202, 0, 0));
	TRY(sw(1, AT(100000), 0, 0, 100, 100));
	TRY(sw(0, AT(120000), 0, 0, 201, 201));
	TRY(sw(1, AT(150000), 100, 100, 200, 200));
	TRY(sw(1, AT(190000), 200, 200, 0, 0));
	TRY(sw(0, AT(200000), 201, 201, 200, 200));
	TRY(sw(0, AT(260000), 200, 200, 0, 0));
	TRY(vmpt_perf_write_finished_round(w));
	if (w) {
		int cret = vmpt_perf_writer_close(w);

		ret = ret ? ret : cret;
	}
	if (ret) {
		fprintf(stderr, "make-guest-fixture: %s: %s\n", argv[1],
			vmpt_strerror(ret));
		return 1;
	}
	return 0;
}
