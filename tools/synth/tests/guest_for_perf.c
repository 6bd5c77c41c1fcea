/* SPDX-License-Identifier: MIT */
/* guest-for-perf IN OUT KSTART KLEN: a copy of a guest sideband perf.data
 * with what perf record -a writes and perf inject --guest-data needs
 * besides: an ID_INDEX naming each event id's CPU (perf maps the guest's
 * ids to vCPUs by it), and the kernel's text [KSTART, KSTART + KLEN) as the
 * MMAP perf record synthesizes ("[kernel.kallsyms]_text", pid -1, time 0,
 * by which perf maps the guest kernel onto its kcore_dir).  Every record of
 * IN is copied as it is.
 */
#include "vmpt/error.h"
#include "vmpt/perf_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IDS 1024

int main(int argc, char **argv)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	struct vmpt_perf_writer *w = NULL;
	struct vmpt_perf_id_entry idx[MAX_IDS];
	size_t n_idx = 0;
	int ret, wrote_index = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: guest-for-perf IN OUT KSTART KLEN\n");
		return 2;
	}
	ret = vmpt_perf_open(&pd, argv[1]);
	if (ret) {
		fprintf(stderr, "guest-for-perf: %s\n", pd.errmsg);
		vmpt_perf_close(&pd);
		return 1;
	}
	/* each id's CPU, from the records that carry it */
	vmpt_perf_cursor_init(&pd, &cur);
	while ((ret = vmpt_perf_next(&pd, &cur, &ev)) == 1) {
		size_t i;

		if (!(ev.sid.present & (PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER)) ||
		    !(ev.sid.present & PERF_SAMPLE_CPU))
			continue;
		for (i = 0; i < n_idx && idx[i].id != ev.sid.id; i++)
			;
		if (i == n_idx && n_idx < MAX_IDS && ev.sid.time) {
			memset(&idx[i], 0, sizeof(idx[i]));
			idx[i].id = ev.sid.id;
			idx[i].idx = i;
			idx[i].cpu = ev.sid.cpu;
			idx[i].tid = UINT64_MAX;
			idx[i].machine_pid = idx[i].vcpu = -1;
			n_idx++;
		}
	}
	if (!ret)
		ret = vmpt_perf_writer_open(&w, argv[2], NULL);
	for (size_t i = 0; !ret && i < pd.nr_attrs; i++)
		ret = vmpt_perf_writer_add_attr(w, &pd.attrs[i].attr, pd.attrs[i].name,
						pd.attrs[i].ids, pd.attrs[i].nr_ids);
	vmpt_perf_cursor_init(&pd, &cur);
	while (!ret && (ret = vmpt_perf_next(&pd, &cur, &ev)) == 1) {
		ret = 0;
		if (!wrote_index && ev.type != VMPT_PERF_RECORD_TIME_CONV) {
			struct vmpt_perf_event k = {
				.type = PERF_RECORD_MMAP, .misc = PERF_RECORD_MISC_KERNEL,
			};

			wrote_index = 1;
			k.mmap.pid = UINT32_MAX;
			k.mmap.start = strtoull(argv[3], NULL, 0);
			k.mmap.len = strtoull(argv[4], NULL, 0);
			k.mmap.pgoff = k.mmap.start;
			k.mmap.filename = "[kernel.kallsyms]_text";
			k.sid = ev.sid;
			k.sid.pid = k.sid.tid = UINT32_MAX;
			k.sid.time = 0;
			if (!(ret = vmpt_perf_write_id_index(w, idx, n_idx)))
				ret = vmpt_perf_write_record(w, &k);
		}
		if (!ret)
			ret = vmpt_perf_write_event(w, ev.raw);
	}
	vmpt_perf_close(&pd);
	if (w) {
		int cret = vmpt_perf_writer_close(w);

		ret = ret ? ret : cret;
	}
	if (ret) {
		fprintf(stderr, "guest-for-perf: %s: %s\n", argv[2], vmpt_strerror(ret));
		return 1;
	}
	return 0;
}
