/* SPDX-License-Identifier: MIT */
/* Source lines from DWARF with libdw, cached per address. */
#include "vmpt/srcline.h"
#include "vmpt/debug_file.h"
#include "vmpt/demangle.h"
#include "vmpt/error.h"
#include "../lib/vmpt_elf.h"

#include <dwarf.h>
#include <fcntl.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One address looked up: its line, and its inline chain once asked. */
struct sl_entry {
	uint64_t addr;
	const char *file;		/* NULL: no line there */
	const char *path;		/* file as the DWARF names it */
	unsigned line;
	int used, inl_done;
	struct vmpt_inline_frame *inl;
	size_t n_inl;
};

struct vmpt_srcline {
	int fd;				/* the file with the DWARF */
	Elf *elf;
	Dwarf *dw;			/* NULL: no DWARF, every lookup fails */
	uint64_t text_delta;		/* .text's address minus its offset */
	struct sl_entry *tab;		/* open addressing, power-of-2 size */
	size_t cap, n;
	char **names;			/* demangled names the frames point to */
	size_t n_names;
};

static uint64_t text_delta(const uint8_t *data, size_t size)
{
	Elf *elf = elf_memory((char *)data, size);
	uint64_t delta = 0;
	GElf_Shdr sh;

	if (!elf)
		return 0;
	if (elf_kind(elf) == ELF_K_ELF && vmpt_elf_section(elf, ".text", &sh))
		delta = sh.sh_addr - sh.sh_offset;
	elf_end(elf);
	return delta;
}

static int has_debug_line(Elf *elf)
{
	GElf_Shdr sh;

	return vmpt_elf_section(elf, ".debug_line", &sh) && sh.sh_type != SHT_NOBITS;
}

struct vmpt_srcline *vmpt_srcline_open(const char *path, const uint8_t *data, size_t size)
{
	struct vmpt_srcline *sl = calloc(1, sizeof(*sl));
	char dpath[4096];

	if (!sl)
		return NULL;
	elf_version(EV_CURRENT);
	sl->text_delta = text_delta(data, size);
	/* perf reads lines from the file it took the symbols from. */
	if (vmpt_debug_file_find(path, data, size, VMPT_DEBUG_SYMTAB, dpath,
				 sizeof(dpath)) < 0)
		snprintf(dpath, sizeof(dpath), "%s", path);
	/* A private mapping: libdw decompresses compressed sections (Debian's
	 * debug files) in place.
	 */
	sl->fd = open(dpath, O_RDONLY | O_CLOEXEC);
	sl->elf = sl->fd >= 0 ? elf_begin(sl->fd, ELF_C_READ_MMAP_PRIVATE, NULL) : NULL;
	/* No .debug_line, no line table: addr2line's symbol table only. */
	if (sl->elf && elf_kind(sl->elf) == ELF_K_ELF && has_debug_line(sl->elf))
		sl->dw = dwarf_begin_elf(sl->elf, DWARF_C_READ, NULL);
	return sl;
}

void vmpt_srcline_free(struct vmpt_srcline *sl)
{
	if (!sl)
		return;
	for (size_t i = 0; i < sl->cap; i++)
		free(sl->tab[i].inl);
	for (size_t i = 0; i < sl->n_names; i++)
		free(sl->names[i]);
	free(sl->names);
	free(sl->tab);
	if (sl->dw)
		dwarf_end(sl->dw);
	if (sl->elf)
		elf_end(sl->elf);
	if (sl->fd >= 0)
		close(sl->fd);
	free(sl);
}

