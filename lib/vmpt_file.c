/* SPDX-License-Identifier: MIT */
#include "vmpt/file.h"
#include "vmpt/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int vmpt_file_map(struct vmpt_file *file, const char *path)
{
	struct stat st;
	void *data = NULL;
	int fd, saved;

	memset(file, 0, sizeof(*file));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -VMPT_ERR_IO;
	if (fstat(fd, &st) < 0)
		goto err;
	if (!S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		goto err;
	}
	if (st.st_size > 0) {
		data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (data == MAP_FAILED)
			goto err;
	}
	close(fd);
	file->path = strdup(path);
	if (!file->path) {
		if (data)
			munmap(data, (size_t)st.st_size);
		return -VMPT_ERR_NOMEM;
	}
	file->data = data;
	file->size = (size_t)st.st_size;
	return 0;
err:
	saved = errno;
	close(fd);
	errno = saved;
	return -VMPT_ERR_IO;
}

void vmpt_file_unmap(struct vmpt_file *file)
{
	if (file->data)
		munmap((void *)file->data, file->size);
	free(file->path);
	memset(file, 0, sizeof(*file));
}
