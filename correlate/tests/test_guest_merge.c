/* SPDX-License-Identifier: MIT */
/* The guest merge's pieces the perf comparison cannot reach: a TSC offset
 * and multiplier per vCPU (perf inject has one for all), and which host
 * CPU a vCPU thread ran on when it migrates (the stand-in QEMU's threads
 * are pinned): its last switch in at or before the time, from its own
 * SWITCH/SWITCH_CPU_WIDE records or a CPU-wide switch out naming it next,
 * CPU 0 before the first as perf says; QEMU's thread names and their
 * conflicts.
 */
#include "vmpt/error.h"
#include "vmpt/guest_merge.h"
#include "vmpt_guest_vcpus.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void test_clock_per_vcpu(void **state)
{
	/* shift 0, mult 1: perf time = time_zero + TSC */
	struct vmpt_tsc_scale tsc[2] = {
		{ .offset = 1000 },
		{ .offset = 2000, .mult = 1ull << 47, .frac_bits = 48 },	/* 0.5 */
	};
	struct vmpt_guest_clock c = {
		.guest = { .time_mult = 1, .time_zero = 10, .cap_user_time_zero = 1, .extended = 1 },
		.host = { .time_mult = 1, .time_zero = 100000 },
		.tsc = tsc, .nr_tsc = 2,
	};

	(void)state;
	/* guest time 5010 -> guest TSC 5000 */
	assert_int_equal(vmpt_guest_clock_host_time(&c, 0, 5010), 100000 + 4000);
	/* half as fast: guest TSC 5000 - 2000 = 3000 is host TSC 6000 */
	assert_int_equal(vmpt_guest_clock_host_time(&c, 1, 5010), 100000 + 6000);
	/* and 3001, which no host tick gives exactly: the first after it */
	assert_int_equal(vmpt_guest_clock_host_time(&c, 1, 5011), 100000 + 6002);
	assert_int_equal(vmpt_guest_clock_host_time(&c, 1, 0), 0);
	c.nr_tsc = 1;
	assert_int_equal(vmpt_guest_clock_host_time(&c, 1, 5010), 100000 + 4000);
	c.nr_tsc = 0;
	assert_int_equal(vmpt_guest_clock_host_time(&c, 1, 5010), 100000 + 5000);

	assert_null(vmpt_guest_clock_unusable(&c.guest));
	c.guest.cap_user_time_zero = 0;
	assert_string_equal(vmpt_guest_clock_unusable(&c.guest),
			    "cap_user_time_zero is 0: the perf clock is not the TSC");
	c.guest.extended = 0;	/* perf < 5.10 wrote it only with the cap */
	assert_null(vmpt_guest_clock_unusable(&c.guest));
	c.guest.time_mult = 0;
	assert_string_equal(vmpt_guest_clock_unusable(&c.guest), "time_mult is 0");
}

static struct vmpt_perf_event comm(uint32_t pid, uint32_t tid, const char *name)
{
	struct vmpt_perf_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = PERF_RECORD_COMM;
	ev.offset = 0x100 + tid;
	ev.comm.pid = pid;
	ev.comm.tid = tid;
	ev.comm.comm = name;
	return ev;
}

static struct vmpt_perf_event sw(uint32_t type, int out, uint32_t pid, uint32_t tid,
				 uint32_t next_pid, uint32_t next_tid, uint64_t time,
				 uint32_t cpu)
{
	struct vmpt_perf_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = type;
	ev.sw.out = (uint8_t)out;
	ev.sw.next_prev_pid = next_pid;
	ev.sw.next_prev_tid = next_tid;
	ev.sid.present = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	ev.sid.pid = pid;
	ev.sid.tid = tid;
	ev.sid.time = time;
	ev.sid.cpu = cpu;
	return ev;
}

