/* SPDX-License-Identifier: MIT */
/* vmpt-agent: the program vmpt deploys into a guest (see docs/guest.md). */
#ifndef VMPT_AGENT_H
#define VMPT_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Subcommands; each returns the process exit status. */
int agent_record(int argc, char **argv);
int agent_pack(int argc, char **argv);
int agent_check(int argc, char **argv);
int agent_kcore(int argc, char **argv);

/* Reply stream (guest_pack.h) on out; 0 or -errno. */
int agent_pack_begin(FILE *out);
int agent_pack_file(FILE *out, const char *name, const void *data, uint64_t size);
int agent_pack_missing(FILE *out, const char *name, int err);
int agent_pack_end(FILE *out);

/* Read a whole file (also /proc files, whose size stat does not know)
 * into a malloc'd buffer, with a NUL after its size bytes.  0 or -errno.
 */
int agent_read_file(const char *path, uint8_t **data, size_t *size);

/* The compact kcore (kernel and module text of /proc/kcore) in memory.
 * 0 or -errno; why is set to a message on failure.
 */
int agent_kcore_build(uint8_t **data, size_t *size, const char **why);

/* This process's vdso image.  0 or -errno. */
int agent_vdso(const uint8_t **data, size_t *size);

/* A set of file names (each once). */
struct agent_names {
	char **slots;		/* open addressing, cap a power of 2 */
	size_t nr, cap;
};

/* 0 or -ENOMEM. */
int agent_names_add(struct agent_names *n, const char *name);
void agent_names_free(struct agent_names *n);

/* NT_GNU_BUILD_ID (up to 20 bytes, *len set) of ELF notes, an ELF file
 * (regular files only) or an ELF image in memory.  0 or -errno (-ENOENT:
 * none).
 */
int agent_build_id_notes(const uint8_t *notes, size_t size, uint8_t id[20], uint8_t *len);
int agent_build_id_file(const char *path, uint8_t id[20], uint8_t *len);
int agent_build_id_mem(const uint8_t *data, size_t size, uint8_t id[20], uint8_t *len);

#endif
