/* SPDX-License-Identifier: MIT */
/* perf.data writer -> reader round trip of every record type, exact
 * errors for corrupt and truncated files, and a mutation sweep that must
 * never crash (run under ASan+UBSan in make check).
 */
#include "vmpt/error.h"
#include "vmpt/perf_data.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char tmpdir[] = "/tmp/vmpt-pd-test-XXXXXX";

static const char *tmp_path(const char *name)
{
	static char buf[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmpdir, name);
	return buf[i];
}

static const uint8_t trace[] = {
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,	/* PSB */
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
	0x99, 0x01,					/* MODE.Exec 64-bit */
	0x02, 0x23,					/* PSBEND */
	0x71, 0x40, 0x63, 0x55, 0x55, 0x55, 0x55,	/* TIP.PGE */
	0x01,						/* TIP.PGD */
};

#define PT_ID 101
#define SB_ID 102

static void set_sid(struct vmpt_perf_event *ev, uint64_t id, uint64_t time)
{
	ev->sid.pid = 77;
	ev->sid.tid = 78;
	ev->sid.cpu = 3;
	ev->sid.id = id;
	ev->sid.time = time;
}

/* One record of each kind the writer builds, in file order. */
static int write_sample_file(const char *path, int dir)
{
	struct vmpt_perf_writer_opts opts = { .dir = dir };
	struct vmpt_perf_time_conv tc = {
		.time_shift = 31, .time_mult = 1789569706, .time_zero = 5,
		.time_cycles = 6, .time_mask = 7, .cap_user_time_zero = 1,
		.cap_user_time_short = 1, .extended = 1,
	};
	struct vmpt_perf_id_entry ids[2] = {
		{ PT_ID, 0, 3, 78, 1234, 0 }, { SB_ID, 0, 3, 78, 1234, 1 },
	};
	uint64_t pt_id = PT_ID, sb_id = SB_ID;
	struct vmpt_perf_intel_pt_info info;
	struct perf_event_attr pt, sb;
	struct vmpt_perf_writer *w;
	struct vmpt_perf_event ev;
	struct vmpt_perf_env env = { 0 };
	char *argv[] = { "vmpt", "record" };
	int err;

	vmpt_perf_intel_pt_attr(&pt, 8, 0x2401);
	vmpt_perf_sideband_attr(&sb);
	err = vmpt_perf_writer_open(&w, path, &opts);
	if (err < 0)
		return err;
	env.hostname = "host1";
	env.cpuid = "GenuineIntel,6,85,7";
	env.cpudesc = "Test CPU";
	env.nr_cpus_online = 4;
	env.nr_cpus_avail = 8;
	env.total_mem_kb = 1024;
	env.cmdline = argv;
	env.nr_cmdline = 2;
	env.pmu_mappings = "intel_pt=8,software=1";
	assert_int_equal(vmpt_perf_writer_set_env(w, &env), 0);
	assert_int_equal(vmpt_perf_writer_add_attr(w, &pt, "intel_pt//", &pt_id, 1), 0);
	assert_int_equal(vmpt_perf_writer_add_attr(w, &sb, "dummy:u", &sb_id, 1), 0);
	assert_int_equal(vmpt_perf_write_time_conv(w, &tc), 0);
	vmpt_perf_intel_pt_info_init(&info, 8, &tc, 2, 100, 20, 1);
	info.filter = "filter 0x1000/0x100@/bin/true";
	assert_int_equal(vmpt_perf_write_intel_pt_info(w, &info), 0);
	assert_int_equal(vmpt_perf_write_id_index(w, ids, 2), 0);
	/* attrs are fixed once records flow */
	assert_int_equal(vmpt_perf_writer_add_attr(w, &sb, "late", &sb_id, 1),
			 -VMPT_ERR_INVAL);

	memset(&ev, 0, sizeof(ev));
	set_sid(&ev, SB_ID, 10);
	ev.type = PERF_RECORD_COMM;
	ev.misc = PERF_RECORD_MISC_COMM_EXEC;
	ev.comm.pid = 77;
	ev.comm.tid = 78;
	ev.comm.comm = "qemu-system-x86";
	assert_int_equal(vmpt_perf_write_record(w, &ev), 0);

	memset(&ev, 0, sizeof(ev));
	set_sid(&ev, SB_ID, 11);
	ev.type = PERF_RECORD_MMAP2;
	ev.misc = PERF_RECORD_MISC_USER;
	ev.mmap.pid = 77;
	ev.mmap.tid = 78;
	ev.mmap.start = 0x400000;
	ev.mmap.len = 0x1000;
	ev.mmap.pgoff = 0x2000;
	ev.mmap.maj = 8;
	ev.mmap.min = 1;
	ev.mmap.ino = 99;
	ev.mmap.ino_generation = 3;
	ev.mmap.prot = 5;
	ev.mmap.flags = 2;
	ev.mmap.filename = "/usr/bin/qemu-system-x86_64";
	assert_int_equal(vmpt_perf_write_record(w, &ev), 0);

	ev.misc = PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID;
	ev.mmap.build_id_size = 20;
	for (int i = 0; i < 20; i++)
		ev.mmap.build_id[i] = (uint8_t)(i * 7);
	ev.mmap.filename = "/lib/x.so";
	assert_int_equal(vmpt_perf_write_record(w, &ev), 0);

	memset(&ev, 0, sizeof(ev));
	set_sid(&ev, SB_ID, 12);
	ev.type = PERF_RECORD_MMAP;
	ev.misc = PERF_RECORD_MISC_KERNEL;
	ev.mmap.pid = (uint32_t)-1;
	ev.mmap.start = 0xffffffff81000000;
	ev.mmap.len = 0x1000000;
	ev.mmap.pgoff = 0xffffffff81000000;
	ev.mmap.filename = "[kernel.kallsyms]_text";
	assert_int_equal(vmpt_perf_write_record(w, &ev), 0);

	memset(&ev, 0, sizeof(ev));
	set_sid(&ev, SB_ID, 13);
	ev.type = PERF_RECORD_FORK;
	ev.fork.pid = 77;
	ev.fork.ppid = 1;
	ev.fork.tid = 79;
	ev.fork.ptid = 78;
	ev.fork.time = 13;
	assert_int_equal(vmpt_perf_write_record(w, &ev), 0);
	ev.type = PERF_RECORD_EXIT;
	assert_int_equal(vmpt_perf_write_record(w, &ev), 0);

	memset(&ev, 0, sizeof(ev));
	set_sid(&ev, SB_ID, 14);
	ev.type = PERF_RECORD_SWITCH_CPU_WIDE;
	ev.sw.out = 1;
	ev.sw.preempt = 1;
	ev.sw.next_prev_pid = 5;
	ev.sw.next_prev_tid = 6;
	assert_int_equal(vmpt_perf_write_record(w, &ev), 0);
	ev.type = PERF_RECORD_SWITCH;
	ev.sw.out = 0;
	ev.sw.preempt = 0;
	assert_int_equal(vmpt_perf_write_record(w, &ev), 0);

	memset(&ev, 0, sizeof(ev));
	set_sid(&ev, PT_ID, 15);
	ev.type = PERF_RECORD_ITRACE_START;
	ev.itrace_start.pid = 77;
	ev.itrace_start.tid = 78;
	assert_int_equal(vmpt_perf_write_record(w, &ev), 0);
	ev.type = PERF_RECORD_AUX;
	ev.aux.aux_offset = 0x1000;
	ev.aux.aux_size = sizeof(trace);
	ev.aux.flags = VMPT_PERF_AUX_TRUNCATED | VMPT_PERF_AUX_PARTIAL;
	assert_int_equal(vmpt_perf_write_record(w, &ev), 0);
	ev.type = PERF_RECORD_LOST;
	ev.lost.id = PT_ID;
	ev.lost.lost = 42;
	assert_int_equal(vmpt_perf_write_record(w, &ev), 0);

	memset(&ev, 0, sizeof(ev));
	set_sid(&ev, PT_ID, 16);
	ev.type = PERF_RECORD_SAMPLE;
	ev.misc = PERF_RECORD_MISC_USER;
	ev.sample.ip = 0x401000;
	assert_int_equal(vmpt_perf_write_record(w, &ev), 0);

	assert_int_equal(vmpt_perf_write_finished_round(w), 0);
	assert_int_equal(vmpt_perf_write_auxtrace(w, trace, sizeof(trace), 0x1000,
						  0xabcdef, 3, 78, 3), 0);
	assert_int_equal(vmpt_perf_writer_data_size(w) % 8, 0);
	return vmpt_perf_writer_close(w);
}

