/* SPDX-License-Identifier: MIT */
/* Inside the image (vmpt_image.c: sections, files, lookups) and its
 * symbols (vmpt_image_symbols.c: ELF, PLT, debug file, kallsyms).
 */
#ifndef VMPT_IMAGE_INT_H
#define VMPT_IMAGE_INT_H

#include "vmpt/file.h"
#include "vmpt/image.h"

#include <gelf.h>
#include <pthread.h>
#include <stdatomic.h>

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
	/* Forked address spaces that see their parents' code (by machine,
	 * then child): vmpt_image_inherit.
	 */
	struct image_link {
		uint64_t machine, child, parent;
	} *links;
	size_t n_links;
	unsigned no_demangle;		/* VMPT_IMAGE_DEMANGLE* bits off */
	int loading_kernel;		/* perf demangles kernel names apart */
};

/* Symbols are indexed by page of their section (sym_pages). */
#define SYM_PAGE_SHIFT 12

/* Keep p alive as long as the image; frees it on failure. */
int image_own(struct vmpt_image *img, void *p);
const char *image_own_str(struct vmpt_image *img, const char *s);
/* n elements of size bytes, NULL when that overflows. */
void *image_alloc_array(size_t n, size_t size);
/* path inside root (NULL: as is), a regular file only, mapped once. */
int image_map_file(struct vmpt_image *img, const char *root, const char *path,
		   const struct vmpt_file **out);

/* The symbols of an ELF file at its link addresses, parsed once. */
int image_file_symbols(struct vmpt_image *img, Elf *elf, const struct vmpt_file *f,
		       struct vmpt_symbol **out, size_t *n_out);
/* A kallsyms (path inside root, as vmpt_path_open), one symbol per
 * address, as perf keeps them (core_only: no module's).
 */
int image_read_kallsyms(struct vmpt_image *img, const char *root, const char *path,
			int core_only, struct vmpt_symbol **out, size_t *n_out);
/* Give each section the symbols inside it (syms sorted, at the file's
 * addresses: the sections are there + bias). */
int image_attach_symbols(struct vmpt_image *img, struct vmpt_section *const *secs,
			 size_t n, const struct vmpt_symbol *syms, size_t n_syms,
			 uint64_t bias);

#endif
