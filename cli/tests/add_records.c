/* SPDX-License-Identifier: MIT */
/* Copy a vmpt-synth recording adding the records that tell of lost data,
 * as perf record and perf inject write them: a LOST record (the kernel
 * dropped sideband), an AUX record flagged truncated (the AUX area
 * filled up: trace lost), and an AUXTRACE_ERROR record (an error a
 * decoder reported before, as perf inject keeps them), at perf times
 * given in ns after the recording's first record.
 * usage: add_records IN OUT LOST_NS AUX_NS ERROR_NS
 */
#include "vmpt/error.h"
#include "vmpt/perf_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int die(const char *what, int ret)
{
	fprintf(stderr, "add_records: %s: %s\n", what, vmpt_strerror(ret));
	return 1;
}

/* perf's struct perf_record_auxtrace_error, format 1 (with the time). */
struct auxtrace_error {
	uint32_t type;
	uint16_t misc, size;
	uint32_t etype, code, cpu, pid, tid, fmt;
	uint64_t ip, time;
	char msg[64];
};

int main(int argc, char **argv)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_writer *w;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	struct vmpt_perf_sample_id sid = { 0 };
	uint64_t t0 = 0, at[3];
	int added = 0, ret;

	if (argc != 6)
		return 2;
	for (int i = 0; i < 3; i++)
		at[i] = strtoull(argv[3 + i], NULL, 0);
	ret = vmpt_perf_open(&pd, argv[1]);
	if (ret < 0)
		return die(pd.errmsg, ret);
	ret = vmpt_perf_writer_open(&w, argv[2], NULL);
	if (ret < 0)
		return die(argv[2], ret);
	for (size_t a = 0; a < pd.nr_attrs && !ret; a++)
		ret = vmpt_perf_writer_add_attr(w, &pd.attrs[a].attr, pd.attrs[a].name,
						pd.attrs[a].ids, pd.attrs[a].nr_ids);
	if (!ret)
		ret = vmpt_perf_writer_set_env(w, &pd.env);
	vmpt_perf_cursor_init(&pd, &cur);
	while (!ret && (ret = vmpt_perf_next(&pd, &cur, &ev)) > 0) {
		ret = 0;
		if (!t0 && (ev.sid.present & PERF_SAMPLE_TIME)) {
			t0 = ev.sid.time;
			sid = ev.sid;	/* a sideband record's: the kernel's ids */
		}
		if (ev.type == VMPT_PERF_RECORD_AUXTRACE && !added) {
			struct vmpt_perf_event lost = { .type = PERF_RECORD_LOST };
			struct vmpt_perf_event aux = { .type = PERF_RECORD_AUX };
			struct auxtrace_error e = {
				.type = VMPT_PERF_RECORD_AUXTRACE_ERROR, .size = sizeof(e),
				.etype = 1, .code = 8, .cpu = (uint32_t)-1, .pid = 4242,
				.tid = 4242, .fmt = 1, .ip = 0x555555583eea,
				.time = t0 + at[2], .msg = "Lost trace data",
			};

			lost.sid = aux.sid = sid;
			lost.lost.id = sid.id;
			lost.lost.lost = 3;
			lost.sid.time = t0 + at[0];
			aux.aux.aux_offset = 0x1000;
			aux.aux.aux_size = 0x2000;
			aux.aux.flags = PERF_AUX_FLAG_TRUNCATED;
			aux.sid.time = t0 + at[1];
			ret = vmpt_perf_write_record(w, &lost);
			if (!ret)
				ret = vmpt_perf_write_record(w, &aux);
			if (!ret)
				ret = vmpt_perf_write_event(w, &e);
			added = 1;
		}
		if (ret)
			break;
		switch (ev.type) {
		case VMPT_PERF_RECORD_AUXTRACE:
			ret = vmpt_perf_write_auxtrace(w, ev.auxtrace.data, ev.auxtrace.size,
						       ev.auxtrace.offset, ev.auxtrace.reference,
						       ev.auxtrace.idx, ev.auxtrace.tid,
						       ev.auxtrace.cpu);
			break;
		case VMPT_PERF_RECORD_TIME_CONV:
			ret = vmpt_perf_write_time_conv(w, &ev.time_conv);
			break;
		case VMPT_PERF_RECORD_AUXTRACE_INFO: {
			struct vmpt_perf_intel_pt_info info;

			ret = vmpt_perf_intel_pt_info(&ev, &info);
			if (!ret)
				ret = vmpt_perf_write_intel_pt_info(w, &info);
			break;
		}
		case VMPT_PERF_RECORD_FINISHED_ROUND:
			ret = vmpt_perf_write_finished_round(w);
			break;
		case VMPT_PERF_RECORD_ID_INDEX:
			break;
		default:
			ret = vmpt_perf_write_record(w, &ev);
			break;
		}
	}
	if (ret < 0)
		return die(pd.errmsg[0] ? pd.errmsg : argv[2], ret);
	ret = vmpt_perf_writer_close(w);
	vmpt_perf_close(&pd);
	return ret ? die(argv[2], ret) : 0;
}
