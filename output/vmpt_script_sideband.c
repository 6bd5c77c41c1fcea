/* SPDX-License-Identifier: MIT */
/* perf script's lines that are no samples: the decoder's errors as
 * perf_event__fprintf_auxtrace_error prints them, a recording's
 * AUXTRACE_ERROR records, and sideband records (--show-*-events:
 * perf_event__fprintf).
 */
#include "vmpt_script_int.h"
#include "vmpt/error.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* perf's codes and messages for the decoder's errors (intel-pt-decoder.h,
 * INTEL_PT_ERR_*), so error lines read as perf's.
 */
static int perf_code(int err, const char **msg)
{
	switch (-err) {
	case VMPT_ERR_NOMEM: *msg = "Memory allocation failed"; return 1;
	case VMPT_ERR_BAD_OPC:
	case VMPT_ERR_BAD_PACKET:
	case VMPT_ERR_TRUNCATED: *msg = "Bad packet"; return 3;
	case VMPT_ERR_NO_IMAGE: *msg = "Failed to get instruction"; return 5;
	case VMPT_ERR_NO_MATCH:
	case VMPT_ERR_IP_SUPPRESSED:
	case VMPT_ERR_NO_LAST_IP: *msg = "Trace doesn't match instruction"; return 6;
	case VMPT_ERR_OVERFLOW: *msg = "Overflow packet"; return 7;
	case VMPT_ERR_LOST: *msg = "Lost trace data"; return 8;
	case VMPT_ERR_LOOP:
		*msg = "Never-ending loop (refer perf config intel-pt.max-loops)";
		return 10;
	default: *msg = "Unknown error!"; return 9;
	}
}

/* perf_event__fprintf_auxtrace_error's line, with the file offset of
 * the packet the decoder was at (vmpt dump lists it).
 */
void script_print_error(struct vmpt_consumer *c, uint64_t time, int time_ns,
			uint64_t ip, uint64_t offset, int err)
{
	const char *msg;
	int code = perf_code(err, &msg);

	script_out_mem(c, " instruction trace error type 1 time ", 37);
	if (time && (time_ns || (c->o->have_tc && !c->o->it.timeless))) {
		uint64_t ns = time_ns ? time : vmpt_perf_tsc_to_time(&c->o->tc, time);

		script_outf(c, "%" PRIu64 ".%09" PRIu64, ns / 1000000000, ns % 1000000000);
	} else if (!c->o->have_tc && time) {
		script_outf(c, "%" PRIu64, time);
	} else {
		script_out_char(c, '0');
	}
	script_outf(c, " cpu %d pid %d tid %d ip %#" PRIx64, c->task.cpu, c->task.pid,
		    c->task.tid, ip);
	if (offset != UINT64_MAX)
		script_outf(c, " offset %#" PRIx64, offset);
	script_outf(c, " code %d: %s\n", code, msg);
}

static const char *record_name(uint32_t type)
{
	return vmpt_perf_record_name(type);
}

/* A sideband record as perf script --show-*-events prints it: the
 * sample's columns, then perf_event__fprintf's text.  The caller set
 * c->task to the record's thread (comm) and sample id (pid, tid, cpu).
 */
