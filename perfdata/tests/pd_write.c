/* SPDX-License-Identifier: MIT */
/* Writer test driver.
 *   pd-write copy IN OUT [--dir]   read IN, write every record again
 *                                  (re-encoded from the parsed fields
 *                                  where the writer knows the type)
 *   pd-write synth OUT ELF ADDR PMU_TYPE [--dir]
 *                                  a minimal intel_pt perf.data: ELF mapped
 *                                  at 0x555555554000, tracing enabled at
 *                                  ADDR (an offset in ELF), then disabled;
 *                                  tsc and mtc on, timed after the sideband
 */
#include "vmpt/packet.h"
#include "vmpt/perf_data.h"
#include "vmpt/error.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

static int fail(const char *what, int err)
{
	fprintf(stderr, "pd-write: %s: %s%s%s\n", what, vmpt_strerror(err),
		err == -VMPT_ERR_IO ? ": " : "", err == -VMPT_ERR_IO ? strerror(errno) : "");
	return 1;
}

static int reencodable(uint32_t type)
{
	switch (type) {
	case PERF_RECORD_MMAP: case PERF_RECORD_MMAP2: case PERF_RECORD_COMM:
	case PERF_RECORD_FORK: case PERF_RECORD_EXIT: case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES: case PERF_RECORD_ITRACE_START:
	case PERF_RECORD_AUX: case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: case PERF_RECORD_SAMPLE:
	case VMPT_PERF_RECORD_AUXTRACE_INFO: case VMPT_PERF_RECORD_TIME_CONV:
	case VMPT_PERF_RECORD_FINISHED_ROUND:
		return 1;
	default:
		return 0;
	}
}

static int copy(const char *in, const char *out, int dir)
{
	struct vmpt_perf_writer_opts opts = { .dir = dir };
	struct vmpt_perf_writer *w;
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	int ret;

	ret = vmpt_perf_open(&pd, in);
	if (ret < 0) {
		fprintf(stderr, "%s\n", pd.errmsg);
		return 1;
	}
	ret = vmpt_perf_writer_open(&w, out, &opts);
	if (ret < 0)
		return fail(out, ret);
	for (size_t i = 0; i < pd.nr_attrs; i++) {
		ret = vmpt_perf_writer_add_attr(w, &pd.attrs[i].attr, pd.attrs[i].name,
						pd.attrs[i].ids, pd.attrs[i].nr_ids);
		if (ret < 0)
			return fail("add attr", ret);
	}
	if ((ret = vmpt_perf_writer_set_env(w, &pd.env)) < 0)
		return fail("set env", ret);
	vmpt_perf_cursor_init(&pd, &cur);
	while ((ret = vmpt_perf_next(&pd, &cur, &ev)) > 0) {
		if (ev.type == VMPT_PERF_RECORD_AUXTRACE)
			ret = vmpt_perf_write_auxtrace(w, ev.auxtrace.data, ev.auxtrace.size,
						       ev.auxtrace.offset,
						       ev.auxtrace.reference,
						       ev.auxtrace.idx, ev.auxtrace.tid,
						       ev.auxtrace.cpu);
		else if (ev.type == VMPT_PERF_RECORD_HEADER_ATTR ||
			 ev.type == VMPT_PERF_RECORD_HEADER_FEATURE)
			continue;	/* pipe mode: in the file header now */
		else if (reencodable(ev.type))
			ret = vmpt_perf_write_record(w, &ev);
		else
			ret = vmpt_perf_write_event(w, ev.raw);
		if (ret < 0)
			return fail("write record", ret);
	}
	if (ret < 0) {
		fprintf(stderr, "%s\n", pd.errmsg);
		return 1;
	}
	vmpt_perf_close(&pd);
	ret = vmpt_perf_writer_close(w);
	return ret < 0 ? fail("close", ret) : 0;
}

