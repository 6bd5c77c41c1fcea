/* SPDX-License-Identifier: MIT */
/* The memory image a trace ran on: which code bytes were at which virtual
 * address, in which address space of which machine.
 *
 * A trace tells address spaces apart by what its packets carry: PIP.NR says
 * host (root) or guest (non-root), VMCS packets say which guest, PIP.CR3 which
 * process.  An address space id (vmpt_asid) is exactly that triple, and every
 * section of code is added under one, with wildcards: a host kernel section
 * is {host, any cr3}, a guest's user process {vmcs, its cr3}, a page cache
 * from a guest recording {any, any}.  A lookup takes the decoder's current
 * asid and finds the section covering the address whose asid matches.
 */
#ifndef VMPT_IMAGE_H
#define VMPT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Wildcard for any asid field. */
#define VMPT_ASID_ANY UINT64_MAX
/* The machine key of the host (root operation).  Guests are keyed by their
 * VMCS base address, which is 4 KiB aligned, so 1 never clashes.
 */
#define VMPT_MACHINE_HOST 1ull
/* "The guest" without its VMCS: for a section, code of any guest (a
 * recording of one VM); for the decoder, a guest whose VMCS the trace has
 * not named (yet).
 */
#define VMPT_MACHINE_GUEST 2ull

/* The cr3 key of a process known by its pid from sideband rather than by
 * CR3 (no CR3 has bit 63 set), in its gen'th generation of code in the
 * recording: each generation (started by an exec, or by code mapped over
 * code mapped since) is an address space of its own.
 */
static inline uint64_t vmpt_pid_space(int pid, unsigned gen)
{
	return (1ull << 63) | ((uint64_t)(gen & 0x7fffffffu) << 32) | (uint32_t)pid;
}

static inline int vmpt_space_pid(uint64_t space)
{
	return (int)(uint32_t)space;
}

static inline unsigned vmpt_space_gen(uint64_t space)
{
	return (unsigned)(space >> 32) & 0x7fffffffu;
}

struct vmpt_asid {
	uint64_t machine;	/* VMPT_MACHINE_HOST, a VMCS base, or ANY */
	uint64_t cr3;		/* CR3 from PIP (low bits clear), or ANY */
};

static inline struct vmpt_asid vmpt_asid_any(void)
{
	struct vmpt_asid a = { VMPT_ASID_ANY, VMPT_ASID_ANY };

	return a;
}

static inline int vmpt_machine_match(uint64_t want, uint64_t cur)
{
	if (want == VMPT_ASID_ANY || cur == VMPT_ASID_ANY || want == cur)
		return 1;
	/* "A guest" on either side is any machine but the host. */
	if (want == VMPT_MACHINE_GUEST)
		return cur != VMPT_MACHINE_HOST;
	if (cur == VMPT_MACHINE_GUEST)
		return want != VMPT_MACHINE_HOST;
	return 0;
}

/* Does a section added under `want` serve a decoder in `cur`? */
static inline int vmpt_asid_match(const struct vmpt_asid *want,
				  const struct vmpt_asid *cur)
{
	return vmpt_machine_match(want->machine, cur->machine) &&
	       (want->cr3 == VMPT_ASID_ANY || cur->cr3 == VMPT_ASID_ANY ||
		want->cr3 == cur->cr3);
}

struct vmpt_symbol {
	uint64_t addr, size;
	const char *name;
	uint8_t binding;	/* ELF's STB_*: 0 local, 1 global, 2 weak */
};

/* A contiguous run of code bytes at a virtual address. */
struct vmpt_section {
	uint64_t vaddr, size;
	const uint8_t *data;
	struct vmpt_asid asid;
	const char *name;	/* the dso: file path, "[kernel.kallsyms]"... */
	uint64_t file_offset;	/* of data in the named file */
	unsigned id;		/* index in the image, stable */
	/* Sorted by addr, may be NULL: at the file's link addresses, shared
	 * by every mapping of the file; sym_bias moves them here.
	 */
	const struct vmpt_symbol *syms;
	size_t n_syms;
	uint64_t sym_bias;
	/* With syms: for each 4 KiB page of the section, the number of
	 * symbols before it (one more entry for the end), so a lookup
	 * searches one page's symbols.
	 */
	const uint32_t *sym_pages;
};

struct vmpt_image;

struct vmpt_image *vmpt_image_new(void);
void vmpt_image_free(struct vmpt_image *img);

/* Which symbol names vmpt_image_add_* demangle (C++, Rust), as perf's
 * --demangle (default on) and --demangle-kernel (default off); applies to
 * files added after the call.
 */
#define VMPT_IMAGE_DEMANGLE		1u
#define VMPT_IMAGE_DEMANGLE_KERNEL	2u
void vmpt_image_set_demangle(struct vmpt_image *img, unsigned which);

/* Base for vmpt_image_add_elf meaning "at the addresses the file says". */
#define VMPT_ELF_LINK_ADDR UINT64_MAX

/* Add the loadable segments of an ELF file.  With a base, the lowest
 * PT_LOAD (page aligned) lands at base, the way a loader places a PIE or a
 * shared object; otherwise at its p_vaddr.  Symbols come from the debug
 * file its build-id names (/usr/lib/debug/.build-id/), else .symtab or
 * .dynsym.  Errors: -VMPT_ERR_IO (errno kept), -VMPT_ERR_FORMAT.
 */
int vmpt_image_add_elf(struct vmpt_image *img, const char *path, uint64_t base,
		       const struct vmpt_asid *asid);

/* Add a kernel image (vmlinux) at its link addresses, its code named
 * "[kernel.kallsyms]" as perf names the kernel it was given with --vmlinux
 * (a guest's, asid->machine a guest: "[guest.kernel.kallsyms]", as
 * --guestvmlinux).  Errors as vmpt_image_add_elf.
 */
