/* SPDX-License-Identifier: MIT */
/* One block cache shared by decoders on several threads gives exactly the
 * instructions one decoder with its own cache gives.
 *
 * usage: bcache_shared --pagecache PREFIX [--filter A-B] [--repeat N] TRACE
 *
 * The trace (N copies end to end) is decoded once by one decoder, then cut
 * at its PSBs into pieces that 4 threads decode at the same time with one
 * fresh cache (so they race to publish the same blocks), then once more by
 * one decoder on the now full cache.  All three instruction lists must be
 * equal, and the same for every round.
 */
#include "vmpt/error.h"
#include "vmpt/file.h"
#include "vmpt/flow.h"
#include "vmpt/image.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 3

struct insns {
	uint64_t *ip;
	size_t n, cap;
	unsigned errors;
};

struct piece {
	struct vmpt_flow_config cfg;
	uint64_t start;
	struct insns out;
	int failed;
};

static int add(struct insns *l, uint64_t ip)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4096;
		uint64_t *p = realloc(l->ip, cap * sizeof(*p));

		if (!p)
			return -1;
		l->ip = p;
		l->cap = cap;
	}
	l->ip[l->n++] = ip;
	return 0;
}

static void *decode(void *arg)
{
	struct piece *p = arg;
	struct vmpt_flow *dec = vmpt_flow_new(&p->cfg);
	struct vmpt_flow_item it;

	if (!dec || vmpt_flow_sync_at(dec, p->start, p->cfg.stop_offset) < 0) {
		p->failed = 1;
		vmpt_flow_free(dec);
		return NULL;
	}
	while (vmpt_flow_next(dec, &it) == 0) {
		if (it.kind == VMPT_FLOW_EVENT) {
			p->out.errors += it.ev == VMPT_EV_ERROR;
			continue;
		}
		uint64_t ip = it.ip;

		for (uint32_t i = 0; i < it.ninsn; i++) {
			if (add(&p->out, ip) < 0)
				p->failed = 1;
			ip += it.isize[i];
		}
	}
	vmpt_flow_free(dec);
	return NULL;
}

static int same(const struct insns *a, const struct insns *b, const char *what)
{
	size_t n = a->n < b->n ? a->n : b->n;

	for (size_t i = 0; i < n; i++)
		if (a->ip[i] != b->ip[i]) {
			fprintf(stderr, "%s: instruction %zu at 0x%" PRIx64 ", expected 0x%" PRIx64 "\n",
				what, i, b->ip[i], a->ip[i]);
			return 0;
		}
	if (a->n != b->n) {
		fprintf(stderr, "%s: %zu instructions, expected %zu\n", what, b->n, a->n);
		return 0;
	}
	return 1;
}

int main(int argc, char **argv)
{
	struct vmpt_asid any = vmpt_asid_any();
	struct vmpt_image *img = vmpt_image_new();
	struct vmpt_flow_config cfg = { 0 };
	struct piece whole = { 0 };
	struct vmpt_file f;
	const char *trace = NULL;
	size_t repeat = 1, n_psbs, size;
	uint64_t *psbs;
	uint8_t *buf;
	int ok = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pagecache") && i + 1 < argc) {
			int ret = vmpt_image_add_pagecache(img, argv[++i], &any);

			if (ret < 0) {
				fprintf(stderr, "%s: %s\n", argv[i], vmpt_strerror(ret));
				return 1;
			}
		} else if (!strcmp(argv[i], "--filter") && i + 1 < argc) {
			char *dash;

			cfg.filter_a[0] = strtoull(argv[++i], &dash, 0);
			cfg.filter_b[0] = strtoull(dash + 1, NULL, 0);
			cfg.n_filters = 1;
		} else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
			repeat = strtoull(argv[++i], NULL, 0);
		} else {
			trace = argv[i];
		}
	}
	if (!trace || !repeat || vmpt_file_map(&f, trace) < 0) {
		fprintf(stderr, "usage: %s --pagecache PREFIX [--filter A-B] [--repeat N] TRACE\n",
			argv[0]);
		return 2;
	}
	size = f.size * repeat;
	buf = malloc(size);
	if (!buf)
		return 1;
	for (size_t i = 0; i < repeat; i++)
		memcpy(buf + i * f.size, f.data, f.size);
	cfg.begin = buf;
	cfg.end = buf + size;
	cfg.image = img;
	whole.cfg = cfg;
	decode(&whole);
	if (whole.failed || vmpt_flow_psb_offsets(cfg.begin, cfg.end, &psbs, &n_psbs) < 0 ||
	    n_psbs < THREADS) {
		fprintf(stderr, "%s: cannot decode it in %d pieces\n", trace, THREADS);
		return 1;
	}
	for (int round = 0; round < ROUNDS && ok; round++) {
		struct piece ps[THREADS] = { 0 }, after = { 0 };
		struct insns joined = { 0 };
		pthread_t th[THREADS];

		cfg.cache = vmpt_bcache_new();
		for (int k = 0; k < THREADS; k++) {
			ps[k].cfg = cfg;
			ps[k].start = k ? psbs[(size_t)k * n_psbs / THREADS] : 0;
			ps[k].cfg.stop_offset = k + 1 < THREADS ?
						psbs[(size_t)(k + 1) * n_psbs / THREADS] : 0;
			pthread_create(&th[k], NULL, decode, &ps[k]);
		}
		for (int k = 0; k < THREADS; k++) {
			pthread_join(th[k], NULL);
			ok &= !ps[k].failed;
			for (size_t i = 0; i < ps[k].out.n; i++)
				ok &= add(&joined, ps[k].out.ip[i]) == 0;
			joined.errors += ps[k].out.errors;
			free(ps[k].out.ip);
		}
		ok = ok && same(&whole.out, &joined, "4 threads, one cache");
		after.cfg = cfg;
		decode(&after);
		ok = ok && !after.failed && same(&whole.out, &after.out, "one decoder, full cache");
		if (joined.errors != whole.out.errors || after.out.errors != whole.out.errors) {
			fprintf(stderr, "errors: %u alone, %u in pieces, %u on the full cache\n",
				whole.out.errors, joined.errors, after.out.errors);
			ok = 0;
		}
		free(joined.ip);
		free(after.out.ip);
		vmpt_bcache_free(cfg.cache);
	}
	printf("%s x %zu: %zu instructions, %u errors; %d rounds of %d threads on one cache: %s\n",
	       trace, repeat, whole.out.n, whole.out.errors, ROUNDS, THREADS,
	       ok ? "same" : "DIFFERENT");
	free(whole.out.ip);
	free(psbs);
	free(buf);
	vmpt_file_unmap(&f);
	vmpt_image_free(img);
	return ok ? 0 : 1;
}