static int next_of(struct vmpt_perf_data *pd, struct vmpt_perf_cursor *cur,
		   struct vmpt_perf_event *ev, uint32_t type)
{
	int ret = vmpt_perf_next(pd, cur, ev);

	assert_int_equal(ret, 1);
	assert_int_equal(ev->type, type);
	return ret;
}

static void check_sid(const struct vmpt_perf_event *ev, uint64_t id, uint64_t time)
{
	assert_int_equal(ev->sid.pid, 77);
	assert_int_equal(ev->sid.tid, 78);
	assert_int_equal(ev->sid.cpu, 3);
	assert_int_equal(ev->sid.id, id);
	assert_int_equal(ev->sid.time, time);
	assert_non_null(ev->attr);
	assert_int_equal(ev->attr->ids[0], id);
}

static void read_back(const char *path)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	struct vmpt_perf_intel_pt_info info;
	struct vmpt_perf_id_entry e;

	assert_int_equal(vmpt_perf_open(&pd, path), 0);
	assert_int_equal(pd.pipe, 0);
	assert_int_equal(pd.nr_attrs, 2);
	assert_string_equal(pd.attrs[0].name, "intel_pt//");
	assert_string_equal(pd.attrs[1].name, "dummy:u");
	assert_int_equal(pd.attrs[0].attr.type, 8);
	assert_int_equal(pd.attrs[0].attr.config, 0x2401);
	assert_int_equal(pd.attrs[0].file_attr_size, sizeof(struct perf_event_attr));
	assert_int_equal(pd.attrs[1].attr.config, PERF_COUNT_SW_DUMMY);
	assert_int_equal(pd.attrs[1].attr.context_switch, 1);
	assert_string_equal(pd.env.hostname, "host1");
	assert_string_equal(pd.env.cpuid, "GenuineIntel,6,85,7");
	assert_string_equal(pd.env.cpudesc, "Test CPU");
	assert_int_equal(pd.env.nr_cpus_online, 4);
	assert_int_equal(pd.env.nr_cpus_avail, 8);
	assert_int_equal(pd.env.total_mem_kb, 1024);
	assert_int_equal(pd.env.nr_cmdline, 2);
	assert_string_equal(pd.env.cmdline[1], "record");
	assert_string_equal(pd.env.pmu_mappings, "intel_pt=8,software=1");
	assert_true(vmpt_perf_has_feature(&pd, VMPT_PERF_FEAT_AUXTRACE));
	assert_int_equal(pd.nr_auxtrace_index, 1);
	assert_int_equal(pd.auxtrace_index[0].size, 48);

	vmpt_perf_cursor_init(&pd, &cur);
	next_of(&pd, &cur, &ev, VMPT_PERF_RECORD_TIME_CONV);
	assert_int_equal(ev.time_conv.extended, 1);
	assert_int_equal(ev.time_conv.time_mult, 1789569706);
	assert_int_equal(ev.time_conv.time_zero, 5);
	assert_int_equal(ev.time_conv.time_cycles, 6);
	assert_int_equal(ev.time_conv.time_mask, 7);
	assert_int_equal(ev.time_conv.cap_user_time_short, 1);

	next_of(&pd, &cur, &ev, VMPT_PERF_RECORD_AUXTRACE_INFO);
	assert_int_equal(vmpt_perf_intel_pt_info(&ev, &info), 0);
	assert_int_equal(info.priv[VMPT_INTEL_PT_PMU_TYPE], 8);
	assert_int_equal(info.priv[VMPT_INTEL_PT_TIME_SHIFT], 31);
	assert_int_equal(info.priv[VMPT_INTEL_PT_TSC_BIT], 0x400);
	assert_int_equal(info.priv[VMPT_INTEL_PT_NORETCOMP_BIT], 0x800);
	assert_int_equal(info.priv[VMPT_INTEL_PT_HAVE_SCHED_SWITCH], 3);
	assert_int_equal(info.priv[VMPT_INTEL_PT_PER_CPU_MMAPS], 1);
	assert_int_equal(info.priv[VMPT_INTEL_PT_MTC_BIT], 0x200);
	assert_int_equal(info.priv[VMPT_INTEL_PT_MTC_FREQ_BITS], 0x3c000);
	assert_int_equal(info.priv[VMPT_INTEL_PT_TSC_CTC_N], 2);
	assert_int_equal(info.priv[VMPT_INTEL_PT_TSC_CTC_D], 100);
	assert_int_equal(info.priv[VMPT_INTEL_PT_CYC_BIT], 2);
	assert_int_equal(info.priv[VMPT_INTEL_PT_MAX_NONTURBO_RATIO], 20);
	assert_int_equal(info.priv[VMPT_INTEL_PT_FILTER_STR_LEN],
			 strlen("filter 0x1000/0x100@/bin/true"));
	assert_string_equal(info.filter, "filter 0x1000/0x100@/bin/true");

	next_of(&pd, &cur, &ev, VMPT_PERF_RECORD_ID_INDEX);
	assert_int_equal(ev.id_index.nr, 2);
	assert_int_equal(ev.id_index.has_guest, 1);
	assert_int_equal(vmpt_perf_id_index_entry(&ev, 1, &e), 0);
	assert_int_equal(e.id, SB_ID);
	assert_int_equal(e.cpu, 3);
	assert_int_equal(e.tid, 78);
	assert_int_equal(e.machine_pid, 1234);
	assert_int_equal(e.vcpu, 1);
	assert_int_equal(vmpt_perf_id_index_entry(&ev, 2, &e), -VMPT_ERR_INVAL);

	next_of(&pd, &cur, &ev, PERF_RECORD_COMM);
	check_sid(&ev, SB_ID, 10);
	assert_string_equal(ev.comm.comm, "qemu-system-x86");
	assert_int_equal(ev.comm.tid, 78);
	assert_int_equal(ev.misc, PERF_RECORD_MISC_COMM_EXEC);

	next_of(&pd, &cur, &ev, PERF_RECORD_MMAP2);
	check_sid(&ev, SB_ID, 11);
	assert_int_equal(ev.mmap.start, 0x400000);
	assert_int_equal(ev.mmap.len, 0x1000);
	assert_int_equal(ev.mmap.pgoff, 0x2000);
	assert_int_equal(ev.mmap.maj, 8);
	assert_int_equal(ev.mmap.min, 1);
	assert_int_equal(ev.mmap.ino, 99);
	assert_int_equal(ev.mmap.ino_generation, 3);
	assert_int_equal(ev.mmap.prot, 5);
	assert_int_equal(ev.mmap.flags, 2);
	assert_string_equal(ev.mmap.filename, "/usr/bin/qemu-system-x86_64");

	next_of(&pd, &cur, &ev, PERF_RECORD_MMAP2);
	assert_int_equal(ev.mmap.build_id_size, 20);
	assert_int_equal(ev.mmap.build_id[19], 19 * 7);
	assert_string_equal(ev.mmap.filename, "/lib/x.so");

	next_of(&pd, &cur, &ev, PERF_RECORD_MMAP);
	check_sid(&ev, SB_ID, 12);
	assert_int_equal(ev.mmap.pid, (uint32_t)-1);
	assert_int_equal(ev.mmap.start, 0xffffffff81000000);
	assert_string_equal(ev.mmap.filename, "[kernel.kallsyms]_text");

	next_of(&pd, &cur, &ev, PERF_RECORD_FORK);
	check_sid(&ev, SB_ID, 13);
	assert_int_equal(ev.fork.ppid, 1);
	assert_int_equal(ev.fork.tid, 79);
	assert_int_equal(ev.fork.ptid, 78);
	assert_int_equal(ev.fork.time, 13);
	next_of(&pd, &cur, &ev, PERF_RECORD_EXIT);

	next_of(&pd, &cur, &ev, PERF_RECORD_SWITCH_CPU_WIDE);
	check_sid(&ev, SB_ID, 14);
	assert_int_equal(ev.sw.out, 1);
	assert_int_equal(ev.sw.preempt, 1);
	assert_int_equal(ev.sw.next_prev_pid, 5);
	assert_int_equal(ev.sw.next_prev_tid, 6);
	next_of(&pd, &cur, &ev, PERF_RECORD_SWITCH);
	assert_int_equal(ev.sw.out, 0);

	next_of(&pd, &cur, &ev, PERF_RECORD_ITRACE_START);
	check_sid(&ev, PT_ID, 15);
	assert_int_equal(ev.itrace_start.tid, 78);
	next_of(&pd, &cur, &ev, PERF_RECORD_AUX);
	assert_int_equal(ev.aux.aux_offset, 0x1000);
	assert_int_equal(ev.aux.aux_size, sizeof(trace));
	assert_int_equal(ev.aux.flags, VMPT_PERF_AUX_TRUNCATED | VMPT_PERF_AUX_PARTIAL);
	next_of(&pd, &cur, &ev, PERF_RECORD_LOST);
	assert_int_equal(ev.lost.id, PT_ID);
	assert_int_equal(ev.lost.lost, 42);

	next_of(&pd, &cur, &ev, PERF_RECORD_SAMPLE);
	check_sid(&ev, PT_ID, 16);
	assert_int_equal(ev.sample.ip, 0x401000);

	next_of(&pd, &cur, &ev, VMPT_PERF_RECORD_FINISHED_ROUND);
	next_of(&pd, &cur, &ev, VMPT_PERF_RECORD_AUXTRACE);
	assert_int_equal(ev.offset, pd.auxtrace_index[0].file_offset);
	assert_int_equal(ev.auxtrace.size, 32);	/* padded to 8 */
	assert_int_equal(ev.auxtrace.offset, 0x1000);
	assert_int_equal(ev.auxtrace.reference, 0xabcdef);
	assert_int_equal(ev.auxtrace.idx, 3);
	assert_int_equal(ev.auxtrace.tid, 78);
	assert_int_equal(ev.auxtrace.cpu, 3);
	assert_int_equal(ev.auxtrace.data_offset, ev.offset + 48);
	assert_memory_equal(ev.auxtrace.data, trace, sizeof(trace));
	assert_int_equal(ev.auxtrace.data[sizeof(trace)], 0);
	assert_int_equal(vmpt_perf_next(&pd, &cur, &ev), 0);
	vmpt_perf_close(&pd);
}

