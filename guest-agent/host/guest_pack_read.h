/* SPDX-License-Identifier: MIT */
/* Reading the agent's reply stream (guest_pack.h) on the host.  A reply is
 * untrusted input: it must answer exactly what was asked, in order, within
 * the size limit, or it is rejected and the file it was writing removed.
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

/* Read a whole reply answering reqs[0..nr).  0 or a negative vmpt_err with
 * err telling what was wrong and at which reply offset.
 */
int guest_pack_receive(struct guest_pack_source *src,
		       struct guest_pack_request *reqs, size_t nr,
		       uint64_t max_size, char *err, size_t errlen);

#endif
