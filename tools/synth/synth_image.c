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

		if (!gelf_getphdr(elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_INTERP)
			img->interp = 1;
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) || !ph.p_filesz)
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

/* By address, then in the order added (names are still strtab offsets). */
static int cmp_sym(const void *a, const void *b)
{
	const struct synth_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Remember a function symbol's name (names are offsets into strtab until
 * finish_syms turns them into pointers: strtab may move meanwhile). */
static int add_sym(struct synth_image *img, size_t *cap, uint64_t addr,
		   uint64_t size, const char *name, size_t len, uint8_t bind)
{
	if (img->n_syms == *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		struct synth_sym *ns = realloc(img->syms, ncap * sizeof(*ns));

		if (!ns)
			return -VMPT_ERR_NOMEM;
		img->syms = ns;
		*cap = ncap;
	}
	if (img->strtab_len + len + 1 > img->strtab_cap) {
		size_t ncap = img->strtab_cap ? img->strtab_cap * 2 : 4096;
		char *nt;

		while (ncap < img->strtab_len + len + 1)
			ncap *= 2;
		nt = realloc(img->strtab, ncap);
		if (!nt)
			return -VMPT_ERR_NOMEM;
		img->strtab = nt;
		img->strtab_cap = ncap;
	}
	memcpy(img->strtab + img->strtab_len, name, len);
	img->strtab[img->strtab_len + len] = 0;
	img->syms[img->n_syms].addr = addr;
	img->syms[img->n_syms].size = size;
	img->syms[img->n_syms].bind = bind;
	img->syms[img->n_syms++].name = (const char *)(uintptr_t)img->strtab_len;
	img->strtab_len += len + 1;
	return 0;
}

static size_t underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* Of two symbols at one address, the one perf names (its
 * choose_best_symbol): with a size, not weak, global, fewer leading
 * underscores, the longer name, else the first. */
static int better(const struct synth_sym *a, const struct synth_sym *b)
{
	size_t ua = underscores(a->name), ub = underscores(b->name);
	size_t la = strlen(a->name), lb = strlen(b->name);

	if (!a->size != !b->size)
		return a->size != 0;
	if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
		return b->bind == STB_WEAK;
	if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
		return a->bind == STB_GLOBAL;
	if (ua != ub)
		return ua < ub;
	if (la != lb)
		return la > lb;
	return 1;
}

/* Names become pointers; one symbol per address, as perf keeps them.
 * perf gives a symbol without a size the distance to the next
 * (symbols__fixup_end): for kallsyms before it drops aliases, so of
 * symbols at one address the last listed has the size and stays; for
 * ELF symbols after.
 */
static void finish_syms(struct synth_image *img, int kallsyms)
{
	size_t k = 0, n = img->n_syms;

	if (!n)
		return;
	qsort(img->syms, n, sizeof(*img->syms), cmp_sym);
	for (size_t i = 0; i < n; i++)
		img->syms[i].name = img->strtab + (uintptr_t)img->syms[i].name;
	for (size_t i = 0; kallsyms && i + 1 < n; i++)
		img->syms[i].size = img->syms[i + 1].addr - img->syms[i].addr;
	for (size_t i = 0; i < n; i++) {
		if (k && img->syms[k - 1].addr == img->syms[i].addr) {
			if (!better(&img->syms[k - 1], &img->syms[i]))
				img->syms[k - 1] = img->syms[i];
			continue;
		}
		img->syms[k++] = img->syms[i];
	}
	img->n_syms = k;
	for (size_t i = 0; i + 1 < k; i++)
		if (!img->syms[i].size)
			img->syms[i].size = img->syms[i + 1].addr - img->syms[i].addr;
}

static int add_func(struct synth_image *img, size_t *cap, uint64_t va)
{
	if (img->n_funcs == *cap) {
		uint64_t *f;

		*cap = *cap ? *cap * 2 : 256;
		f = realloc(img->funcs, *cap * sizeof(*f));
		if (!f)
			return -VMPT_ERR_NOMEM;
		img->funcs = f;
	}
	img->funcs[img->n_funcs++] = va;
	return 0;
}