/* ---- corrupt files ---- */

static uint8_t *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*size = (size_t)n;
	return buf;
}

static void spit(const char *path, const uint8_t *buf, size_t size)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, size, f), size);
	fclose(f);
}

static void test_round_trip(void **state)
{
	(void)state;
	assert_int_equal(write_sample_file(tmp_path("rt.data"), 0), 0);
	read_back(tmp_path("rt.data"));
}

static uint64_t record_offset(const char *path, uint32_t type)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	uint64_t off = 0;

	assert_int_equal(vmpt_perf_open(&pd, path), 0);
	vmpt_perf_cursor_init(&pd, &cur);
	while (!off && vmpt_perf_next(&pd, &cur, &ev) > 0)
		if (ev.type == type)
			off = ev.offset;
	vmpt_perf_close(&pd);
	assert_true(off != 0);
	return off;
}

/* Open and walk a file; returns the first error (0 if none), message in msg. */
static int walk(const char *path, char *msg, size_t cap)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	int ret = vmpt_perf_open(&pd, path);

	if (!ret) {
		vmpt_perf_cursor_init(&pd, &cur);
		while ((ret = vmpt_perf_next(&pd, &cur, &ev)) > 0) {
			struct vmpt_perf_intel_pt_info info;
			struct vmpt_perf_id_entry e;

			if (ev.type == VMPT_PERF_RECORD_AUXTRACE_INFO)
				vmpt_perf_intel_pt_info(&ev, &info);
			for (uint64_t i = 0; ev.type == VMPT_PERF_RECORD_ID_INDEX &&
					     i < ev.id_index.nr; i++)
				vmpt_perf_id_index_entry(&ev, i, &e);
		}
	}
	snprintf(msg, cap, "%s", ret < 0 ? pd.errmsg : "");
	vmpt_perf_close(&pd);
	return ret < 0 ? ret : 0;
}

