/* SPDX-License-Identifier: MIT */
/* ELF build-id notes: see include/vmpt/build_id.h.  Every size read from
 * the file is checked against the file: binaries come from anywhere.
 */
#include "vmpt/build_id.h"
#include "vmpt/error.h"
#include "vmpt/path.h"
#include "vmpt/file.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

static int note_build_id(const uint8_t *n, size_t size, char hex[41])
{
	static const char digits[] = "0123456789abcdef";

	while (size >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		size_t name, desc, len;

		memcpy(&nh, n, sizeof(nh));
		name = (nh.n_namesz + 3) & ~(size_t)3;
		desc = (nh.n_descsz + 3) & ~(size_t)3;
		if (name > size - sizeof(nh) || desc > size - sizeof(nh) - name)
			return -VMPT_ERR_FORMAT;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(n + sizeof(nh), "GNU", 4) && nh.n_descsz) {
			const uint8_t *id = n + sizeof(nh) + name;

			len = nh.n_descsz < 20 ? nh.n_descsz : 20;
			for (size_t i = 0; i < len; i++) {
				hex[2 * i] = digits[id[i] >> 4];
				hex[2 * i + 1] = digits[id[i] & 15];
			}
			hex[2 * len] = 0;
			return 0;
		}
		len = sizeof(nh) + name + desc;
		n += len;
		size -= len;
	}
	return -VMPT_ERR_NOT_FOUND;
}

int vmpt_build_id_of_buffer(const uint8_t *d, size_t size, char hex[41])
{
	const Elf64_Ehdr *eh = (const void *)d;
	Elf64_Ehdr e;

	if (size < sizeof(e) || memcmp(d, ELFMAG, SELFMAG) || d[EI_CLASS] != ELFCLASS64)
		return -VMPT_ERR_FORMAT;
	memcpy(&e, eh, sizeof(e));
	if (e.e_phentsize != sizeof(Elf64_Phdr) || e.e_phoff > size ||
	    (uint64_t)e.e_phnum * sizeof(Elf64_Phdr) > size - e.e_phoff)
		return -VMPT_ERR_FORMAT;
	for (unsigned i = 0; i < e.e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, d + e.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_NOTE || ph.p_offset > size ||
		    ph.p_filesz > size - ph.p_offset)
			continue;
		if (note_build_id(d + ph.p_offset, ph.p_filesz, hex) == 0)
			return 0;
	}
	return -VMPT_ERR_NOT_FOUND;
}

int vmpt_build_id_of_file(const char *path, char hex[41])
{
	struct vmpt_file f;
	int ret = vmpt_path_map(&f, NULL, path);	/* no FIFO */

	if (ret < 0)
		return ret;
	ret = vmpt_build_id_of_buffer(f.data, f.size, hex);
	vmpt_file_unmap(&f);
	return ret;
}

int vmpt_build_id_running_kernel(char hex[41])
{
	uint8_t notes[4096];
	size_t size = 0;
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -VMPT_ERR_NOT_FOUND;
	while (size < sizeof(notes) && (n = read(fd, notes + size, sizeof(notes) - size)) > 0)
		size += (size_t)n;
	close(fd);
	return note_build_id(notes, size, hex);
}

int vmpt_build_id_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	while (la > 0 && a[la - 1] == '0')
		la--;
	while (lb > 0 && b[lb - 1] == '0')
		lb--;
	return la == lb && !strncmp(a, b, la);
}

int vmpt_build_id_cache_dir(char *buf, size_t size)
{
	const char *dir = getenv("PERF_BUILDID_DIR");
	const char *home = getenv("HOME");
	int n;

	if (dir && *dir)
		n = snprintf(buf, size, "%s", dir);
	else if (home && *home)
		n = snprintf(buf, size, "%s/.debug", home);
	else
		return -VMPT_ERR_NOT_FOUND;
	return n < 0 || (size_t)n >= size ? -VMPT_ERR_INVAL : 0;
}

int vmpt_vdso_image(const uint8_t **data, size_t *size)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Phdr *ph;
	uint64_t end;

	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return -VMPT_ERR_NOT_FOUND;
	end = eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
	ph = (const Elf64_Phdr *)((const uint8_t *)eh + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > end)
			end = ph[i].p_offset + ph[i].p_filesz;
	*data = (const uint8_t *)eh;
	*size = (size_t)end;
	return 0;
}