int vmpt_image_add_vmlinux(struct vmpt_image *img, const char *path,
			   const struct vmpt_asid *asid);

/* Add an ELF file as an mmap of it placed it: file offset pgoff at start
 * (perf's MMAP2 records); only the executable segment holding pgoff.
 */
int vmpt_image_add_elf_map(struct vmpt_image *img, const char *path,
			   uint64_t start, uint64_t pgoff,
			   const struct vmpt_asid *asid);

/* The same, the code named name (the path the recording mapped, when
 * the file read is a copy of it: a build-id cache's, an archive's).
 */
int vmpt_image_add_elf_map_named(struct vmpt_image *img, const char *path,
				 const char *name, uint64_t start, uint64_t pgoff,
				 const struct vmpt_asid *asid);

/* The same for a path a recording names: opened inside root (vmpt/path.h:
 * no "..", no link out of root, a regular file only; root NULL: as is);
 * name NULL names it root + path.
 */
int vmpt_image_add_elf_map_in(struct vmpt_image *img, const char *root,
			      const char *path, const char *name, uint64_t start,
			      uint64_t pgoff, const struct vmpt_asid *asid);

/* Add size bytes (0: to the end) at offset of a raw file at vaddr. */
int vmpt_image_add_raw(struct vmpt_image *img, const char *path,
		       uint64_t offset, uint64_t size, uint64_t vaddr,
		       const struct vmpt_asid *asid);
int vmpt_image_add_raw_in(struct vmpt_image *img, const char *root,
			  const char *path, uint64_t offset, uint64_t size,
			  uint64_t vaddr, const struct vmpt_asid *asid);

/* Add a copy of a memory buffer (synthesized code, tests). */
int vmpt_image_add_buffer(struct vmpt_image *img, const uint8_t *buf,
			  uint64_t size, uint64_t vaddr, const char *name,
			  const struct vmpt_asid *asid);

/* Add the PT_LOAD segments of an ELF core file (/proc/kcore or a copy). */
int vmpt_image_add_kcore(struct vmpt_image *img, const char *path,
			 const struct vmpt_asid *asid);

/* Add perf's kcore_dir (DIR/kcore, symbols from DIR/kallsyms if there),
 * both opened inside DIR.
 */
int vmpt_image_add_kcore_dir(struct vmpt_image *img, const char *dir,
			     const struct vmpt_asid *asid);

/* The core kernel's symbols of the kallsyms at path (the host's or the
 * user's own file: links followed, a regular file only), as perf reads
 * them: text symbols, one per address, each ending where the next
 * begins; sorted, kept by img until it is freed.  0, -VMPT_ERR_IO (none
 * there) or -VMPT_ERR_NOMEM.
 */
int vmpt_image_kallsyms(struct vmpt_image *img, const char *path,
			const struct vmpt_symbol **syms, size_t *n);

/* Add a page cache: PREFIX.addr holds little-endian u64 page addresses,
 * PREFIX.dump the 4 KiB pages in the same order.  Adjacent pages merge
 * into one section.
 */
int vmpt_image_add_pagecache(struct vmpt_image *img, const char *prefix,
			     const struct vmpt_asid *asid);

/* The section covering vaddr in asid, or NULL.  Later additions win over
 * earlier ones where they overlap.
 */
const struct vmpt_section *vmpt_image_find(const struct vmpt_image *img,
					   const struct vmpt_asid *asid,
					   uint64_t vaddr);

/* A forked process's address space child (a vmpt_pid_space) also holds
 * parent's code where none of its own is: a fork that maps code of its
 * own (a JIT's, a dlopen) without an exec still runs its parent's; a
 * process's generation sees the one before it the same way.
 * 0 or -VMPT_ERR_NOMEM.
 */
int vmpt_image_inherit(struct vmpt_image *img, const struct vmpt_asid *child,
		       uint64_t parent);

/* Copy up to size bytes at vaddr, crossing section boundaries.  Returns the
 * bytes read (> 0) or -VMPT_ERR_NO_IMAGE.
 */
int vmpt_image_read(const struct vmpt_image *img, const struct vmpt_asid *asid,
		    uint64_t vaddr, uint8_t *buf, size_t size);

/* Write size bytes at vaddr into the code of asid, as the kernel's
 * text_poke changed them (perf's TEXT_POKE records): the sections
 * covering vaddr there see the new bytes (a mapped file's pages become
 * private copies; the file is not written).  The bytes must all be
 * covered: -VMPT_ERR_NO_IMAGE (nothing written) otherwise.  Call before
 * decoding: decoders cache what they read.
 */
int vmpt_image_patch(struct vmpt_image *img, const struct vmpt_asid *asid,
		     uint64_t vaddr, const uint8_t *bytes, size_t size);

/* The file sec's bytes were read from (NULL: a buffer's copy). */
struct vmpt_file;
const struct vmpt_file *vmpt_image_section_file(const struct vmpt_image *img,
					       const struct vmpt_section *sec);

size_t vmpt_image_count(const struct vmpt_image *img);
const struct vmpt_section *vmpt_image_section(const struct vmpt_image *img,
					      unsigned id);

/* The symbol containing vaddr in sec, or NULL; [*from, *to) are the
 * addresses around vaddr with the same answer (a function, or a gap
 * between two), so callers can keep it.  With a symbol, *from is its
 * address in sec (its addr is the file's, before sym_bias).
 */
const struct vmpt_symbol *vmpt_section_symbol_span(const struct vmpt_section *sec,
						   uint64_t vaddr, uint64_t *from,
						   uint64_t *to);

#ifdef __cplusplus
}
#endif

#endif