static void test_directory_form(void **state)
{
	struct vmpt_perf_writer *w;
	struct vmpt_perf_writer_opts opts = { .dir = 1 };
	struct vmpt_perf_data pd;
	char path[300], msg[600], want[700];

	(void)state;
	assert_int_equal(write_sample_file(tmp_path("dir.data"), 1), 0);
	read_back(tmp_path("dir.data"));
	/* kcore_dir is there once the writer made it */
	assert_int_equal(vmpt_perf_writer_open(&w, tmp_path("dir2.data"), &opts), 0);
	snprintf(path, sizeof(path), "%s/kcore_dir", tmp_path("dir2.data"));
	assert_string_equal(vmpt_perf_writer_kcore_dir(w), path);
	assert_int_equal(vmpt_perf_writer_close(w), 0);
	assert_int_equal(vmpt_perf_open(&pd, tmp_path("dir2.data")), 0);
	assert_string_equal(pd.kcore_dir, path);
	assert_int_equal(pd.nr_attrs, 0);
	vmpt_perf_close(&pd);
	/* perf record --threads: records continue in data.0, data.1, ... */
	{
		uint8_t *main_file;
		size_t size;
		uint64_t data_off, data_size;
		struct vmpt_perf_cursor cur;
		struct vmpt_perf_event ev;
		unsigned n_main = 0, n_part = 0;

		snprintf(path, sizeof(path), "%s/data", tmp_path("dir.data"));
		main_file = slurp(path, &size);
		memcpy(&data_off, main_file + 40, 8);
		memcpy(&data_size, main_file + 48, 8);
		snprintf(path, sizeof(path), "%s/data.0", tmp_path("dir.data"));
		spit(path, main_file + data_off, data_size);
		snprintf(path, sizeof(path), "%s/data.1", tmp_path("dir.data"));
		spit(path, main_file, 0);
		snprintf(path, sizeof(path), "%s/data.2", tmp_path("dir.data"));
		spit(path, main_file + data_off, 56);	/* TIME_CONV */
		assert_int_equal(vmpt_perf_open(&pd, tmp_path("dir.data")), 0);
		assert_int_equal(pd.nr_parts, 3);
		vmpt_perf_cursor_init(&pd, &cur);
		while (vmpt_perf_next(&pd, &cur, &ev) > 0) {
			if (!ev.part) {
				n_main++;
				continue;
			}
			if (!n_part++)
				assert_int_equal(ev.offset, 0);
			if (ev.type == VMPT_PERF_RECORD_AUXTRACE) {
				assert_int_equal(ev.part, 1);
				assert_memory_equal(ev.auxtrace.data, trace, sizeof(trace));
				assert_int_equal(ev.auxtrace.data_offset, data_size - 32);
			}
		}
		assert_int_equal(n_part, n_main + 1);
		assert_int_equal(ev.part, 3);
		vmpt_perf_close(&pd);
		/* an error in a part names that file */
		snprintf(path, sizeof(path), "%s/data.2", tmp_path("dir.data"));
		spit(path, main_file + data_off, 20);
		assert_int_equal(walk(tmp_path("dir.data"), msg, sizeof(msg)), -VMPT_ERR_FORMAT);
		snprintf(want, sizeof(want),
			 "%s: offset 0: record truncated (type 79, size 56, 20 bytes left)", path);
		assert_string_equal(msg, want);
		free(main_file);
	}
}

