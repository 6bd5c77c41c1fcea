/* SPDX-License-Identifier: MIT */
/* The memory image: sections of code keyed by address space. */
#include "vmpt/image.h"
#include "vmpt/debug_file.h"
#include "vmpt/demangle.h"
#include "vmpt/error.h"
#include "../../lib/vmpt_elf.h"
#include "vmpt/file.h"
#include "vmpt/path.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An ELF file's symbols at its link addresses, parsed once however many
 * mappings show it (each section adds its own bias).
 */
struct parsed_syms {
	const struct vmpt_file *file;
	struct vmpt_symbol *syms;
	size_t n;
};

struct vmpt_image {
	struct vmpt_section **secs;	/* by id */
	/* By vaddr, then id: sorted once before the first lookup after
	 * sections were added (sorted as they come, N PT_LOADs in reverse
	 * order cost N^2/2 moves), under sort_lock, so the lookups of
	 * decoders on other threads find it ready.
	 */
	struct vmpt_section **sorted;
	atomic_int unsorted;
	pthread_mutex_t sort_lock;
	size_t n, cap;
	struct parsed_syms *parsed;
	size_t n_parsed;
	uint64_t max_size;		/* bounds the overlap scan in find */
	/* Everything the sections point into. */
	struct vmpt_file **files;	/* pointers: sections keep them */
	size_t n_files;
	void **owned;
	size_t n_owned;
	unsigned no_demangle;		/* VMPT_IMAGE_DEMANGLE* bits off */
	int loading_kernel;		/* perf demangles kernel names apart */
};

struct vmpt_image *vmpt_image_new(void)
{
	struct vmpt_image *img = calloc(1, sizeof(struct vmpt_image));

	/* perf's defaults: --demangle on, --demangle-kernel off. */
	if (img) {
		img->no_demangle = VMPT_IMAGE_DEMANGLE_KERNEL;
		pthread_mutex_init(&img->sort_lock, NULL);
	}
	return img;
}

void vmpt_image_set_demangle(struct vmpt_image *img, unsigned which)
{
	img->no_demangle = ~which & (VMPT_IMAGE_DEMANGLE | VMPT_IMAGE_DEMANGLE_KERNEL);
}

void vmpt_image_free(struct vmpt_image *img)
{
	if (!img)
		return;
	for (size_t i = 0; i < img->n; i++)
		free(img->secs[i]);
	for (size_t i = 0; i < img->n_files; i++) {
		vmpt_file_unmap(img->files[i]);
		free(img->files[i]);
	}
	for (size_t i = 0; i < img->n_owned; i++)
		free(img->owned[i]);
	free(img->secs);
	free(img->sorted);
	free(img->parsed);
	pthread_mutex_destroy(&img->sort_lock);
	free(img->files);
	free(img->owned);
	free(img);
}

/* Keep p alive as long as the image; frees it on failure. */
/* Symbols are indexed by page of their section (sym_pages). */
#define SYM_PAGE_SHIFT 12

static int own(struct vmpt_image *img, void *p)
{
	void **o;

	if (!p)
		return -VMPT_ERR_NOMEM;
	/* Doubling (at powers of two from 16): there is one per symbol name. */
	if (img->n_owned >= 16 && !(img->n_owned & (img->n_owned - 1))) {
		o = realloc(img->owned, 2 * img->n_owned * sizeof(*o));
	} else if (!img->n_owned) {
		o = malloc(16 * sizeof(*o));
	} else {
		img->owned[img->n_owned++] = p;
		return 0;
	}
	if (!o) {
		free(p);
		return -VMPT_ERR_NOMEM;
	}
	img->owned = o;
	img->owned[img->n_owned++] = p;
	return 0;
}

static const char *own_str(struct vmpt_image *img, const char *s)
{
	char *d = strdup(s);

	return own(img, d) < 0 ? NULL : d;
}

/* n elements of size bytes, NULL when that overflows: counts come from
 * files, which anyone may have crafted.
 */
static void *alloc_array(size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n ? n : 1, size, &bytes))
		return NULL;
	return malloc(bytes);
}

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

/* What a file opened as root + path is called: f's own name, unless f
 * is the same file met first by another name.
 */
static const char *file_name(struct vmpt_image *img, const char *root,
			     const char *path, const struct vmpt_file *f)
{
	char full[8192];

	snprintf(full, sizeof(full), "%s%s%s", root ? root : "",
		 root && path[0] != '/' ? "/" : "", path);
	return strcmp(full, f->path) ? own_str(img, full) : f->path;
}

