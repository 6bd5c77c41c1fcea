/* SPDX-License-Identifier: MIT */
/* Ground truth: what the synthetic processor really executed.  Formats
 * (docs/synthesizer.md): OUT.insn has one hex IP per traced instruction
 * (as `perf script --itrace=i0ns -F ip` prints them); OUT.branches has
 * "FROM TO TSC MACHINE FLAGS" per taken branch and trace start/end, with
 * perf's flag names.  With vCPU threads, each line also says the thread
 * and the CPU: "IP TID CPU" and "FROM TO TSC MACHINE TID CPU FLAGS".
 */
#include "synth.h"

#include <stdarg.h>

void synth_truth_insn(struct synth_truth *t, uint64_t ip)
{
	t->n_insn++;
	if (!t->insn)
		return;
	if (t->threaded)
		fprintf(t->insn, "%llx %d %d\n", (unsigned long long)ip,
			(int)t->tid, (int)t->cpu);
	else
		fprintf(t->insn, "%llx\n", (unsigned long long)ip);
}

/* vCPU threads: where a marker's stream ran (its thread and CPU). */
static void where(struct synth_truth *t, FILE *f)
{
	if (t->threaded)
		fprintf(f, " tid %d cpu %d", (int)t->tid, (int)t->cpu);
	fputc('\n', f);
}

const char *synth_flags_name(unsigned f)
{
	/* The names perf script prints for -F flags (perf's sample_flags). */
	if (f & SF_VMENTRY)
		return "vmentry";
	if (f & SF_VMEXIT)
		return "vmexit";
	if ((f & SF_TRACE_BEGIN) && (f & SF_SYSCALLRET))
		return "tr strt sysret";
	if ((f & SF_TRACE_END) && (f & SF_SYSCALLRET))
		return (f & SF_CALL) ? "tr end  syscall" : "tr end  sysret";
	if ((f & SF_TRACE_END) && (f & SF_ASYNC))
		return "tr end  async";
	if (f & SF_TRACE_BEGIN)
		return "tr strt";
	if ((f & SF_TRACE_END) && (f & SF_CALL))
		return "tr end  call";
	if ((f & SF_TRACE_END) && (f & SF_RETURN))
		return "tr end  return";
	if ((f & SF_TRACE_END) && (f & SF_CONDITIONAL))
		return "tr end  jcc";
	if (f & SF_TRACE_END)
		return "tr end";
	if (f & SF_ASYNC)
		return "hw int";
	if ((f & SF_RETURN) && (f & SF_INTERRUPT))
		return "iret";
	if (f & SF_SYSCALLRET)
		return (f & SF_CALL) ? "syscall" : "sysret";
	if (f & SF_CALL)
		return "call";
	if (f & SF_RETURN)
		return "return";
	if (f & SF_CONDITIONAL)
		return "jcc";
	return "jmp";
}

void synth_truth_branch(struct synth_truth *t, uint64_t from, uint64_t to,
			unsigned flags, uint64_t tsc, int guest)
{
	t->n_branch++;
	if (!t->branch)
		return;
	fprintf(t->branch, "%llx %llx %llu %s ", (unsigned long long)from,
		(unsigned long long)to, (unsigned long long)tsc,
		guest ? "guest" : "host");
	if (t->threaded)
		fprintf(t->branch, "%d %d ", (int)t->tid, (int)t->cpu);
	fprintf(t->branch, "%s\n", synth_flags_name(flags));
}

void synth_truth_lost(struct synth_truth *t, uint64_t from, uint64_t block)
{
	/* Written where tracing resumes (the OVF's FUP): the instructions
	 * since the from-th (1-based) ran, but the packets of that branch and
	 * after were lost.  block is the first instruction of that branch's
	 * basic block: a decoder that reports a block only once its branch
	 * is decoded (perf) shows the instructions before it.
	 */
	if (t->insn) {
		fprintf(t->insn, "# overflow: lost from %llu block %llu",
			(unsigned long long)from, (unsigned long long)block);
		where(t, t->insn);
	}
	if (t->branch) {
		fprintf(t->branch, "# overflow: lost from %llu block %llu",
			(unsigned long long)from, (unsigned long long)block);
		where(t, t->branch);
	}
}

