/* SPDX-License-Identifier: MIT */
/* A perf.data written out of place: see vmpt_merge_output.h. */
#include "vmpt_merge_output.h"
#include "vmpt/error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

static int make_file(char *template)
{
	int fd = mkstemp(template);

	return fd < 0 ? -1 : close(fd);
}

static int empty_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int empty = 1;

	if (!d)
		return 0;
	while (empty && (de = readdir(d)))
		empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
	closedir(d);
	return empty;
}

int vmpt_merge_output_begin(struct vmpt_merge_output *o, const char *final, int dir,
			    const char *const *inputs, char *err, size_t errlen)
{
	struct stat st;

	memset(o, 0, sizeof(*o));
	for (size_t i = 0; inputs[i]; i++)
		if (!strcmp(final, inputs[i]) || same_file(final, inputs[i])) {
			snprintf(err, errlen, "%s: is an input; write the merge elsewhere",
				 final);
			return -VMPT_ERR_INVAL;
		}
	/* rename() puts a directory only where none or an empty one is, and a
	 * file never over a directory: say so before any work is done. */
	if (stat(final, &st) == 0) {
		const char *why = NULL;

		if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
			why = "not a regular file (the merge is written beside it and renamed)";
		else if (!dir && S_ISDIR(st.st_mode))
			why = "is a directory";
		else if (dir && !S_ISDIR(st.st_mode))
			why = "exists and is not a directory (the merge has kcore_dir: perf's directory form)";
		else if (dir && !empty_dir(final))
			why = "is a directory and not empty: remove it first";
		if (why) {
			snprintf(err, errlen, "%s: %s", final, why);
			return -VMPT_ERR_INVAL;
		}
	}
	o->dir = dir;
	o->final = strdup(final);
	if (!o->final || asprintf(&o->tmp, "%s.tmp-XXXXXX", final) < 0) {
		o->tmp = NULL;
		vmpt_merge_output_abort(o);
		return -VMPT_ERR_NOMEM;
	}
	if (dir ? !mkdtemp(o->tmp) : make_file(o->tmp) < 0) {
		snprintf(err, errlen, "%s: cannot create a file beside it: %s", final,
			 strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		vmpt_merge_output_abort(o);
		return -VMPT_ERR_IO;
	}
	return 0;
}

static int copy_file(int src_dir, const char *name, int dst_dir, const char *src_path,
		     const char *dst_path, char *err, size_t errlen)
{
	char buf[65536];
	struct stat st;
	int in, out = -1, ret = 0;
	ssize_t n;

	/* Files from a guest: no link is followed out of its directory. */
	in = openat(src_dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0 && errno == ELOOP) {
		snprintf(err, errlen, "%s/%s: a symbolic link, not a regular file", src_path,
			 name);
		return -VMPT_ERR_FORMAT;
	}
	if (in < 0 || fstat(in, &st) < 0) {
		snprintf(err, errlen, "%s/%s: %s", src_path, name, strerror(errno));
		ret = -VMPT_ERR_IO;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s/%s: not a regular file", src_path, name);
		ret = -VMPT_ERR_FORMAT;
		goto out;
	}
	out = openat(dst_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0)
		goto write_err;
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "%s/%s: %s", src_path, name, strerror(errno));
			ret = -VMPT_ERR_IO;
			goto out;
		}
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));

			if (w < 0 && errno != EINTR)
				goto write_err;
			done += w > 0 ? w : 0;
		}
	}
	if (close(out) < 0) {
		out = -1;
		goto write_err;
	}
	out = -1;
	goto out;
write_err:
	snprintf(err, errlen, "%s/%s: %s", dst_path, name, strerror(errno));
	ret = -VMPT_ERR_IO;
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ret;
}

int vmpt_merge_output_copy_dir(struct vmpt_merge_output *o, const char *src,
			       const char *name, char *err, size_t errlen)
{
	char *dst = NULL;
	int src_fd = -1, dst_fd = -1, ret = 0;
	struct dirent *de;
	DIR *d = NULL;

	if (asprintf(&dst, "%s/%s", o->tmp, name) < 0)
		return -VMPT_ERR_NOMEM;
	src_fd = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (src_fd < 0 || !(d = fdopendir(src_fd))) {
		snprintf(err, errlen, "%s: %s", src, strerror(errno));
		ret = -VMPT_ERR_IO;
		goto out;
	}
	if (mkdir(dst, 0755) < 0 ||
	    (dst_fd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "%s: %s", dst, strerror(errno));
		ret = -VMPT_ERR_IO;
		goto out;
	}
	while (!ret && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ret = copy_file(src_fd, de->d_name, dst_fd, src, dst, err, errlen);
	}
out:
	if (d)
		closedir(d);
	else if (src_fd >= 0)
		close(src_fd);
	if (dst_fd >= 0)
		close(dst_fd);
	free(dst);
	return ret;
}

int vmpt_merge_output_commit(struct vmpt_merge_output *o, char *err, size_t errlen)
{
	if (rename(o->tmp, o->final) < 0) {
		snprintf(err, errlen, "%s: %s (the merge was left in %s)", o->final,
			 strerror(errno), o->tmp);
		return -VMPT_ERR_IO;
	}
	free(o->tmp);
	o->tmp = NULL;
	vmpt_merge_output_abort(o);
	return 0;
}

/* tmp/NAME/FILE and tmp/FILE: the most a directory form of ours holds. */
static void remove_tree(const char *path, int depth)
{
	struct dirent *de;
	DIR *d;

	if (unlink(path) == 0 || errno != EISDIR || depth > 1 || !(d = opendir(path)))
		goto rm;
	while ((de = readdir(d))) {
		char *sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (asprintf(&sub, "%s/%s", path, de->d_name) < 0)
			break;
		remove_tree(sub, depth + 1);
		free(sub);
	}
	closedir(d);
rm:
	rmdir(path);
}

void vmpt_merge_output_abort(struct vmpt_merge_output *o)
{
	if (o->tmp)
		remove_tree(o->tmp, 0);
	free(o->tmp);
	free(o->final);
	o->tmp = o->final = NULL;
}