struct corruption {
	const char *name;
	size_t offset;		/* where to patch, or truncate */
	int truncate;
	uint64_t value;
	unsigned width;
	int err;
	const char *msg;	/* after "PATH: " */
};

static void test_corrupt(void **state)
{
	uint8_t *good, *bad;
	size_t size, data_off, first_rec;
	char msg[600], want[700];
	const char *path = tmp_path("good.data");

	(void)state;
	assert_int_equal(write_sample_file(path, 0), 0);
	good = slurp(path, &size);
	memcpy(&data_off, good + 40, 8);
	first_rec = data_off;	/* TIME_CONV, 56 bytes */
	const struct corruption cases[] = {
		{ "empty", 0, 1, 0, 0, -VMPT_ERR_FORMAT,
		  "zero-sized data, nothing to do" },
		{ "magic", 0, 0, 0x4c4946524550ULL, 8, -VMPT_ERR_FORMAT,
		  "offset 0: not a perf.data file (no PERFILE2 magic)" },
		{ "swapped", 0, 0, 0x50455246494c4532ULL, 8, -VMPT_ERR_UNSUPPORTED,
		  "offset 0: perf.data of the other byte order" },
		{ "header size", 8, 0, 200, 8, -VMPT_ERR_FORMAT,
		  "offset 0x8: bad header size 200" },
		{ "short header", 50, 1, 0, 0, -VMPT_ERR_FORMAT,
		  "offset 0x32: file header truncated (50 of 104 bytes)" },
		{ "data offset", 40, 0, 1ULL << 40, 8, -VMPT_ERR_FORMAT, NULL },
		{ "data size", 48, 0, 1ULL << 40, 8, -VMPT_ERR_FORMAT, NULL },
		{ "attr size", 16, 0, 8, 8, -VMPT_ERR_FORMAT,
		  "offset 0x10: bad attr size 8" },
		{ "attrs", 24, 0, 1ULL << 40, 8, -VMPT_ERR_FORMAT, NULL },
		{ "record size 0", first_rec + 6, 0, 0, 2, -VMPT_ERR_FORMAT, NULL },
		{ "record past data", first_rec + 6, 0, 0xfff8, 2, -VMPT_ERR_FORMAT, NULL },
		{ "truncated", size - 300, 1, 0, 0, -VMPT_ERR_FORMAT, NULL },
	};
	bad = malloc(size);
	assert_non_null(bad);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct corruption *c = &cases[i];
		size_t n = c->truncate ? c->offset : size;
		int err;

		memcpy(bad, good, size);
		if (!c->truncate)
			memcpy(bad + c->offset, &c->value, c->width);
		spit(tmp_path("bad.data"), bad, n);
		err = walk(tmp_path("bad.data"), msg, sizeof(msg));
		if (err != c->err)
			fail_msg("%s: got %d (%s)", c->name, err, msg);
		if (c->msg) {
			snprintf(want, sizeof(want), "%s: %s", tmp_path("bad.data"), c->msg);
			assert_string_equal(msg, want);
		}
	}
	free(bad);
	free(good);
}

