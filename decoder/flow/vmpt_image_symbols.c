/* SPDX-License-Identifier: MIT */
/* An image's symbols, named as perf names them: an ELF's .symtab (or
 * .dynsym, or its separate debug file's), its PLT entries, a kcore's
 * kallsyms; one per address, sized, indexed by page of their section.
 */
#include "vmpt_image_int.h"
#include "vmpt/debug_file.h"
#include "vmpt/demangle.h"
#include "vmpt/error.h"
#include "vmpt/path.h"
#include "../../lib/vmpt_elf.h"

#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How many entries of type a section holds: its entry size must be the
 * type's and the section must lie inside the file, else 0.
 */
static size_t section_entries(Elf *elf, const struct vmpt_file *f,
			      const GElf_Shdr *sh, Elf_Type type)
{
	size_t ent = gelf_fsize(elf, type, 1, EV_CURRENT);

	if (!ent || sh->sh_entsize != ent || sh->sh_offset > f->size ||
	    sh->sh_size > f->size - sh->sh_offset)
		return 0;
	return sh->sh_size / ent;
}

/* The bytes of a string table that strings may start in: up to its last
 * NUL (a name running to the end of the file must not be read past it).
 */
static size_t strtab_usable(const char *str, size_t size)
{
	while (size && str[size - 1])
		size--;
	return size;
}

