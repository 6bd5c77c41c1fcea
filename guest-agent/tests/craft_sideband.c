/* SPDX-License-Identifier: MIT */
/* craft-sideband OUT NAME...: a guest sideband perf.data whose MMAP2
 * records name the given files, as a hostile guest could send it.
 */
#include "vmpt/error.h"
#include "vmpt/perf_data.h"

#include <stdio.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
	struct vmpt_perf_writer *w;
	struct perf_event_attr attr;
	uint64_t id = 1;
	int ret;

	if (argc < 3) {
		fprintf(stderr, "usage: craft-sideband OUT NAME...\n");
		return 2;
	}
	vmpt_perf_sideband_attr(&attr);
	ret = vmpt_perf_writer_open(&w, argv[1], NULL);
	if (!ret)
		ret = vmpt_perf_writer_add_attr(w, &attr, "dummy", &id, 1);
	for (int i = 2; !ret && i < argc; i++) {
		struct vmpt_perf_event ev = {
			.type = PERF_RECORD_MMAP2,
			.misc = PERF_RECORD_MISC_USER,
		};

		ev.mmap.pid = ev.mmap.tid = 1000 + (uint32_t)i;
		ev.mmap.start = 0x400000;
		ev.mmap.len = 0x1000;
		ev.mmap.prot = PROT_READ | PROT_EXEC;
		ev.mmap.flags = MAP_PRIVATE;
		ev.mmap.filename = argv[i];
		ev.sid.present = attr.sample_type & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
						     PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER);
		ev.sid.pid = ev.sid.tid = ev.mmap.pid;
		ev.sid.time = 1000 * (uint64_t)i;
		ev.sid.id = id;
		ret = vmpt_perf_write_record(w, &ev);
	}
	if (ret) {
		vmpt_perf_writer_close(w);
	} else {
		ret = vmpt_perf_writer_close(w);
	}
	if (ret) {
		fprintf(stderr, "craft-sideband: %s: %s\n", argv[1], vmpt_strerror(ret));
		return 1;
	}
	return 0;
}