/* path inside root (NULL: as is), a regular file only: vmpt/path.h. */
static int map_file(struct vmpt_image *img, const char *root, const char *path,
		    const struct vmpt_file **out)
{
	struct vmpt_file **a, *f;
	char full[8192];
	int ret;

	snprintf(full, sizeof(full), "%s%s%s", root ? root : "",
		 root && path[0] != '/' ? "/" : "", path);
	/* A library mapped by many processes is mapped once. */
	for (size_t i = 0; i < img->n_files; i++) {
		if (!strcmp(img->files[i]->path, full)) {
			*out = img->files[i];
			return 0;
		}
	}
	a = realloc(img->files, (img->n_files + 1) * sizeof(*a));
	if (!a)
		return -VMPT_ERR_NOMEM;
	img->files = a;
	f = malloc(sizeof(*f));
	if (!f)
		return -VMPT_ERR_NOMEM;
	ret = vmpt_path_map(f, root, path);
	if (ret < 0) {
		free(f);
		return ret;
	}
	/* The same file by another path (a link, a copy's hard link): the
	 * one mapping, parsed once.
	 */
	for (size_t i = 0; i < img->n_files; i++) {
		if (img->files[i]->dev == f->dev && img->files[i]->ino == f->ino &&
		    img->files[i]->size == f->size && !img->files[i]->read_in) {
			vmpt_file_unmap(f);
			free(f);
			*out = img->files[i];
			return 0;
		}
	}
	img->files[img->n_files++] = f;
	*out = f;
	return 0;
}

static int add_section(struct vmpt_image *img, const uint8_t *data,
		       uint64_t size, uint64_t vaddr, const char *name,
		       uint64_t file_offset, const struct vmpt_asid *asid,
		       struct vmpt_section **out)
{
	struct vmpt_section *sec;
	size_t pos;

	if (!size || vaddr + size < vaddr)
		return -VMPT_ERR_INVAL;
	if (img->n == img->cap) {
		size_t cap = img->cap ? img->cap * 2 : 16;
		struct vmpt_section **a = realloc(img->secs, cap * sizeof(*a));

		if (!a)
			return -VMPT_ERR_NOMEM;
		img->secs = a;
		a = realloc(img->sorted, cap * sizeof(*a));
		if (!a)
			return -VMPT_ERR_NOMEM;
		img->sorted = a;
		img->cap = cap;
	}
	sec = calloc(1, sizeof(*sec));
	if (!sec)
		return -VMPT_ERR_NOMEM;
	sec->vaddr = vaddr;
	sec->size = size;
	sec->data = data;
	sec->asid = asid ? *asid : vmpt_asid_any();
	sec->name = name;
	sec->file_offset = file_offset;
	sec->id = (unsigned)img->n;
	img->secs[img->n] = sec;
	pos = img->n;
	if (pos > 0 && img->sorted[pos - 1]->vaddr > vaddr)
		atomic_store_explicit(&img->unsorted, 1, memory_order_relaxed);
	img->sorted[pos] = sec;
	img->n++;
	if (size > img->max_size)
		img->max_size = size;
	if (out)
		*out = sec;
	return 0;
}

