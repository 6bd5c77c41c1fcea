/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the perf.data reader: open, walk every record,
 * parse the Intel PT info and ID_INDEX entries.  The input goes through a
 * memfd since the reader maps files by path.
 */
#include "vmpt/perf_data.h"

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	char path[64];
	int fd = memfd_create("perf.data", 0);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (vmpt_perf_open(&pd, path) == 0) {
		vmpt_perf_cursor_init(&pd, &cur);
		while (vmpt_perf_next(&pd, &cur, &ev) > 0) {
			struct vmpt_perf_intel_pt_info info;
			struct vmpt_perf_id_entry e;

			if (ev.type == VMPT_PERF_RECORD_AUXTRACE_INFO)
				vmpt_perf_intel_pt_info(&ev, &info);
			for (uint64_t i = 0; ev.type == VMPT_PERF_RECORD_ID_INDEX &&
					     i < ev.id_index.nr; i++)
				vmpt_perf_id_index_entry(&ev, i, &e);
		}
	}
	vmpt_perf_close(&pd);
	close(fd);
	return 0;
}
