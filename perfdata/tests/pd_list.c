/* SPDX-License-Identifier: MIT */
/* List a perf.data's records the way `perf script -D` summarizes them, so
 * tests can compare vmpt's reader with perf line by line:
 *   [CPU ][TIME ]OFFSET [SIZE]: PERF_RECORD_NAME details
 * (CPU and TIME only for kernel records, which carry a sample_id.)
 * With --attrs, the attrs and AUXTRACE_INFO fields are listed instead.
 */
#include "vmpt/perf_data.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static void print_details(const struct vmpt_perf_event *ev)
{
	switch (ev->type) {
	case PERF_RECORD_MMAP:
		printf(" %d/%d: [%#" PRIx64 "(%#" PRIx64 ") @ %#" PRIx64 "]: %c %s",
		       (int)ev->mmap.pid, (int)ev->mmap.tid, ev->mmap.start,
		       ev->mmap.len, ev->mmap.pgoff,
		       (ev->misc & PERF_RECORD_MISC_MMAP_DATA) ? 'r' : 'x',
		       ev->mmap.filename);
		break;
	case PERF_RECORD_MMAP2:
		printf(" %d/%d: [%#" PRIx64 "(%#" PRIx64 ") @ %#" PRIx64,
		       (int)ev->mmap.pid, (int)ev->mmap.tid, ev->mmap.start,
		       ev->mmap.len, ev->mmap.pgoff);
		if (ev->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			printf(" <");
			for (unsigned i = 0; i < ev->mmap.build_id_size; i++)
				printf("%02x", ev->mmap.build_id[i]);
			printf(">");
		} else {
			printf(" %02x:%02x %" PRIu64 " %" PRIu64, ev->mmap.maj,
			       ev->mmap.min, ev->mmap.ino, ev->mmap.ino_generation);
		}
		printf("]: %c%c%c%c %s", (ev->mmap.prot & PROT_READ) ? 'r' : '-',
		       (ev->mmap.prot & PROT_WRITE) ? 'w' : '-',
		       (ev->mmap.prot & PROT_EXEC) ? 'x' : '-',
		       (ev->mmap.flags & MAP_SHARED) ? 's' : 'p', ev->mmap.filename);
		break;
	case PERF_RECORD_COMM:
		printf("%s: %s:%d/%d",
		       (ev->misc & PERF_RECORD_MISC_COMM_EXEC) ? " exec" : "",
		       ev->comm.comm, (int)ev->comm.pid, (int)ev->comm.tid);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		printf("(%d:%d):(%d:%d)", (int)ev->fork.pid, (int)ev->fork.tid,
		       (int)ev->fork.ppid, (int)ev->fork.ptid);
		break;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: {
		const char *in_out = !ev->sw.out ? "IN         " :
				     !ev->sw.preempt ? "OUT        " : "OUT preempt";

		if (ev->type == PERF_RECORD_SWITCH)
			printf(" %s", in_out);
		else
			printf(" %s  %s pid/tid: %5d/%-5d", in_out,
			       ev->sw.out ? "next" : "prev", (int)ev->sw.next_prev_pid,
			       (int)ev->sw.next_prev_tid);
		break;
	}
	case PERF_RECORD_ITRACE_START:
		printf(" pid: %u tid: %u", ev->itrace_start.pid, ev->itrace_start.tid);
		break;
	case PERF_RECORD_AUX:
		printf(" offset: %#" PRIx64 " size: %#" PRIx64 " flags: %#" PRIx64 " [%s%s%s]",
		       ev->aux.aux_offset, ev->aux.aux_size, ev->aux.flags,
		       (ev->aux.flags & VMPT_PERF_AUX_TRUNCATED) ? "T" : "",
		       (ev->aux.flags & VMPT_PERF_AUX_OVERWRITE) ? "O" : "",
		       (ev->aux.flags & VMPT_PERF_AUX_PARTIAL) ? "P" : "");
		break;
	case PERF_RECORD_SAMPLE:
		printf("(IP, %#x): %d/%d: %#" PRIx64 " period: %" PRIu64 " addr: %#" PRIx64,
		       ev->misc, (int)ev->sid.pid, (int)ev->sid.tid, ev->sample.ip,
		       ev->sample.period, ev->sample.addr);
		break;
	case VMPT_PERF_RECORD_AUXTRACE:
		printf(" size: %#" PRIx64 "  offset: %#" PRIx64 "  ref: %#" PRIx64
		       "  idx: %u  tid: %d  cpu: %d",
		       ev->auxtrace.size, ev->auxtrace.offset, ev->auxtrace.reference,
		       ev->auxtrace.idx, (int)ev->auxtrace.tid, (int)ev->auxtrace.cpu);
		break;
	case VMPT_PERF_RECORD_AUXTRACE_INFO:
		printf(" type: %u", ev->auxtrace_info.type);
		break;
	case VMPT_PERF_RECORD_TIME_CONV: {
		const struct vmpt_perf_time_conv *tc = &ev->time_conv;

		printf("\n... Time Shift      %" PRIu64 "\n... Time Muliplier  %" PRIu64
		       "\n... Time Zero       %" PRIu64, tc->time_shift, tc->time_mult,
		       tc->time_zero);
		if (tc->extended)
			printf("\n... Time Cycles     %" PRIu64 "\n... Time Mask       %#" PRIx64
			       "\n... Cap Time Zero   %d\n... Cap Time Short  %d",
			       tc->time_cycles, tc->time_mask, tc->cap_user_time_zero,
			       tc->cap_user_time_short);
		break;
	}
	case VMPT_PERF_RECORD_ID_INDEX:
		printf(" nr: %" PRIu64, ev->id_index.nr);
		for (uint64_t i = 0; i < ev->id_index.nr; i++) {
			struct vmpt_perf_id_entry e;

			vmpt_perf_id_index_entry(ev, i, &e);
			printf("\n ... id: %" PRIu64 "  idx: %" PRIu64 "  cpu: %" PRId64
			       "  tid: %" PRId64, e.id, e.idx, (int64_t)e.cpu, (int64_t)e.tid);
			if (ev->id_index.has_guest)
				printf("  machine_pid: %" PRId64 "  vcpu: %" PRIu64,
				       e.machine_pid, (uint64_t)e.vcpu);
		}
		break;
	case PERF_RECORD_LOST:
		printf(" lost %" PRIu64, ev->lost.lost);
		break;
	case VMPT_PERF_RECORD_THREAD_MAP: {
		uint64_t nr, pid;

		/* u64 nr, then {u64 pid, char comm[16]} */
		memcpy(&nr, ev->raw + 8, 8);
		printf(" nr: %" PRIu64, nr);
		for (uint64_t i = 0; i < nr && 16 + (i + 1) * 24 <= ev->size; i++) {
			memcpy(&pid, ev->raw + 16 + i * 24, 8);
			printf(" thread: %" PRIu64, pid);
		}
		break;
	}
	default:
		break;
	}
}

