/* SPDX-License-Identifier: MIT */
/* A compact /proc/kcore: an ELF core file with only the kernel text and
 * the module area, the way perf's kcore_dir keeps it (perf record
 * --kcore), so guest kernel code can be decoded after the guest is gone.
 */
#include "agent.h"
#include "vmpt/error.h"
#include "vmpt/kcore.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE 4096ull

static uint64_t sym_addr(const char *kallsyms, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = kallsyms; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p) {
		char *end;
		uint64_t addr = strtoull(p, &end, 16);

		/* "ffffffff81000000 T _stext" */
		if (end[0] != ' ' || !end[1] || end[2] != ' ')
			continue;
		if (!strncmp(end + 3, name, n) && (end[3 + n] == '\n' || !end[3 + n]))
			return addr;
	}
	return 0;
}

/* The kernel text [_stext, _etext) and the span of all modules. */
static int wanted_ranges(struct vmpt_kcore_range r[2], const char **why)
{
	uint8_t *ks;
	size_t ks_size;
	int ret;

	ret = agent_read_file("/proc/kallsyms", &ks, &ks_size);
	if (ret) {
		*why = "reading /proc/kallsyms";
		return ret;
	}
	r[0].start = sym_addr((char *)ks, "_stext");
	r[0].end = sym_addr((char *)ks, "_etext");
	free(ks);
	if (!r[0].start || r[0].end <= r[0].start) {
		*why = "no _stext/_etext addresses in /proc/kallsyms (kptr_restrict, not root?)";
		return -EPERM;
	}
	r[0].start &= ~(PAGE - 1);
	r[0].end = (r[0].end + PAGE - 1) & ~(PAGE - 1);
	vmpt_kcore_module_range("/proc/modules", &r[1]);
	return 0;
}

static int pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	while (n) {
		ssize_t got = pread(fd, buf, n, (off_t)off);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got < 0 ? -errno : -EIO;
		buf = (uint8_t *)buf + got;
		n -= (size_t)got;
		off += (uint64_t)got;
	}
	return 0;
}

int agent_kcore_build(uint8_t **data, size_t *size, const char **why)
{
	struct vmpt_kcore_range want[2];
	size_t nr_out, total;
	Elf64_Ehdr eh;
	Elf64_Phdr *ph = NULL, out_ph[8];
	uint8_t *buf = NULL;
	uint64_t off;
	int fd, ret;

	ret = wanted_ranges(want, why);
	if (ret)
		return ret;
	fd = open("/proc/kcore", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*why = "opening /proc/kcore";
		return -errno;
	}
	*why = "reading /proc/kcore";
	ret = pread_all(fd, &eh, sizeof(eh), 0);
	if (ret)
		goto out;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || !eh.e_phnum) {
		*why = "/proc/kcore is not a 64-bit ELF core file";
		ret = -EINVAL;
		goto out;
	}
	ph = calloc(eh.e_phnum, sizeof(*ph));
	if (!ph) {
		ret = -ENOMEM;
		goto out;
	}
	ret = pread_all(fd, ph, eh.e_phnum * sizeof(*ph), eh.e_phoff);
	if (ret)
		goto out;
	nr_out = vmpt_kcore_clip(ph, eh.e_phnum, want, 2, out_ph, 8);
	if (!nr_out) {
		*why = "no /proc/kcore segment holds the kernel text";
		ret = -ENOENT;
		goto out;
	}
	total = sizeof(eh) + nr_out * sizeof(Elf64_Phdr);
	for (size_t i = 0; i < nr_out; i++)
		total += out_ph[i].p_filesz;
	buf = malloc(total);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	off = sizeof(eh) + nr_out * sizeof(Elf64_Phdr);
	for (size_t i = 0; i < nr_out; i++) {
		ret = pread_all(fd, buf + off, out_ph[i].p_filesz, out_ph[i].p_offset);
		if (ret)
			goto out;
		out_ph[i].p_offset = off;
		out_ph[i].p_align = PAGE;
		off += out_ph[i].p_filesz;
	}
	eh.e_phoff = sizeof(eh);
	eh.e_phnum = (Elf64_Half)nr_out;
	eh.e_shoff = 0;
	eh.e_shnum = 0;
	eh.e_shstrndx = 0;
	memcpy(buf, &eh, sizeof(eh));
	memcpy(buf + sizeof(eh), out_ph, nr_out * sizeof(Elf64_Phdr));
	*data = buf;
	*size = total;
	buf = NULL;
out:
	free(buf);
	free(ph);
	close(fd);
	return ret;
}

/* kcore DIR: perf's kcore_dir, cut the way vmpt record --kcore cuts the
 * host's.
 */
int agent_kcore(int argc, char **argv)
{
	struct vmpt_kcore_stats st;
	char err[1024] = "";
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: vmpt-agent kcore DIR\n");
		return 2;
	}
	ret = vmpt_kcore_copy("/proc", argv[1], &st, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "vmpt-agent: kcore: %s\n", err[0] ? err : vmpt_strerror(ret));
		return 1;
	}
	return 0;
}