static void sort_funcs(struct synth_image *img)
{
	size_t k = 0;

	if (img->n_funcs)
		qsort(img->funcs, img->n_funcs, sizeof(*img->funcs), cmp_u64);
	for (size_t i = 0; i < img->n_funcs; i++)
		if (!k || img->funcs[k - 1] != img->funcs[i])
			img->funcs[k++] = img->funcs[i];
	img->n_funcs = k;
}

/* perf's names for PLT entries (dso__synthesize_plt_symbols): entry i of
 * .rela.plt is "NAME@plt" at .plt + 16 * (i + 1), 16 bytes (x86-64: a
 * 16-byte header first), NAME its .dynsym symbol's.
 */
static int plt_symbols(struct synth_image *img, Elf *elf, size_t *cap)
{
	GElf_Shdr rel, plt, dynsym;
	Elf_Scn *rel_scn = NULL, *sym_scn;
	Elf_Data *rd, *sd;
	char name[512];
	int ret = 0;

	if (!section(elf, ".plt", &plt) || !section(elf, ".rela.plt", &rel) ||
	    rel.sh_type != SHT_RELA || !rel.sh_entsize)
		return 0;
	while ((rel_scn = elf_nextscn(elf, rel_scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(rel_scn, &sh) && sh.sh_type == SHT_RELA &&
		    sh.sh_offset == rel.sh_offset)
			break;
	}
	sym_scn = elf_getscn(elf, rel.sh_link);
	if (!rel_scn || !sym_scn || !gelf_getshdr(sym_scn, &dynsym) ||
	    dynsym.sh_type != SHT_DYNSYM || !(rd = elf_getdata(rel_scn, NULL)) ||
	    !(sd = elf_getdata(sym_scn, NULL)))
		return 0;
	for (size_t i = 0; !ret && i < rel.sh_size / rel.sh_entsize; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		const char *n;
		uint64_t va = plt.sh_addr + 16 * (i + 1) + img->base;

		if (!gelf_getrela(rd, (int)i, &r) ||
		    !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &sym) ||
		    !(n = elf_strptr(elf, dynsym.sh_link, sym.st_name)) || !in_code(img, va))
			continue;
		snprintf(name, sizeof(name), "%s@plt", n);
		ret = add_sym(img, cap, va, 16, name, strlen(name), STB_GLOBAL);
	}
	return ret;
}

static int load_symbols(struct synth_image *img, Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t cap = 0, sym_cap = 0;
	int have_symtab = 0, ret;

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
			const char *name;
			uint64_t va;

			int ifunc;

			/* perf names code by IFUNC symbols too (an ifunc's
			 * resolver); the walk's functions stay the FUNCs.
			 */
			if (!gelf_getsym(d, (int)i, &sym) ||
			    (GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
			     GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC) ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			ifunc = GELF_ST_TYPE(sym.st_info) == STT_GNU_IFUNC;
			va = sym.st_value + img->base;
			if (!in_code(img, va))
				continue;
			if (!ifunc && (ret = add_func(img, &cap, va)))
				return ret;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (name && (ret = add_sym(img, &sym_cap, va, sym.st_size,
						   name, strlen(name),
						   GELF_ST_BIND(sym.st_info))))
				return ret;
		}
	}
	if ((ret = plt_symbols(img, elf, &sym_cap)))
		return ret;
	finish_syms(img, 0);
	sort_funcs(img);
	return 0;
}

/* kallsyms: "ffffffff81000000 T _stext" (a module's end in " [name]"):
 * text symbols inside the code are function entries; a symbol ends where
 * the next one begins, as perf takes them.
 */