uint64_t vmpt_srcline_addr(const struct vmpt_srcline *sl, uint64_t off)
{
	return off + sl->text_delta;
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

static size_t slot_of(uint64_t addr, size_t cap)
{
	return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

/* Has the sequence of row k of lines set its file before row k?  Rows
 * of a sequence are in order in libdw's table; a row of another file
 * before k in it means a DW_LNS_set_file was.
 */
static int file_set_before(Dwarf_Lines *lines, size_t k)
{
	while (k-- > 0) {
		Dwarf_Line *l = dwarf_onesrcline(lines, k);
		Dwarf_Files *files;
		size_t idx;
		bool end;

		if (!l || dwarf_lineendsequence(l, &end) || end)
			return 0;
		if (dwarf_line_file(l, &files, &idx) == 0 && idx != 1)
			return 1;
	}
	return 0;
}

/* A line's file as binutils' addr2line names it (perf's): in a DWARF 5
 * line table, rows before the sequence's first DW_LNS_set_file (the file
 * register at its initial 1) are named by file 0, the unit's own file;
 * gcc writes files 0 and 1 alike but where a .c file includes another.
 */
static const char *line_file(Dwarf_Die *cu, Dwarf_Line *ln)
{
	Dwarf_Lines *lines;
	Dwarf_Files *files;
	Dwarf_Half version;
	size_t idx, n, k;
	const char *name;

	if (dwarf_line_file(ln, &files, &idx) || idx != 1 ||
	    dwarf_cu_info(cu->cu, &version, NULL, NULL, NULL, NULL, NULL, NULL) ||
	    version < 5 || dwarf_getsrclines(cu, &lines, &n))
		return dwarf_linesrc(ln, NULL, NULL);
	for (k = 0; k < n && dwarf_onesrcline(lines, k) != ln; k++)
		;
	if (k < n && !file_set_before(lines, k) && (name = dwarf_filesrc(files, 0, NULL, NULL)))
		return name;
	return dwarf_linesrc(ln, NULL, NULL);
}

/* The section index of the allocated section holding addr (0: none). */
static size_t section_at(Elf *elf, uint64_t addr)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_ALLOC) &&
		    addr - sh.sh_addr < sh.sh_size)
			return elf_ndxscn(scn);
	return 0;
}

static Elf_Scn *symbol_table(Elf *elf, GElf_Word type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, sh) && sh->sh_type == type)
			return scn;
	return NULL;
}

/* Where addr2line (binutils' elf_find_function) answers from the symbol
 * table (the dynamic one when stripped), when the DWARF has no line there
 * or there is none (perf 6.1 asks addr2line all the same): the function symbol of the
 * section nearest below addr; the file is the STT_FILE symbol before it
 * for a local one, or for any before the file's locals end; line 0.
 * 0 with *file (the STT_FILE symbol's name, "??": none known) and *func (its name, if asked for), or
 * -VMPT_ERR_NOT_FOUND: no function.
 */