const struct vmpt_symbol *vmpt_section_symbol_span(const struct vmpt_section *sec,
						   uint64_t vaddr, uint64_t *from,
						   uint64_t *to)
{
	size_t lo = 0, hi = sec->n_syms;
	const struct vmpt_symbol *k;
	uint64_t end, bias = sec->sym_bias;

	/* Only the symbols of vaddr's page can be the last at or before
	 * it, besides the one before that page.
	 */
	if (sec->sym_pages && vaddr - sec->vaddr < sec->size) {
		uint64_t page = (vaddr - sec->vaddr) >> SYM_PAGE_SHIFT;

		lo = sec->sym_pages[page];
		hi = sec->sym_pages[page + 1];
	}

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (sec->syms[mid].addr + bias <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The last symbol starting at or before vaddr decides. */
	*to = lo < sec->n_syms ? sec->syms[lo].addr + bias : UINT64_MAX;
	if (!lo) {
		*from = 0;
		return NULL;
	}
	k = &sec->syms[lo - 1];
	end = k->addr + k->size + bias;
	if (vaddr < end) {
		*from = k->addr + bias;
		if (end < *to)
			*to = end;
		return k;
	}
	*from = end;
	return NULL;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct vmpt_symbol *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The first of syms (sorted) at or above addr. */
static size_t first_at(const struct vmpt_symbol *syms, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (syms[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Give each section the symbols inside it (syms sorted by addr, at the
 * file's addresses: the sections are there + bias), and their page index.
 */
int image_attach_symbols(struct vmpt_image *img, struct vmpt_section *const *secs,
			 size_t n, const struct vmpt_symbol *syms, size_t n_syms,
			  uint64_t bias)
{
	for (size_t i = 0; i < n; i++) {
		struct vmpt_section *s = secs[i];
		uint64_t at = s->vaddr - bias;
		size_t a, b, pages = ((s->size - 1) >> SYM_PAGE_SHIFT) + 1;
		uint32_t *index;
		int ret;

		a = first_at(syms, n_syms, at);
		b = a;
		while (b < n_syms && syms[b].addr - at < s->size)
			b++;
		s->syms = syms + a;
		s->n_syms = b - a;
		s->sym_bias = bias;
		if (!s->n_syms || s->n_syms > UINT32_MAX)
			continue;
		index = image_alloc_array(pages + 1, sizeof(*index));
		ret = image_own(img, index);
		if (ret < 0)
			return ret;
		for (size_t p = 0, k = 0; p <= pages; p++) {
			while (k < s->n_syms &&
			       (s->syms[k].addr - at) >> SYM_PAGE_SHIFT < p)
				k++;
			index[p] = (uint32_t)k;
		}
		s->sym_pages = index;
	}
	return 0;
}

/* The symbols perf keeps (dso__load_sym): functions and objects, and
 * labels (no type) in text sections, all in loaded sections.
 */
static int symbol_kept(Elf *elf, const GElf_Sym *s)
{
	unsigned type = GELF_ST_TYPE(s->st_info);
	GElf_Shdr sh;
	size_t shstrndx;
	const char *name;

	if (s->st_shndx == SHN_UNDEF || s->st_shndx == SHN_ABS ||
	    s->st_shndx >= SHN_LORESERVE)
		return 0;
	if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT &&
	    type != STT_NOTYPE)
		return 0;
	if (!gelf_getshdr(elf_getscn(elf, s->st_shndx), &sh) || !(sh.sh_flags & SHF_ALLOC))
		return 0;
	if (type != STT_NOTYPE)
		return 1;
	name = elf_getshdrstrndx(elf, &shstrndx) ? NULL :
	       elf_strptr(elf, shstrndx, sh.sh_name);
	return name && strstr(name, "text");
}

/* perf's symbols__fixup_end: a symbol without a size ends where the next
 * one starts (the last at the end of the page after its own).
 */
static void fixup_sizes(struct vmpt_symbol *syms, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (syms[i].size)
			continue;
		if (i + 1 < n)
			syms[i].size = syms[i + 1].addr - syms[i].addr;
		else
			syms[i].size = ((syms[i].addr + 4095) & ~4095ull) + 4096 - syms[i].addr;
	}
}

struct bound_symbol {
	struct vmpt_symbol sym;
	unsigned bind;
};

static size_t underscores(const char *name)
{
	size_t n = 0;

	while (name[n] == '_')
		n++;
	return n;
}

/* perf's choose_best_symbol among symbols at one address: one with a
 * size, not weak, global, fewer leading underscores, the longer name.
 * Returns > 0 when b is better than a.
 */
static int better(const struct bound_symbol *a, const struct bound_symbol *b)
{
	size_t la, lb;

	if (!!a->sym.size != !!b->sym.size)
		return b->sym.size ? 1 : -1;
	if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
		return a->bind == STB_WEAK ? 1 : -1;
	if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
		return b->bind == STB_GLOBAL ? 1 : -1;
	if (underscores(a->sym.name) != underscores(b->sym.name))
		return underscores(a->sym.name) > underscores(b->sym.name) ? 1 : -1;
	la = strlen(a->sym.name);
	lb = strlen(b->sym.name);
	return la == lb ? 0 : lb > la ? 1 : -1;
}

static int cmp_bound(const void *x, const void *y)
{
	const struct bound_symbol *a = x, *b = y;

	if (a->sym.addr != b->sym.addr)
		return a->sym.addr < b->sym.addr ? -1 : 1;
	return 0;
}

/* Sorted, one symbol per address (perf's symbols__fixup_duplicate), into
 * out.  Returns how many.
 */
static size_t best_symbols(struct bound_symbol *v, size_t n, struct vmpt_symbol *out)
{
	size_t k = 0;

	qsort(v, n, sizeof(*v), cmp_bound);
	for (size_t i = 0; i < n; i++) {
		size_t best = i;

		while (i + 1 < n && v[i + 1].sym.addr == v[best].sym.addr) {
			i++;
			if (better(&v[best], &v[i]) > 0)
				best = i;
		}
		out[k++] = v[best].sym;
	}
	return k;
}

/* The name perf shows for a symbol: demangled, unless told not to; NULL:
 * no memory.
 */
static const char *shown_name(struct vmpt_image *img, const char *raw)
{
	unsigned bit = img->loading_kernel ? VMPT_IMAGE_DEMANGLE_KERNEL :
					     VMPT_IMAGE_DEMANGLE;
	char *d = img->no_demangle & bit ? NULL : vmpt_demangle(raw);

	if (!d)
		return raw;
	return image_own(img, d) < 0 ? NULL : d;
}

/* Function symbols of .symtab (or .dynsym), moved by bias; names point
 * into the mapped file (or are demangled copies).
 */
static int elf_symbols(struct vmpt_image *img, Elf *elf,
		       const struct vmpt_file *f, uint64_t bias,
		       struct vmpt_symbol **out, size_t *n_out)
{
	Elf_Scn *scn = NULL, *use = NULL;
	struct bound_symbol *bind;
	struct vmpt_symbol *syms;
	GElf_Shdr sh, strsh;
	size_t n = 0, count, strsize;
	const char *str;
	Elf_Data *data;
	int ret;

	*out = NULL;
	*n_out = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			return -VMPT_ERR_FORMAT;
		if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !use))
			use = scn;
	}
	if (!use || !gelf_getshdr(use, &sh) || !sh.sh_entsize)
		return 0;
	if (!gelf_getshdr(elf_getscn(elf, sh.sh_link), &strsh) ||
	    strsh.sh_offset > f->size || strsh.sh_size > f->size - strsh.sh_offset)
		return -VMPT_ERR_FORMAT;
	str = (const char *)f->data + strsh.sh_offset;
	strsize = strtab_usable(str, strsh.sh_size);
	data = elf_getdata(use, NULL);
	count = section_entries(elf, f, &sh, ELF_T_SYM);
	if (!data || !count)
		return 0;	/* the code without names */
	syms = image_alloc_array(count, sizeof(*syms));
	ret = image_own(img, syms);
	if (ret < 0)
		return ret;
	bind = image_alloc_array(count, sizeof(*bind));
	if (!bind)
		return -VMPT_ERR_NOMEM;
	for (size_t i = 0; i < count; i++) {
		GElf_Sym s;

		if (!gelf_getsym(data, (int)i, &s)) {
			free(bind);
			return -VMPT_ERR_FORMAT;
		}
		if (!s.st_value || !s.st_name || s.st_name >= strsize ||
		    !symbol_kept(elf, &s))
			continue;
		bind[n].sym.addr = s.st_value + bias;
		bind[n].sym.size = s.st_size;
		bind[n].sym.name = shown_name(img, str + s.st_name);
		if (!bind[n].sym.name) {
			free(bind);
			return -VMPT_ERR_NOMEM;
		}
		bind[n].bind = GELF_ST_BIND(s.st_info);
		bind[n].sym.binding = (uint8_t)bind[n].bind;
		n++;
	}
	n = best_symbols(bind, n, syms);
	free(bind);
	*out = syms;
	*n_out = n;
	return 0;
}

/* The .rela.plt entries, 0 when there are none or the section is bad. */
static size_t plt_count(Elf *elf, const struct vmpt_file *f, Elf_Scn **rela,
			GElf_Shdr *rsh)
{
	*rela = vmpt_elf_section(elf, ".rela.plt", rsh);
	return *rela ? section_entries(elf, f, rsh, ELF_T_RELA) : 0;
}

/* "name@plt" for each PLT entry, as perf names them: the entries of
 * .plt.sec (IBT binaries) or those after .plt's 16-byte header, in
 * .rela.plt order.  Returns how many were added to syms (room for
 * plt_count's).
 */
static size_t plt_symbols(struct vmpt_image *img, Elf *elf,
			  const struct vmpt_file *f, uint64_t bias,
			  struct vmpt_symbol *syms)
{
	GElf_Shdr rsh, psh, dsh, ssh;
	Elf_Scn *rela, *plt, *dyn;
	Elf_Data *rdata, *ddata, *sdata;
	size_t count = plt_count(elf, f, &rela, &rsh), strsize;
	uint64_t first;
	size_t n = 0;

	if (!count)
		return 0;
	plt = vmpt_elf_section(elf, ".plt.sec", &psh);
	first = plt ? psh.sh_addr : 0;
	if (!plt) {
		plt = vmpt_elf_section(elf, ".plt", &psh);
		if (!plt)
			return 0;
		first = psh.sh_addr + 16;
	}
	/* perf synthesizes PLT symbols from .dynsym only: a static
	 * binary's .rela.plt (its ifuncs, linked to .symtab) makes none.
	 */
	dyn = elf_getscn(elf, rsh.sh_link);
	if (!dyn || !gelf_getshdr(dyn, &dsh) || dsh.sh_type != SHT_DYNSYM ||
	    !gelf_getshdr(elf_getscn(elf, dsh.sh_link), &ssh))
		return 0;
	rdata = elf_getdata(rela, NULL);
	ddata = elf_getdata(dyn, NULL);
	sdata = elf_getdata(elf_getscn(elf, dsh.sh_link), NULL);
	if (!rdata || !ddata || !sdata || !sdata->d_buf)
		return 0;
	strsize = strtab_usable(sdata->d_buf, sdata->d_size);
	for (size_t i = 0; i < count; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		char name[1024];	/* perf's sympltname: longer names are cut */
		const char *nm;

		if (!gelf_getrela(rdata, (int)i, &r) ||
		    !gelf_getsym(ddata, (int)GELF_R_SYM(r.r_info), &sym) ||
		    sym.st_name >= strsize)
			continue;
		nm = shown_name(img, (const char *)sdata->d_buf + sym.st_name);
		if (!nm)
			break;
		snprintf(name, sizeof(name), "%s@plt", nm);
		syms[n].name = image_own_str(img, name);
		if (!syms[n].name)
			break;
		syms[n].addr = first + i * 16 + bias;
		syms[n].size = 16;
		syms[n].binding = STB_GLOBAL;	/* perf's PLT symbols are */
		n++;
	}
	return n;
}

/* Symbols from the separate debug file when the binary is stripped, where
 * perf and gdb find it (vmpt/debug_file.h).
 */
static int debug_symbols(struct vmpt_image *img, const struct vmpt_file *f,
			 uint64_t bias, struct vmpt_symbol **syms, size_t *n_syms)
{
	const struct vmpt_file *df;
	char path[4096];
	Elf *delf;
	int ret;

	if (vmpt_debug_file_find(f->path, f->data, f->size, VMPT_DEBUG_SYMTAB, path,
				 sizeof(path)) < 0 || image_map_file(img, NULL, path, &df) < 0)
		return 0;	/* no debug file: fine */
	delf = elf_memory((char *)df->data, df->size);
	if (!delf)
		return 0;
	ret = elf_kind(delf) == ELF_K_ELF ?
	      elf_symbols(img, delf, df, bias, syms, n_syms) : 0;
	elf_end(delf);
	return ret;
}


/* The symbols of an ELF file at its link addresses (its debug file's,
 * else its own, and its PLT's), parsed on the first mapping of the file.
 */
int image_file_symbols(struct vmpt_image *img, Elf *elf, const struct vmpt_file *f,
		       struct vmpt_symbol **out, size_t *n_out)
{
	struct vmpt_symbol *syms = NULL, *all;
	struct parsed_syms *p;
	size_t n_syms = 0, n_plt, n_all;
	GElf_Shdr rsh;
	Elf_Scn *rela;
	int ret;

	for (size_t i = 0; i < img->n_parsed; i++) {
		if (img->parsed[i].file == f) {
			*out = img->parsed[i].syms;
			*n_out = img->parsed[i].n;
			return 0;
		}
	}
	n_plt = plt_count(elf, f, &rela, &rsh);
	ret = debug_symbols(img, f, 0, &syms, &n_syms);
	if (ret == 0 && !n_syms)
		ret = elf_symbols(img, elf, f, 0, &syms, &n_syms);
	if (ret < 0)
		return ret;
	all = __builtin_add_overflow(n_syms, n_plt, &n_all) ? NULL :
	      image_alloc_array(n_all, sizeof(*all));
	ret = image_own(img, all);
	if (ret < 0)
		return ret;
	if (n_syms)
		memcpy(all, syms, n_syms * sizeof(*all));
	/* perf's dso__load names the PLT only when the symbol table gave
	 * it some symbol (a stripped PIE's .dynsym may define none).
	 */
	if (n_syms)
		n_syms += plt_symbols(img, elf, f, 0, all + n_syms);
	qsort(all, n_syms, sizeof(*all), cmp_sym);
	fixup_sizes(all, n_syms);
	p = realloc(img->parsed, (img->n_parsed + 1) * sizeof(*p));
	if (!p)
		return -VMPT_ERR_NOMEM;
	img->parsed = p;
	p[img->n_parsed++] = (struct parsed_syms){ f, all, n_syms };
	*out = all;
	*n_out = n_syms;
	return 0;
}

/* By address, then as listed (held in size while sorting). */
static int cmp_sym_listed(const void *a, const void *b)
{
	const struct vmpt_symbol *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->size < y->size ? -1 : x->size > y->size;
}

/* kallsyms lines: "ffffffff81000000 T _stext [module]". */
int image_read_kallsyms(struct vmpt_image *img, const char *root, const char *path,
			int core_only, struct vmpt_symbol **out, size_t *n_out)
{
	struct vmpt_symbol *syms = NULL;
	size_t n = 0, k = 0, cap = 0;
	char line[512];
	int fd = vmpt_path_open(root, path);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "r");

	*out = NULL;
	*n_out = 0;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return -VMPT_ERR_IO;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, name[256], module;
		int got = sscanf(line, "%llx %c %255s %c", &addr, &type, name, &module);

		/* (a name past 255 characters goes on where %c reads) */
		if (got < 3 || (got == 4 && module == '[' && core_only) ||
		    (type != 't' && type != 'T' && type != 'w' && type != 'W'))
			continue;
		if (n == cap) {
			struct vmpt_symbol *s;

			cap = cap ? cap * 2 : 4096;
			s = realloc(syms, cap * sizeof(*s));
			if (!s) {
				free(syms);
				fclose(f);
				return -VMPT_ERR_NOMEM;
			}
			syms = s;
		}
		syms[n].addr = addr;
		syms[n].size = n;	/* the line, until sorted */
		syms[n].binding = type == 't' ? STB_LOCAL : type == 'T' ? STB_GLOBAL : STB_WEAK;
		syms[n].name = image_own_str(img, name);
		if (!syms[n].name) {
			free(syms);
			fclose(f);
			return -VMPT_ERR_NOMEM;
		}
		n++;
	}
	fclose(f);
	if (image_own(img, syms ? syms : malloc(1)) < 0)
		return -VMPT_ERR_NOMEM;
	qsort(syms, n, sizeof(*syms), cmp_sym_listed);
	/* Of aliases (a module's init_module and its init function) perf
	 * keeps the last listed: only it gets a size (symbols__fixup_end)
	 * and symbols__fixup_duplicate prefers one with a size. */
	for (size_t i = 0; i < n; i++)
		if (k && syms[k - 1].addr == syms[i].addr)
			syms[k - 1] = syms[i];
		else
			syms[k++] = syms[i];
	/* kallsyms has no sizes: a symbol ends where the next begins. */
	for (size_t i = 0; i < k; i++)
		syms[i].size = i + 1 < k ? syms[i + 1].addr - syms[i].addr : 1;
	*out = syms;
	*n_out = k;
	return 0;
}

int vmpt_image_kallsyms(struct vmpt_image *img, const char *path,
			const struct vmpt_symbol **syms, size_t *n)
{
	struct vmpt_symbol *own;
	int ret = image_read_kallsyms(img, NULL, path, 1, &own, n);

	*syms = own;
	return ret;
}
