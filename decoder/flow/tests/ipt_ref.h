/* SPDX-License-Identifier: MIT */
/* The reference: libipt's instruction flow decoder over the same trace and
 * image, run the way ptxed runs it (sync, drain events, next, resync after
 * an error).
 */
#ifndef VMPT_IPT_REF_H
#define VMPT_IPT_REF_H

#include "vmpt/image.h"

#include <stddef.h>
#include <stdint.h>

struct ref_error {
	uint64_t offset;	/* trace offset libipt reports */
	int code;		/* negative pt_error_code */
};

struct ref_trace {
	uint64_t *ips;
	size_t n_ips, cap_ips;
	struct ref_error *errs;
	size_t *run_end;	/* per error: n_ips when it was reported */
	size_t n_errs, cap_errs;
};

/* Decode trace with libipt over the page caches (prefix.addr/prefix.dump,
 * one file section per page) and the file-backed sections of img (ELF
 * segments: name, file_offset, size, vaddr), with up to one IP filter range
 * [filter_a, filter_b] (both 0: none).  Returns 0 or a negative
 * pt_error_code from setup.
 */
int ipt_ref_decode(const uint8_t *trace, size_t size,
		   const char *const *pagecaches, size_t n_pagecaches,
		   const struct vmpt_image *img,
		   uint64_t filter_a, uint64_t filter_b, struct ref_trace *out);

void ipt_ref_free(struct ref_trace *t);

#endif
