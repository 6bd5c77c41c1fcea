/* SPDX-License-Identifier: MIT */
/* vmpt_flow_next_items gives exactly the items of vmpt_flow_next, field
 * for field, times and trace offsets included.
 *
 * usage: items_batch [--pagecache PREFIX] [--elf FILE@BASE] [--filter A-B]
 *                    [--retcomp] [--repeat N] TRACE
 *
 * Two decoders take the trace (N copies end to end, so loops come back
 * with TNT runs already recorded) in lockstep, one item by one, the other
 * in batches.  Prints the item count and how many came in batches of more
 * than one (runs played back), which must not be zero on a trace with
 * loops.
 */
#include "vmpt/error.h"
#include "vmpt/file.h"
#include "vmpt/flow.h"
#include "vmpt/image.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int same_item(const struct vmpt_flow_item *a, const struct vmpt_flow_item *b)
{
	if (a->kind != b->kind || a->mode != b->mode || a->iclass != b->iclass ||
	    a->taken != b->taken || a->ev != b->ev || a->ip_valid != b->ip_valid ||
	    a->nr != b->nr || a->err != b->err || a->ninsn != b->ninsn ||
	    a->sec != b->sec || a->ip != b->ip || a->end_ip != b->end_ip ||
	    a->to != b->to || a->payload != b->payload || a->offset != b->offset ||
	    a->time != b->time)
		return 0;
	return a->kind != VMPT_FLOW_BLOCK || !memcmp(a->isize, b->isize, a->ninsn);
}

static void print_item(const char *who, const struct vmpt_flow_item *it)
{
	fprintf(stderr, "  %s: kind %u ev %u ip 0x%" PRIx64 " end 0x%" PRIx64 " to 0x%" PRIx64
		" ninsn %u taken %u offset 0x%" PRIx64 " time %" PRIu64 "\n",
		who, it->kind, it->ev, it->ip, it->end_ip, it->to, it->ninsn, it->taken,
		it->offset, it->time);
}

int main(int argc, char **argv)
{
	struct vmpt_asid any = vmpt_asid_any();
	struct vmpt_image *img = vmpt_image_new();
	struct vmpt_flow_config cfg = { 0 };
	struct vmpt_flow *one, *batch;
	struct vmpt_flow_item it;
	const struct vmpt_flow_item *items;
	struct vmpt_file f;
	const char *trace = NULL;
	size_t repeat = 1, n, count = 0, in_runs = 0;
	uint8_t *buf;
	int ret = 0;

	for (int i = 1; i < argc; i++) {
		uint64_t base = 0;
		char *at;

		if (!strcmp(argv[i], "--pagecache") && i + 1 < argc) {
			ret = vmpt_image_add_pagecache(img, argv[++i], &any);
		} else if (!strcmp(argv[i], "--elf") && i + 1 < argc) {
			at = strrchr(argv[++i], '@');
			if (at) {
				*at = '\0';
				base = strtoull(at + 1, NULL, 0);
			}
			ret = vmpt_image_add_elf(img, argv[i], base, &any);
		} else if (!strcmp(argv[i], "--filter") && i + 1 < argc) {
			char *dash;

			cfg.filter_a[0] = strtoull(argv[++i], &dash, 0);
			cfg.filter_b[0] = strtoull(dash + 1, NULL, 0);
			cfg.n_filters = 1;
		} else if (!strcmp(argv[i], "--retcomp")) {
			cfg.retcomp = 1;
		} else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
			repeat = strtoull(argv[++i], NULL, 0);
		} else {
			trace = argv[i];
		}
		if (ret < 0) {
			fprintf(stderr, "%s: %s\n", argv[i], vmpt_strerror(ret));
			return 1;
		}
	}
	if (!trace || !repeat || vmpt_file_map(&f, trace) < 0) {
		fprintf(stderr, "usage: %s [--pagecache PREFIX] [--elf FILE@BASE] [--filter A-B] "
			"[--retcomp] [--repeat N] TRACE\n", argv[0]);
		return 2;
	}
	buf = malloc(f.size * repeat);
	if (!buf)
		return 1;
	for (size_t i = 0; i < repeat; i++)
		memcpy(buf + i * f.size, f.data, f.size);
	cfg.begin = buf;
	cfg.end = buf + f.size * repeat;
	cfg.image = img;
	one = vmpt_flow_new(&cfg);
	batch = vmpt_flow_new(&cfg);
	if (!one || !batch)
		return 1;
	while ((ret = vmpt_flow_next_items(batch, &items, &n)) == 0) {
		for (size_t i = 0; i < n; i++, count++) {
			if (vmpt_flow_next(one, &it) < 0) {
				fprintf(stderr, "item %zu: only in batches\n", count);
				return 1;
			}
			if (!same_item(&it, &items[i])) {
				fprintf(stderr, "item %zu (%zu of a batch of %zu) differs:\n",
					count, i, n);
				print_item("one by one", &it);
				print_item("in a batch", &items[i]);
				return 1;
			}
		}
		in_runs += n > 1 ? n : 0;
	}
	if (ret != -VMPT_ERR_EOS || vmpt_flow_next(one, &it) != -VMPT_ERR_EOS) {
		fprintf(stderr, "item %zu: the decoders end apart (%s)\n", count, vmpt_strerror(ret));
		return 1;
	}
	printf("%s x %zu: %zu items, the same one by one and in batches; %zu came in runs\n",
	       trace, repeat, count, in_runs);
	vmpt_flow_free(one);
	vmpt_flow_free(batch);
	free(buf);
	vmpt_file_unmap(&f);
	vmpt_image_free(img);
	return 0;
}