static void test_vcpu_threads(void **state)
{
	struct vmpt_guest_vcpus vc;
	struct vmpt_perf_event ev;
	char err[256];
	uint64_t seq = 0;
	const struct vmpt_perf_event switches[] = {
		/* out of time order, as perf's per-CPU buffers give them */
		sw(PERF_RECORD_SWITCH_CPU_WIDE, 0, 7, 11, 1, 1, 200, 2),
		sw(PERF_RECORD_SWITCH, 0, 7, 11, 0, 0, 100, 3),
		sw(PERF_RECORD_SWITCH_CPU_WIDE, 1, 1, 1, 7, 12, 150, 1),
		/* not a vCPU thread switching in: its switch out; another
		 * task switching in after it (perf 6.1 takes this one: the
		 * CPU the vCPU left); another process's thread 11 */
		sw(PERF_RECORD_SWITCH, 1, 7, 11, 0, 0, 120, 5),
		sw(PERF_RECORD_SWITCH_CPU_WIDE, 0, 1, 1, 7, 12, 160, 6),
		sw(PERF_RECORD_SWITCH, 0, 8, 11, 0, 0, 130, 7),
		/* equal times: file order */
		sw(PERF_RECORD_SWITCH, 0, 7, 12, 0, 0, 300, 4),
		sw(PERF_RECORD_SWITCH, 0, 7, 12, 0, 0, 300, 0),
	};

	(void)state;
	vmpt_guest_vcpus_init(&vc, 7);
	for (size_t i = 0; i < sizeof(switches) / sizeof(switches[0]); i++)
		assert_int_equal(vmpt_guest_vcpus_switch(&vc, &switches[i], ++seq), 0);
	ev = comm(7, 11, "CPU 0/KVM");
	assert_int_equal(vmpt_guest_vcpus_comm(&vc, &ev, "host.data", err, sizeof(err)), 0);
	ev = comm(7, 12, "CPU 1/TCG");
	assert_int_equal(vmpt_guest_vcpus_comm(&vc, &ev, "host.data", err, sizeof(err)), 0);
	for (const char *const *name = (const char *const[]){ "CPU 2", "CPU x/KVM", "CPU 3/",
				"CPU 4/K M", "qemu-system-x86", NULL }; *name; name++) {
		ev = comm(7, 13, *name);
		assert_int_equal(vmpt_guest_vcpus_comm(&vc, &ev, "host.data", err, sizeof(err)), 0);
	}
	ev = comm(9, 21, "CPU 0/KVM");
	assert_int_equal(vmpt_guest_vcpus_comm(&vc, &ev, "host.data", err, sizeof(err)), 0);
	assert_int_equal(vc.other_pid, 9);
	assert_int_equal(vc.nr, 2);
	assert_int_equal(vc.nr_threads, 2);
	assert_string_equal(vc.source, "thread names");
	assert_int_equal(vmpt_guest_vcpus_of_tid(&vc, 12), 1);
	assert_int_equal(vmpt_guest_vcpus_of_tid(&vc, 21), -1);

	assert_int_equal(vmpt_guest_vcpus_sort(&vc), 0);
	assert_int_equal(vmpt_guest_vcpus_host_cpu(&vc, 0, 99), 0);
	assert_int_equal(vmpt_guest_vcpus_host_cpu(&vc, 0, 100), 3);
	assert_int_equal(vmpt_guest_vcpus_host_cpu(&vc, 0, 199), 3);
	assert_int_equal(vmpt_guest_vcpus_host_cpu(&vc, 0, 200), 2);
	assert_int_equal(vmpt_guest_vcpus_host_cpu(&vc, 1, 149), 0);
	assert_int_equal(vmpt_guest_vcpus_host_cpu(&vc, 1, 150), 1);
	assert_int_equal(vmpt_guest_vcpus_host_cpu(&vc, 1, 160), 1);
	assert_int_equal(vmpt_guest_vcpus_host_cpu(&vc, 1, 300), 0);
	assert_int_equal(vmpt_guest_vcpus_host_cpu(&vc, 5, 300), 0);

	ev = comm(7, 14, "CPU 1/KVM");
	ev.offset = 0x2a8;
	assert_int_equal(vmpt_guest_vcpus_comm(&vc, &ev, "host.data", err, sizeof(err)),
			 -VMPT_ERR_FORMAT);
	assert_string_equal(err, "host.data: offset 0x2a8: two threads run vCPU 1 of pid 7: 12 and 14");
	vmpt_guest_vcpus_free(&vc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clock_per_vcpu),
		cmocka_unit_test(test_vcpu_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
