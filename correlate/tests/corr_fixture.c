/* SPDX-License-Identifier: MIT */
/* Fixtures for the correlator's tests, made with the code that makes them
 * for real:
 *   corr_fixture comm IN OUT NAME        IN's records into OUT, every COMM
 *                                        naming its thread NAME (QEMU's
 *                                        "CPU n/KVM")
 *   corr_fixture kvm-tsc DEBUGFS PID OUT the recorder's reading of KVM's
 *                                        debugfs values and its kvm-tsc file
 *   corr_fixture cut IN OUT SIZE         IN with its trace buffers cut to
 *                                        SIZE bytes (mid-packet, say)
 *   corr_fixture snapshot IN OUT CHUNK OVERLAP
 *                                        IN in snapshot mode: each trace buffer
 *                                        as buffers of CHUNK bytes, each but the
 *                                        first repeating the OVERLAP bytes
 *                                        before it (as AUX snapshots overlap)
 *   corr_fixture split IN OUT CHUNK      IN with each trace buffer as buffers
 *                                        of CHUNK bytes that continue one
 *                                        another (perf reading a full AUX area
 *                                        as it fills)
 *   corr_fixture aux IN OUT              the trace data of all IN's AUXTRACE
 *                                        records, one after another
 */
#include "vmpt/error.h"
#include "vmpt/kvm_tsc.h"
#include "vmpt/perf_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int die(const char *what, int ret)
{
	fprintf(stderr, "corr_fixture: %s: %s\n", what, vmpt_strerror(ret));
	return 1;
}

/* A copy of IN; name: every COMM's, cut: every AUXTRACE's size limit,
 * chunk: buffers of that size, overlapping by overlap (snapshot: the
 * AUXTRACE_INFO says snapshot mode).
 */
static int copy(const char *in, const char *out, const char *name, uint64_t cut,
		uint64_t chunk, uint64_t overlap, int snapshot)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_writer *w;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	int ret = vmpt_perf_open(&pd, in);

	if (ret < 0)
		return die(pd.errmsg, ret);
	ret = vmpt_perf_writer_open(&w, out, NULL);
	if (ret < 0)
		return die(out, ret);
	for (size_t a = 0; a < pd.nr_attrs && !ret; a++)
		ret = vmpt_perf_writer_add_attr(w, &pd.attrs[a].attr, pd.attrs[a].name,
						pd.attrs[a].ids, pd.attrs[a].nr_ids);
	if (!ret)
		ret = vmpt_perf_writer_set_env(w, &pd.env);
	vmpt_perf_cursor_init(&pd, &cur);
	while (!ret && (ret = vmpt_perf_next(&pd, &cur, &ev)) > 0) {
		struct vmpt_perf_intel_pt_info info;

		switch (ev.type) {
		case VMPT_PERF_RECORD_AUXTRACE:
			if (!chunk) {
				ret = vmpt_perf_write_auxtrace(w, ev.auxtrace.data,
					ev.auxtrace.size < cut ? ev.auxtrace.size : cut,
					ev.auxtrace.offset, ev.auxtrace.reference,
					ev.auxtrace.idx, ev.auxtrace.tid, ev.auxtrace.cpu);
				break;
			}
			ret = 0;
			for (uint64_t at = 0; at < ev.auxtrace.size && !ret; at += chunk) {
				uint64_t from = at > overlap ? at - overlap : 0;
				uint64_t to = at + chunk < ev.auxtrace.size ? at + chunk :
					      ev.auxtrace.size;

				ret = vmpt_perf_write_auxtrace(w, ev.auxtrace.data + from,
					to - from, ev.auxtrace.offset + from,
					ev.auxtrace.reference, ev.auxtrace.idx,
					ev.auxtrace.tid, ev.auxtrace.cpu);
			}
			break;
		case VMPT_PERF_RECORD_AUXTRACE_INFO:
			ret = vmpt_perf_intel_pt_info(&ev, &info);
			if (snapshot)
				info.priv[VMPT_INTEL_PT_SNAPSHOT_MODE] = 1;
			if (!ret)
				ret = vmpt_perf_write_intel_pt_info(w, &info);
			break;
		case VMPT_PERF_RECORD_TIME_CONV:
			ret = vmpt_perf_write_time_conv(w, &ev.time_conv);
			break;
		case VMPT_PERF_RECORD_FINISHED_ROUND:
			ret = vmpt_perf_write_finished_round(w);
			break;
		case VMPT_PERF_RECORD_FINISHED_INIT: {
			static const struct perf_event_header h = {
				.type = VMPT_PERF_RECORD_FINISHED_INIT, .size = sizeof(h) };

			ret = vmpt_perf_write_event(w, &h);
			break;
		}
		case VMPT_PERF_RECORD_ID_INDEX:
			ret = 0;	/* the writer makes its own */
			break;
		case PERF_RECORD_COMM:
			if (name)
				ev.comm.comm = name;
			/* fall through */
		default:
			ret = vmpt_perf_write_record(w, &ev);
			break;
		}
	}
	if (ret < 0)
		return die(pd.errmsg[0] ? pd.errmsg : out, ret);
	ret = vmpt_perf_writer_close(w);
	vmpt_perf_close(&pd);
	return ret ? die(out, ret) : 0;
}