static int cmp_sorted(const void *a, const void *b)
{
	const struct vmpt_section *x = *(struct vmpt_section *const *)a;
	const struct vmpt_section *y = *(struct vmpt_section *const *)b;

	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Sections added since the last lookup: sort them in, once. */
static void ensure_sorted(const struct vmpt_image *cimg)
{
	struct vmpt_image *img = (struct vmpt_image *)cimg;

	if (!atomic_load_explicit(&img->unsorted, memory_order_acquire))
		return;
	pthread_mutex_lock(&img->sort_lock);
	if (atomic_load_explicit(&img->unsorted, memory_order_relaxed)) {
		qsort(img->sorted, img->n, sizeof(*img->sorted), cmp_sorted);
		atomic_store_explicit(&img->unsorted, 0, memory_order_release);
	}
	pthread_mutex_unlock(&img->sort_lock);
}

const struct vmpt_section *vmpt_image_find(const struct vmpt_image *img,
					   const struct vmpt_asid *asid,
					   uint64_t vaddr)
{
	const struct vmpt_section *best = NULL;
	size_t lo = 0, hi = img->n;

	ensure_sorted(img);

	/* First section starting above vaddr. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (img->sorted[mid]->vaddr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo-- > 0) {
		const struct vmpt_section *s = img->sorted[lo];

		if (vaddr - s->vaddr >= img->max_size)
			break;
		if (vaddr - s->vaddr < s->size && vmpt_asid_match(&s->asid, asid) &&
		    (!best || s->id > best->id))
			best = s;
	}
	return best;
}

int vmpt_image_read(const struct vmpt_image *img, const struct vmpt_asid *asid,
		    uint64_t vaddr, uint8_t *buf, size_t size)
{
	size_t done = 0;

	while (done < size) {
		const struct vmpt_section *s = vmpt_image_find(img, asid, vaddr + done);
		uint64_t off, n;

		if (!s)
			break;
		off = vaddr + done - s->vaddr;
		n = s->size - off;
		if (n > size - done)
			n = size - done;
		memcpy(buf + done, s->data + off, n);
		done += n;
	}
	return done ? (int)done : -VMPT_ERR_NO_IMAGE;
}

const struct vmpt_file *vmpt_image_section_file(const struct vmpt_image *img,
					       const struct vmpt_section *sec)
{
	for (size_t i = 0; i < img->n_files; i++) {
		const struct vmpt_file *f = img->files[i];

		if (sec->data >= f->data && sec->data - f->data < (ptrdiff_t)f->size)
			return f;
	}
	return NULL;
}

size_t vmpt_image_count(const struct vmpt_image *img)
{
	return img->n;
}

const struct vmpt_section *vmpt_image_section(const struct vmpt_image *img,
					      unsigned id)
{
	return id < img->n ? img->secs[id] : NULL;
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

int vmpt_image_add_buffer(struct vmpt_image *img, const uint8_t *buf,
			  uint64_t size, uint64_t vaddr, const char *name,
			  const struct vmpt_asid *asid)
{
	uint8_t *copy = malloc(size ? size : 1);
	const char *nm;
	int ret;

	ret = own(img, copy);
	if (ret < 0)
		return ret;
	memcpy(copy, buf, size);
	nm = own_str(img, name ? name : "[buffer]");
	if (!nm)
		return -VMPT_ERR_NOMEM;
	return add_section(img, copy, size, vaddr, nm, 0, asid, NULL);
}

int vmpt_image_add_raw(struct vmpt_image *img, const char *path,
		       uint64_t offset, uint64_t size, uint64_t vaddr,
		       const struct vmpt_asid *asid)
{
	return vmpt_image_add_raw_in(img, NULL, path, offset, size, vaddr, asid);
}

int vmpt_image_add_raw_in(struct vmpt_image *img, const char *root,
			  const char *path, uint64_t offset, uint64_t size,
			  uint64_t vaddr, const struct vmpt_asid *asid)
{
	const struct vmpt_file *f;
	const char *name;
	int ret = map_file(img, root, path, &f);

	if (ret < 0)
		return ret;
	if (offset >= f->size)
		return -VMPT_ERR_INVAL;
	if (!size || size > f->size - offset)
		size = f->size - offset;
	name = file_name(img, root, path, f);
	if (!name)
		return -VMPT_ERR_NOMEM;
	return add_section(img, f->data + offset, size, vaddr, name, offset,
			   asid, NULL);
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
static int attach_symbols(struct vmpt_image *img, struct vmpt_section *const *secs,
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
		index = alloc_array(pages + 1, sizeof(*index));
		ret = own(img, index);
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
	return own(img, d) < 0 ? NULL : d;
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
	syms = alloc_array(count, sizeof(*syms));
	ret = own(img, syms);
	if (ret < 0)
		return ret;
	bind = alloc_array(count, sizeof(*bind));
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
		syms[n].name = own_str(img, name);
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
				 sizeof(path)) < 0 || map_file(img, NULL, path, &df) < 0)
		return 0;	/* no debug file: fine */
	delf = elf_memory((char *)df->data, df->size);
	if (!delf)
		return 0;
	ret = elf_kind(delf) == ELF_K_ELF ?
	      elf_symbols(img, delf, df, bias, syms, n_syms) : 0;
	elf_end(delf);
	return ret;
}

/* Where an ELF file's segments go. */
struct placement {
	enum { PLACE_LINK, PLACE_BASE, PLACE_MAP } how;
	uint64_t base;		/* PLACE_BASE: the lowest PT_LOAD goes here */
	uint64_t start, pgoff;	/* PLACE_MAP: file offset pgoff is mapped at start */
};

static uint64_t placement_bias(Elf *elf, size_t n_phdr, uint64_t lowest,
			       const struct placement *pl)
{
	if (pl->how == PLACE_BASE && lowest != UINT64_MAX)
		return pl->base - lowest;
	if (pl->how == PLACE_MAP) {
		for (size_t i = 0; i < n_phdr; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X) && pl->pgoff >= (ph.p_offset & ~0xfffull) &&
			    pl->pgoff < ph.p_offset + ph.p_filesz)
				return pl->start - (ph.p_vaddr - ph.p_offset + pl->pgoff);
		}
	}
	return 0;
}

