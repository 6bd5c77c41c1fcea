/* SPDX-License-Identifier: MIT */
#include "guest_sysroot.h"
#include "vmpt/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int guest_sysroot_path(const char *guest_path, char *rel, size_t size,
		       const char **why)
{
	size_t out = 0;
	const char *p = guest_path;

	if (p[0] != '/') {
		*why = "not an absolute path";
		return -VMPT_ERR_INVAL;
	}
	if (strlen(p) >= PATH_MAX || size < 2) {
		*why = "too long";
		return -VMPT_ERR_INVAL;
	}
	for (const char *c = p; *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f) {
			*why = "control character";
			return -VMPT_ERR_INVAL;
		}
	}
	while (*p) {
		size_t len;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (!len)
			break;
		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.')) {
			*why = "'.' or '..' component";
			return -VMPT_ERR_INVAL;
		}
		if (len > NAME_MAX) {
			*why = "component too long";
			return -VMPT_ERR_INVAL;
		}
		if (out + !!out + len + 1 > size) {
			*why = "too long";
			return -VMPT_ERR_INVAL;
		}
		if (out)
			rel[out++] = '/';
		memcpy(rel + out, p, len);
		out += len;
		p += len;
	}
	if (!out || guest_path[strlen(guest_path) - 1] == '/') {
		*why = "names a directory";
		return -VMPT_ERR_INVAL;
	}
	rel[out] = 0;
	return 0;
}

/* Step into (creating) one directory below dirfd, refusing symlinks. */
static int enter_dir(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT) {
		if (mkdirat(dirfd, name, 0755) && errno != EEXIST)
			return -1;
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	return fd;
}

int guest_sysroot_open(int rootfd, const char *rel, struct guest_sysroot_file *f)
{
	char part[NAME_MAX + 1];
	const char *p = rel;
	int dirfd = dup(rootfd);

	f->fd = -1;
	f->dirfd = -1;
	if (dirfd < 0)
		return -VMPT_ERR_IO;
	for (;;) {
		size_t len = strcspn(p, "/");
		int next;

		if (!len || len > NAME_MAX || !strncmp(p, "..", len) ||
		    !strncmp(p, ".", len)) {
			close(dirfd);
			errno = EINVAL;
			return -VMPT_ERR_INVAL;
		}
		if (!p[len]) {
			memcpy(f->name, p, len + 1);
			break;
		}
		memcpy(part, p, len);
		part[len] = 0;
		next = enter_dir(dirfd, part);
		close(dirfd);
		if (next < 0)
			return -VMPT_ERR_IO;	/* ELOOP/ENOTDIR: a symlink or file is in the way */
		dirfd = next;
		p += len + 1;
	}
	for (int i = 0; i < 100; i++) {
		snprintf(f->tmp, sizeof(f->tmp), ".vmpt-tmp.%d.%d", (int)getpid(), i);
		f->fd = openat(dirfd, f->tmp,
			       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (f->fd >= 0 || errno != EEXIST)
			break;
	}
	if (f->fd < 0) {
		int err = errno;

		close(dirfd);
		errno = err;
		return -VMPT_ERR_IO;
	}
	f->dirfd = dirfd;
	return 0;
}

int guest_sysroot_commit(struct guest_sysroot_file *f)
{
	int ret = 0;

	if (close(f->fd))
		ret = -VMPT_ERR_IO;
	f->fd = -1;
	/* rename replaces whatever is at name, a symlink included, without
	 * following it; a directory there makes it fail.
	 */
	if (!ret && renameat(f->dirfd, f->tmp, f->dirfd, f->name))
		ret = -VMPT_ERR_IO;
	if (ret) {
		int err = errno;

		unlinkat(f->dirfd, f->tmp, 0);
		errno = err;
	}
	close(f->dirfd);
	f->dirfd = -1;
	return ret;
}

void guest_sysroot_abort(struct guest_sysroot_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	if (f->dirfd >= 0) {
		unlinkat(f->dirfd, f->tmp, 0);
		close(f->dirfd);
	}
	f->fd = f->dirfd = -1;
}
