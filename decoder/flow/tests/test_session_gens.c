/* SPDX-License-Identifier: MIT */
/* A process's generations of code on a written recording: an exec starts
 * one, and so does code mapped over code mapped since (a library unloaded
 * and another loaded at its address), in whichever generation that is;
 * the same mapping again, anonymous code grown, data over code and code
 * beside code start none.  Each time's address space names and decodes
 * its own mapping there.
 */
#include "vmpt/error.h"
#include "vmpt/perf_data.h"
#include "vmpt/session.h"

#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define AT_X 0x7e0000000000ull	/* self's code, then libc's */
#define AT_Y 0x7d0000000000ull	/* anonymous code, grown */
#define AT_Z 0x7c0000000000ull	/* a missing library, then another */

static char self[4096];

/* The file offset of path's first executable PT_LOAD (0: none). */
static uint64_t code_offset(const char *path)
{
	FILE *f = fopen(path, "rb");
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	uint64_t off = 0;

	if (!f)
		return 0;
	if (fread(&eh, sizeof(eh), 1, f) == 1)
		for (int i = 0; !off && i < eh.e_phnum; i++)
			if (!fseek(f, (long)(eh.e_phoff + i * sizeof(ph)), SEEK_SET) &&
			    fread(&ph, sizeof(ph), 1, f) == 1 && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X))
				off = ph.p_offset & ~0xfffull;
	fclose(f);
	return off;
}

static int mmap2(struct vmpt_perf_writer *w, struct vmpt_perf_event *ev, uint64_t time,
		 uint64_t start, uint64_t len, uint64_t pgoff, uint32_t prot, const char *name)
{
	ev->type = PERF_RECORD_MMAP2;
	ev->misc = PERF_RECORD_MISC_USER;
	ev->sid.time = time;
	ev->mmap.pid = ev->mmap.tid = 100;
	ev->mmap.start = start;
	ev->mmap.len = len;
	ev->mmap.pgoff = pgoff;
	ev->mmap.prot = prot;
	ev->mmap.flags = MAP_PRIVATE;
	ev->mmap.filename = name;
	return vmpt_perf_write_record(w, ev);
}

/* remaps: that many libraries more at AT_Z, each over the one before. */
static void write_recording(const char *path, int remaps)
{
	struct vmpt_perf_writer_opts opts = { 0 };
	struct vmpt_perf_writer *w;
	struct perf_event_attr attr;
	struct vmpt_perf_event ev = { .type = PERF_RECORD_COMM };
	uint64_t id = 1000;
	uint32_t rx = PROT_READ | PROT_EXEC;

	vmpt_perf_sideband_attr(&attr);
	assert_int_equal(vmpt_perf_writer_open(&w, path, &opts), 0);
	assert_int_equal(vmpt_perf_writer_add_attr(w, &attr, "dummy:u", &id, 1), 0);
	ev.sid.present = attr.sample_type & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
					     PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER);
	ev.sid.pid = ev.sid.tid = 100;
	ev.sid.id = id;
	ev.sid.time = 10;
	ev.misc = PERF_RECORD_MISC_USER | PERF_RECORD_MISC_COMM_EXEC;
	ev.comm.pid = ev.comm.tid = 100;
	ev.comm.comm = "prog";
	assert_int_equal(vmpt_perf_write_record(w, &ev), 0);
	assert_int_equal(mmap2(w, &ev, 20, AT_X, 0x1000, code_offset(self), rx, self), 0);
	assert_int_equal(mmap2(w, &ev, 21, AT_X, 0x1000, code_offset(self), rx, self), 0);
	assert_int_equal(mmap2(w, &ev, 22, AT_X, 0x4000, 0, PROT_READ, self), 0);
	assert_int_equal(mmap2(w, &ev, 23, AT_Y, 0x1000, 0, rx, "//anon"), 0);
	assert_int_equal(mmap2(w, &ev, 24, AT_Y, 0x3000, 0, rx, "//anon"), 0);
	assert_int_equal(mmap2(w, &ev, 25, AT_Z, 0x1000, 0, rx, "/nonexistent/libc1.so"), 0);
	assert_int_equal(mmap2(w, &ev, 26, AT_Z + 0x1000, 0x1000, 0, rx, "/nonexistent/libc2.so"), 0);
	assert_int_equal(mmap2(w, &ev, 30, AT_X, 0x1000, code_offset(LIBC), rx, LIBC), 0);
	assert_int_equal(mmap2(w, &ev, 40, AT_Z, 0x2000, 0, rx, "/nonexistent/libd.so"), 0);
	assert_int_equal(mmap2(w, &ev, 50, AT_Y + 0x1000, 0x1000, 0, rx, "/nonexistent/libf.so"), 0);
	assert_int_equal(mmap2(w, &ev, 60, AT_Y, 0x1000, 0, rx, "//anon"), 0);
	for (int i = 0; i < remaps; i++)
		assert_int_equal(mmap2(w, &ev, 100 + (uint64_t)i, AT_Z, 0x1000, 0, rx,
				       i & 1 ? "/nonexistent/libo.so" : "/nonexistent/libe.so"), 0);
	assert_int_equal(vmpt_perf_writer_close(w), 0);
}