static int aux(const char *in, const char *out)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	int ret = vmpt_perf_open(&pd, in);
	FILE *f;

	if (ret < 0)
		return die(pd.errmsg, ret);
	f = fopen(out, "w");
	if (!f)
		return die(out, -VMPT_ERR_IO);
	vmpt_perf_cursor_init(&pd, &cur);
	while ((ret = vmpt_perf_next(&pd, &cur, &ev)) > 0)
		if (ev.type == VMPT_PERF_RECORD_AUXTRACE &&
		    fwrite(ev.auxtrace.data, 1, ev.auxtrace.size, f) != ev.auxtrace.size)
			ret = -VMPT_ERR_IO;
	if (fclose(f) && ret >= 0)
		ret = -VMPT_ERR_IO;
	vmpt_perf_close(&pd);
	return ret < 0 ? die(in, ret) : 0;
}

static int kvm_tsc(const char *debugfs, const char *pid, const char *out)
{
	struct vmpt_kvm_tsc t[64];
	int n = vmpt_kvm_tsc_read(debugfs, atoi(pid), t, 64);

	if (n < 0)
		return die(debugfs, n);
	n = vmpt_kvm_tsc_write(out, t, (size_t)n);
	return n < 0 ? die(out, n) : 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "comm"))
		return copy(argv[2], argv[3], argv[4], UINT64_MAX, 0, 0, 0);
	if (argc == 5 && !strcmp(argv[1], "cut"))
		return copy(argv[2], argv[3], NULL, strtoull(argv[4], NULL, 0), 0, 0, 0);
	if (argc == 5 && !strcmp(argv[1], "split"))
		return copy(argv[2], argv[3], NULL, UINT64_MAX, strtoull(argv[4], NULL, 0), 0,
			    0);
	if (argc == 4 && !strcmp(argv[1], "aux"))
		return aux(argv[2], argv[3]);
	if (argc == 6 && !strcmp(argv[1], "snapshot"))
		return copy(argv[2], argv[3], NULL, UINT64_MAX, strtoull(argv[4], NULL, 0),
			    strtoull(argv[5], NULL, 0), 1);
	if (argc == 5 && !strcmp(argv[1], "kvm-tsc"))
		return kvm_tsc(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: corr_fixture comm IN OUT NAME | kvm-tsc DEBUGFS PID OUT |\n"
		"                    cut IN OUT SIZE | snapshot IN OUT CHUNK OVERLAP |\n"
		"                    split IN OUT CHUNK | aux IN OUT\n");
	return 2;
}