/* The symbols of an ELF file at its link addresses (its debug file's,
 * else its own, and its PLT's), parsed on the first mapping of the file.
 */
static int file_symbols(struct vmpt_image *img, Elf *elf, const struct vmpt_file *f,
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
	      alloc_array(n_all, sizeof(*all));
	ret = own(img, all);
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

/* PT_LOAD segments of an ELF file (exec/dyn or core) as sections. */
static int add_elf_segments(struct vmpt_image *img, const char *root,
			    const char *path, const struct placement *pl, int core,
			    const struct vmpt_asid *asid, const char *name,
			    struct vmpt_section ***added, size_t *n_added)
{
	const struct vmpt_file *f;
	struct vmpt_section **list = NULL;
	struct vmpt_symbol *syms = NULL;
	size_t n_phdr, n_syms = 0, n = 0;
	uint64_t lowest = UINT64_MAX, bias = 0;
	Elf *elf;
	int ret;

	ret = map_file(img, root, path, &f);
	if (ret < 0)
		return ret;
	if (!name)
		name = file_name(img, root, path, f);
	if (!name)
		return -VMPT_ERR_NOMEM;
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)f->data, f->size);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &n_phdr)) {
		ret = -VMPT_ERR_FORMAT;
		goto out;
	}
	list = calloc(n_phdr ? n_phdr : 1, sizeof(*list));
	if (!list) {
		ret = -VMPT_ERR_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < n_phdr; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph)) {
			ret = -VMPT_ERR_FORMAT;
			goto out;
		}
		if (ph.p_type == PT_LOAD && (ph.p_vaddr & ~0xfffull) < lowest)
			lowest = ph.p_vaddr & ~0xfffull;
	}
	bias = placement_bias(elf, n_phdr, lowest, pl);
	for (size_t i = 0; i < n_phdr; i++) {
		GElf_Phdr ph;

		gelf_getphdr(elf, (int)i, &ph);
		if (ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		/* Code lives in executable segments; a core has no flags
		 * worth trusting (kcore marks all RWX).
		 */
		if (!core && !(ph.p_flags & PF_X))
			continue;
		/* A mapping holds the one segment it was made for. */
		if (pl->how == PLACE_MAP && (pl->pgoff < (ph.p_offset & ~0xfffull) ||
					  pl->pgoff >= ph.p_offset + ph.p_filesz))
			continue;
		if (ph.p_offset > f->size || ph.p_filesz > f->size - ph.p_offset) {
			ret = -VMPT_ERR_FORMAT;
			goto out;
		}
		ret = add_section(img, f->data + ph.p_offset, ph.p_filesz,
				  ph.p_vaddr + bias, name, ph.p_offset, asid,
				  &list[n]);
		if (ret < 0)
			goto out;
		n++;
	}
	if (!core) {
		ret = file_symbols(img, elf, f, &syms, &n_syms);
		if (ret == 0)
			ret = attach_symbols(img, list, n, syms, n_syms, bias);
		if (ret < 0)
			goto out;
	}
	ret = 0;
out:
	if (elf)
		elf_end(elf);
	if (ret == 0 && added) {
		*added = list;
		*n_added = n;
	} else {
		free(list);
	}
	return ret;
}

int vmpt_image_add_elf(struct vmpt_image *img, const char *path, uint64_t base,
		       const struct vmpt_asid *asid)
{
	struct placement pl = { base == VMPT_ELF_LINK_ADDR ? PLACE_LINK : PLACE_BASE,
				base, 0, 0 };

	return add_elf_segments(img, NULL, path, &pl, 0, asid, NULL, NULL, NULL);
}

int vmpt_image_add_vmlinux(struct vmpt_image *img, const char *path,
			   const struct vmpt_asid *asid)
{
	struct placement pl = { PLACE_LINK, 0, 0, 0 };
	int guest = asid && asid->machine != VMPT_MACHINE_HOST &&
		    asid->machine != VMPT_ASID_ANY;
	int ret;

	img->loading_kernel = 1;
	ret = add_elf_segments(img, NULL, path, &pl, 0, asid, guest ?
			       "[guest.kernel.kallsyms]" : "[kernel.kallsyms]", NULL, NULL);
	img->loading_kernel = 0;
	return ret;
}

int vmpt_image_add_elf_map(struct vmpt_image *img, const char *path,
			   uint64_t start, uint64_t pgoff,
			   const struct vmpt_asid *asid)
{
	struct placement pl = { PLACE_MAP, 0, start, pgoff };

	return add_elf_segments(img, NULL, path, &pl, 0, asid, NULL, NULL, NULL);
}