void script_print_recorded_error(struct vmpt_consumer *c, const struct vmpt_perf_event *ev)
{
	uint32_t type, code, cpu, pid, tid, fmt, mpid = 0, vcpu = 0;
	uint64_t ip, ns;
	char msg[65];

	if (ev->size < 48 + 64)
		return;
	memcpy(&type, ev->raw + 8, 4);
	memcpy(&code, ev->raw + 12, 4);
	memcpy(&cpu, ev->raw + 16, 4);
	memcpy(&pid, ev->raw + 20, 4);
	memcpy(&tid, ev->raw + 24, 4);
	memcpy(&fmt, ev->raw + 28, 4);
	memcpy(&ip, ev->raw + 32, 8);
	memcpy(&ns, ev->raw + 40, 8);
	/* Format 0 has no time: the message starts there. */
	memcpy(msg, ev->raw + (fmt ? 48 : 40), 64);
	msg[64] = 0;
	if (fmt >= 2 && ev->size >= 48 + 64 + 8) {
		memcpy(&mpid, ev->raw + 112, 4);
		memcpy(&vcpu, ev->raw + 116, 4);
	}
	script_outf(c, " %s error type %u", type == 1 ? "instruction trace" : "unknown AUX", type);
	if (fmt && ns)
		script_outf(c, " time %" PRIu64 ".%09" PRIu64, ns / 1000000000, ns % 1000000000);
	else
		script_outf(c, " time 0");
	if (fmt >= 2 && mpid)
		script_outf(c, " machine_pid %d vcpu %d", (int)mpid, (int)vcpu);
	script_outf(c, " cpu %d pid %d tid %d ip %#" PRIx64 " code %u: %s\n", (int)cpu, (int)pid,
		    (int)tid, ip, code, msg);
}

/* A record's start of line; its time is perf time already. */
static void print_record_start(struct vmpt_consumer *c, uint64_t f,
			       const struct vmpt_perf_event *ev, int callchain)
{
	script_print_start(c, f & ~VMPT_F_TIME, 0, 0, callchain, ev);
	if (f & VMPT_F_TIME)
		script_print_ns(c, ev->sid.time);
}

/* The fields perf prints of another event's samples: -F's or the
 * defaults, less what the first event of its type does not sample
 * (perf checks that one for the type) unless -F named it.
 */
static uint64_t other_fields(const struct vmpt_consumer *c, const struct vmpt_perf_attr *a)
{
	const struct vmpt_perf_attr *first = script_first_of_type(c->o->pd, a->attr.type);
	int t = a->attr.type == PERF_TYPE_TRACEPOINT ? VMPT_OUT_TRACE :
		a->attr.type == PERF_TYPE_SOFTWARE ? VMPT_OUT_SW : VMPT_OUT_HW;
	/* A field the event does not sample stays only when -F named it for
	 * every type (perf's error without Intel PT, its 0 with).
	 */
	uint64_t f = script_fields_sampled(c->o->f.set[t], c->o->f.named[t] & c->o->f.wild,
					   (first ? first : a)->attr.sample_type);

	/* Only Intel PT's samples have these. */
	return f & ~(VMPT_F_INSN | VMPT_F_INSNLEN | VMPT_F_DISASM | VMPT_F_IPC |
		     VMPT_F_BRSTACK | VMPT_F_BRSTACKSYM | VMPT_F_SYNTH | VMPT_F_CALLINDENT);
}

/* perf drops a callchain with a context marker it does not know whole. */
static int chain_known(const struct vmpt_perf_event *ev)
{
	unsigned mode;

	for (uint64_t i = 0; i < ev->sample.nr_chain; i++) {
		uint64_t ip = vmpt_perf_sample_chain(ev, i);

		if (ip >= SCRIPT_CONTEXT_MAX && !script_chain_mode(ip, &mode))
			return 0;
	}
	return 1;
}

/* A sample's fields after its ip, the end of its line, then its source
 * line's text.
 */
static void end_line(struct vmpt_consumer *c, uint64_t f, const struct vmpt_perf_event *ev)
{
	const struct vmpt_section *sec;

	script_print_regs(c, f, ev);
	script_print_mem_pages(c, f, ev);
	script_out_char(c, '\n');
	/* the ip's map as the sample's line named it */
	if ((f & VMPT_F_SRCCODE) && ev->sample.ip &&
	    !script_unmapped_in_mode(c, ev->sample.ip, ev->misc & PERF_RECORD_MISC_CPUMODE_MASK,
				     &sec))
		script_print_srccode(c, sec, ev->sample.ip, 0);
}

