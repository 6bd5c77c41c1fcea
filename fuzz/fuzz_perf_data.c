/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the perf.data reader: the input as a whole file
 * (file or pipe form, by its header), opened as vmpt script opens it (a
 * cut file read up to the cut), every record parsed and walked, the
 * intel_pt AUXTRACE_INFO and the ID_INDEX entries read (it replaces
 * perfdata/tests/fuzz_perf_data.c, which took its input by memfd).  The
 * input is copied to an exact-size heap buffer: ASan sees any read past
 * it.  See docs/fuzzing.md.
 */
#include "vmpt/error.h"
#include "vmpt/perf_data.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmpt_file f = { 0 };
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	uint8_t *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	f.data = copy;
	f.size = size;
	f.read_in = 1;
	f.path = strdup("fuzz.data");
	if (vmpt_perf_open_mapped(&pd, &f, VMPT_PERF_READ_CUT) == 0) {
		vmpt_perf_cursor_init(&pd, &cur);
		while (vmpt_perf_next(&pd, &cur, &ev) > 0) {
			struct vmpt_perf_intel_pt_info info;

			struct vmpt_perf_id_entry e;

			if (ev.type == VMPT_PERF_RECORD_AUXTRACE_INFO)
				vmpt_perf_intel_pt_info(&ev, &info);
			for (uint64_t i = 0; ev.type == VMPT_PERF_RECORD_ID_INDEX &&
					     i < ev.id_index.nr; i++)
				vmpt_perf_id_index_entry(&ev, i, &e);
			if (ev.sid.id)
				vmpt_perf_attr_by_id(&pd, ev.sid.id);
		}
	}
	vmpt_perf_close(&pd);
	return 0;
}