static const char *const pt_names[VMPT_INTEL_PT_PRIV_MAX] = {
	"PMU Type", "Time Shift", "Time Muliplier", "Time Zero", "Cap Time Zero",
	"TSC bit", "NoRETComp bit", "Have sched_switch", "Snapshot mode",
	"Per-cpu maps", "MTC bit", "MTC freq bits", "TSC:CTC numerator",
	"TSC:CTC denominator", "CYC bit", "Max non-turbo ratio",
	"Filter string len.",
};

static int list_info(struct vmpt_perf_data *pd)
{
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	int ret;

	for (size_t i = 0; i < pd->nr_attrs; i++) {
		const struct vmpt_perf_attr *a = &pd->attrs[i];

		printf("event %s type %u size %u config %#llx sample_type %#llx ids",
		       a->name ? a->name : "-", a->attr.type, a->file_attr_size,
		       (unsigned long long)a->attr.config,
		       (unsigned long long)a->attr.sample_type);
		for (size_t j = 0; j < a->nr_ids; j++)
			printf(" %" PRIu64, a->ids[j]);
		printf("\n");
	}
	printf("hostname %s\nos release %s\narch %s\ncpuid %s\ncpudesc %s\n"
	       "nrcpus online %u avail %u\ntotal memory %llu kB\npmu mappings %s\n",
	       pd->env.hostname ? pd->env.hostname : "-",
	       pd->env.os_release ? pd->env.os_release : "-",
	       pd->env.arch ? pd->env.arch : "-",
	       pd->env.cpuid ? pd->env.cpuid : "-",
	       pd->env.cpudesc ? pd->env.cpudesc : "-",
	       pd->env.nr_cpus_online, pd->env.nr_cpus_avail,
	       (unsigned long long)pd->env.total_mem_kb,
	       pd->env.pmu_mappings ? pd->env.pmu_mappings : "-");
	printf("cmdline :");
	for (uint32_t i = 0; i < pd->env.nr_cmdline; i++)
		printf(" %s", pd->env.cmdline[i]);
	printf("\n");
	for (size_t i = 0; i < pd->env.nr_build_ids; i++) {
		const struct vmpt_perf_build_id *b = &pd->env.build_ids[i];

		printf("buildid ");
		for (unsigned j = 0; j < b->size; j++)
			printf("%02x", b->id[j]);
		printf(" %s\n", b->filename);
	}
	for (size_t i = 0; i < pd->nr_auxtrace_index; i++)
		printf("auxtrace index %#llx %#llx\n",
		       (unsigned long long)pd->auxtrace_index[i].file_offset,
		       (unsigned long long)pd->auxtrace_index[i].size);
	vmpt_perf_cursor_init(pd, &cur);
	while ((ret = vmpt_perf_next(pd, &cur, &ev)) > 0) {
		struct vmpt_perf_intel_pt_info info;

		if (ev.type != VMPT_PERF_RECORD_AUXTRACE_INFO ||
		    vmpt_perf_intel_pt_info(&ev, &info) < 0)
			continue;
		for (unsigned i = 0; i < VMPT_INTEL_PT_PRIV_MAX; i++) {
			int hex = i == VMPT_INTEL_PT_TSC_BIT || i == VMPT_INTEL_PT_NORETCOMP_BIT ||
				  i == VMPT_INTEL_PT_MTC_BIT || i == VMPT_INTEL_PT_MTC_FREQ_BITS ||
				  i == VMPT_INTEL_PT_CYC_BIT;

			printf(hex ? "  %-20s%#" PRIx64 "\n" : "  %-20s%" PRIu64 "\n",
			       pt_names[i], info.priv[i]);
		}
		printf("  %-20s%s\n", "Filter string", info.filter ? info.filter : "");
	}
	return ret;
}

