/* SPDX-License-Identifier: MIT */
#include "guest_pack_read.h"
#include "../guest_pack.h"
#include "guest_sysroot.h"
#include "vmpt/error.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Free space is looked at again after each this many bytes of a file:
 * something else on the host may be filling the disk too.
 */
#define RECHECK_BYTES (1u << 20)

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int src_read(struct guest_pack_source *src, void *buf, size_t n)
{
	int ret = src->read(src->ctx, buf, n);

	if (!ret)
		src->offset += n;
	return ret;
}

static int fail(struct guest_pack_source *src, uint64_t at, char *err,
		size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static int fail(struct guest_pack_source *src, uint64_t at, char *err,
		size_t errlen, int ret, const char *fmt, ...)
{
	char what[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "agent reply offset %" PRIu64 ": %s%s", at, what,
		 ret == -VMPT_ERR_TRUNCATED && src->offset == at ? " (reply ends here)" : "");
	return ret;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -VMPT_ERR_IO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

uint64_t guest_pack_free_space(int fd)
{
	struct statvfs vfs;

	if (fstatvfs(fd, &vfs))
		return UINT64_MAX;
	return (uint64_t)vfs.f_bavail * vfs.f_frsize;
}

/* Do need more bytes fit on fd's file system with min_free left over? */
static int fits(int fd, const struct guest_pack_limits *lim, uint64_t need,
		uint64_t *avail)
{
	*avail = guest_pack_free_space(fd);
	return *avail >= need && *avail - need >= lim->min_free;
}

/* Copy size bytes of data into the request's destination. */
static int receive_data(struct guest_pack_source *src, struct guest_pack_request *req,
			uint64_t size, struct guest_pack_limits *lim, char *err,
			size_t errlen)
{
	struct guest_sysroot_file f;
	uint8_t buf[65536];
	uint64_t since_check = 0, avail;
	int ret = guest_sysroot_open(req->dirfd, req->dest, &f);

	if (ret) {
		snprintf(err, errlen, "%s: cannot create %s: %s", req->name, req->dest,
			 strerror(errno));
		return ret;
	}
	for (uint64_t left = size; left;) {
		size_t n = left < sizeof(buf) ? (size_t)left : sizeof(buf);

		ret = src_read(src, buf, n);
		if (ret) {
			guest_sysroot_abort(&f);
			return fail(src, src->offset, err, errlen, ret,
				    "data of %s cut short", req->name);
		}
		ret = write_all(f.fd, buf, n);
		if (ret) {
			int e = errno;

			guest_sysroot_abort(&f);
			snprintf(err, errlen, "%s: writing %s: %s", req->name, req->dest,
				 strerror(e));
			return ret;
		}
		left -= n;
		since_check += n;
		if (left && since_check >= RECHECK_BYTES) {
			since_check = 0;
			if (!fits(f.fd, lim, left, &avail)) {
				guest_sysroot_abort(&f);
				snprintf(err, errlen, "%s: %s has %" PRIu64 " bytes free now, "
					 "too few for the %" PRIu64 " bytes still to come with "
					 "%" PRIu64 " kept free: stopped, the partial file "
					 "removed", req->name, lim->dir, avail, left,
					 lim->min_free);
				return -VMPT_ERR_IO;
			}
		}
	}
	ret = guest_sysroot_commit(&f);
	if (ret) {
		snprintf(err, errlen, "%s: cannot put %s in place: %s", req->name,
			 req->dest, strerror(errno));
		return ret;
	}
	req->size = size;
	lim->taken += size;
	return 0;
}

int guest_pack_receive(struct guest_pack_source *src,
		       struct guest_pack_request *reqs, size_t nr,
		       struct guest_pack_limits *lim, char *err, size_t errlen)
{
	uint8_t magic[GUEST_PACK_MAGIC_LEN];
	uint8_t hdr[GUEST_PACK_HDR_LEN];
	char path[GUEST_PACK_PATH_MAX + 1];
	int ret;

	ret = src_read(src, magic, sizeof(magic));
	if (ret)
		return fail(src, 0, err, errlen, ret, "no reply stream");
	if (memcmp(magic, GUEST_PACK_MAGIC, sizeof(magic)))
		return fail(src, 0, err, errlen, -VMPT_ERR_FORMAT,
			    "not a vmpt-agent reply (bad magic)");
	for (size_t i = 0; i <= nr; i++) {
		uint64_t at = src->offset, size, avail;
		uint32_t kind, len;

		ret = src_read(src, hdr, sizeof(hdr));
		if (ret)
			return fail(src, at, err, errlen, ret, "frame header cut short");
		kind = le32(hdr);
		len = le32(hdr + 4);
		size = le64(hdr + 16);
		if (i == nr) {
			if (kind != GUEST_PACK_END || len || size)
				return fail(src, at, err, errlen, -VMPT_ERR_FORMAT,
					    "more frames than files asked for");
			return 0;
		}
		if (kind != GUEST_PACK_FILE && kind != GUEST_PACK_MISSING)
			return fail(src, at, err, errlen, -VMPT_ERR_FORMAT,
				    "bad frame kind where %s was expected", reqs[i].name);
		if (len != strlen(reqs[i].name))
			return fail(src, at, err, errlen, -VMPT_ERR_FORMAT,
				    "frame names another file than %s", reqs[i].name);
		ret = src_read(src, path, len);
		if (ret)
			return fail(src, at, err, errlen, ret, "frame name cut short");
		path[len] = 0;
		if (memcmp(path, reqs[i].name, len))
			return fail(src, at, err, errlen, -VMPT_ERR_FORMAT,
				    "frame names another file than %s", reqs[i].name);
		if (kind == GUEST_PACK_MISSING) {
			if (size)
				return fail(src, at, err, errlen, -VMPT_ERR_FORMAT,
					    "missing-file frame for %s carries data", reqs[i].name);
			reqs[i].missing_errno = (int)le32(hdr + 8);
			if (!reqs[i].missing_errno)
				reqs[i].missing_errno = ENOENT;
			continue;
		}
		if (size > lim->max_file)
			return fail(src, at, err, errlen, -VMPT_ERR_FORMAT, "%s is %" PRIu64
				    " bytes, over the limit of %" PRIu64, reqs[i].name, size,
				    lim->max_file);
		if (lim->taken > lim->max_total || size > lim->max_total - lim->taken)
			return fail(src, at, err, errlen, -VMPT_ERR_FORMAT, "%s is %" PRIu64
				    " bytes: with the %" PRIu64 " taken from the guest "
				    "before, over the budget of %" PRIu64 " for all its "
				    "files", reqs[i].name, size, lim->taken, lim->max_total);
		if (!fits(reqs[i].dirfd, lim, size, &avail))
			return fail(src, at, err, errlen, -VMPT_ERR_IO, "%s is %" PRIu64
				    " bytes, more than %s can take: %" PRIu64 " bytes free, %"
				    PRIu64 " of them kept free", reqs[i].name, size, lim->dir,
				    avail, lim->min_free);
		ret = receive_data(src, &reqs[i], size, lim, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}
