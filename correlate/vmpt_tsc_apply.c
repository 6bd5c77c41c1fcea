/* SPDX-License-Identifier: MIT */
/* Writing the patches into a recording (vmpt_corr_write): in place, as
 * perf inject --vm-time-correlation does (7 payload bytes per TSC packet,
 * nothing else), or into a copy written under a temporary name and then
 * renamed.  Either way every file is checked (opened, the packets found
 * where the patches say) before the first byte is written.
 */
#include "vmpt/correlate.h"
#include "vmpt/error.h"
#include "vmpt_corr_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TSC_OPCODE 0x19
#define COPY_CHUNK (1u << 20)

/* A patch's payload bytes where they land in a file: all 7 after the
 * TSC opcode, or, for a packet cut at its buffer's end, the ones of one
 * buffer (the rest are in the queue's next).
 */
struct file_patch {
	unsigned file;
	uint64_t at;		/* file offset of payload byte first */
	uint64_t tsc;
	uint8_t first, n;	/* payload bytes first..first+n-1 */
};

static int cmp_fp(const void *a, const void *b)
{
	const struct file_patch *x = a, *y = b;

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* The buffer after each one in its queue (SIZE_MAX: none). */
static size_t *next_buffers(const struct vmpt_corr *c)
{
	size_t *next = malloc((c->n_bufs ? c->n_bufs : 1) * sizeof(*next));

	if (!next)
		return NULL;
	for (size_t b = 0; b < c->n_bufs; b++)
		next[b] = SIZE_MAX;
	for (size_t q = 0; q < c->n_queues && !c->cfg.not_consecutive; q++)
		for (size_t i = 0; i + 1 < c->queues[q].n_bufs; i++)
			next[c->queues[q].bufs[i]] = c->queues[q].bufs[i + 1];
	return next;
}

/* The pieces of patch p of buffer b: 0, or -1 when the packet is none
 * (or its payload runs past the queue's end).
 */
static int patch_pieces(const struct vmpt_corr *c, const size_t *next, size_t b,
			const struct vmpt_tsc_patch *p, struct file_patch *fp, size_t *k)
{
	uint64_t pos = p->offset + 1;
	unsigned done = 0;

	if (p->offset >= c->bufs[b].size || c->bufs[b].data[p->offset] != TSC_OPCODE)
		return -1;
	while (done < 7) {
		const struct vmpt_corr_buffer *buf;
		uint64_t left;

		while (b != SIZE_MAX && pos >= c->bufs[b].size) {
			pos -= c->bufs[b].size;
			b = next[b];
		}
		if (b == SIZE_MAX)
			return -1;
		buf = &c->bufs[b];
		left = buf->size - pos;
		fp[*k].file = buf->file;
		fp[*k].at = buf->file_offset + pos;
		fp[*k].tsc = p->tsc;
		fp[*k].first = (uint8_t)done;
		fp[*k].n = (uint8_t)(left < 7 - done ? left : 7 - done);
		done += fp[*k].n;
		pos += fp[(*k)++].n;
	}
	return 0;
}

/* The patches by file and offset, each checked to be on a TSC packet. */
static int file_patches(struct vmpt_corr *c, struct file_patch **out, size_t *n)
{
	/* A payload is in at most 7 buffers. */
	struct file_patch *fp = malloc((c->n_patches ? 7 * c->n_patches : 1) * sizeof(*fp));
	size_t *next = next_buffers(c);
	size_t k = 0;

	if (!fp || !next) {
		free(fp);
		free(next);
		return -VMPT_ERR_NOMEM;
	}
	for (size_t b = 0; b < c->n_bufs; b++) {
		struct vmpt_tsc_patches pl = vmpt_corr_patches(c, b);

		for (size_t i = 0; i < pl.n; i++) {
			const struct vmpt_corr_buffer *buf = &c->bufs[b];

			if (patch_pieces(c, next, b, &pl.p[i], fp, &k) < 0) {
				snprintf(c->errmsg, sizeof(c->errmsg),
					 "%.500s: offset %#" PRIx64 ": no TSC packet there",
					 vmpt_corr_file(c, buf->file),
					 buf->file_offset + pl.p[i].offset);
				free(fp);
				free(next);
				return -VMPT_ERR_INTERNAL;
			}
		}
	}
	free(next);
	qsort(fp, k, sizeof(*fp), cmp_fp);
	*out = fp;
	*n = k;
	return 0;
}

static void le7(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 7; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int sys_err(struct vmpt_corr *c, const char *path)
{
	snprintf(c->errmsg, sizeof(c->errmsg), "%.500s: %s", path, strerror(errno));
	return -VMPT_ERR_IO;
}

static int write_in_place(struct vmpt_corr *c, const struct file_patch *fp, size_t n)
{
	int fds[64];
	unsigned nfiles = 0;
	int ret = 0;

	for (size_t i = 0; i < n; i++)
		if (fp[i].file + 1 > nfiles)
			nfiles = fp[i].file + 1;
	if (nfiles > 64) {
		snprintf(c->errmsg, sizeof(c->errmsg), "too many data files");
		return -VMPT_ERR_UNSUPPORTED;
	}
	/* Open them all before writing anything. */
	for (unsigned f = 0; f < nfiles; f++) {
		fds[f] = open(vmpt_corr_file(c, f), O_RDWR | O_CLOEXEC);
		if (fds[f] < 0) {
			ret = sys_err(c, vmpt_corr_file(c, f));
			while (f--)
				close(fds[f]);
			return ret;
		}
	}
	for (size_t i = 0; i < n && ret == 0; i++) {
		uint8_t b[7];

		le7(b, fp[i].tsc);
		if (pwrite(fds[fp[i].file], b + fp[i].first, fp[i].n, (off_t)fp[i].at) !=
		    (ssize_t)fp[i].n)
			ret = sys_err(c, vmpt_corr_file(c, fp[i].file));
	}
	for (unsigned f = 0; f < nfiles; f++) {
		if (ret == 0 && fsync(fds[f]) < 0)
			ret = sys_err(c, vmpt_corr_file(c, f));
		if (close(fds[f]) < 0 && ret == 0)
			ret = sys_err(c, vmpt_corr_file(c, f));
	}
	return ret;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Copy file src to the open fd, with the patches of file number f. */
static int copy_patched(struct vmpt_corr *c, const char *src, int fd, unsigned f,
			const struct file_patch *fp, size_t n, const char *dst)
{
	uint8_t *buf = malloc(COPY_CHUNK + 8);
	int in = open(src, O_RDONLY | O_CLOEXEC), ret = 0;
	uint64_t pos = 0;
	size_t k = 0;

	while (k < n && fp[k].file != f)
		k++;
	if (!buf || in < 0) {
		ret = buf ? sys_err(c, src) : -VMPT_ERR_NOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r = read(in, buf, COPY_CHUNK);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = sys_err(c, src);
			break;
		}
		if (r == 0)
			break;
		/* The patches inside this chunk (a payload may cross its end:
		 * the rest goes into the next).
		 */
		for (size_t i = k; i < n && fp[i].file == f && fp[i].at < pos + (uint64_t)r; i++) {
			uint8_t b[7];

			le7(b, fp[i].tsc);
			for (unsigned j = 0; j < fp[i].n; j++) {
				uint64_t at = fp[i].at + j;

				if (at >= pos && at < pos + (uint64_t)r)
					buf[at - pos] = b[fp[i].first + j];
			}
		}
		while (k < n && fp[k].file == f && fp[k].at + fp[k].n <= pos + (uint64_t)r)
			k++;
		if (write_all(fd, buf, (size_t)r) < 0) {
			ret = sys_err(c, dst);
			break;
		}
		pos += (uint64_t)r;
	}
out:
	if (in >= 0)
		close(in);
	free(buf);
	return ret;
}

static int copy_file(struct vmpt_corr *c, const char *src, const char *dst, int patch_file,
		     const struct file_patch *fp, size_t n)
{
	struct stat st;
	int fd, ret;

	if (stat(src, &st) < 0)
		return sys_err(c, src);
	fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 0777);
	if (fd < 0)
		return sys_err(c, dst);
	ret = copy_patched(c, src, fd, patch_file >= 0 ? (unsigned)patch_file : ~0u, fp,
			   patch_file >= 0 ? n : 0, dst);
	if (ret == 0 && fsync(fd) < 0)
		ret = sys_err(c, dst);
	if (close(fd) < 0 && ret == 0)
		ret = sys_err(c, dst);
	return ret;
}

/* Which data file (0, N) a path of the recording is, or -1. */
static int file_number(const struct vmpt_corr *c, const char *path)
{
	for (unsigned f = 0;; f++) {
		const char *p = vmpt_corr_file(c, f);

		if (!p)
			return -1;
		if (!strcmp(p, path))
			return (int)f;
	}
}

/* dir/name into out (PATH_MAX); -1 when it does not fit. */
static int join(char *out, const char *dir, const char *name)
{
	int n = snprintf(out, 4096, "%s/%s", dir, name);

	return n < 0 || n >= 4096 ? -1 : 0;
}

static void remove_tree(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;

	if (lstat(path, &st) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlink(path);
		return;
	}
	d = opendir(path);
	while (d && (e = readdir(d))) {
		char sub[4096];

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    join(sub, path, e->d_name) < 0)
			continue;
		remove_tree(sub);
	}
	if (d)
		closedir(d);
	rmdir(path);
}

