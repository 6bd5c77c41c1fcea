/* SPDX-License-Identifier: MIT */
/* The memory image: sections of code keyed by address space. */
#include "vmpt_image_int.h"
#include "vmpt/error.h"
#include "vmpt/path.h"

#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	free(img->links);
	pthread_mutex_destroy(&img->sort_lock);
	free(img->files);
	free(img->owned);
	free(img);
}

/* Keep p alive as long as the image; frees it on failure. */
int image_own(struct vmpt_image *img, void *p)
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

const char *image_own_str(struct vmpt_image *img, const char *s)
{
	char *d = strdup(s);

	return image_own(img, d) < 0 ? NULL : d;
}

/* n elements of size bytes, NULL when that overflows: counts come from
 * files, which anyone may have crafted.
 */
void *image_alloc_array(size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n ? n : 1, size, &bytes))
		return NULL;
	return malloc(bytes);
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
	return strcmp(full, f->path) ? image_own_str(img, full) : f->path;
}

/* path inside root (NULL: as is), a regular file only: vmpt/path.h. */
int image_map_file(struct vmpt_image *img, const char *root, const char *path,
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

static const struct vmpt_section *find_in(const struct vmpt_image *img,
					   const struct vmpt_asid *asid, uint64_t vaddr)
{
	const struct vmpt_section *best = NULL;
	size_t lo = 0, hi = img->n;

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

static int link_cmp(uint64_t machine, uint64_t child, const struct image_link *l)
{
	if (machine != l->machine)
		return machine < l->machine ? -1 : 1;
	return child < l->child ? -1 : child > l->child;
}

/* The first link at or after (machine, child). */
static size_t link_at(const struct vmpt_image *img, uint64_t machine, uint64_t child)
{
	size_t lo = 0, hi = img->n_links;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (link_cmp(machine, child, &img->links[mid]) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int vmpt_image_inherit(struct vmpt_image *img, const struct vmpt_asid *child,
		       uint64_t parent)
{
	size_t at = link_at(img, child->machine, child->cr3);
	struct image_link *l;

	if (at < img->n_links && !link_cmp(child->machine, child->cr3, &img->links[at])) {
		img->links[at].parent = parent;
		return 0;
	}
	l = realloc(img->links, (img->n_links + 1) * sizeof(*l));
	if (!l)
		return -VMPT_ERR_NOMEM;
	img->links = l;
	memmove(&l[at + 1], &l[at], (img->n_links - at) * sizeof(*l));
	l[at] = (struct image_link){ child->machine, child->cr3, parent };
	img->n_links++;
	return 0;
}

const struct vmpt_section *vmpt_image_find(const struct vmpt_image *img,
					   const struct vmpt_asid *asid,
					   uint64_t vaddr)
{
	struct vmpt_asid in = *asid;

	ensure_sorted(img);
	/* A fork's own code, else its parents' (a bounded chain). */
	for (int depth = 0; depth < 64; depth++) {
		const struct vmpt_section *s = find_in(img, &in, vaddr);
		size_t at;

		if (s || !img->n_links || in.cr3 == VMPT_ASID_ANY)
			return s;
		at = link_at(img, in.machine, in.cr3);
		if (at == img->n_links || link_cmp(in.machine, in.cr3, &img->links[at]))
			return NULL;
		in.cr3 = img->links[at].parent;
	}
	return NULL;
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


int vmpt_image_add_buffer(struct vmpt_image *img, const uint8_t *buf,
			  uint64_t size, uint64_t vaddr, const char *name,
			  const struct vmpt_asid *asid)
{
	uint8_t *copy = malloc(size ? size : 1);
	const char *nm;
	int ret;

	ret = image_own(img, copy);
	if (ret < 0)
		return ret;
	memcpy(copy, buf, size);
	nm = image_own_str(img, name ? name : "[buffer]");
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
	int ret = image_map_file(img, root, path, &f);

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

	ret = image_map_file(img, root, path, &f);
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
		ret = image_file_symbols(img, elf, f, &syms, &n_syms);
		if (ret == 0)
			ret = image_attach_symbols(img, list, n, syms, n_syms, bias);
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
		ret = image_own(img, copy);
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
	ret = image_read_kallsyms(img, dir, "kallsyms", 0, &syms, &n_syms);
	if (ret == 0)
		ret = image_attach_symbols(img, list, n, syms, n_syms, 0);
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
	ret = image_map_file(img, NULL, path, &af);
	if (ret < 0)
		return ret;
	snprintf(path, sizeof(path), "%s.dump", prefix);
	ret = image_map_file(img, NULL, path, &df);
	if (ret < 0)
		return ret;
	n = af->size / 8;
	if (af->size % 8 || df->size < n * 4096)
		return -VMPT_ERR_FORMAT;
	name = image_own_str(img, prefix);
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
		ret = image_own(img, run);
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
