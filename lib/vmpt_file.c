/* SPDX-License-Identifier: MIT */
#include "vmpt/file.h"
#include "vmpt/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A pipe (or "-", standard input) has no size to map: read it whole. */
static int read_in(struct vmpt_file *file, int fd, const char *path)
{
	uint8_t *data = NULL;
	size_t size = 0, cap = 0;
	ssize_t n;

	for (;;) {
		if (size == cap) {
			uint8_t *d = cap > SIZE_MAX / 2 ? NULL :
				     realloc(data, cap = cap ? 2 * cap : 64 << 10);

			if (!d) {
				free(data);
				return -VMPT_ERR_NOMEM;
			}
			data = d;
		}
		n = read(fd, data + size, cap - size);
		if (n == 0)
			break;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int saved = errno;

			free(data);
			errno = saved;
			return -VMPT_ERR_IO;
		}
		size += (size_t)n;
	}
	file->path = strdup(path);
	if (!file->path) {
		free(data);
		return -VMPT_ERR_NOMEM;
	}
	if (!size) {
		free(data);
		data = NULL;
	}
	file->data = data;
	file->size = size;
	file->read_in = 1;
	return 0;
}

/* A regular file's fd, mapped whole (fd stays open: the caller's). */
static int map_regular(struct vmpt_file *file, int fd, const struct stat *st,
		       const char *name)
{
	void *data = NULL;

	if (st->st_size > 0) {
		data = mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (data == MAP_FAILED)
			return -VMPT_ERR_IO;
	}
	file->path = strdup(name);
	if (!file->path) {
		if (data)
			munmap(data, (size_t)st->st_size);
		return -VMPT_ERR_NOMEM;
	}
	file->data = data;
	file->size = (size_t)st->st_size;
	file->dev = (uint64_t)st->st_dev;
	file->ino = (uint64_t)st->st_ino;
	return 0;
}

int vmpt_file_map_fd(struct vmpt_file *file, int fd, const char *name)
{
	struct stat st;

	memset(file, 0, sizeof(*file));
	if (fstat(fd, &st) < 0)
		return -VMPT_ERR_IO;
	if (!S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		return -VMPT_ERR_IO;
	}
	return map_regular(file, fd, &st, name);
}

int vmpt_file_map(struct vmpt_file *file, const char *path)
{
	struct stat st;
	int fd, saved, ret;

	memset(file, 0, sizeof(*file));
	if (!strcmp(path, "-"))
		return read_in(file, STDIN_FILENO, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -VMPT_ERR_IO;
	if (fstat(fd, &st) < 0) {
		ret = -VMPT_ERR_IO;
	} else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode)) {
		ret = read_in(file, fd, path);
	} else if (!S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		ret = -VMPT_ERR_IO;
	} else if (!st.st_size) {
		/* procfs, sysfs and tracefs files say 0 and have bytes */
		ret = read_in(file, fd, path);
		file->dev = (uint64_t)st.st_dev;
		file->ino = (uint64_t)st.st_ino;
	} else {
		ret = map_regular(file, fd, &st, path);
	}
	saved = errno;
	close(fd);
	errno = saved;
	return ret;
}

void vmpt_file_unmap(struct vmpt_file *file)
{
	if (file->read_in)
		free((void *)file->data);
	else if (file->data)
		munmap((void *)file->data, file->size);
	free(file->path);
	memset(file, 0, sizeof(*file));
}