static int symtab_line(Elf *elf, uint64_t addr, const char **file, const char **func)
{
	enum { NOTHING, SYMBOL, FILE_AFTER_SYMBOL } state = NOTHING;
	const char *cur_file = NULL, *best_file = NULL, *best_name = NULL;
	uint64_t low = 0, best_size = 0;
	size_t shndx = section_at(elf, addr);
	Elf_Scn *scn = NULL;
	int found = 0;
	GElf_Shdr sh;

	if (!shndx)
		return -VMPT_ERR_NOT_FOUND;
	/* A stripped binary's dynamic symbols, as binutils takes them. */
	if (!(scn = symbol_table(elf, SHT_SYMTAB, &sh)))
		scn = symbol_table(elf, SHT_DYNSYM, &sh);
	if (!scn || !sh.sh_entsize)
		return -VMPT_ERR_NOT_FOUND;
	for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; i++) {
		Elf_Data *d = elf_getdata(scn, NULL);
		GElf_Sym sym;
		uint64_t size;
		int type;

		if (!d || !gelf_getsym(d, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if (type == STT_FILE) {
			cur_file = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (state == SYMBOL)
				state = FILE_AFTER_SYMBOL;
			continue;
		}
		if (type != STT_SECTION && type != STT_OBJECT && type != STT_TLS &&
		    sym.st_shndx == shndx) {
			size = sym.st_size ? sym.st_size : 1;
			if (sym.st_value <= addr &&
			    (!found || sym.st_value > low || (sym.st_value == low && size > best_size))) {
				found = 1;
				low = sym.st_value;
				best_size = size;
				best_file = cur_file && (GELF_ST_BIND(sym.st_info) == STB_LOCAL ||
							 state != FILE_AFTER_SYMBOL) ? cur_file : NULL;
				best_name = elf_strptr(elf, sh.sh_link, sym.st_name);
			}
		}
		if (state == NOTHING)
			state = SYMBOL;
	}
	if (!found)
		return -VMPT_ERR_NOT_FOUND;
	if (file)
		*file = best_file ? best_file : "??";
	if (func)
		*func = best_name;
	return 0;
}

/* The entry of addr, added (not looked up yet) when new; NULL: no memory. */
static struct sl_entry *entry(struct vmpt_srcline *sl, uint64_t addr)
{
	Dwarf_Die cu;
	Dwarf_Line *ln;
	int line;
	size_t i;

	if (sl->n + 1 > sl->cap / 2) {
		size_t cap = sl->cap ? sl->cap * 2 : 1024;
		struct sl_entry *t = calloc(cap, sizeof(*t));

		if (!t)
			return NULL;
		for (size_t k = 0; k < sl->cap; k++) {
			if (!sl->tab[k].used)
				continue;
			i = slot_of(sl->tab[k].addr, cap);
			while (t[i].used)
				i = (i + 1) & (cap - 1);
			t[i] = sl->tab[k];
		}
		free(sl->tab);
		sl->tab = t;
		sl->cap = cap;
	}
	for (i = slot_of(addr, sl->cap); sl->tab[i].used; i = (i + 1) & (sl->cap - 1))
		if (sl->tab[i].addr == addr)
			return &sl->tab[i];
	sl->tab[i].used = 1;
	sl->tab[i].addr = addr;
	sl->n++;
	if (sl->dw && dwarf_addrdie(sl->dw, addr, &cu) && (ln = dwarf_getsrc_die(&cu, addr)) &&
	    !dwarf_lineno(ln, &line)) {
		sl->tab[i].path = line_file(&cu, ln);
		sl->tab[i].file = base_name(sl->tab[i].path);
		sl->tab[i].line = (unsigned)line;
	} else if (sl->elf && elf_kind(sl->elf) == ELF_K_ELF) {
		symtab_line(sl->elf, addr, &sl->tab[i].path, NULL);
		sl->tab[i].file = base_name(sl->tab[i].path);
	}
	return &sl->tab[i];
}

int vmpt_srcline_find(struct vmpt_srcline *sl, uint64_t addr, const char **file,
		      unsigned *line)
{
	struct sl_entry *e = entry(sl, addr);

	if (!e || !e->file)
		return -VMPT_ERR_NOT_FOUND;
	*file = e->file;
	*line = e->line;
	return 0;
}

int vmpt_srcline_path(struct vmpt_srcline *sl, uint64_t addr, const char **path,
		      unsigned *line)
{
	struct sl_entry *e = entry(sl, addr);

	if (!e || !e->file)
		return -VMPT_ERR_NOT_FOUND;
	*path = e->path;
	*line = e->line;
	return 0;
}

/* name demangled as perf shows it (kept while sl lives), else as it is;
 * NULL: no memory.
 */
static const char *kept_demangled(struct vmpt_srcline *sl, const char *name)
{
	char *d = vmpt_demangle(name), **names;

	if (!d)
		return name;
	names = realloc(sl->names, (sl->n_names + 1) * sizeof(*names));
	if (!names) {
		free(d);
		return NULL;
	}
	sl->names = names;
	sl->names[sl->n_names++] = d;
	return d;
}

/* A function's name as perf shows it: its linkage name demangled, else
 * its DWARF name; NULL: none, or no memory.
 */
static const char *func_name(struct vmpt_srcline *sl, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));

	if (!link)
		link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	return link ? kept_demangled(sl, link) : dwarf_diename(die);
}

/* addr2line's one record where the DWARF has no function (assembly, no
 * DWARF): the symbol table's function at the line found.
 */
