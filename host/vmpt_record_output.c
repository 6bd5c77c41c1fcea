/* SPDX-License-Identifier: MIT */
/* Where a recording goes.  A file REC has its companions beside it:
 * REC.kvm-tsc, REC.vcpus and REC.guest/; perf's directory form REC/ holds
 * them inside, as REC/data, REC/kcore_dir/, REC/kvm-tsc, REC/vcpus and
 * REC/guest/.  The place is checked before anything starts (a guest is
 * not set up for a recording that cannot be written), a previous
 * recording becomes REC.old as perf keeps it, and what is written is the
 * owner's only (0600 files, 0700 directories), as perf writes it.
 */
#include "vmpt/record.h"
#include "vmpt/error.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* The companions of a recording, by the names the file form gives them. */
static const char *const companions[] = { "kvm-tsc", "vcpus", "guest" };

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

void vmpt_record_path(const char *rec, int dir_form, const char *what, char *out,
		      size_t len)
{
	snprintf(out, len, "%s%s%s", rec, dir_form ? "/" : ".", what);
}

/* The directory rec is created in. */
static void parent_of(const char *rec, char *out, size_t len)
{
	const char *slash = strrchr(rec, '/');

	while (slash && slash > rec && !slash[1]) {	/* "dir/" */
		const char *p = slash - 1;

		while (p > rec && *p != '/')
			p--;
		slash = *p == '/' ? p : NULL;
	}
	if (!slash)
		snprintf(out, len, ".");
	else if (slash == rec)
		snprintf(out, len, "/");
	else
		snprintf(out, len, "%.*s", (int)(slash - rec), rec);
}

/* Is dir a recording in perf's directory form (REC/data)? */
static int is_recording_dir(const char *dir)
{
	char data[4400];
	struct stat st;

	snprintf(data, sizeof(data), "%s/data", dir);
	return !lstat(data, &st) && S_ISREG(st.st_mode);
}

int vmpt_record_output_check(const char *rec, int dir_form, uint64_t *avail,
			     char *err, size_t errlen)
{
	char parent[4200];
	struct statvfs vfs;
	struct stat st;

	*avail = UINT64_MAX;
	if (!stat(rec, &st) && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
		return dir_form ? fail(err, errlen, -VMPT_ERR_INVAL, "cannot write %s: "
				       "--kcore writes a directory, %s is a device",
				       rec, rec) : 0;
	if (!stat(rec, &st) && S_ISDIR(st.st_mode) && !is_recording_dir(rec))
		return fail(err, errlen, -VMPT_ERR_INVAL, "cannot write %s: it is a "
			    "directory that holds no recording (no %s/data)", rec, rec);
	parent_of(rec, parent, sizeof(parent));
	if (stat(parent, &st))
		return fail(err, errlen, -VMPT_ERR_NOT_FOUND, "cannot write %s: "
			    "directory %s %s", rec, parent, errno == ENOENT ?
			    "does not exist" : strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fail(err, errlen, -VMPT_ERR_NOT_FOUND, "cannot write %s: %s is "
			    "not a directory", rec, parent);
	if (access(parent, W_OK | X_OK))
		return fail(err, errlen, -VMPT_ERR_PERM, "cannot write %s: directory "
			    "%s is not writable (%s)", rec, parent, strerror(errno));
	if (!statvfs(parent, &vfs)) {
		*avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
		if (!*avail)
			return fail(err, errlen, -VMPT_ERR_IO, "cannot write %s: no space "
				    "left in %s (0 bytes free)", rec, parent);
	}
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type,
			struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* Remove a file, or a tree when it is a directory (not following
 * symlinks, not leaving its file system).
 */
static int remove_tree(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* Move from to to, removing what to was. */
static int replace(const char *from, const char *to, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(from, &st))
		return 0;
	if (remove_tree(to))
		return fail(err, errlen, -VMPT_ERR_IO, "cannot remove the old %s: %s",
			    to, strerror(errno));
	if (rename(from, to))
		return fail(err, errlen, -VMPT_ERR_IO, "cannot keep %s as %s: %s", from,
			    to, strerror(errno));
	return 0;
}

int vmpt_record_output_backup(const char *rec, char *err, size_t errlen)
{
	char old[4200], from[4300], to[4300];
	struct stat st;
	int ret;

	snprintf(old, sizeof(old), "%s.old", rec);
	if (lstat(rec, &st) || S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
		st.st_size = 0;
	else if (S_ISDIR(st.st_mode))
		st.st_size = 1;		/* perf: a directory is kept too */
	/* perf keeps a previous recording that has something in it */
	if (st.st_size) {
		if (!lstat(old, &st) && S_ISDIR(st.st_mode) && !is_recording_dir(old))
			return fail(err, errlen, -VMPT_ERR_INVAL, "cannot remove the old "
				    "%s: it is a directory that holds no recording", old);
		ret = replace(rec, old, err, errlen);
		if (ret)
			return ret;
	}
	/* The companions of the file form go with it, and stale ones (of a
	 * recording that failed) too: nothing of another recording mixes
	 * with the new one.
	 */
	for (size_t i = 0; i < sizeof(companions) / sizeof(companions[0]); i++) {
		vmpt_record_path(rec, 0, companions[i], from, sizeof(from));
		vmpt_record_path(old, 0, companions[i], to, sizeof(to));
		ret = replace(from, to, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

int vmpt_record_output_create(const char *rec, int dir_form, char *err, size_t errlen)
{
	char data[4200];
	struct stat st;
	int fd;

	if (!dir_form && !stat(rec, &st) && !S_ISREG(st.st_mode))
		return 0;	/* a device: written as it is */
	if (dir_form && mkdir(rec, 0700) && errno != EEXIST)
		return fail(err, errlen, -VMPT_ERR_IO, "%s: %s", rec, strerror(errno));
	snprintf(data, sizeof(data), dir_form ? "%s/data" : "%s", rec);
	fd = open(data, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return fail(err, errlen, -VMPT_ERR_IO, "%s: %s", data, strerror(errno));
	fchmod(fd, 0600);
	close(fd);
	if (dir_form) {
		snprintf(data, sizeof(data), "%s/kcore_dir", rec);
		if (mkdir(data, 0700) && errno != EEXIST)
			return fail(err, errlen, -VMPT_ERR_IO, "%s: %s", data, strerror(errno));
	}
	return 0;
}