static const char *map_name(const struct vmpt_session *s, uint64_t time, uint64_t addr)
{
	struct vmpt_map_ref map;
	uint64_t space = vmpt_session_space(s, 100, time);

	return vmpt_session_map_of((void *)s, 100, space, addr, &map) < 0 ? "" : map.name;
}

static const char *code_name(const struct vmpt_session *s, uint64_t time, uint64_t addr)
{
	struct vmpt_asid asid = { VMPT_MACHINE_HOST, vmpt_session_space(s, 100, time) };
	const struct vmpt_section *sec = vmpt_image_find(s->image, &asid, addr);

	return sec ? sec->name : "";
}

static const struct vmpt_session_proc *open_recording(struct vmpt_session *s, int remaps)
{
	char path[] = "/tmp/vmpt-gens-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	write_recording(path, remaps);
	assert_int_equal(vmpt_session_open(s, path, NULL), 0);
	unlink(path);
	for (size_t i = 0; i < s->n_procs; i++)
		if (s->procs[i].pid == 100)
			return &s->procs[i];
	fail();
	return NULL;
}

static void test_generations(void **state)
{
	struct vmpt_session s;
	const struct vmpt_session_proc *p = open_recording(&s, 0);

	(void)state;
	/* The exec, libc over self's code, libd over libc1 (mapped in the
	 * generation before), libf amid the anonymous code.
	 */
	assert_int_equal(p->n_gens, 4);
	assert_int_equal(p->gens[1].time, 30);
	assert_int_equal(p->gens[2].time, 40);
	assert_int_equal(p->gens[3].time, 50);
	assert_int_equal(vmpt_session_space(&s, 100, 29), vmpt_pid_space(100, 1));
	assert_int_equal(vmpt_session_space(&s, 100, 30), vmpt_pid_space(100, 2));
	assert_int_equal(vmpt_session_space(&s, 100, 45), vmpt_pid_space(100, 3));
	/* Named and decoded from the mapping of their time. */
	assert_string_equal(map_name(&s, 29, AT_X + 0x10), self);
	assert_string_equal(code_name(&s, 29, AT_X + 0x10), self);
	assert_string_equal(map_name(&s, 35, AT_X + 0x10), LIBC);
	assert_string_equal(code_name(&s, 35, AT_X + 0x10), LIBC);
	assert_string_equal(map_name(&s, 45, AT_X + 0x10), LIBC);
	assert_string_equal(code_name(&s, 45, AT_X + 0x10), LIBC);
	assert_string_equal(map_name(&s, 35, AT_Z + 0x10), "/nonexistent/libc1.so");
	assert_string_equal(map_name(&s, 35, AT_Z + 0x1010), "/nonexistent/libc2.so");
	assert_string_equal(map_name(&s, 45, AT_Z + 0x1010), "/nonexistent/libd.so");
	assert_string_equal(map_name(&s, 45, AT_Y + 0x2010), "/tmp/perf-100.map");
	assert_string_equal(map_name(&s, 45, AT_Y + 0x1010), "/tmp/perf-100.map");
	assert_string_equal(map_name(&s, 55, AT_Y + 0x1010), "/nonexistent/libf.so");
	assert_string_equal(map_name(&s, 65, AT_Y + 0x10), "/tmp/perf-100.map");
	assert_string_equal(map_name(&s, 65, AT_Y + 0x2010), "/tmp/perf-100.map");
	vmpt_session_close(&s);
}

/* A library loaded over another again and again: 32 generations after
 * the exec, then the last mapping wins; the exec's code stays in sight
 * (lookups see through 64 spaces).
 */
static void test_many_remaps(void **state)
{
	struct vmpt_session s;
	const struct vmpt_session_proc *p = open_recording(&s, 100);

	(void)state;
	assert_int_equal(p->n_gens, 33);
	assert_string_equal(code_name(&s, 1000, AT_X + 0x10), LIBC);
	assert_string_equal(map_name(&s, 1000, AT_X + 0x10), LIBC);
	assert_string_equal(map_name(&s, 1000, AT_Z + 0x10), "/nonexistent/libo.so");
	assert_string_equal(map_name(&s, 120, AT_Z + 0x10), "/nonexistent/libe.so");
	vmpt_session_close(&s);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generations),
		cmocka_unit_test(test_many_remaps),
	};
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	(void)argc;
	(void)argv;
	if (n <= 0 || access(LIBC, R_OK)) {
		printf("SKIP: no /proc/self/exe or %s\n", LIBC);
		return 77;
	}
	self[n] = 0;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
