/* SPDX-License-Identifier: MIT */
/* Decode a trace with vmpt and with libipt's instruction flow decoder over
 * the same image and compare the instruction streams.
 *
 * usage: flow_vs_libipt [--pagecache PREFIX] [--elf FILE@BASE] [--retcomp]
 *                       [--filter A-B] [--append BYTE] TRACE
 *
 * --append adds a byte to the trace first (recorders leave a stray 0x55).
 * --until-error (for traces with injected errors) compares only up to the
 * first error either decoder reports: after it both follow garbage their
 * own way, libipt with fewer checks.  Both must report an error, and in
 * the same PSB segment.
 *
 * libipt stops at an error and starts again at the next PSB; vmpt may get
 * further there.  So libipt's output is cut into runs (sync to error) and
 * each run must appear, in order and exactly, in vmpt's stream; vmpt may
 * have more instructions only right after a libipt run that ended in an
 * error.  Every vmpt error must fall into a PSB segment where libipt also
 * reported one.
 */
#include "ipt_ref.h"
#include "vmpt/error.h"
#include "vmpt/file.h"
#include "vmpt/flow.h"
#include "vmpt/image.h"

#include <getopt.h>
#include <intel-pt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vmpt_run {
	uint64_t *ips;
	size_t n, cap;
	uint64_t *err_off;	/* error events: offset and code */
	uint64_t *err_code;
	size_t n_errs, cap_errs;
	size_t first_err_at;	/* instructions before the first error */
};

static int push(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 4096;
		uint64_t *p = realloc(*a, c * sizeof(*p));

		if (!p)
			return -1;
		*a = p;
		*cap = c;
	}
	(*a)[(*n)++] = v;
	return 0;
}

static int run_vmpt(const struct vmpt_file *trace, const struct vmpt_image *img,
		    const struct vmpt_flow_config *base, struct vmpt_run *out)
{
	struct vmpt_flow_config cfg = *base;
	struct vmpt_flow_item it;
	struct vmpt_flow *dec;
	int ret;

	cfg.begin = trace->data;
	cfg.end = trace->data + trace->size;
	cfg.image = img;
	dec = vmpt_flow_new(&cfg);
	if (!dec)
		return -VMPT_ERR_NOMEM;
	while ((ret = vmpt_flow_next(dec, &it)) == 0) {
		if (it.kind == VMPT_FLOW_BLOCK) {
			uint64_t ip = it.ip;

			for (uint32_t i = 0; i < it.ninsn; i++) {
				if (push(&out->ips, &out->n, &out->cap, ip) < 0)
					return -VMPT_ERR_NOMEM;
				ip += it.isize[i];
			}
		} else if (it.ev == VMPT_EV_ERROR) {
			size_t n = out->n_errs, cap = out->cap_errs;

			if (!out->n_errs)
				out->first_err_at = out->n;

			if (push(&out->err_off, &n, &cap, it.offset) < 0 ||
			    push(&out->err_code, &out->n_errs, &out->cap_errs,
				 (uint64_t)-it.err) < 0)
				return -VMPT_ERR_NOMEM;
		}
	}
	vmpt_flow_free(dec);
	return ret == -VMPT_ERR_EOS ? 0 : ret;
}