void script_print_other_sample(struct vmpt_consumer *c, const struct vmpt_perf_event *ev)
{
	const struct vmpt_perf_attr *a = ev->attr;
	uint64_t chain[256];
	char name[64];
	const char *evname = name;
	uint64_t f;
	int callchain;

	if (!a || a->attr.type >= PERF_TYPE_MAX) {
		c->stats.other_unshown++;
		return;
	}
	c->stats.other_samples++;
	f = other_fields(c, a);
	if (a->name)
		evname = a->name;
	else if (a->attr.type != PERF_TYPE_TRACEPOINT ||
		 !vmpt_script_tp_name(c->o->tp, a->attr.config, name, sizeof(name)))
		script_attr_name(&a->attr, name, sizeof(name));
	/* perf's form is the event's: its callchain may be empty. */
	callchain = (f & VMPT_F_IP) && (a->attr.sample_type & PERF_SAMPLE_CALLCHAIN) &&
		    !c->o->hide_callchain;
	print_record_start(c, f, ev, callchain);
	if (f & VMPT_F_PERIOD) {
		script_out_u64(c, ev->sample.period, 10, 0);
		script_out_char(c, ' ');
	}
	if (f & VMPT_F_EVENT)
		script_print_event(c, evname);
	if (f & VMPT_F_TRACE)
		script_print_trace(c, ev);
	if (f & VMPT_F_ADDR)
		script_outf(c, "%16" PRIx64, ev->sample.addr);
	script_print_mem_access(c, f, ev);
	if (callchain) {
		script_out_char(c, '\n');
		if (chain_known(ev)) {
			unsigned mode = PERF_RECORD_MISC_USER;
			size_t n = 0;

			for (uint64_t i = 0; i < ev->sample.nr_chain; i++) {
				chain[n++] = vmpt_perf_sample_chain(ev, i);
				if (n == sizeof(chain) / sizeof(chain[0])) {
					script_print_callchain(c, f, chain, n, 0, &mode);
					n = 0;
				}
			}
			script_print_callchain(c, f, chain, n, 0, &mode);
		}
		/* --call-graph dwarf: the user stack after the kernel's chain. */
		if ((a->attr.sample_type & (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)) ==
		    (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER))
			script_print_unwound(c, f, chain, script_unwind(c, ev, chain, SCRIPT_MAX_STACK));
		end_line(c, f, ev);
		return;
	}
	if (f & VMPT_F_IP) {
		const struct vmpt_section *sec = NULL;

		script_outf(c, " %16" PRIx64, ev->sample.ip);
		if (ev->sample.ip && script_unmapped_in_mode(c, ev->sample.ip,
				ev->misc & PERF_RECORD_MISC_CPUMODE_MASK, &sec))
			script_print_unmapped(c, f);
		else
			script_print_sym_dso(c, f, sec, ev->sample.ip, 0);
	}
	end_line(c, f, ev);
}

