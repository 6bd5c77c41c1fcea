/* SPDX-License-Identifier: MIT */
/* Finding separate debug files where perf and gdb find them. */
#include "vmpt/debug_file.h"
#include "vmpt/build_id.h"
#include "vmpt/debuginfod.h"
#include "vmpt/error.h"
#include "../lib/vmpt_elf.h"
#include "vmpt/file.h"

#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The GNU build-id note among an ELF file's sections. */
static int section_build_id(Elf *elf, char hex[41])
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off))) {
			const uint8_t *desc = (const uint8_t *)d->d_buf + desc_off;
			size_t n = nh.n_descsz < 20 ? nh.n_descsz : 20;

			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((const char *)d->d_buf + name_off, "GNU", 4) || !n)
				continue;
			for (size_t i = 0; i < n; i++)
				snprintf(hex + 2 * i, 3, "%02x", desc[i]);
			return 0;
		}
	}
	return -VMPT_ERR_NOT_FOUND;
}

int vmpt_debug_file_build_id(const uint8_t *data, size_t size, char hex[41])
{
	Elf *elf;
	int ret;

	if (vmpt_build_id_of_buffer(data, size, hex) == 0)
		return 0;
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)data, size);
	if (!elf)
		return -VMPT_ERR_NOT_FOUND;
	ret = elf_kind(elf) == ELF_K_ELF ? section_build_id(elf, hex) : -VMPT_ERR_NOT_FOUND;
	elf_end(elf);
	return ret;
}

/* The file name .gnu_debuglink holds (a NUL-terminated name, padding and
 * a CRC): 0, or -VMPT_ERR_NOT_FOUND.
 */
static int debuglink(Elf *elf, char *name, size_t cap)
{
	GElf_Shdr sh;
	Elf_Scn *scn = vmpt_elf_section(elf, ".gnu_debuglink", &sh);
	Elf_Data *d = scn && sh.sh_type != SHT_NOBITS ? elf_getdata(scn, NULL) : NULL;
	size_t len;

	if (!d || !d->d_size)
		return -VMPT_ERR_NOT_FOUND;
	len = strnlen(d->d_buf, d->d_size);
	if (!len || len == d->d_size || len >= cap || memchr(d->d_buf, '/', len))
		return -VMPT_ERR_NOT_FOUND;
	memcpy(name, d->d_buf, len + 1);
	return 0;
}

/* Does the ELF file at path hold `want`, with build-id id (any when id is
 * empty or the file has none, as perf's symsrc__init checks)?
 */
static int usable(const char *path, unsigned want, const char *id)
{
	struct vmpt_file f;
	struct stat st;
	char have[41];
	GElf_Shdr sh;
	Elf *elf;
	int ok = 0;

	if (stat(path, &st) || !S_ISREG(st.st_mode) || vmpt_file_map(&f, path) < 0)
		return 0;
	elf = f.size ? elf_memory((char *)f.data, f.size) : NULL;
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		Elf_Scn *scn = NULL;

		ok = 1;
		if (id[0] && section_build_id(elf, have) == 0 && !vmpt_build_id_equal(id, have))
			ok = 0;
		if (ok && (want & VMPT_DEBUG_SYMTAB)) {
			ok = 0;
			while ((scn = elf_nextscn(elf, scn)))
				if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB &&
				    sh.sh_entsize && sh.sh_size > sh.sh_entsize)
					ok = 1;
		}
		if (ok && (want & VMPT_DEBUG_DWARF))
			ok = vmpt_elf_section(elf, ".debug_info", &sh) && sh.sh_type != SHT_NOBITS &&
			     sh.sh_size > 0;
	}
	if (elf)
		elf_end(elf);
	vmpt_file_unmap(&f);
	return ok;
}

int vmpt_debug_file_find(const char *path, const uint8_t *data, size_t size,
			 unsigned want, char *out, size_t cap)
{
	char id[41] = "", link[256] = "", dir[4096], cache[4096];
	char cand[8][4096 + 300];
	const char *slash = strrchr(path, '/');
	size_t n = 0;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)data, size);
	if (!elf)
		return -VMPT_ERR_NOT_FOUND;
	if (elf_kind(elf) == ELF_K_ELF)
		debuglink(elf, link, sizeof(link));
	elf_end(elf);
	vmpt_debug_file_build_id(data, size, id);
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1,
		 slash ? path : ".");
	if (link[0]) {
		snprintf(cand[n++], sizeof(cand[0]), "%s", link);
		snprintf(cand[n++], sizeof(cand[0]), "%s/%s", dir, link);
		snprintf(cand[n++], sizeof(cand[0]), "%s/.debug/%s", dir, link);
		snprintf(cand[n++], sizeof(cand[0]), "/usr/lib/debug%s/%s", dir, link);
	}
	if (id[0] && vmpt_build_id_cache_dir(cache, sizeof(cache)) == 0)
		snprintf(cand[n++], sizeof(cand[0]), "%s/.build-id/%.2s/%s/debug", cache, id,
			 id + 2);
	if (path[0] == '/') {
		snprintf(cand[n++], sizeof(cand[0]), "/usr/lib/debug%s.debug", path);
		snprintf(cand[n++], sizeof(cand[0]), "/usr/lib/debug%s", path);
	}
	if (id[0])
		snprintf(cand[n++], sizeof(cand[0]), "/usr/lib/debug/.build-id/%.2s/%s.debug",
			 id, id + 2);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(cand[i], path) && usable(cand[i], want, id)) {
			if (strlen(cand[i]) >= cap)
				break;
			memcpy(out, cand[i], strlen(cand[i]) + 1);
			return 0;
		}
	}
	/* Last, the debuginfod servers (none unless DEBUGINFOD_URLS). */
	if (id[0] && vmpt_debuginfod_find(id, VMPT_DEBUGINFOD_DEBUGINFO, cand[0],
					  sizeof(cand[0])) == 0 &&
	    usable(cand[0], want, id) && strlen(cand[0]) < cap) {
		memcpy(out, cand[0], strlen(cand[0]) + 1);
		return 0;
	}
	return -VMPT_ERR_NOT_FOUND;
}