static void symtab_record(struct vmpt_srcline *sl, struct sl_entry *e)
{
	const char *func;

	if (!sl->elf || symtab_line(sl->elf, e->addr, NULL, &func) < 0 || !func)
		return;
	free(e->inl);
	e->inl = calloc(1, sizeof(*e->inl));
	if (!e->inl)
		return;
	e->inl[0].func = kept_demangled(sl, func);
	e->inl[0].file = e->file;
	e->inl[0].line = e->line;
	e->n_inl = 1;
}

/* Of the CU's functions at addr, the one binutils names (assembly with
 * an alias per name gives several of the same range): the smallest range,
 * the last of equal ones.
 */
static void last_alias(Dwarf_Die *cu, uint64_t addr, Dwarf_Die *best)
{
	Dwarf_Addr low, high, best_len;
	Dwarf_Die d;

	if (dwarf_lowpc(best, &low) || dwarf_highpc(best, &high) || dwarf_child(cu, &d))
		return;
	best_len = high - low;
	do {
		if (dwarf_tag(&d) == DW_TAG_subprogram && dwarf_haspc(&d, addr) == 1 &&
		    !dwarf_lowpc(&d, &low) && !dwarf_highpc(&d, &high) && high - low <= best_len &&
		    (high - low < best_len || d.addr > best->addr)) {
			*best = d;
			best_len = high - low;
		}
	} while (dwarf_siblingof(&d, &d) == 0);
}

/* addr2line -i's records from the DWARF: the innermost function at the
 * line table's line, then each caller at the call site of the function it
 * inlined (none where the DWARF has no function).
 */
static void dwarf_records(struct vmpt_srcline *sl, struct sl_entry *e)
{
	Dwarf_Die cu, inner, *scopes = NULL;
	Dwarf_Files *files = NULL;
	const char *file = e->file;
	unsigned line = e->line;
	size_t nfiles = 0;
	int n;

	if (!sl->dw || !dwarf_addrdie(sl->dw, e->addr, &cu))
		return;
	/* The innermost scope at addr, then its parents in the DIE tree
	 * (dwarf_getscopes goes on in the inlined function's own definition).
	 */
	n = dwarf_getscopes(&cu, e->addr, &scopes);
	if (n <= 0)
		return;
	inner = scopes[0];
	free(scopes);
	scopes = NULL;
	n = dwarf_getscopes_die(&inner, &scopes);
	if (n <= 0)
		return;
	dwarf_getsrcfiles(&cu, &files, &nfiles);
	e->inl = calloc((size_t)n, sizeof(*e->inl));
	for (int i = 0; e->inl && i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);
		Dwarf_Attribute a;
		Dwarf_Word w;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		if (tag == DW_TAG_subprogram && !e->n_inl)
			last_alias(&cu, e->addr, &scopes[i]);
		e->inl[e->n_inl].func = func_name(sl, &scopes[i]);
		e->inl[e->n_inl].file = file;
		e->inl[e->n_inl].line = line;
		e->n_inl++;
		if (tag == DW_TAG_subprogram)
			break;
		/* The caller's line is where this one was inlined. */
		file = NULL;
		line = 0;
		if (files && dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &w) == 0)
			file = base_name(dwarf_filesrc(files, (size_t)w, NULL, NULL));
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &w) == 0)
			line = (unsigned)w;
	}
	free(scopes);
}

static void inline_chain(struct vmpt_srcline *sl, struct sl_entry *e)
{
	e->inl_done = 1;
	if (!e->file)
		return;		/* addr2line names no function */
	dwarf_records(sl, e);
	if (!e->n_inl)
		symtab_record(sl, e);
}

size_t vmpt_srcline_inlines(struct vmpt_srcline *sl, uint64_t addr,
			    const struct vmpt_inline_frame **frames)
{
	struct sl_entry *e = entry(sl, addr);

	if (!e)
		return 0;
	if (!e->inl_done)
		inline_chain(sl, e);
	*frames = e->inl;
	return e->n_inl;
}
