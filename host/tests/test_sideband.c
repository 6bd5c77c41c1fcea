/* SPDX-License-Identifier: MIT */
/* Sideband synthesized from a fixture /proc, and a perf.data cut by a
 * write error repaired to its last whole record.
 */
#include "vmpt/error.h"
#include "vmpt/perf_data.h"
#include "vmpt/sideband.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char fixtures[4096];

struct got {
	char lines[16][256];
	int n;
};

static int collect(void *ctx, struct vmpt_perf_event *ev)
{
	struct got *g = ctx;
	char *l = g->lines[g->n++];
	if (ev->type == PERF_RECORD_COMM)
		snprintf(l, 256, "COMM %u/%u %s sid %u/%u", ev->comm.pid, ev->comm.tid,
			 ev->comm.comm, ev->sid.pid, ev->sid.tid);
	else
		snprintf(l, 256, "%s %d/%d 0x%llx+0x%llx @0x%llx %x:%x %llu prot %u flags %u %s",
			 ev->type == PERF_RECORD_MMAP2 ? "MMAP2" : "MMAP", (int)ev->mmap.pid,
			 (int)ev->mmap.tid, (unsigned long long)ev->mmap.start,
			 (unsigned long long)ev->mmap.len, (unsigned long long)ev->mmap.pgoff,
			 ev->mmap.maj, ev->mmap.min, (unsigned long long)ev->mmap.ino,
			 ev->mmap.prot, ev->mmap.flags, ev->mmap.filename);
	return 0;
}

static void test_process(void **state)
{
	(void)state;
	char root[4200];
	struct got g = { .n = 0 };
	snprintf(root, sizeof(root), "%s/procfs-icelake-host", fixtures);
	assert_int_equal(vmpt_sideband_process(root, 4242, collect, &g), 8);
	static const char *const want[] = {
		"COMM 4242/4242 qemu-system-x86 sid 4242/4242",
		"COMM 4242/4243 CPU 0/KVM sid 4242/4243",
		"COMM 4242/4244 CPU 1/KVM sid 4242/4244",
		"COMM 4242/4245 IO mon_iothread sid 4242/4245",
		"MMAP2 4242/4242 0x55d0a0c00000+0x800000 @0x200000 fe:0 1234 prot 5 flags 2 "
		"/usr/bin/qemu-system-x86_64",
		"MMAP2 4242/4242 0x7f0000000000+0x100000 @0x0 0:0 0 prot 7 flags 2 //anon",
		"MMAP2 4242/4242 0x7f1000000000+0x20000 @0x1000 0:5 77 prot 5 flags 1 "
		"/memfd:tcg-jit (deleted)",
		"MMAP2 4242/4242 0x7ffd10000000+0x2000 @0x0 0:0 0 prot 5 flags 2 [vdso]",
	};
	for (int i = 0; i < 8; i++)
		assert_string_equal(g.lines[i], want[i]);
	assert_int_equal(vmpt_sideband_process(root, 1, collect, &g), -VMPT_ERR_NOT_FOUND);
}

static void test_kernel(void **state)
{
	(void)state;
	char root[4200];
	struct got g = { .n = 0 };
	snprintf(root, sizeof(root), "%s/procfs-icelake-host", fixtures);
	assert_int_equal(vmpt_sideband_kernel(root, collect, &g), 1);
	assert_string_equal(g.lines[0], "MMAP -1/0 0xffffffff81000000+0x7effffff "
			    "@0xffffffff81000000 0:0 0 prot 0 flags 0 [kernel.kallsyms]_text");
	snprintf(root, sizeof(root), "%s/procfs-broadwell-host", fixtures);
	assert_int_equal(vmpt_sideband_kernel(root, collect, &g), 0);	/* hidden */
}

static void test_salvage(void **state)
{
	(void)state;
	char dir[] = "/tmp/vmpt-salvage-XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/p.data", dir);
	struct vmpt_perf_writer *w;
	assert_int_equal(vmpt_perf_writer_open(&w, path, NULL), 0);
	struct perf_event_attr attr = { .size = sizeof(attr), .type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_DUMMY, .comm = 1,
					.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_IDENTIFIER,
					.sample_id_all = 1 };
	uint64_t id = 7;
	assert_int_equal(vmpt_perf_writer_add_attr(w, &attr, "dummy", &id, 1), 0);
	for (int i = 0; i < 50; i++) {
		char comm[16];
		snprintf(comm, sizeof(comm), "thread %d", i);
		struct vmpt_perf_event ev = { .type = PERF_RECORD_COMM };
		ev.comm.pid = 100;
		ev.comm.tid = (uint32_t)(100 + i);
		ev.comm.comm = comm;
		ev.sid.present = attr.sample_type;
		ev.sid.pid = 100;
		ev.sid.tid = ev.comm.tid;
		ev.sid.id = id;
		assert_int_equal(vmpt_perf_write_record(w, &ev), 0);
	}
	assert_int_equal(vmpt_perf_writer_close(w), 0);

	/* What a failed write leaves: data_size 0, a cut record, no features */
	struct vmpt_perf_data pd;
	assert_int_equal(vmpt_perf_open(&pd, path), 0);
	uint64_t data_offset = pd.data_offset, cut = 0;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	vmpt_perf_cursor_init(&pd, &cur);
	int records = 0;
	while (vmpt_perf_next(&pd, &cur, &ev) == 1) {
		if (ev.type == PERF_RECORD_COMM && ev.comm.tid == 130)
			cut = ev.offset + 5;
		if (!cut)
			records++;
	}
	vmpt_perf_close(&pd);
	assert_true(cut > data_offset);
	int fd = open(path, O_RDWR);
	uint8_t zero[8 + 32] = { 0 };
	assert_int_equal(pwrite(fd, zero, 8, 48), 8);
	assert_int_equal(pwrite(fd, zero + 8, 32, 72), 32);
	assert_int_equal(ftruncate(fd, (off_t)cut), 0);
	close(fd);

	uint64_t kept;
	assert_int_equal(vmpt_perf_salvage(path, &kept), records);
	assert_int_equal(kept, cut - 5 - data_offset);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal((uint64_t)sb.st_size, data_offset + kept);
	assert_int_equal(vmpt_perf_open(&pd, path), 0);
	assert_int_equal(pd.data_size, kept);
	vmpt_perf_cursor_init(&pd, &cur);
	int n = 0, last_tid = -1;
	while (vmpt_perf_next(&pd, &cur, &ev) == 1) {
		n++;
		if (ev.type == PERF_RECORD_COMM)
			last_tid = (int)ev.comm.tid;
	}
	vmpt_perf_close(&pd);
	assert_int_equal(n, records);
	assert_int_equal(last_tid, 129);

	assert_int_equal(vmpt_perf_salvage("/dev/null", &kept), -VMPT_ERR_FORMAT);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const char *src = getenv("SRCDIR");
	snprintf(fixtures, sizeof(fixtures), "%s/host/tests/fixtures", src ? src : ".");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_process),
		cmocka_unit_test(test_kernel),
		cmocka_unit_test(test_salvage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
