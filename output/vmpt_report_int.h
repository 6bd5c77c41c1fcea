/* SPDX-License-Identifier: MIT */
/* vmpt report inside: the run (struct vmpt_report, shared by its
 * streams), one stream per trace queue (struct vmpt_consumer, this
 * formatter's own), the VM exits and the hot-spot counts.  Internal to
 * output/vmpt_report_*.c.
 */
#ifndef VMPT_REPORT_INT_H
#define VMPT_REPORT_INT_H

#include "vmpt/report.h"

#include <pthread.h>

/* One hot-spot row: a key tuple and its counts. */
struct report_row {
	int guest;			/* machine */
	int pid, tid;
	const char *comm, *dso, *sym;	/* NULL: unknown */
	uint64_t insns, branches, cycles;
	uint64_t samples;		/* perf's: instructions (i0ns) */
};

struct vmpt_report {
	const struct vmpt_report_opts *o;
	struct vmpt_consumer_ops ops;
	pthread_mutex_t lock;		/* everything below, from the streams */
	struct vmpt_vm_exit *exits;
	size_t n_exits, cap_exits;
	uint64_t *vcpu_vmcs;		/* VMCS base of vCPU i (VMCS order) */
	size_t n_vcpu_vmcs;
	struct report_row *rows;	/* hot spots, by key tuple (hashed) */
	size_t n_rows, cap_rows;
	size_t *hash;			/* row index + 1, 0: empty */
	size_t hash_size;
	char **strs;			/* comm names kept */
	size_t n_strs;
	uint64_t insns, branches, cycles;	/* totals */
	int sorted;
};

struct vmpt_consumer {
	struct vmpt_report *r;
	struct vmpt_task task;
	char comm[64];
	uint8_t nr, from_nr;		/* the machine (PIP.NR) now and before */
	uint64_t vmcs;
	/* Event Trace of the exit to come (CFE VMEXIT(_INTR) + EVDs). */
	int cfe_on, cfe_reason, cfe_vector, cfe_has_qual;
	uint64_t cfe_qual;
	/* The exit waiting for its next VM entry (index + 1, 0: none), and
	 * whether its handler is still being looked for.
	 */
	size_t open;
	int want_handler;
	uint64_t last_entry;		/* the last VM entry's time, 0: none */
	uint64_t last_cyc;		/* IPC: the cycle count last seen */
	uint64_t block_time;		/* the last block's time */
	int have_time;
	/* Rows run since the last IPC point and their instructions: the
	 * cycles of the next point are shared among them so.
	 */
	struct report_ran {
		size_t row;
		uint64_t insns;
	} ran[32];
	unsigned nran;
};

/* vmpt_report_exits.c */
void report_exits_item(struct vmpt_consumer *c, const struct vmpt_flow_item *it);
void report_exits_finish(struct vmpt_report *r);
/* vmpt_report_hot.c */
void report_hot_item(struct vmpt_consumer *c, const struct vmpt_flow_item *it);
void report_hot_finish(struct vmpt_report *r);
/* Is TSC tsc in --time's ranges? */
int report_in_time(const struct vmpt_report *r, uint64_t tsc);
uint64_t report_ns(const struct vmpt_report *r, uint64_t tsc);
/* The symbol (and dso) of ip in machine guest: 0, or -1 when unknown. */
int report_symbol(const struct vmpt_report *r, const struct vmpt_consumer *c, uint64_t ip,
		  int guest, const char **dso, const char **sym, uint64_t *sym_addr);
/* vmpt_report_text.c, vmpt_report_json.c */
int report_print_exits_text(struct vmpt_report *r, FILE *f);
int report_print_exits_json(struct vmpt_report *r, FILE *f);
int report_print_hot_text(struct vmpt_report *r, FILE *f);
int report_print_hot_json(struct vmpt_report *r, FILE *f);

/* Aggregates of host times (ns) of a set of exits. */
struct report_stats {
	uint64_t count, total, min, max, p50, p99;
	uint64_t with_time;		/* exits with a next entry */
	uint64_t guest_total;		/* guest time before them */
	uint64_t hist[40];		/* by log2 of host ns: [2^i, 2^(i+1)) */
};
/* The stats of the exits for which keep(exit, arg) is 1. */
void report_exit_stats(struct vmpt_report *r,
		       int (*keep)(const struct vmpt_vm_exit *, long), long arg,
		       struct report_stats *st);
/* The exit's reason as the report shows it (Event Trace's, else the
 * handler's), -1: unknown.
 */
int report_exit_reason(const struct vmpt_vm_exit *x);

/* Guest RIPs by how many exits they made, most first. */
struct rip_count {
	uint64_t rip, vmcs, count, host;
};
size_t report_top_rips(struct vmpt_report *r, struct rip_count **out);
/* "name+0xoff" of a guest RIP, its dso in *dso (NULL: unknown). */
void report_guest_sym(struct vmpt_report *r, uint64_t rip, uint64_t vmcs, char *buf,
		      size_t size, const char **dso);
const char *report_source_name(enum vmpt_exit_source s);
void report_reason_label(int reason, char *buf, size_t size);
/* Selections of exits for report_exit_stats. */
int report_keep_all(const struct vmpt_vm_exit *x, long arg);
int report_keep_reason(const struct vmpt_vm_exit *x, long arg);
int report_keep_vcpu(const struct vmpt_vm_exit *x, long arg);
int report_reason_of(const struct vmpt_vm_exit *x);
int report_vcpu_of(const struct vmpt_vm_exit *x);
/* The distinct values of f over the exits in --time, ascending (*out
 * freed by the caller).
 */
size_t report_distinct(struct vmpt_report *r, int (*f)(const struct vmpt_vm_exit *),
		       long **out);

#endif
