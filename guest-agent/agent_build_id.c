/* SPDX-License-Identifier: MIT */
/* The build-ids perf record --buildid-all puts in HEADER_BUILD_ID: of each
 * file the guest sideband maps executable, of the vdso and of the kernel.
 * perf inject --guest-data carries them into the host's recording, where
 * they name the guest binaries for perf's build-id cache.
 */
#include "agent.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Most distinct names kept: a guest mapping more is not real processes. */
#define NAMES_MAX 100000
#define NOTES_MAX (64 * 1024)

static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 0x100000001b3ull;
	return h;
}

int agent_names_add(struct agent_names *n, const char *name)
{
	size_t i;

	if (n->nr >= NAMES_MAX)
		return 0;	/* the rest go without a build-id */
	if (2 * (n->nr + 1) > n->cap) {
		size_t cap = n->cap ? 2 * n->cap : 256;
		char **slots;

		slots = calloc(cap, sizeof(*slots));
		if (!slots)
			return -ENOMEM;
		for (i = 0; i < n->cap; i++) {
			size_t j;

			if (!n->slots[i])
				continue;
			for (j = name_hash(n->slots[i]) & (cap - 1); slots[j]; j = (j + 1) & (cap - 1))
				;
			slots[j] = n->slots[i];
		}
		free(n->slots);
		n->slots = slots;
		n->cap = cap;
	}
	for (i = name_hash(name) & (n->cap - 1); n->slots[i]; i = (i + 1) & (n->cap - 1))
		if (!strcmp(n->slots[i], name))
			return 0;
	n->slots[i] = strdup(name);
	if (!n->slots[i])
		return -ENOMEM;
	n->nr++;
	return 0;
}

void agent_names_free(struct agent_names *n)
{
	for (size_t i = 0; i < n->cap; i++)
		free(n->slots[i]);
	free(n->slots);
	memset(n, 0, sizeof(*n));
}

/* The NT_GNU_BUILD_ID of a run of ELF notes.  0 or -ENOENT. */
int agent_build_id_notes(const uint8_t *p, size_t size, uint8_t id[20], uint8_t *len)
{
	size_t off = 0;

	while (size - off >= 12) {
		uint32_t namesz, descsz, type;
		size_t name_end, desc_end;

		memcpy(&namesz, p + off, 4);
		memcpy(&descsz, p + off + 4, 4);
		memcpy(&type, p + off + 8, 4);
		name_end = off + 12 + (((size_t)namesz + 3) & ~(size_t)3);
		desc_end = name_end + (((size_t)descsz + 3) & ~(size_t)3);
		if (namesz > size || descsz > size || desc_end > size)
			break;
		if (type == NT_GNU_BUILD_ID && namesz == 4 &&
		    !memcmp(p + off + 12, "GNU", 4) && descsz && descsz <= 20) {
			memcpy(id, p + name_end, descsz);
			*len = (uint8_t)descsz;
			return 0;
		}
		off = desc_end;
	}
	return -ENOENT;
}

/* Bytes [off, off+len) of an ELF image, from memory or a file. */
struct elf_src {
	const uint8_t *mem;
	size_t mem_size;
	int fd;
};

static int elf_read(const struct elf_src *s, uint64_t off, void *buf, size_t len)
{
	if (s->mem) {
		if (off > s->mem_size || len > s->mem_size - off)
			return -EINVAL;
		memcpy(buf, s->mem + off, len);
		return 0;
	}
	return pread(s->fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -EINVAL;
}

/* The build-id in the PT_NOTE segments of a 64-bit little-endian ELF
 * (what x86-64 guests run).
 */
static int elf_build_id(const struct elf_src *s, uint8_t id[20], uint8_t *len)
{
	Elf64_Ehdr eh;
	int ret = -ENOENT;

	if (elf_read(s, 0, &eh, sizeof(eh)) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_phentsize != sizeof(Elf64_Phdr))
		return -ENOENT;
	for (unsigned i = 0; ret && i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		uint8_t *notes;

		if (elf_read(s, eh.e_phoff + (uint64_t)i * sizeof(ph), &ph, sizeof(ph)))
			return -ENOENT;
		if (ph.p_type != PT_NOTE || !ph.p_filesz || ph.p_filesz > NOTES_MAX)
			continue;
		notes = malloc(ph.p_filesz);
		if (!notes)
			return -ENOMEM;
		if (!elf_read(s, ph.p_offset, notes, ph.p_filesz))
			ret = agent_build_id_notes(notes, ph.p_filesz, id, len);
		free(notes);
	}
	return ret;
}

int agent_build_id_file(const char *path, uint8_t id[20], uint8_t *len)
{
	struct elf_src s = { .fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) };
	struct stat st;
	int ret;

	if (s.fd < 0)
		return -errno;
	/* a FIFO or device a mapping names would block or never end */
	ret = fstat(s.fd, &st) || !S_ISREG(st.st_mode) ? -EINVAL : elf_build_id(&s, id, len);
	close(s.fd);
	return ret;
}

int agent_build_id_mem(const uint8_t *data, size_t size, uint8_t id[20], uint8_t *len)
{
	struct elf_src s = { .mem = data, .mem_size = size, .fd = -1 };

	return elf_build_id(&s, id, len);
}
