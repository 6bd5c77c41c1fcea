/* SPDX-License-Identifier: MIT */
#include "vmpt/kcore.h"
#include "vmpt/error.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE 4096ULL

/* Kernel text from kallsyms: lowest to highest core-kernel text symbol
 * (module symbols carry a "[module]" column and are left out). */
static int kernel_text(const char *path, struct vmpt_kcore_range *text, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -VMPT_ERR_NOT_FOUND;
	}
	char line[512];
	uint64_t lo = UINT64_MAX, hi = 0, etext = 0;
	while (fgets(line, sizeof(line), f)) {
		uint64_t addr;
		char type, name[256];
		int used = 0;
		if (sscanf(line, "%" SCNx64 " %c %255s%n", &addr, &type, name, &used) != 3)
			continue;
		if (strchr(line + used, '['))
			continue;
		if (!strcmp(name, "_etext"))
			etext = addr;
		if ((type != 'T' && type != 't') || !addr)
			continue;
		if (addr < lo)
			lo = addr;
		if (addr > hi)
			hi = addr;
	}
	fclose(f);
	if (lo == UINT64_MAX) {
		snprintf(err, errlen, "%s: no text symbol addresses (all zero: "
			 "kptr_restrict hides them; run as root or set "
			 "/proc/sys/kernel/kptr_restrict to 0)", path);
		return -VMPT_ERR_PERM;
	}
	if (etext > hi)
		hi = etext;
	text->start = lo & ~(PAGE - 1);
	text->end = (hi + PAGE) & ~(PAGE - 1);
	return 0;
}

int vmpt_kcore_module_range(const char *path, struct vmpt_kcore_range *mods)
{
	FILE *f = fopen(path, "re");
	mods->start = mods->end = 0;
	if (!f)
		return 0;	/* a kernel without modules */
	char line[1024];
	uint64_t lo = UINT64_MAX, hi = 0;
	/* "name size refs deps state 0xffffffffc0000000" */
	while (fgets(line, sizeof(line), f)) {
		char name[128], deps[512], state[32];
		unsigned long size;
		int refs;
		uint64_t addr;
		if (sscanf(line, "%127s %lu %d %511s %31s %" SCNx64, name, &size, &refs,
			   deps, state, &addr) != 6 || !addr)
			continue;
		if (addr < lo)
			lo = addr;
		if (addr + size > hi)
			hi = addr + size;
	}
	fclose(f);
	if (lo == UINT64_MAX)
		return 0;
	mods->start = lo & ~(PAGE - 1);
	mods->end = (hi + PAGE - 1) & ~(PAGE - 1);
	return 1;
}

unsigned vmpt_kcore_clip(const Elf64_Phdr *ph, unsigned nph,
			 const struct vmpt_kcore_range *want, unsigned nwant,
			 Elf64_Phdr *out, unsigned max)
{
	unsigned n = 0;
	for (unsigned w = 0; w < nwant; w++) {
		if (want[w].start == want[w].end)
			continue;
		for (unsigned i = 0; i < nph && n < max; i++) {
			if (ph[i].p_type != PT_LOAD)
				continue;
			uint64_t s = ph[i].p_vaddr, e = ph[i].p_vaddr + ph[i].p_filesz;
			if (s < want[w].start)
				s = want[w].start;
			if (e > want[w].end)
				e = want[w].end;
			if (s >= e)
				continue;
			out[n] = ph[i];
			out[n].p_offset = ph[i].p_offset + (s - ph[i].p_vaddr);
			out[n].p_paddr = ph[i].p_paddr ? ph[i].p_paddr + (s - ph[i].p_vaddr) : 0;
			out[n].p_vaddr = s;
			out[n].p_filesz = out[n].p_memsz = e - s;
			n++;
		}
	}
	return n;
}

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -VMPT_ERR_NOT_FOUND;
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0400);
	if (out < 0) {
		close(in);
		return -VMPT_ERR_IO;
	}
	char buf[65536];
	ssize_t n;
	int rc = 0;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			rc = -VMPT_ERR_IO;
			break;
		}
	if (n < 0)
		rc = -VMPT_ERR_IO;
	close(in);
	if (close(out))
		rc = -VMPT_ERR_IO;
	return rc;
}

#define MAX_SEGS 64

