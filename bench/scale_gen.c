/* SPDX-License-Identifier: MIT */
/* scale-gen KIND N OUT: recordings that are large where a hostile or just
 * big input makes a naive reader quadratic (bench/scale_run.sh):
 *   ids      one event with N ids, N COMM records each naming another id
 *   maps     N processes mapping the same libc (N MMAP2 records)
 *   kcore    OUT/ a directory recording whose kcore_dir/kcore has N PT_LOADs,
 *            in descending address order (a guest may send its own kcore)
 *   forks    N processes, each forked by the one before (N FORK records)
 *   execs    one process exec'ing N times, mapping libc after each
 *   samples  one process mapping N pieces of a binary missing here and a
 *            cpu-clock sample in each (every sample named from its mapping)
 */
#include "vmpt/error.h"
#include "vmpt/perf_data.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

static int die(const char *what, int ret)
{
	fprintf(stderr, "scale-gen: %s: %s\n", what, vmpt_strerror(ret));
	return 1;
}

static int kcore(const char *dir, size_t n)
{
	char path[4096];
	Elf64_Ehdr eh = { .e_type = ET_CORE, .e_machine = EM_X86_64,
			  .e_version = EV_CURRENT, .e_phoff = sizeof(Elf64_Ehdr),
			  .e_ehsize = sizeof(Elf64_Ehdr),
			  .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = PN_XNUM };
	Elf64_Shdr sh0 = { 0 };
	static uint8_t page[4096];
	uint64_t data = sizeof(eh) + n * sizeof(Elf64_Phdr);
	FILE *f;

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	/* More than 65535 headers: the count is in section 0's sh_info. */
	eh.e_shoff = data + sizeof(page);
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 1;
	sh0.sh_info = (uint32_t)n;
	snprintf(path, sizeof(path), "%s/kcore_dir", dir);
	mkdir(dir, 0755);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/kcore_dir/kcore", dir);
	f = fopen(path, "w");
	if (!f)
		return 1;
	fwrite(&eh, sizeof(eh), 1, f);
	for (size_t i = 0; i < n; i++) {
		/* Every segment shows the same page of the file. */
		Elf64_Phdr ph = { PT_LOAD, PF_R | PF_X, data,
				  0xffffffff81000000ull + (n - i) * 0x2000, 0,
				  sizeof(page), sizeof(page), 4096 };

		fwrite(&ph, sizeof(ph), 1, f);
	}
	memset(page, 0x90, sizeof(page));
	fwrite(page, sizeof(page), 1, f);
	fwrite(&sh0, sizeof(sh0), 1, f);
	return fclose(f) ? 1 : 0;
}

/* ev becomes pid's MMAP2 of libc's code. */
static void libc_mmap(struct vmpt_perf_event *ev, uint32_t pid)
{
	ev->type = PERF_RECORD_MMAP2;
	ev->mmap.pid = ev->mmap.tid = pid;
	ev->mmap.start = 0x7f0000000000ull;
	ev->mmap.len = 0x200000;
	ev->mmap.pgoff = 0x26000;
	ev->mmap.prot = PROT_READ | PROT_EXEC;
	ev->mmap.flags = MAP_PRIVATE;
	ev->mmap.filename = LIBC;
}

/* N mappings of a binary missing here, then a cpu-clock sample in each
 * (its own event, the sideband's id).
 */