static int load_kallsyms(struct synth_image *img, const char *path,
			  char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[512];
	size_t cap = 0, sym_cap = 0;
	int ret = 0;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -VMPT_ERR_IO;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		char *end, *name;
		uint64_t va = strtoull(line, &end, 16);
		size_t len;

		if (end == line || end[0] != ' ' || !strchr("tTwW", end[1]) ||
		    end[2] != ' ' || !in_code(img, va))
			continue;
		name = end + 3;
		len = strcspn(name, " \t\n");
		if (!(ret = add_func(img, &cap, va)))
			ret = add_sym(img, &sym_cap, va, 0, name, len,
				      end[1] == 't' ? STB_LOCAL : end[1] == 'T' ?
				      STB_GLOBAL : STB_WEAK);
	}
	fclose(f);
	if (ret)
		return ret;
	finish_syms(img, 1);
	sort_funcs(img);
	if (img->n_syms && !img->syms[img->n_syms - 1].size)
		img->syms[img->n_syms - 1].size = img->hi - img->syms[img->n_syms - 1].addr;
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
	free(img->syms);
	free(img->strtab);
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

static uint64_t table_symbol(const struct synth_image *img, const char *name,
			     uint64_t *size)
{
	for (size_t i = 0; i < img->n_syms; i++)
		if (!strcmp(img->syms[i].name, name)) {
			if (size)
				*size = img->syms[i].size;
			return img->syms[i].addr;
		}
	return 0;
}

uint64_t synth_image_symbol(const struct synth_image *img, const char *name,
			    uint64_t *size)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	uint64_t found = 0;
	int fd = open(img->path, O_RDONLY);

	if (fd < 0)
		return table_symbol(img, name, size);
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
	return found ? found : table_symbol(img, name, size);
}


int synth_image_load_kcore(struct synth_image *img, const char *kcore,
			   const char *kallsyms, char *err, size_t errlen)
{
	Elf *elf;
	int fd, ret;

	memset(img, 0, sizeof(*img));
	img->path = strdup(kcore);
	if (!img->path)
		return -VMPT_ERR_NOMEM;
	elf_version(EV_CURRENT);
	fd = open(kcore, O_RDONLY);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", kcore, strerror(errno));
		return -VMPT_ERR_IO;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		snprintf(err, errlen, "%s: not an ELF file", kcore);
		ret = -VMPT_ERR_FORMAT;
	} else {
		ret = load_segments(img, elf, fd, err, errlen);
	}
	if (elf)
		elf_end(elf);
	close(fd);
	if (!ret)
		ret = load_kallsyms(img, kallsyms, err, errlen);
	if (!ret && !img->n_funcs) {
		snprintf(err, errlen, "%s: no text symbols in the kernel's code", kallsyms);
		ret = -VMPT_ERR_FORMAT;
	}
	return ret;
}

int synth_image_load_mapped(struct synth_image *img, const char *path,
			    uint64_t start, uint64_t pgoff, char *err,
			    size_t errlen)
{
	uint64_t bias = 0;
	GElf_Ehdr eh;
	size_t n = 0;
	Elf *elf;
	int fd, found = 0;

	/* The executable segment holding file offset pgoff says where the
	 * file's addresses went (a PIE or library; a static ET_EXEC stays). */
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -VMPT_ERR_IO;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && gelf_getehdr(elf, &eh) && !elf_getphdrnum(elf, &n)) {
		for (size_t i = 0; i < n && !found; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X) && (ph.p_offset & ~0xfffull) <= pgoff &&
			    pgoff < ph.p_offset + ph.p_filesz) {
				bias = start - pgoff + ph.p_offset - ph.p_vaddr;
				found = 1;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	if (!found) {
		snprintf(err, errlen, "%s: no executable segment at file offset "
			 "0x%llx", path, (unsigned long long)pgoff);
		return -VMPT_ERR_FORMAT;
	}
	return synth_image_load(img, path, bias, err, errlen);
}

const struct synth_sym *synth_image_sym_at(const struct synth_image *img,
					   uint64_t va)
{
	size_t lo = 0, hi = img->n_syms;

	/* the last symbol starting at or before va */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (img->syms[mid].addr <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	return va < img->syms[lo - 1].addr + img->syms[lo - 1].size ?
	       &img->syms[lo - 1] : NULL;
}