/* The exact messages of record-level damage. */
static void test_record_errors(void **state)
{
	uint8_t *good, *bad;
	size_t size;
	uint64_t data_off, data_size;
	char msg[600], want[700];
	const char *path = tmp_path("good2.data");

	(void)state;
	assert_int_equal(write_sample_file(path, 0), 0);
	good = slurp(path, &size);
	memcpy(&data_off, good + 40, 8);
	memcpy(&data_size, good + 48, 8);
	bad = malloc(size);
	assert_non_null(bad);

	/* record size 0 in the first record */
	memcpy(bad, good, size);
	memset(bad + data_off + 6, 0, 2);
	spit(tmp_path("bad.data"), bad, size);
	assert_int_equal(walk(tmp_path("bad.data"), msg, sizeof(msg)), -VMPT_ERR_FORMAT);
	snprintf(want, sizeof(want), "%s: offset %#llx: record size 0 too small (type 79)",
		 tmp_path("bad.data"), (unsigned long long)data_off);
	assert_string_equal(msg, want);

	/* AUXTRACE data running past the data section: the last record */
	uint64_t aux_off = data_off + data_size - 32 - 48, huge = 1ULL << 32;
	memcpy(bad, good, size);
	assert_int_equal(bad[aux_off], VMPT_PERF_RECORD_AUXTRACE);
	memcpy(bad + aux_off + 8, &huge, 8);
	spit(tmp_path("bad.data"), bad, size);
	assert_int_equal(walk(tmp_path("bad.data"), msg, sizeof(msg)), -VMPT_ERR_FORMAT);
	snprintf(want, sizeof(want),
		 "%s: offset %#llx: AUXTRACE data truncated (size 4294967296, 32 bytes left)",
		 tmp_path("bad.data"), (unsigned long long)aux_off);
	assert_string_equal(msg, want);

	/* a COMM record whose string runs into the sample_id trailer */
	uint64_t comm_off = record_offset(path, PERF_RECORD_COMM);
	memcpy(bad, good, size);
	assert_int_equal(bad[comm_off], PERF_RECORD_COMM);
	memset(bad + comm_off + 16, 'x', 16);
	spit(tmp_path("bad.data"), bad, size);
	assert_int_equal(walk(tmp_path("bad.data"), msg, sizeof(msg)), -VMPT_ERR_FORMAT);
	snprintf(want, sizeof(want),
		 "%s: offset %#llx: COMM record: string not terminated within the record",
		 tmp_path("bad.data"), (unsigned long long)comm_off);
	assert_string_equal(msg, want);

	/* the file cut in the middle of the data section: an error, or
	 * with VMPT_PERF_READ_CUT read up to the cut, with a warning (the
	 * cut record ends the walk)
	 */
	spit(tmp_path("bad.data"), good, data_off + 60);
	assert_int_equal(walk(tmp_path("bad.data"), msg, sizeof(msg)), -VMPT_ERR_FORMAT);
	snprintf(want, sizeof(want),
		 "%s: offset 0x30: data section (offset %#llx, size %llu) beyond end of file (%llu bytes)",
		 tmp_path("bad.data"), (unsigned long long)data_off,
		 (unsigned long long)data_size, (unsigned long long)(data_off + 60));
	assert_string_equal(msg, want);
	{
		struct vmpt_perf_data pd;
		struct vmpt_perf_cursor cur;
		struct vmpt_perf_event ev;
		int n = 0, ret;

		assert_int_equal(vmpt_perf_open_flags(&pd, tmp_path("bad.data"),
						      VMPT_PERF_READ_CUT), 0);
		vmpt_perf_cursor_init(&pd, &cur);
		while ((ret = vmpt_perf_next(&pd, &cur, &ev)) > 0)
			n++;
		assert_int_equal(ret, 0);
		assert_int_equal(n, 1);		/* TIME_CONV (56 bytes); then cut */
		snprintf(want, sizeof(want),
			 "%s: offset 0x30: data section (offset %#llx, size %llu) goes beyond "
			 "the end of the file (%llu bytes): the file was cut, read up to where "
			 "it ends", tmp_path("bad.data"), (unsigned long long)data_off,
			 (unsigned long long)data_size, (unsigned long long)(data_off + 60));
		assert_string_equal(pd.warnmsg, want);
		vmpt_perf_close(&pd);
	}

	/* a COMPRESSED record whose data is no zstd: an error naming it */
	{
		struct vmpt_perf_writer *w;
		uint8_t rec[16] = { VMPT_PERF_RECORD_COMPRESSED, 0, 0, 0, 0, 0, 16, 0 };

		assert_int_equal(vmpt_perf_writer_open(&w, tmp_path("z.data"), NULL), 0);
		assert_int_equal(vmpt_perf_write_event(w, rec), 0);
		assert_int_equal(vmpt_perf_writer_close(w), 0);
		assert_int_equal(walk(tmp_path("z.data"), msg, sizeof(msg)),
				 -VMPT_ERR_FORMAT);
		snprintf(want, sizeof(want),
			 "%s: offset 0x68: COMPRESSED record: zstd: Unknown frame descriptor",
			 tmp_path("z.data"));
		assert_string_equal(msg, want);
	}

	/* data size 0 with records after the header: an unfinished recording */
	memcpy(bad, good, size);
	memset(bad + 48, 0, 8);
	spit(tmp_path("bad.data"), bad, size);
	assert_int_equal(walk(tmp_path("bad.data"), msg, sizeof(msg)), -VMPT_ERR_FORMAT);
	snprintf(want, sizeof(want),
		 "%s: offset 0x30: data size is 0 but %llu bytes follow the header: a recording that was not finished (perf record or vmpt record killed?)",
		 tmp_path("bad.data"), (unsigned long long)(size - data_off));
	assert_string_equal(msg, want);

	/* the same from the writer's provisional header: records written,
	 * never closed */
	{
		struct vmpt_perf_writer *w;
		struct perf_event_attr attr;
		uint64_t id = 1;

		vmpt_perf_sideband_attr(&attr);
		assert_int_equal(vmpt_perf_writer_open(&w, tmp_path("open.data"), NULL), 0);
		assert_int_equal(vmpt_perf_writer_add_attr(w, &attr, "dummy", &id, 1), 0);
		/* past the 256 KiB write buffer: what a killed recorder
		 * leaves is the records flushed so far */
		for (int i = 0; i < 40000; i++)
			assert_int_equal(vmpt_perf_write_finished_round(w), 0);
		assert_int_equal(walk(tmp_path("open.data"), msg, sizeof(msg)),
				 -VMPT_ERR_FORMAT);
		assert_non_null(strstr(msg, "offset 0x30: data size is 0 but "));
		assert_int_equal(vmpt_perf_writer_close(w), 0);
		assert_int_equal(walk(tmp_path("open.data"), msg, sizeof(msg)), 0);
	}

	/* a missing file names the file */
	assert_int_equal(walk(tmp_path("missing.data"), msg, sizeof(msg)), -VMPT_ERR_IO);
	snprintf(want, sizeof(want), "%s: No such file or directory", tmp_path("missing.data"));
	assert_string_equal(msg, want);
	free(bad);
	free(good);
}

