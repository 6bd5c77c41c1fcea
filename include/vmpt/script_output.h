/* SPDX-License-Identifier: MIT */
/* Printing the instruction flow the way perf script prints Intel PT
 * samples: perf's --itrace letters choose the samples, its -F field names
 * the columns, and lines are laid out column for column as perf 6.1's.
 */
#ifndef VMPT_SCRIPT_OUTPUT_H
#define VMPT_SCRIPT_OUTPUT_H

#include "vmpt/flow.h"
#include "vmpt/image.h"
#include "vmpt/perf_data.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vmpt_script_field {
	VMPT_F_TIME = 1 << 0, VMPT_F_IP = 1 << 1, VMPT_F_ADDR = 1 << 2,
	VMPT_F_SYM = 1 << 3, VMPT_F_SYMOFF = 1 << 4, VMPT_F_DSO = 1 << 5,
	VMPT_F_FLAGS = 1 << 6, VMPT_F_INSN = 1 << 7, VMPT_F_CPU = 1 << 8,
	VMPT_F_PID = 1 << 9, VMPT_F_TID = 1 << 10, VMPT_F_COMM = 1 << 11,
	VMPT_F_IPC = 1 << 12,
};

/* perf's --itrace letters. */
struct vmpt_itrace {
	unsigned insns : 1, branches : 1, calls : 1, returns : 1, errors : 1,
		 timeless : 1;
	unsigned period_time : 1;
	uint64_t period;	/* instructions, or ns/ticks when period_time */
};

/* "i100usbe" -> it.  -VMPT_ERR_INVAL on an unknown letter. */
int vmpt_itrace_parse(const char *s, struct vmpt_itrace *it);

/* "ip,sym" sets *fields, "+insn" adds, "-dso" removes.  -VMPT_ERR_INVAL
 * on an unknown name, which starts at s + *bad_at.
 */
int vmpt_script_fields_parse(const char *s, unsigned *fields, size_t *bad_at);

/* The i-th -F field name, NULL past the last (for completion). */
const char *vmpt_script_field_name(size_t i);

/* What the lines show: the same for every stream of a run. */
struct vmpt_script_opts {
	struct vmpt_itrace it;
	unsigned fields;		/* enum vmpt_script_field bits */
	int call_trace;			/* calls/returns indented by depth */
	int disasm;			/* insn shows the disassembly too */
	int ns;				/* sample times in nanoseconds (--ns) */
	/* perf's --guest-code: samples of guest code are of the guest's
	 * thread "[guest/PID]" (else perf's nameless ":TID").
	 */
	int guest_code;
	const struct vmpt_image *image;	/* sym/dso of branch targets */
	/* perf.data: TSC -> perf time, printed sec.usec; else the TSC. */
	int have_tc;
	struct vmpt_perf_time_conv tc;
};

/* Who ran the code being printed (sideband), as perf prints it: -1 when
 * unknown; comm NULL prints perf's ":TID".
 */
struct vmpt_script_task {
	int cpu, pid, tid;
	const char *comm;
	uint64_t space;	/* host address space of pid (VMPT_ASID_PID), 0: any */
};

struct vmpt_script_out;

/* An output stream to f (NULL: set later with vmpt_script_out_set_file).
 * NULL: no memory or no capstone.
 */
struct vmpt_script_out *vmpt_script_out_new(const struct vmpt_script_opts *opts,
					    FILE *f);
void vmpt_script_out_free(struct vmpt_script_out *o);
void vmpt_script_out_set_file(struct vmpt_script_out *o, FILE *f);
void vmpt_script_out_set_task(struct vmpt_script_out *o,
			      const struct vmpt_script_task *task);
/* Print the samples of one flow item.  With time periods, blocks that end
 * in a direct branch are held until the next item (perf's decoder knows
 * its time while walking them); vmpt_script_out_drain prints them, given
 * the time of the item after them (0: unknown, the end of the trace).
 */
void vmpt_script_out_item(struct vmpt_script_out *o, const struct vmpt_flow_item *it);
void vmpt_script_out_drain(struct vmpt_script_out *o, uint64_t next_time);
/* Another trace (buffer) follows on this stream: perf's decoder counts its
 * time periods anew.
 */
void vmpt_script_out_restart(struct vmpt_script_out *o);
/* Write out what is buffered (to the FILE, which may buffer it too). */
void vmpt_script_out_flush(struct vmpt_script_out *o);

/* Decode a whole trace (base->begin..end) and print it.  jobs > 1 cuts
 * it at PSBs into pieces decoded in parallel and printed in trace order,
 * identical to one thread.  host_space: vmpt_flow_set_host_space's
 * (0: none).  0 or a negative vmpt_err.
 */
int vmpt_script_run(const struct vmpt_flow_config *base,
		    const struct vmpt_script_opts *opts,
		    const struct vmpt_script_task *task, uint64_t host_space,
		    int jobs, FILE *f);

/* TSC -> ns of perf time with opts' conversion (the TSC when none). */
uint64_t vmpt_script_time(const struct vmpt_script_opts *opts, uint64_t tsc);

#ifdef __cplusplus
}
#endif

#endif