int vmpt_image_add_elf_map_named(struct vmpt_image *img, const char *path,
				 const char *name, uint64_t start, uint64_t pgoff,
				 const struct vmpt_asid *asid)
{
	return vmpt_image_add_elf_map_in(img, NULL, path, name, start, pgoff, asid);
}

int vmpt_image_add_elf_map_in(struct vmpt_image *img, const char *root,
			      const char *path, const char *name, uint64_t start,
			      uint64_t pgoff, const struct vmpt_asid *asid)
{
	struct placement pl = { PLACE_MAP, 0, start, pgoff };
	char *copy = NULL;
	int ret;

	if (name) {
		copy = strdup(name);
		ret = own(img, copy);
		if (ret < 0)
			return ret;
	}
	return add_elf_segments(img, root, path, &pl, 0, asid, copy, NULL, NULL);
}

int vmpt_image_add_kcore(struct vmpt_image *img, const char *path,
			 const struct vmpt_asid *asid)
{
	struct placement pl = { PLACE_LINK, 0, 0, 0 };

	return add_elf_segments(img, NULL, path, &pl, 1, asid, NULL, NULL, NULL);
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
static int read_kallsyms(struct vmpt_image *img, const char *dir,
			 struct vmpt_symbol **out, size_t *n_out)
{
	struct vmpt_symbol *syms = NULL;
	size_t n = 0, k = 0, cap = 0;
	char line[512];
	int fd = vmpt_path_open(dir, "kallsyms");
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
		char type, name[256];

		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 ||
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
		syms[n].name = own_str(img, name);
		if (!syms[n].name) {
			free(syms);
			fclose(f);
			return -VMPT_ERR_NOMEM;
		}
		n++;
	}
	fclose(f);
	if (own(img, syms ? syms : malloc(1)) < 0)
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

int vmpt_image_add_kcore_dir(struct vmpt_image *img, const char *dir,
			     const struct vmpt_asid *asid)
{
	struct placement link = { PLACE_LINK, 0, 0, 0 };
	struct vmpt_section **list = NULL;
	struct vmpt_symbol *syms;
	size_t n = 0, n_syms;
	int ret;

	/* A recording's kcore_dir: its files opened inside it. */
	ret = add_elf_segments(img, dir, "kcore", &link, 1, asid,
			       "[kernel.kallsyms]", &list, &n);
	if (ret < 0)
		return ret;
	ret = read_kallsyms(img, dir, &syms, &n_syms);
	if (ret == 0)
		ret = attach_symbols(img, list, n, syms, n_syms, 0);
	free(list);
	/* Without kallsyms the code is still there, only unnamed. */
	return ret == -VMPT_ERR_IO ? 0 : ret;
}

static int cmp_page(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

int vmpt_image_add_pagecache(struct vmpt_image *img, const char *prefix,
			     const struct vmpt_asid *asid)
{
	const struct vmpt_file *af, *df;
	char path[4096];
	uint64_t (*pages)[2];	/* address, index in .dump */
	size_t n;
	const char *name;
	int ret;

	snprintf(path, sizeof(path), "%s.addr", prefix);
	ret = map_file(img, NULL, path, &af);
	if (ret < 0)
		return ret;
	snprintf(path, sizeof(path), "%s.dump", prefix);
	ret = map_file(img, NULL, path, &df);
	if (ret < 0)
		return ret;
	n = af->size / 8;
	if (af->size % 8 || df->size < n * 4096)
		return -VMPT_ERR_FORMAT;
	name = own_str(img, prefix);
	if (!name)
		return -VMPT_ERR_NOMEM;
	pages = malloc((n ? n : 1) * sizeof(*pages));
	if (!pages)
		return -VMPT_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		memcpy(&pages[i][0], af->data + i * 8, 8);
		pages[i][1] = i;
	}
	qsort(pages, n, sizeof(*pages), cmp_page);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		uint8_t *run;

		/* A run of adjacent pages; a repeated address keeps the last. */
		while (j < n && pages[j][0] <= pages[j - 1][0] + 4096)
			j++;
		run = malloc((size_t)(pages[j - 1][0] - pages[i][0] + 4096));
		ret = own(img, run);
		if (ret < 0)
			break;
		for (size_t k = i; k < j; k++)
			memcpy(run + (pages[k][0] - pages[i][0]),
			       df->data + pages[k][1] * 4096, 4096);
		ret = add_section(img, run, pages[j - 1][0] - pages[i][0] + 4096,
				  pages[i][0], name, pages[i][1] * 4096, asid, NULL);
		if (ret < 0)
			break;
		i = j;
	}
	free(pages);
	return ret;
}