void synth_truth_lost_vm(struct synth_truth *t, int began_guest,
			 int resumed_guest, uint64_t exits, uint64_t entries)
{
	/* The lost window's VM transitions: a decoder that knows NR only from
	 * PIP packets still has the one from before the window. */
	if (t->insn) {
		fprintf(t->insn, "# overflow window: began in %s, resumed in %s, "
			"%llu VM exits and %llu VM entries lost",
			began_guest ? "guest" : "host",
			resumed_guest ? "guest" : "host",
			(unsigned long long)exits, (unsigned long long)entries);
		where(t, t->insn);
	}
}

void synth_truth_psb(struct synth_truth *t, uint64_t offset,
		     uint64_t next_insn)
{
	/* A decoder that syncs at this PSB (at or after offset: pending TNT
	 * goes first) starts with the next_insn-th instruction. */
	if (t->insn) {
		fprintf(t->insn, "# psb+ at %llu next %llu",
			(unsigned long long)offset,
			(unsigned long long)next_insn);
		where(t, t->insn);
	}
}

/* --exec: the instructions after the marker are the new program's. */
void synth_truth_exec(struct synth_truth *t, const char *path)
{
	if (t->insn)
		fprintf(t->insn, "# exec %s\n", path);
}

const char *synth_cfe_name(unsigned type)
{
	/* perf's names (builtin-script.c) */
	static const char *const names[] = {
		[1] = "INTR", [2] = "IRET", [3] = "SMI", [4] = "RSM",
		[5] = "SIPI", [6] = "INIT", [7] = "VMENTRY", [8] = "VMEXIT",
		[9] = "VMEXIT_INTR", [10] = "SHUTDOWN",
	};

	return type < sizeof(names) / sizeof(names[0]) && names[type] ?
	       names[type] : "?";
}

void synth_truth_event(struct synth_truth *t, uint64_t tsc, const char *kind,
		       int has_ip, uint64_t ip, int lost, const char *fmt, ...)
{
	va_list ap;

	if (!t->events)
		return;
	fprintf(t->events, "%llu ", (unsigned long long)tsc);
	if (t->threaded)
		fprintf(t->events, "%d %d ", (int)t->tid, (int)t->cpu);
	if (has_ip)
		fprintf(t->events, "%s %llx ", kind, (unsigned long long)ip);
	else
		fprintf(t->events, "%s - ", kind);
	va_start(ap, fmt);
	vfprintf(t->events, fmt, ap);
	va_end(ap);
	fputs(lost ? " lost\n" : "\n", t->events);
}

static uint64_t ns(const struct synth_truth *t, uint64_t tsc)
{
	/* perf's tsc_to_perf_time() with time_zero 0 */
	uint64_t quot = tsc >> t->time_shift;
	uint64_t rem = tsc & ((1ull << t->time_shift) - 1);

	return quot * t->time_mult + ((rem * t->time_mult) >> t->time_shift);
}

void synth_truth_exit(struct synth_truth *t, unsigned vcpu,
		      const struct synth_exit *x, int entered, uint64_t entry_tsc)
{
	if (!t->exits)
		return;
	fprintf(t->exits, "%llu %u %u %llx %u %#llx %u %s ",
		(unsigned long long)x->tsc, vcpu, (unsigned)x->tid,
		(unsigned long long)x->rip, (unsigned)x->reason,
		(unsigned long long)x->qual, (unsigned)x->vector, x->handler);
	if (entered)
		fprintf(t->exits, "%llu %llu ",
			(unsigned long long)(entry_tsc - x->tsc),
			(unsigned long long)(ns(t, entry_tsc) - ns(t, x->tsc)));
	else
		fputs("- - ", t->exits);
	fprintf(t->exits, "%llu%s\n", (unsigned long long)x->guest_ticks,
		x->lost ? " lost" : "");
}