/* The PSB segment an offset falls into: index of the last PSB at or before. */
static size_t segment_of(const uint64_t *psbs, size_t n, uint64_t off)
{
	size_t s = 0;

	while (s + 1 < n && psbs[s + 1] <= off)
		s++;
	return s;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pagecache", required_argument, NULL, 'p' },
		{ "elf", required_argument, NULL, 'e' },
		{ "retcomp", no_argument, NULL, 'r' },
		{ "filter", required_argument, NULL, 'f' },
		{ "append", required_argument, NULL, 'a' },
		{ "until-error", no_argument, NULL, 'u' },
		{ NULL, 0, NULL, 0 },
	};
	const char *pagecaches[8];
	size_t n_pc = 0;
	struct vmpt_image *img = vmpt_image_new(), *elfs = vmpt_image_new();
	struct vmpt_asid any = vmpt_asid_any();
	struct vmpt_flow_config cfg = { 0 };
	struct vmpt_file trace;
	struct ref_trace ref;
	struct vmpt_run got = { 0 };
	uint8_t *copy = NULL;
	uint64_t *psbs;
	size_t n_psbs, pos = 0, extra = 0, run_start = 0, e = 0;
	int ret, fail = 0, append = -1, until_error = 0, c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		char *at;

		switch (c) {
		case 'p':
			if (n_pc == 8)
				return 2;
			pagecaches[n_pc++] = optarg;
			ret = vmpt_image_add_pagecache(img, optarg, &any);
			break;
		case 'e':
			at = strrchr(optarg, '@');
			if (!at)
				return 2;
			*at = '\0';
			ret = vmpt_image_add_elf(img, optarg, strtoull(at + 1, NULL, 0), &any);
			if (ret == 0)
				ret = vmpt_image_add_elf(elfs, optarg,
							 strtoull(at + 1, NULL, 0), &any);
			break;
		case 'r':
			cfg.retcomp = 1;
			ret = 0;
			break;
		case 'f':
			at = strchr(optarg, '-');
			if (!at)
				return 2;
			cfg.filter_a[0] = strtoull(optarg, NULL, 0);
			cfg.filter_b[0] = strtoull(at + 1, NULL, 0);
			cfg.n_filters = 1;
			ret = 0;
			break;
		case 'a':
			append = (int)strtoul(optarg, NULL, 0);
			ret = 0;
			break;
		case 'u':
			until_error = 1;
			ret = 0;
			break;
		default:
			return 2;
		}
		if (ret < 0) {
			fprintf(stderr, "%s: %s\n", optarg, vmpt_strerror(ret));
			return 1;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: %s [--pagecache PREFIX] [--elf FILE@BASE] "
			"[--retcomp] [--filter A-B] [--append BYTE] TRACE\n", argv[0]);
		return 2;
	}
	ret = vmpt_file_map(&trace, argv[optind]);
	if (ret < 0) {
		fprintf(stderr, "%s: %s\n", argv[optind], vmpt_strerror(ret));
		return 1;
	}
	if (append >= 0) {
		size_t size = trace.size;

		/* vmpt_file_unmap clears trace: keep the size. */
		copy = malloc(size + 1);
		if (!copy)
			return 1;
		memcpy(copy, trace.data, size);
		copy[size] = (uint8_t)append;
		vmpt_file_unmap(&trace);
		trace.data = copy;
		trace.size = size + 1;
	}
	ret = ipt_ref_decode(trace.data, trace.size, pagecaches, n_pc, elfs,
			     cfg.filter_a[0], cfg.filter_b[0], &ref);
	if (ret < 0) {
		fprintf(stderr, "libipt: %s\n", pt_errstr(pt_errcode(ret)));
		return 1;
	}
	ret = run_vmpt(&trace, img, &cfg, &got);
	if (ret < 0) {
		fprintf(stderr, "vmpt: %s\n", vmpt_strerror(ret));
		return 1;
	}
	vmpt_flow_psb_offsets(trace.data, trace.data + trace.size, &psbs, &n_psbs);

	if (until_error) {
		size_t a = ref.n_errs ? ref.run_end[0] : ref.n_ips;
		size_t b = got.n_errs ? got.first_err_at : got.n;
		size_t n = a < b ? a : b;

		if (memcmp(ref.ips, got.ips, n * sizeof(uint64_t))) {
			printf("MISMATCH before the first error\n");
			fail = 1;
		} else if (!ref.n_errs || !got.n_errs) {
			printf("only one decoder reports an error\n");
			fail = 1;
		} else if (segment_of(psbs, n_psbs, ref.errs[0].offset) !=
			   segment_of(psbs, n_psbs, got.err_off[0])) {
			printf("first errors in different PSB segments: libipt %#" PRIx64
			       " vmpt %#" PRIx64 "\n", ref.errs[0].offset, got.err_off[0]);
			fail = 1;
		}
		printf("%s: %zu instructions equal up to the first error (libipt %zu, "
		       "vmpt %zu before it): %s\n", argv[optind], n, a, b,
		       fail ? "FAIL" : "ok");
		goto out;
	}
	/* libipt's runs: ref.run_end[k] ends run k (an error or the end). */
	for (size_t k = 0; k <= ref.n_errs; k++) {
		size_t end = k < ref.n_errs ? ref.run_end[k] : ref.n_ips;
		size_t len = end - run_start;

		if (len) {
			size_t at = pos;

			/* After an error vmpt may have decoded what libipt
			 * skipped: find where this run starts.
			 */
			if (k > 0 && ref.run_end[k - 1] == run_start) {
				while (at < got.n &&
				       (got.n - at < len ||
					memcmp(&got.ips[at], &ref.ips[run_start],
					       len * sizeof(uint64_t))))
					at++;
			}
			if (at + len > got.n ||
			    memcmp(&got.ips[at], &ref.ips[run_start], len * sizeof(uint64_t))) {
				size_t i = 0;

				while (at + i < got.n && i < len &&
				       got.ips[at + i] == ref.ips[run_start + i])
					i++;
				printf("MISMATCH in libipt run %zu at libipt insn %zu: "
				       "libipt %#" PRIx64 " vmpt %#" PRIx64 "\n", k,
				       run_start + i, ref.ips[run_start + i],
				       at + i < got.n ? got.ips[at + i] : 0);
				fail = 1;
				break;
			}
			extra += at - pos;
			pos = at + len;
		}
		run_start = end;
	}
	if (!fail && pos != got.n) {
		if (ref.n_errs && ref.run_end[ref.n_errs - 1] == ref.n_ips) {
			extra += got.n - pos;
		} else {
			printf("MISMATCH: vmpt has %zu instructions after libipt's last\n",
			       got.n - pos);
			fail = 1;
		}
	}
	/* Every vmpt error needs a libipt error in its PSB segment. */
	for (e = 0; e < got.n_errs; e++) {
		size_t seg = segment_of(psbs, n_psbs, got.err_off[e]), k;

		for (k = 0; k < ref.n_errs; k++)
			if (segment_of(psbs, n_psbs, ref.errs[k].offset) == seg)
				break;
		if (k == ref.n_errs) {
			printf("vmpt error libipt does not report: offset %#" PRIx64 " %s\n",
			       got.err_off[e], vmpt_strerror(-(int)got.err_code[e]));
			fail = 1;
		}
	}
	/* Every trace here holds code: agreeing on nothing proves nothing. */
	if (!got.n) {
		fprintf(stderr, "vmpt decoded no instruction\n");
		fail = 1;
	}
	printf("%s: libipt %zu insns %zu errors; vmpt %zu insns %zu errors; "
	       "vmpt decoded %zu more where libipt had errors: %s\n",
	       argv[optind], ref.n_ips, ref.n_errs, got.n, got.n_errs, extra,
	       fail ? "FAIL" : "ok");
out:
	free(psbs);
	ipt_ref_free(&ref);
	if (copy)
		free(copy);
	else
		vmpt_file_unmap(&trace);
	free(got.ips);
	free(got.err_off);
	free(got.err_code);
	vmpt_image_free(img);
	vmpt_image_free(elfs);
	return fail;
}
