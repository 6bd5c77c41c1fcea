/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the flow decoder over an image: the input is a
 * control byte, 2 bytes of code length, the code (at 0x1000, and again
 * as a guest's) and the trace; every item is taken until the end, with
 * return compression and perf's resync chosen by the control byte.  Two
 * decoders take it in lockstep, one walking every block
 * (vmpt_flow_next), one playing recorded runs and chains back in batches
 * (vmpt_flow_next_items): an item that differs aborts.  A trace that
 * does not end (a loop of direct jumps with no packets) is a libFuzzer
 * timeout.  The walk stops after MAX_ITEMS items (blocks and events):
 * longer walks repeat what they did and only slow the fuzzer.  See
 * docs/fuzzing.md.
 */
#include "vmpt/error.h"
#include "vmpt/flow.h"
#include "vmpt/image.h"
#include "same_item.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ITEMS (1 << 14)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmpt_asid host = { VMPT_MACHINE_HOST, VMPT_ASID_ANY };
	struct vmpt_asid guest = { VMPT_MACHINE_GUEST, VMPT_ASID_ANY };
	struct vmpt_flow_config cfg;
	struct vmpt_flow_item it;
	struct vmpt_image *img;
	struct vmpt_flow *dec, *batch;
	const struct vmpt_flow_item *items;
	size_t n = 0, k = 0;
	size_t code;
	uint8_t *trace;
	unsigned ctl;

	if (size < 3)
		return 0;
	ctl = data[0];
	code = (size_t)(data[1] | data[2] << 8) % 4096;
	if (code > size - 3)
		code = size - 3;
	img = vmpt_image_new();
	if (!img)
		return 0;
	if (code) {
		vmpt_image_add_buffer(img, data + 3, code, 0x1000, "code", &host);
		vmpt_image_add_buffer(img, data + 3, code, 0x1000, "guest", &guest);
	}
	/* An exact-size copy: ASan sees a read past the trace. */
	trace = malloc(size - 3 - code + 1);
	if (!trace) {
		vmpt_image_free(img);
		return 0;
	}
	memcpy(trace, data + 3 + code, size - 3 - code);
	memset(&cfg, 0, sizeof(cfg));
	cfg.begin = trace;
	cfg.end = trace + (size - 3 - code);
	cfg.image = img;
	cfg.retcomp = ctl % 3;
	cfg.perf_resync = (ctl >> 2) & 1;
	cfg.tsc_ctc_ratio_n = (ctl >> 3) & 1 ? 2 : 0;
	cfg.tsc_ctc_ratio_d = 1;
	cfg.mtc_period = (uint8_t)(ctl >> 4);
	cfg.max_nonturbo_ratio = 32;
	dec = vmpt_flow_new(&cfg);
	batch = vmpt_flow_new(&cfg);
	if (dec && batch) {
		for (int i = 0; i < MAX_ITEMS; i++, k++) {
			int ret = vmpt_flow_next(dec, &it), bret = 0;

			if (k == n) {
				bret = vmpt_flow_next_items(batch, &items, &n);
				k = 0;
			}
			if ((ret < 0) != (bret < 0) || (ret < 0 && ret != bret)) {
				fprintf(stderr, "item %d: walked %d, batched %d\n", i, ret, bret);
				abort();
			}
			if (ret < 0)
				break;
			if (!same_item(&it, &items[k])) {
				fprintf(stderr, "item %d differs walked and batched\n", i);
				abort();
			}
		}
	}
	vmpt_flow_free(dec);
	vmpt_flow_free(batch);
	free(trace);
	vmpt_image_free(img);
	return 0;
}