/* A copy of directory src at dst: data files patched, the rest copied
 * (symlinks as symlinks).
 */
static int copy_tree(struct vmpt_corr *c, const char *src, const char *dst,
		     const struct file_patch *fp, size_t n)
{
	DIR *d = opendir(src);
	struct dirent *e;
	int ret = 0;

	if (!d)
		return sys_err(c, src);
	while (ret == 0 && (e = readdir(d))) {
		char s[4096], t[4096], link[4096];
		struct stat st;
		ssize_t len;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (join(s, src, e->d_name) < 0 || join(t, dst, e->d_name) < 0) {
			errno = ENAMETOOLONG;
			ret = sys_err(c, src);
		} else if (lstat(s, &st) < 0) {
			ret = sys_err(c, s);
		} else if (S_ISDIR(st.st_mode)) {
			if (mkdir(t, st.st_mode & 0777) < 0)
				ret = sys_err(c, t);
			else
				ret = copy_tree(c, s, t, fp, n);
		} else if (S_ISLNK(st.st_mode)) {
			len = readlink(s, link, sizeof(link) - 1);
			if (len < 0)
				ret = sys_err(c, s);
			else if (link[len] = '\0', symlink(link, t) < 0)
				ret = sys_err(c, t);
		} else if (S_ISREG(st.st_mode)) {
			ret = copy_file(c, s, t, file_number(c, s), fp, n);
		}
	}
	closedir(d);
	return ret;
}

