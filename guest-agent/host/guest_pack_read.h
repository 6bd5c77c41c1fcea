/* SPDX-License-Identifier: MIT */
/* Reading the agent's reply stream (guest_pack.h) on the host.  A reply is
 * untrusted input: it must answer exactly what was asked, in order, within
 * the size limits and the space of the host's disk, or it is rejected and
 * the file it was writing removed (the files before it stay, whole).
 */
#ifndef VMPT_GUEST_PACK_READ_H
#define VMPT_GUEST_PACK_READ_H

#include <stddef.h>
#include <stdint.h>

/* Where the reply comes from: read exactly n bytes, 0 or a negative
 * vmpt_err (-VMPT_ERR_TRUNCATED at the end of the stream).
 */
struct guest_pack_source {
	int (*read)(void *ctx, void *buf, size_t n);
	void *ctx;
	uint64_t offset;	/* bytes consumed so far */
};

/* One asked-for file and where it goes: dest under dirfd (see
 * guest_sysroot_open).  The results are filled in.
 */
struct guest_pack_request {
	const char *name;
	int dirfd;
	const char *dest;
	int missing_errno;	/* out: the guest's errno when it had no such file */
	uint64_t size;		/* out: bytes written */
};

/* What replies may take on the host, over all the replies of a session:
 * a guest must not be able to fill the host's disk.  A file is taken only
 * when it is within max_file, keeps taken within max_total, and leaves
 * min_free bytes free on its destination's file system, checked from the
 * frame header before it is written and again while it is written.
 */
struct guest_pack_limits {
	uint64_t max_file;	/* largest file */
	uint64_t max_total;	/* every file of every reply together */
	uint64_t min_free;	/* bytes kept free on the destination */
	uint64_t taken;		/* in/out: bytes taken so far */
	const char *dir;	/* the destination, for messages */
};

/* Bytes free for an unprivileged writer on fd's file system, or
 * UINT64_MAX when that cannot be told.
 */
uint64_t guest_pack_free_space(int fd);

/* Read a whole reply answering reqs[0..nr).  0 or a negative vmpt_err with
 * err telling what was wrong and at which reply offset.
 */
int guest_pack_receive(struct guest_pack_source *src,
		       struct guest_pack_request *reqs, size_t nr,
		       struct guest_pack_limits *lim, char *err, size_t errlen);

#endif