static int samples(struct vmpt_perf_writer *w, const struct perf_event_attr *sb,
		   uint64_t sb_id, size_t n)
{
	struct perf_event_attr attr = *sb;
	uint64_t id = 7;
	int ret;

	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = 100000;
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			   PERF_SAMPLE_PERIOD | PERF_SAMPLE_IDENTIFIER;
	attr.mmap = attr.comm = attr.task = 0;
	ret = vmpt_perf_writer_add_attr(w, &attr, "cpu-clock:u", &id, 1);
	for (size_t i = 0; !ret && i < 2 * n; i++) {
		struct vmpt_perf_event ev = { .misc = PERF_RECORD_MISC_USER };
		uint64_t start = 0x10000000ull + (i % n) * 0x10000;

		ev.sid.present = sb->sample_type & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
						    PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER);
		ev.sid.pid = ev.sid.tid = 1000;
		ev.sid.time = 1000 + i;
		ev.sid.id = sb_id;
		if (i < n) {
			ev.type = PERF_RECORD_MMAP2;
			ev.mmap.pid = ev.mmap.tid = 1000;
			ev.mmap.start = start;
			ev.mmap.len = 0x10000;
			ev.mmap.pgoff = (i % n) * 0x10000;
			ev.mmap.prot = PROT_READ | PROT_EXEC;
			ev.mmap.flags = MAP_PRIVATE;
			ev.mmap.filename = "/nonexistent/libscale.so";
		} else {
			ev.type = PERF_RECORD_SAMPLE;
			ev.attr = NULL;
			ev.sid.present = attr.sample_type;
			ev.sid.id = id;
			ev.sample.ip = start + 0x123;
			ev.sample.period = 100000;
		}
		ret = vmpt_perf_write_record(w, &ev);
	}
	return ret;
}

int main(int argc, char **argv)
{
	struct vmpt_perf_writer_opts opts = { 0 };
	struct vmpt_perf_writer *w;
	struct perf_event_attr attr;
	uint64_t *ids;
	size_t n;
	int ret;

	if (argc != 4) {
		fprintf(stderr, "usage: scale-gen ids|maps|kcore|forks|execs|samples N OUT\n");
		return 2;
	}
	n = strtoul(argv[2], NULL, 0);
	opts.dir = !strcmp(argv[1], "kcore");
	if (opts.dir && kcore(argv[3], n))
		return die(argv[3], -VMPT_ERR_IO);
	ids = calloc(n + 1, sizeof(*ids));
	for (size_t i = 0; i <= n; i++)
		ids[i] = 1000 + 7 * i;
	vmpt_perf_sideband_attr(&attr);
	ret = vmpt_perf_writer_open(&w, argv[3], &opts);
	if (ret)
		return die(argv[3], ret);
	ret = vmpt_perf_writer_add_attr(w, &attr, "dummy", ids,
					!strcmp(argv[1], "ids") ? n : 1);
	if (!ret && !strcmp(argv[1], "samples"))
		ret = samples(w, &attr, ids[0], n);
	for (size_t i = 0; !ret && i < (opts.dir || !strcmp(argv[1], "samples") ? 0 : n); i++) {
		struct vmpt_perf_event ev = { .misc = PERF_RECORD_MISC_USER };
		uint32_t pid = 1000 + (uint32_t)i;

		ev.sid.present = attr.sample_type & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
						     PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER);
		ev.sid.pid = ev.sid.tid = pid;
		ev.sid.time = 1000 + i;
		ev.sid.id = !strcmp(argv[1], "ids") ? ids[i] : ids[0];
		if (!strcmp(argv[1], "forks")) {
			ev.type = PERF_RECORD_FORK;
			ev.fork.pid = ev.fork.tid = pid;
			ev.fork.ppid = ev.fork.ptid = pid - 1;
		} else if (!strcmp(argv[1], "execs")) {
			ev.sid.pid = ev.sid.tid = 1000;
			ev.sid.time = 1000 + 2 * i;
			ev.type = PERF_RECORD_COMM;
			ev.misc |= PERF_RECORD_MISC_COMM_EXEC;
			ev.comm.pid = ev.comm.tid = 1000;
			ev.comm.comm = "scale";
			ret = vmpt_perf_write_record(w, &ev);
			ev.misc = PERF_RECORD_MISC_USER;
			ev.sid.time++;
			libc_mmap(&ev, 1000);
		} else if (!strcmp(argv[1], "maps")) {
			libc_mmap(&ev, pid);
		} else {
			ev.type = PERF_RECORD_COMM;
			ev.comm.pid = ev.comm.tid = pid;
			ev.comm.comm = "scale";
		}
		ret = vmpt_perf_write_record(w, &ev);
	}
	if (!ret)
		ret = vmpt_perf_writer_close(w);
	free(ids);
	return ret ? die(argv[3], ret) : 0;
}
