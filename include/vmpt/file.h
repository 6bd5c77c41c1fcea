/* SPDX-License-Identifier: MIT */
#ifndef VMPT_FILE_H
#define VMPT_FILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A whole file mapped read-only (traces are large; copying them is waste). */
struct vmpt_file {
	const uint8_t *data;
	size_t size;
	char *path;
	int read_in;	/* a pipe, read into memory */
	uint64_t dev, ino;	/* a mapped file's (0 for a pipe) */
};

/* Map path: a file, or read to its end a pipe, a character device, "-"
 * (standard input) or a file whose size says 0 (procfs, tracefs).  Returns
 * 0 or a negative vmpt_err; errno says why on -VMPT_ERR_IO.  An empty file
 * maps to data == NULL, size == 0.
 */
int vmpt_file_map(struct vmpt_file *file, const char *path);
/* Map the regular file open on fd (which stays the caller's), named
 * name; anything but a regular file is -VMPT_ERR_IO with errno EINVAL
 * (EISDIR for a directory).
 */
int vmpt_file_map_fd(struct vmpt_file *file, int fd, const char *name);
void vmpt_file_unmap(struct vmpt_file *file);

#ifdef __cplusplus
}
#endif

#endif
