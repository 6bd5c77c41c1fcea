/* SPDX-License-Identifier: MIT */
/* vmpt report: what a trace says in aggregate.  Two reports, each a
 * consumer of decoding (vmpt/consumer.h) fed by the session:
 * - VM exits: every exit of a VM recording (vCPU, host thread, guest RIP,
 *   reason, host time until the next VM entry, guest time since the entry
 *   before), and per reason and per vCPU counts, totals, percentiles, a
 *   histogram and the guest RIPs that exit most;
 * - hot spots: instructions, branches and cycles (IPC) per machine,
 *   thread, dso and symbol, as perf report --itrace counts samples.
 * Text for people, JSON for scripts (docs/report.schema.json).
 *
 * struct vmpt_report_opts is plain data the caller fills; struct
 * vmpt_report is opaque.
 */
#ifndef VMPT_REPORT_H
#define VMPT_REPORT_H

#include "vmpt/consumer.h"
#include "vmpt/image.h"
#include "vmpt/perf_data.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where a VM exit's reason came from. */
enum vmpt_exit_source {
	VMPT_EXIT_SOURCE_NONE,		/* unknown */
	VMPT_EXIT_SOURCE_EVENT_TRACE,	/* CFE VMEXIT(_INTR) with EVD VMXR */
	VMPT_EXIT_SOURCE_HANDLER,	/* the KVM handler the host reached */
};

/* One VM exit.  Times are host TSCs; 0 where not known. */
struct vmpt_vm_exit {
	uint64_t tsc;			/* the exit (its FUP) */
	uint64_t entry_tsc;		/* the vCPU's next VM entry, 0: none */
	uint64_t prev_entry_tsc;	/* the VM entry before the exit, 0: none */
	int vcpu;			/* from "CPU N/KVM", else VMCS order */
	int pid, tid;			/* the host thread */
	uint64_t vmcs;			/* VMCS base, 0: not known */
	uint64_t rip;			/* guest RIP of the exit */
	int reason;			/* basic exit reason, -1: unknown */
	uint64_t qual;			/* EVD VMXQ */
	int vector;			/* VMEXIT_INTR's vector, -1: none */
	int has_qual;
	enum vmpt_exit_source source;
	/* The KVM handler the host code reached (NULL: none seen) and the
	 * reason it stands for (-1: none).
	 */
	const char *handler;
	int handler_reason;
};

/* What the hot spots are counted by (perf report's --sort keys). */
enum vmpt_report_key {
	VMPT_KEY_MACHINE, VMPT_KEY_COMM, VMPT_KEY_PID, VMPT_KEY_TID, VMPT_KEY_DSO,
	VMPT_KEY_SYM, VMPT_KEY_COUNT
};

struct vmpt_report_opts {
	int vm_exits;			/* the VM exit report, else hot spots */
	int json;			/* JSON, else text */
	int per_exit;			/* text: every exit's row too */
	/* Hot spots: keys in order (perf's "comm,dso,sym"), nkeys of them. */
	enum vmpt_report_key keys[VMPT_KEY_COUNT];
	int nkeys;
	double percent_limit;		/* rows under it are left out */
	size_t top;			/* top guest RIPs, per vCPU table rows */
	/* Only items whose time (perf ns) falls in a range: from, to (to 0:
	 * open); ntimes 0: every time.
	 */
	const uint64_t *time_from, *time_to;
	size_t ntimes;
	const struct vmpt_image *image;	/* symbols */
	int have_tc;			/* TSC -> perf time (ns) */
	struct vmpt_perf_time_conv tc;
	const char *input;		/* named in the header */
};

/* Defaults: hot spots by comm,dso,sym, text, top 10. */
void vmpt_report_opts_init(struct vmpt_report_opts *o);

/* "comm,dso,sym" into o->keys: 0, or -VMPT_ERR_INVAL naming the key in
 * err.
 */
int vmpt_report_sort_parse(struct vmpt_report_opts *o, const char *s, char *err,
			   size_t errlen);

struct vmpt_report;

/* A report for these options (kept by reference).  NULL: no memory. */
struct vmpt_report *vmpt_report_new(const struct vmpt_report_opts *opts);
void vmpt_report_free(struct vmpt_report *r);
/* Its consumer interface (ops.ctx is r). */
const struct vmpt_consumer_ops *vmpt_report_consumer(struct vmpt_report *r);

/* The VM exits seen, in the order of their times. */
size_t vmpt_report_exits(struct vmpt_report *r, const struct vmpt_vm_exit **exits);

/* Print the report (text or JSON as the options say).  0, or -VMPT_ERR_IO
 * (errno set) when writing failed.
 */
int vmpt_report_print(struct vmpt_report *r, FILE *f);

/* A basic exit reason's name (Intel SDM Vol. 3D, appendix C), "" if it
 * has none.
 */
const char *vmpt_exit_reason_name(int reason);
/* The reason a KVM exit handler (by its kernel symbol) stands for, -1 if
 * the name is no handler.
 */
int vmpt_exit_reason_of_handler(const char *sym);

#ifdef __cplusplus
}
#endif

#endif