static int write_copy(struct vmpt_corr *c, const char *out, const struct file_patch *fp,
		      size_t n)
{
	const char *in = vmpt_corr_path(c);
	char tmp[4200], side_in[4200], side_out[4200], *dir;
	struct stat st;
	int is_dir = stat(in, &st) == 0 && S_ISDIR(st.st_mode), ret;

	/* A file may be replaced (the rename is atomic); nothing else. */
	if (lstat(out, &st) == 0 && (is_dir || !S_ISREG(st.st_mode))) {
		snprintf(c->errmsg, sizeof(c->errmsg), "%.500s: exists%s", out,
			 S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) ? "" : " and is no regular file");
		return -VMPT_ERR_INVAL;
	}
	snprintf(tmp, sizeof(tmp), "%.4000s", out);
	dir = dirname(tmp);
	snprintf(side_in, sizeof(side_in), "%.4000s", dir);
	snprintf(tmp, sizeof(tmp), "%.4000s/.%.100s.XXXXXX", side_in,
		 strrchr(out, '/') ? strrchr(out, '/') + 1 : out);
	if (is_dir) {
		if (!mkdtemp(tmp))
			return sys_err(c, tmp);
		ret = copy_tree(c, in, tmp, fp, n);
		if (ret == 0 && stat(in, &st) == 0 && chmod(tmp, st.st_mode & 07777) < 0)
			ret = sys_err(c, tmp);
	} else {
		int fd = mkstemp(tmp);

		if (fd < 0)
			return sys_err(c, tmp);
		close(fd);
		unlink(tmp);
		ret = copy_file(c, in, tmp, 0, fp, n);
	}
	if (ret == 0 && rename(tmp, out) < 0)
		ret = sys_err(c, out);
	if (ret < 0) {
		remove_tree(tmp);
		return ret;
	}
	/* A file-form recording's notes on its vCPUs go along. */
	for (int i = 0; !is_dir && i < 2; i++) {
		const char *ext = i ? ".vcpus" : ".kvm-tsc";

		snprintf(side_in, sizeof(side_in), "%.4000s%s", in, ext);
		snprintf(side_out, sizeof(side_out), "%.4000s%s", out, ext);
		if (stat(side_in, &st) != 0)
			continue;
		unlink(side_out);
		ret = copy_file(c, side_in, side_out, -1, NULL, 0);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int vmpt_corr_write(struct vmpt_corr *c, const char *out)
{
	struct file_patch *fp;
	size_t n;
	int ret;

	if (!c->rec) {
		snprintf(c->errmsg, sizeof(c->errmsg), "no recording to write");
		return -VMPT_ERR_INVAL;
	}
	ret = file_patches(c, &fp, &n);
	if (ret < 0)
		return ret;
	ret = out ? write_copy(c, out, fp, n) : write_in_place(c, fp, n);
	free(fp);
	return ret;
}