void script_print_sideband(struct vmpt_consumer *c, const struct vmpt_perf_event *ev)
{
	const uint64_t start = VMPT_F_COMM | VMPT_F_PID | VMPT_F_TID | VMPT_F_CPU | VMPT_F_MISC |
			       VMPT_F_TIME;
	const struct vmpt_perf_attr *a = c->o->pd ?
		(ev->sid.present & (PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER) ?
			vmpt_perf_attr_by_id(c->o->pd, ev->sid.id) : c->o->pd->attrs) : NULL;
	uint64_t f = c->o->f.set[VMPT_OUT_HW] & start;
	const struct vmpt_task saved = c->task;

	if (a && a->attr.type == PERF_TYPE_SOFTWARE && a->attr.config == PERF_COUNT_SW_DUMMY) {
		/* perf checks no sample type for a dummy event: a software
		 * event's fields, the missing ones as zero (cpu -1).
		 */
		if (!c->o->f.user_set[VMPT_OUT_HW])
			f = VMPT_F_COMM | VMPT_F_TID | VMPT_F_CPU | VMPT_F_TIME;
	} else {
		if (!(ev->sid.present & PERF_SAMPLE_CPU))
			f &= ~VMPT_F_CPU;
		if (!(ev->sid.present & PERF_SAMPLE_TIME))
			f &= ~VMPT_F_TIME;
		if (!(ev->sid.present & PERF_SAMPLE_TID))
			f &= ~(VMPT_F_PID | VMPT_F_TID);
	}
	print_record_start(c, f, ev, 0);
	c->task = saved;
	script_outf(c, "PERF_RECORD_%s", record_name(ev->type));
	switch (ev->type) {
	case PERF_RECORD_COMM:
		script_outf(c, "%s: %s:%d/%d\n", ev->misc & PERF_RECORD_MISC_COMM_EXEC ? " exec" : "",
			    ev->comm.comm, (int)ev->comm.pid, (int)ev->comm.tid);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		script_outf(c, "(%d:%d):(%d:%d)\n", (int)ev->fork.pid, (int)ev->fork.tid,
			    (int)ev->fork.ppid, (int)ev->fork.ptid);
		break;
	case PERF_RECORD_MMAP:
		script_outf(c, " %d/%d: [%#" PRIx64 "(%#" PRIx64 ") @ %#" PRIx64 "]: %c %s\n",
			    (int)ev->mmap.pid, (int)ev->mmap.tid, ev->mmap.start, ev->mmap.len,
			    ev->mmap.pgoff, ev->misc & PERF_RECORD_MISC_MMAP_DATA ? 'r' : 'x',
			    ev->mmap.filename);
		break;
	case PERF_RECORD_MMAP2: {
		char prot[5] = {
			ev->mmap.prot & PROT_READ ? 'r' : '-',
			ev->mmap.prot & PROT_WRITE ? 'w' : '-',
			ev->mmap.prot & PROT_EXEC ? 'x' : '-',
			ev->mmap.flags & MAP_SHARED ? 's' : 'p', 0 };

		if (ev->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			char bid[41];

			bid[0] = 0;
			for (unsigned i = 0; i < ev->mmap.build_id_size && i < 20; i++)
				snprintf(bid + 2 * i, 3, "%02x", ev->mmap.build_id[i]);
			script_outf(c, " %d/%d: [%#" PRIx64 "(%#" PRIx64 ") @ %#" PRIx64 " <%s>]: %s %s\n",
				    (int)ev->mmap.pid, (int)ev->mmap.tid, ev->mmap.start,
				    ev->mmap.len, ev->mmap.pgoff, bid, prot, ev->mmap.filename);
		} else {
			script_outf(c, " %d/%d: [%#" PRIx64 "(%#" PRIx64 ") @ %#" PRIx64
				    " %02x:%02x %" PRIu64 " %" PRIu64 "]: %s %s\n",
				    (int)ev->mmap.pid, (int)ev->mmap.tid, ev->mmap.start,
				    ev->mmap.len, ev->mmap.pgoff, ev->mmap.maj, ev->mmap.min,
				    ev->mmap.ino, ev->mmap.ino_generation, prot, ev->mmap.filename);
		}
		break;
	}
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: {
		const char *in_out = !ev->sw.out ? "IN         " :
				     !ev->sw.preempt ? "OUT        " : "OUT preempt";

		if (ev->type == PERF_RECORD_SWITCH)
			script_outf(c, " %s\n", in_out);
		else
			script_outf(c, " %s  %s pid/tid: %5d/%-5d\n", in_out,
				    ev->sw.out ? "next" : "prev", (int)ev->sw.next_prev_pid,
				    (int)ev->sw.next_prev_tid);
		break;
	}
	case PERF_RECORD_LOST:
		script_outf(c, " lost %" PRIu64 "\n", ev->lost.lost);
		break;
	default:
		script_out_char(c, '\n');
		break;
	}
}