/* Every byte flipped to a few values and every truncation length: errors
 * are fine, crashes and sanitizer reports are not.
 */
static void test_mutation_sweep(void **state)
{
	static const uint8_t values[] = { 0x00, 0xff, 0x80, 0x07 };
	uint8_t *good, *bad;
	size_t size;
	char msg[600];
	const char *path = tmp_path("sweep.data");

	(void)state;
	assert_int_equal(write_sample_file(path, 0), 0);
	good = slurp(path, &size);
	bad = malloc(size);
	assert_non_null(bad);
	for (size_t i = 0; i < size; i++) {
		for (size_t v = 0; v < sizeof(values); v++) {
			memcpy(bad, good, size);
			bad[i] = values[v];
			spit(tmp_path("m.data"), bad, size);
			walk(tmp_path("m.data"), msg, sizeof(msg));
		}
		spit(tmp_path("m.data"), good, i);
		walk(tmp_path("m.data"), msg, sizeof(msg));
	}
	free(bad);
	free(good);
}

/* perf's conversion: values from the 4.14 recording's TIME_CONV. */
static void test_tsc_conversion(void **state)
{
	struct vmpt_perf_time_conv tc = {
		.time_shift = 31, .time_mult = 1789569706, .time_zero = 0,
	};

	(void)state;
	assert_int_equal(vmpt_perf_tsc_to_time(&tc, 1203), 1002);	/* 1002.49 */
	assert_int_equal(vmpt_perf_time_to_tsc(&tc, 1002), 1202);	/* 1202.4 */
	/* large TSCs: no overflow in tsc * mult */
	assert_int_equal(vmpt_perf_tsc_to_time(&tc, 1ULL << 50),
			 (1ULL << 19) * 1789569706ULL);
	tc.time_zero = 18446744041015200657ULL;	/* negative, as perf writes it */
	for (uint64_t tsc = 1000000; tsc < (1ULL << 48); tsc = tsc * 3 + 7) {
		uint64_t back = vmpt_perf_time_to_tsc(&tc, vmpt_perf_tsc_to_time(&tc, tsc));

		assert_true(back <= tsc && tsc - back <= 2);
	}
	/* cap_user_time_short: a short counter extended from time_cycles */
	tc.cap_user_time_short = 1;
	tc.time_cycles = 0x1000000;
	tc.time_mask = 0xffffff;
	assert_int_equal(vmpt_perf_tsc_to_time(&tc, 0x10),
			 vmpt_perf_tsc_to_time(&(struct vmpt_perf_time_conv){
				 .time_shift = 31, .time_mult = 1789569706,
				 .time_zero = tc.time_zero }, 0x1000010));
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_directory_form),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_record_errors),
		cmocka_unit_test(test_mutation_sweep),
		cmocka_unit_test(test_tsc_conversion),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
