/* SPDX-License-Identifier: MIT */
/* Code images for the synthesizer: the executable segments of an ELF at
 * their run-time addresses, and its function entries (the targets the walk
 * picks for indirect branches, so it never leaves real code).
 */
#include "synth.h"
#include "vmpt/error.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int in_code(const struct synth_image *img, uint64_t va)
{
	size_t avail;

	return synth_image_code(img, va, &avail) != NULL;
}

static int load_segments(struct synth_image *img, Elf *elf, int fd,
			 char *err, size_t errlen)
{
	size_t n;

	if (elf_getphdrnum(elf, &n)) {
		snprintf(err, errlen, "%s: no program headers", img->path);
		return -VMPT_ERR_FORMAT;
	}
	img->segs = calloc(n ? n : 1, sizeof(*img->segs));
	if (!img->segs)
		return -VMPT_ERR_NOMEM;
	img->lo = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		struct synth_seg *s = &img->segs[img->n_segs];

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X) || !ph.p_filesz)
			continue;
		s->vaddr = ph.p_vaddr + img->base;
		s->size = ph.p_filesz;
		s->file_offset = ph.p_offset;
		s->data = malloc(s->size);
		if (!s->data)
			return -VMPT_ERR_NOMEM;
		if (pread(fd, s->data, s->size, (off_t)ph.p_offset) !=
		    (ssize_t)s->size) {
			snprintf(err, errlen, "%s: offset 0x%llx: short segment",
				 img->path, (unsigned long long)ph.p_offset);
			free(s->data);
			return -VMPT_ERR_FORMAT;
		}
		if (s->vaddr < img->lo)
			img->lo = s->vaddr;
		if (s->vaddr + s->size > img->hi)
			img->hi = s->vaddr + s->size;
		img->n_segs++;
	}
	if (!img->n_segs) {
		snprintf(err, errlen, "%s: no executable segment", img->path);
		return -VMPT_ERR_FORMAT;
	}
	return 0;
}

static int section(Elf *elf, const char *name, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (gelf_getshdr(scn, out) &&
		    (n = elf_strptr(elf, shstrndx, out->sh_name)) &&
		    !strcmp(n, name))
			return 1;
	}
	return 0;
}

/* A Linux kernel image (it has .altinstructions, the list of code the
 * kernel patches while booting) runs only its .text after boot: the init
 * text is freed, and the out-of-line parts of alternatives
 * (.altinstr_aux, .altinstr_replacement) are copied or freed.  Code is
 * that section alone, as a running kernel's [kernel.kallsyms]_text map.
 */
static void kernel_text_only(struct synth_image *img, Elf *elf)
{
	GElf_Shdr alt, text;
	uint64_t lo, hi;
	size_t k = 0;

	if (!section(elf, ".altinstructions", &alt) ||
	    !section(elf, ".text", &text))
		return;
	lo = text.sh_addr + img->base;
	hi = lo + text.sh_size;
	for (size_t i = 0; i < img->n_segs; i++) {
		struct synth_seg *s = &img->segs[i];

		if (s->vaddr > lo || s->vaddr + s->size < hi) {
			free(s->data);
			continue;
		}
		/* the segment holds .text: keep its data, narrowed */
		memmove(s->data, s->data + (lo - s->vaddr), hi - lo);
		s->file_offset += lo - s->vaddr;
		s->vaddr = lo;
		s->size = hi - lo;
		img->segs[k++] = *s;
	}
	img->n_segs = k;
	img->lo = lo;
	img->hi = hi;
}

static int load_symbols(struct synth_image *img, Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t cap = 0;
	int have_symtab = 0;

	/* .symtab when there is one; .dynsym only for stripped files. */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			have_symtab = 1;
	}
	scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    sh.sh_type != (have_symtab ? SHT_SYMTAB : SHT_DYNSYM) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			uint64_t va;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			va = sym.st_value + img->base;
			if (!in_code(img, va))
				continue;
			if (img->n_funcs == cap) {
				uint64_t *f;

				cap = cap ? cap * 2 : 256;
				f = realloc(img->funcs, cap * sizeof(*f));
				if (!f)
					return -VMPT_ERR_NOMEM;
				img->funcs = f;
			}
			img->funcs[img->n_funcs++] = va;
		}
	}
	if (!img->n_funcs)
		return 0;
	qsort(img->funcs, img->n_funcs, sizeof(*img->funcs), cmp_u64);
	size_t k = 0;
	for (size_t i = 0; i < img->n_funcs; i++)
		if (!k || img->funcs[k - 1] != img->funcs[i])
			img->funcs[k++] = img->funcs[i];
	img->n_funcs = k;
	return 0;
}

int synth_image_load(struct synth_image *img, const char *path, uint64_t base,
		     char *err, size_t errlen)
{
	GElf_Ehdr eh;
	Elf *elf;
	int fd, ret;

	memset(img, 0, sizeof(*img));
	img->path = strdup(path);
	if (!img->path)
		return -VMPT_ERR_NOMEM;
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -VMPT_ERR_IO;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    eh.e_machine != EM_X86_64) {
		snprintf(err, errlen, "%s: not an x86-64 ELF file", path);
		ret = -VMPT_ERR_FORMAT;
		goto out;
	}
	img->is_dyn = eh.e_type == ET_DYN;
	img->base = img->is_dyn ? base : 0;
	ret = load_segments(img, elf, fd, err, errlen);
	if (!ret) {
		kernel_text_only(img, elf);
		if (!img->n_segs) {
			snprintf(err, errlen, "%s: no segment holds .text", path);
			ret = -VMPT_ERR_FORMAT;
		}
	}
	if (!ret)
		ret = load_symbols(img, elf);
	img->entry = eh.e_entry + img->base;
	if (!ret && !img->n_funcs) {
		/* A stripped file without .dynsym: the entry point is all we know. */
		img->funcs = malloc(sizeof(*img->funcs));
		if (!img->funcs)
			ret = -VMPT_ERR_NOMEM;
		else
			img->funcs[img->n_funcs++] = img->entry;
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

void synth_image_free(struct synth_image *img)
{
	for (size_t i = 0; i < img->n_segs; i++)
		free(img->segs[i].data);
	free(img->segs);
	free(img->funcs);
	free(img->path);
	memset(img, 0, sizeof(*img));
}

const uint8_t *synth_image_code(const struct synth_image *img, uint64_t va,
				size_t *avail)
{
	for (size_t i = 0; i < img->n_segs; i++) {
		const struct synth_seg *s = &img->segs[i];

		if (va >= s->vaddr && va - s->vaddr < s->size) {
			*avail = (size_t)(s->size - (va - s->vaddr));
			return s->data + (va - s->vaddr);
		}
	}
	return NULL;
}

uint64_t synth_image_symbol(const struct synth_image *img, const char *name,
			    uint64_t *size)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	uint64_t found = 0;
	int fd = open(img->path, O_RDONLY);

	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(d, (int)i, &sym) || !sym.st_value)
				continue;
			n = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (n && !strcmp(n, name)) {
				found = sym.st_value + img->base;
				if (size)
					*size = sym.st_size;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}