int vmpt_kcore_copy(const char *procfs_root, const char *dir,
		    struct vmpt_kcore_stats *stats, char *err, size_t errlen)
{
	char path[4200], kallsyms[4200], modules[4200];
	memset(stats, 0, sizeof(*stats));
	snprintf(path, sizeof(path), "%s/kcore", procfs_root);
	snprintf(kallsyms, sizeof(kallsyms), "%s/kallsyms", procfs_root);
	snprintf(modules, sizeof(modules), "%s/modules", procfs_root);
	if (mkdir(dir, 0700) && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -VMPT_ERR_IO;
	}
	/* Copy the symbol files first: the text ranges come from the copies,
	 * so the three files describe one moment. */
	char out[4400];
	snprintf(out, sizeof(out), "%s/kallsyms", dir);
	int rc = copy_file(kallsyms, out);
	if (rc) {
		snprintf(err, errlen, "%s: cannot copy to %s", kallsyms, out);
		return rc;
	}
	struct vmpt_kcore_range text, mods;
	if ((rc = kernel_text(out, &text, err, errlen)))
		return rc;
	snprintf(out, sizeof(out), "%s/modules", dir);
	if (copy_file(modules, out) == -VMPT_ERR_NOT_FOUND) {
		/* perf wants the file; a kernel without modules has none */
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0400);
		if (fd >= 0)
			close(fd);
	}
	vmpt_kcore_module_range(out, &mods);

	int in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		snprintf(err, errlen, "%s: %s%s", path, strerror(errno),
			 errno == ENOENT ? " (kernel built without CONFIG_PROC_KCORE)" : "");
		return errno == ENOENT ? -VMPT_ERR_NOT_FOUND : -VMPT_ERR_PERM;
	}
	Elf64_Ehdr eh;
	Elf64_Phdr ph[256];
	if (pread(in, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256 ||
	    pread(in, ph, eh.e_phnum * sizeof(Elf64_Phdr), (off_t)eh.e_phoff) !=
		    (ssize_t)(eh.e_phnum * sizeof(Elf64_Phdr))) {
		snprintf(err, errlen, "%s: offset 0: not a 64-bit ELF core", path);
		close(in);
		return -VMPT_ERR_FORMAT;
	}
	Elf64_Phdr segs[MAX_SEGS];
	const struct vmpt_kcore_range want[2] = { text, mods };
	unsigned n = vmpt_kcore_clip(ph, eh.e_phnum, want, 2, segs, MAX_SEGS);
	for (unsigned i = 0; i < n; i++)
		segs[i].p_flags = PF_R | PF_X;
	if (!n) {
		snprintf(err, errlen, "%s: no segment covers the kernel text "
			 "0x%" PRIx64 "-0x%" PRIx64, path, text.start, text.end);
		close(in);
		return -VMPT_ERR_NOT_FOUND;
	}
	snprintf(out, sizeof(out), "%s/kcore", dir);
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0400);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", out, strerror(errno));
		close(in);
		return -VMPT_ERR_IO;
	}
	Elf64_Ehdr oh = eh;
	oh.e_phoff = sizeof(oh);
	oh.e_phnum = (Elf64_Half)n;
	oh.e_shoff = 0;
	oh.e_shnum = 0;
	oh.e_shstrndx = 0;
	uint64_t pos = (sizeof(oh) + n * sizeof(Elf64_Phdr) + PAGE - 1) & ~(PAGE - 1);
	uint64_t src[MAX_SEGS];
	for (unsigned i = 0; i < n; i++) {
		src[i] = segs[i].p_offset;
		segs[i].p_offset = pos;
		pos += (segs[i].p_filesz + PAGE - 1) & ~(PAGE - 1);
	}
	rc = 0;
	if (pwrite(fd, &oh, sizeof(oh), 0) != sizeof(oh) ||
	    pwrite(fd, segs, n * sizeof(Elf64_Phdr), sizeof(oh)) !=
		    (ssize_t)(n * sizeof(Elf64_Phdr)))
		rc = -VMPT_ERR_IO;
	size_t buflen = 1 << 20;
	uint8_t *buf = malloc(buflen);
	if (!buf)
		rc = -VMPT_ERR_NOMEM;
	for (unsigned i = 0; i < n && !rc; i++) {
		for (uint64_t done = 0; done < segs[i].p_filesz && !rc;) {
			size_t chunk = segs[i].p_filesz - done < buflen
					       ? (size_t)(segs[i].p_filesz - done) : buflen;
			ssize_t got = pread(in, buf, chunk, (off_t)(src[i] + done));
			if (got <= 0) {
				snprintf(err, errlen, "%s: offset 0x%" PRIx64 ": %s", path,
					 src[i] + done, got < 0 ? strerror(errno) : "short read");
				rc = -VMPT_ERR_IO;
				break;
			}
			if (pwrite(fd, buf, (size_t)got, (off_t)(segs[i].p_offset + done)) != got) {
				snprintf(err, errlen, "%s: %s", out, strerror(errno));
				rc = -VMPT_ERR_IO;
				break;
			}
			done += (uint64_t)got;
			stats->bytes += (uint64_t)got;
		}
	}
	free(buf);
	if (close(fd) && !rc) {
		snprintf(err, errlen, "%s: %s", out, strerror(errno));
		rc = -VMPT_ERR_IO;
	}
	close(in);
	stats->text_start = text.start;
	stats->text_end = text.end;
	stats->modules_start = mods.start;
	stats->modules_end = mods.end;
	stats->nr_segments = n;
	return rc;
}