static size_t put_pkt(uint8_t *buf, size_t pos, size_t cap, const struct vmpt_packet *pkt)
{
	int n = vmpt_pkt_encode(buf + pos, cap - pos, pkt);

	if (n < 0) {
		fprintf(stderr, "pd-write: encode: %s\n", vmpt_strerror(n));
		exit(1);
	}
	return pos + (size_t)n;
}

#define BASE 0x555555554000ULL
#define PID 4242
#define CPU 0

static int synth(const char *out, const char *elf, uint64_t addr, uint32_t pmu_type,
		 int dir)
{
	struct vmpt_perf_writer_opts opts = { .dir = dir };
	struct vmpt_perf_time_conv tc = {
		.time_shift = 31, .time_mult = 1789569706, .time_zero = 0,
		.cap_user_time_zero = 1, .extended = 1,	/* perf 5.10+ form */
	};
	struct vmpt_perf_intel_pt_info info;
	struct perf_event_attr pt_attr, sb_attr;
	uint64_t pt_id = 11, sb_id = 12;
	/* The directory form gets the guest fields (host: machine pid 0). */
	struct vmpt_perf_id_entry ids[2] = {
		{ pt_id, 0, CPU, PID, -1, dir ? 1 : -1 },
		{ sb_id, 0, CPU, PID, -1, dir ? 2 : -1 },
	};
	struct vmpt_perf_writer *w;
	struct vmpt_perf_event ev;
	struct vmpt_packet pkt;
	uint8_t trace[256];
	size_t n = 0;
	struct stat st;
	int ret;

	if (stat(elf, &st) < 0) {
		perror(elf);
		return 1;
	}
	/* PSB+, then tracing on at addr and off again. */
	memset(&pkt, 0, sizeof(pkt));
	pkt.type = VMPT_PKT_PSB;
	n = put_pkt(trace, n, sizeof(trace), &pkt);
	pkt.type = VMPT_PKT_MODE_EXEC;
	pkt.exec.csl = 1;
	n = put_pkt(trace, n, sizeof(trace), &pkt);
	pkt.type = VMPT_PKT_TSC;
	pkt.tsc = 1203;	/* perf time 1002.49 ns: after ITRACE_START */
	n = put_pkt(trace, n, sizeof(trace), &pkt);
	pkt.type = VMPT_PKT_TMA;	/* MTC is on: TSC comes with TMA */
	n = put_pkt(trace, n, sizeof(trace), &pkt);
	pkt.type = VMPT_PKT_PSBEND;
	n = put_pkt(trace, n, sizeof(trace), &pkt);
	pkt.type = VMPT_PKT_TIP_PGE;
	pkt.ip.ipc = VMPT_IPC_SEXT_48;
	pkt.ip.ip = BASE + addr;
	n = put_pkt(trace, n, sizeof(trace), &pkt);
	pkt.type = VMPT_PKT_TIP_PGD;
	pkt.ip.ipc = VMPT_IPC_SUPPRESSED;
	pkt.ip.ip = 0;
	n = put_pkt(trace, n, sizeof(trace), &pkt);

	vmpt_perf_intel_pt_attr(&pt_attr, pmu_type, 0x600);	/* tsc, mtc */
	vmpt_perf_sideband_attr(&sb_attr);
	if ((ret = vmpt_perf_writer_open(&w, out, &opts)) < 0)
		return fail(out, ret);
	if ((ret = vmpt_perf_writer_add_attr(w, &pt_attr, "intel_pt//u", &pt_id, 1)) < 0 ||
	    (ret = vmpt_perf_writer_add_attr(w, &sb_attr, "dummy:u", &sb_id, 1)) < 0)
		return fail("add attr", ret);
	if ((ret = vmpt_perf_write_time_conv(w, &tc)) < 0)
		return fail("time conv", ret);
	vmpt_perf_intel_pt_info_init(&info, pmu_type, &tc, 2, 100, 20, 1);
	if ((ret = vmpt_perf_write_intel_pt_info(w, &info)) < 0 ||
	    (ret = vmpt_perf_write_id_index(w, ids, 2)) < 0)
		return fail("info", ret);

	memset(&ev, 0, sizeof(ev));
	ev.sid.pid = PID;
	ev.sid.tid = PID;
	ev.sid.cpu = CPU;
	ev.sid.id = sb_id;
	ev.sid.time = 1000;
	ev.type = PERF_RECORD_COMM;
	ev.misc = PERF_RECORD_MISC_COMM_EXEC;
	ev.comm.pid = PID;
	ev.comm.tid = PID;
	ev.comm.comm = "pd-synth";
	if ((ret = vmpt_perf_write_record(w, &ev)) < 0)
		return fail("comm", ret);
	ev.type = PERF_RECORD_MMAP2;
	ev.misc = PERF_RECORD_MISC_USER;
	ev.sid.time = 1001;
	ev.mmap.pid = PID;
	ev.mmap.tid = PID;
	ev.mmap.start = BASE;
	ev.mmap.len = ((uint64_t)st.st_size + 4095) & ~4095ULL;
	ev.mmap.pgoff = 0;
	ev.mmap.maj = major(st.st_dev);
	ev.mmap.min = minor(st.st_dev);
	ev.mmap.ino = st.st_ino;
	ev.mmap.prot = PROT_READ | PROT_EXEC;
	ev.mmap.flags = MAP_PRIVATE;
	ev.mmap.filename = elf;
	if ((ret = vmpt_perf_write_record(w, &ev)) < 0)
		return fail("mmap2", ret);
	ev.type = PERF_RECORD_ITRACE_START;
	ev.misc = 0;
	ev.sid.id = pt_id;
	ev.sid.time = 1002;
	ev.itrace_start.pid = PID;
	ev.itrace_start.tid = PID;
	if ((ret = vmpt_perf_write_record(w, &ev)) < 0)
		return fail("itrace_start", ret);
	ev.type = PERF_RECORD_AUX;
	ev.sid.time = 1003;
	ev.aux.aux_offset = 0;
	ev.aux.aux_size = n;
	ev.aux.flags = 0;
	if ((ret = vmpt_perf_write_record(w, &ev)) < 0)
		return fail("aux", ret);
	if ((ret = vmpt_perf_write_finished_round(w)) < 0 ||
	    (ret = vmpt_perf_write_auxtrace(w, trace, n, 0, 0x1234, 0, PID, CPU)) < 0)
		return fail("auxtrace", ret);
	ev.type = PERF_RECORD_EXIT;
	ev.sid.id = sb_id;
	ev.sid.time = 1004;
	ev.fork.pid = PID;
	ev.fork.ppid = PID;
	ev.fork.tid = PID;
	ev.fork.ptid = PID;
	ev.fork.time = 1004;
	if ((ret = vmpt_perf_write_record(w, &ev)) < 0 ||
	    (ret = vmpt_perf_write_finished_round(w)) < 0)
		return fail("exit", ret);
	ret = vmpt_perf_writer_close(w);
	return ret < 0 ? fail("close", ret) : 0;
}

int main(int argc, char **argv)
{
	int dir = argc > 1 && !strcmp(argv[argc - 1], "--dir");
	int nargs = argc - dir;

	if (nargs == 4 && !strcmp(argv[1], "copy"))
		return copy(argv[2], argv[3], dir);
	if (nargs == 6 && !strcmp(argv[1], "synth"))
		return synth(argv[2], argv[3], strtoull(argv[4], NULL, 0),
			     (uint32_t)strtoul(argv[5], NULL, 0), dir);
	fprintf(stderr, "usage: pd-write copy IN OUT [--dir]\n"
			"       pd-write synth OUT ELF ADDR PMU_TYPE [--dir]\n");
	return 2;
}
