/* SPDX-License-Identifier: MIT */
/* TNT runs change nothing: a decoder that walks every block
 * (vmpt_flow_next) and one that plays recorded runs back in batches
 * (vmpt_flow_next_items) give the same items, field for field, times,
 * trace offsets and cycle counts included.
 *
 * usage: items_batch [--pagecache PREFIX] [--elf FILE@BASE] [--filter A-B]
 *                    [--retcomp] [--repeat N] [--timing | --sparse-timing]
 *                    [--parts N] TRACE
 *
 * The two decoders take the trace (N copies end to end, so loops come
 * back with runs already recorded) in lockstep.  --timing interleaves
 * CYC packets after every TNT and a TSC after every 8th outside PSB+, so
 * that the real KVM-PT traces (loops, but no timing) get times and cycle
 * counts.  Prints the item count, how many came in batches of more than
 * one (runs played back), and how many of those had a time and a cycle
 * count.  --sparse-timing adds only a TSC after every 40th TNT, so
 * that chains of runs form between them and carry times.  --parts N hands the trace over in N buffers of their own (a
 * queue's consecutive AUX buffers), cut anywhere, packets too.
 */
#include "vmpt/error.h"
#include "vmpt/file.h"
#include "vmpt/flow.h"
#include "vmpt/image.h"
#include "vmpt/packet.h"
#include "same_item.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Copy the packets of in to out with CYC and TSC packets interleaved;
 * returns the size written.  What does not decode is copied as it is.
 */
static size_t add_timing(const uint8_t *in, size_t size, uint8_t *out, int sparse)
{
	struct vmpt_pkt_decoder pd;
	struct vmpt_packet pkt, t = { 0 };
	size_t n = 0;
	unsigned tnts = 0, in_psb = 0;
	uint64_t tsc = 0x100000;

	vmpt_pkt_decoder_init(&pd, in, size);
	for (;;) {
		uint64_t from = vmpt_pkt_offset(&pd);

		if (vmpt_pkt_next(&pd, &pkt) < 0) {
			memcpy(out + n, in + from, size - from);
			return n + size - from;
		}
		memcpy(out + n, in + from, vmpt_pkt_offset(&pd) - from);
		n += vmpt_pkt_offset(&pd) - from;
		in_psb = pkt.type == VMPT_PKT_PSB || (in_psb && pkt.type != VMPT_PKT_PSBEND);
		if (in_psb || pkt.type != VMPT_PKT_TNT8)
			continue;
		if (sparse) {
			/* A TSC every 40 TNTs, no CYC: runs chain between. */
			if (++tnts % 40 == 0) {
				tsc += 0x400 + tnts % 97;
				t.type = VMPT_PKT_TSC;
				t.tsc = tsc;
				n += (size_t)vmpt_pkt_encode(out + n, 16, &t);
			}
			continue;
		}
		t.type = VMPT_PKT_CYC;
		t.cyc = 1 + tnts % 29;
		n += (size_t)vmpt_pkt_encode(out + n, 16, &t);
		if (++tnts % 8 == 0) {
			tsc += 0x400 + tnts % 97;
			t.type = VMPT_PKT_TSC;
			t.tsc = tsc;
			n += (size_t)vmpt_pkt_encode(out + n, 16, &t);
		}
	}
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
	struct vmpt_flow *walk, *batch;
	struct vmpt_flow_item walked;
	const struct vmpt_flow_item *items;
	struct vmpt_file f;
	const char *trace = NULL;
	size_t repeat = 1, n, size, count = 0, in_runs = 0, timed = 0, counted = 0;
	size_t n_parts = 0;
	struct vmpt_pkt_part *parts = NULL;
	int timing = 0, ret = 0;
	uint8_t *buf;

	for (int i = 1; i < argc && ret == 0; i++) {
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
		} else if (!strcmp(argv[i], "--timing")) {
			timing = 1;
		} else if (!strcmp(argv[i], "--sparse-timing")) {
			timing = 2;
		} else if (!strcmp(argv[i], "--parts") && i + 1 < argc) {
			n_parts = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
			repeat = strtoull(argv[++i], NULL, 0);
		} else {
			trace = argv[i];
		}
		if (ret < 0)
			fprintf(stderr, "%s: %s\n", argv[i], vmpt_strerror(ret));
	}
	if (ret < 0 || !trace || !repeat || vmpt_file_map(&f, trace) < 0) {
		if (ret == 0)
			fprintf(stderr, "usage: %s [--pagecache PREFIX] [--elf FILE@BASE] "
				"[--filter A-B] [--retcomp] [--repeat N] [--timing | --sparse-timing] "
				"[--parts N] TRACE\n", argv[0]);
		vmpt_image_free(img);
		return ret < 0 ? 1 : 2;
	}
	/* --timing adds at most a CYC and a TSC (10 bytes) per byte. */
	buf = malloc(f.size * repeat * (timing ? 11 : 1));
	if (!buf)
		return 1;
	size = 0;
	for (size_t i = 0; i < repeat; i++) {
		if (timing) {
			size += add_timing(f.data, f.size, buf + size, timing == 2);
		} else {
			memcpy(buf + size, f.data, f.size);
			size += f.size;
		}
	}
	cfg.begin = buf;
	cfg.end = buf + size;
	if (n_parts) {
		parts = calloc(n_parts, sizeof(*parts));
		if (!parts)
			return 1;
		for (size_t k = 0; k < n_parts; k++) {
			size_t from = size * k / n_parts, to = size * (k + 1) / n_parts;
			uint8_t *copy = malloc(to - from + 1);

			if (!copy)
				return 1;
			memcpy(copy, buf + from, to - from);
			parts[k].begin = copy;
			parts[k].end = copy + (to - from);
		}
		cfg.parts = parts;
		cfg.n_parts = n_parts;
	}
	cfg.image = img;
	walk = vmpt_flow_new(&cfg);
	batch = vmpt_flow_new(&cfg);
	if (!walk || !batch)
		return 1;
	while ((ret = vmpt_flow_next_items(batch, &items, &n)) == 0) {
		for (size_t i = 0; i < n; i++, count++) {
			if (vmpt_flow_next(walk, &walked) < 0) {
				fprintf(stderr, "item %zu: only in batches\n", count);
				return 1;
			}
			if (!same_item(&walked, &items[i])) {
				fprintf(stderr, "item %zu (%zu of a batch of %zu) differs:\n",
					count, i, n);
				print_item("walked", &walked);
				print_item("batched", &items[i]);
				return 1;
			}
		}
		if (n > 1) {
			in_runs += n;
			for (size_t i = 0; i < n; i++) {
				timed += items[i].time != 0;
				counted += items[i].cyc != 0;
			}
		}
	}
	if (ret != -VMPT_ERR_EOS || vmpt_flow_next(walk, &walked) != -VMPT_ERR_EOS) {
		fprintf(stderr, "item %zu: the decoders end apart (%s)\n", count, vmpt_strerror(ret));
		return 1;
	}
	printf("%s x %zu%s%s: %zu items, the same walked and in batches; "
	       "%zu came in runs (%zu with a time, %zu with a cycle count)\n", trace, repeat,
	       timing == 2 ? " with sparse timing" : timing ? " with timing" : "",
	       n_parts ? " in parts" : "", count, in_runs, timed, counted);
	vmpt_flow_free(walk);
	vmpt_flow_free(batch);
	free(buf);
	for (size_t k = 0; k < n_parts; k++)
		free((void *)parts[k].begin);
	free(parts);
	vmpt_file_unmap(&f);
	vmpt_image_free(img);
	return 0;
}