int main(int argc, char **argv)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	int info = argc == 3 && !strcmp(argv[1], "--info");
	int ret;

	if (argc != 2 && !info) {
		fprintf(stderr, "usage: pd-list [--info] PERF.DATA\n");
		return 2;
	}
	ret = vmpt_perf_open(&pd, argv[argc - 1]);
	if (ret < 0) {
		fprintf(stderr, "%s\n", pd.errmsg);
		vmpt_perf_close(&pd);
		return 1;
	}
	if (info) {
		ret = list_info(&pd);
	} else {
		/* perf prints cpu and time when any attr samples them. */
		uint64_t st = 0;

		for (size_t i = 0; i < pd.nr_attrs; i++)
			st |= pd.attrs[i].attr.sample_type;
		vmpt_perf_cursor_init(&pd, &cur);
		while ((ret = vmpt_perf_next(&pd, &cur, &ev)) > 0) {
			if (ev.type < 64 && (st & PERF_SAMPLE_CPU))
				printf("%u ", (ev.sid.present & PERF_SAMPLE_CPU) ?
				       ev.sid.cpu : 0xffffffffu);
			if (ev.type < 64 && (st & PERF_SAMPLE_TIME))
				printf("%" PRIu64 " ", ev.sid.time);
			printf("%#" PRIx64 " [%#x]: PERF_RECORD_%s", ev.offset, ev.size,
			       vmpt_perf_record_name(ev.type));
			print_details(&ev);
			printf("\n");
		}
	}
	if (ret < 0)
		fprintf(stderr, "%s\n", pd.errmsg);
	vmpt_perf_close(&pd);
	return ret < 0 ? 1 : 0;
}
