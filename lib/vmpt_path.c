/* SPDX-License-Identifier: MIT */
/* Opening a recording's paths inside their root: see vmpt/path.h. */
#include "vmpt/path.h"
#include "vmpt/error.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* O_NONBLOCK: opening a FIFO without a writer would block forever. */
#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

int vmpt_path_has_dotdot(const char *path)
{
	for (const char *p = path; *p; ) {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return 1;
		p += n;
		p += *p == '/';
	}
	return 0;
}

/* Keep fd only on a regular file, back in blocking mode. */
static int regular_only(int fd)
{
	struct stat st;
	int flags, saved;

	if (fd < 0)
		return -VMPT_ERR_IO;
	if (fstat(fd, &st) < 0)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		goto fail;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
		goto fail;
	return fd;
fail:
	saved = errno;
	close(fd);
	errno = saved;
	return -VMPT_ERR_IO;
}

/* Each component opened by itself with O_NOFOLLOW: no symlink at all. */
static int walk_at(int dir, const char *rel)
{
	char buf[4096], *comp, *save = NULL;
	int cur = dir, fd = -1;

	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	comp = strtok_r(buf, "/", &save);
	while (comp) {
		char *next = strtok_r(NULL, "/", &save);
		struct stat st;

		if (!strcmp(comp, ".")) {
			comp = next;
			continue;
		}
		if (next)
			fd = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		else
			fd = openat(cur, comp, OPEN_FLAGS | O_NOFOLLOW);
		if (fd < 0 && fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode))
			errno = ELOOP;
		if (cur != dir) {
			int saved = errno;

			close(cur);
			errno = saved;
		}
		if (fd < 0 || !next)
			return fd;
		cur = fd;
		comp = next;
	}
	/* Nothing but "/" and ".": the root itself, no file. */
	if (cur != dir)
		close(cur);
	errno = EISDIR;
	return -1;
}

static int open_in(const char *root, const char *path, int walk)
{
	struct open_how how = {
		.flags = OPEN_FLAGS,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int dir, fd, saved;

	if (!root)
		return regular_only(open(path, OPEN_FLAGS));
	if (vmpt_path_has_dotdot(path)) {
		errno = EXDEV;
		return -VMPT_ERR_IO;
	}
	dir = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -VMPT_ERR_IO;
	while (*path == '/')
		path++;
	fd = -1;
	if (!walk) {
		fd = (int)syscall(SYS_openat2, dir, *path ? path : ".", &how, sizeof(how));
		walk = fd < 0 && errno == ENOSYS;
	}
	if (walk)
		fd = walk_at(dir, path);
	saved = errno;
	close(dir);
	errno = saved;
	return regular_only(fd);
}

int vmpt_path_open(const char *root, const char *path)
{
	return open_in(root, path, 0);
}

int vmpt_path_open_walk(const char *root, const char *path)
{
	return open_in(root, path, 1);
}

int vmpt_path_map(struct vmpt_file *file, const char *root, const char *path)
{
	char name[8192];
	int fd, ret, saved;

	memset(file, 0, sizeof(*file));
	fd = vmpt_path_open(root, path);
	if (fd < 0)
		return fd;
	if (root)
		snprintf(name, sizeof(name), "%s%s%s", root,
			 path[0] == '/' ? "" : "/", path);
	else
		snprintf(name, sizeof(name), "%s", path);
	ret = vmpt_file_map_fd(file, fd, name);
	saved = errno;
	close(fd);
	errno = saved;
	return ret;
}
