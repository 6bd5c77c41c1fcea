/* SPDX-License-Identifier: MIT */
/* vmpt export: a decoded trace in the formats other tools open.  The
 * exporter takes vmpt script's samples (perf's branch samples, through
 * vmpt_script_opts.sample_fn), keeps each thread's call stack as perf's
 * thread-stack.c does with a call/return processor (the calls and
 * call_paths of perf's export-to-sqlite.py), and writes:
 *
 *   folded      flame graph stacks (flamegraph.pl, speedscope)
 *   chrome      Chrome's Trace Event JSON (Perfetto UI, speedscope)
 *   perfetto    Perfetto's protobuf trace (TracePacket/TrackEvent)
 *   sqlite      perf's export-to-sqlite.py tables (exported-sql-viewer.py)
 *   postgresql  perf's export-to-postgresql.py tables, over libpq
 *
 * struct vmpt_export_opts is plain data the caller fills; struct
 * vmpt_export is opaque.
 */
#ifndef VMPT_EXPORT_H
#define VMPT_EXPORT_H

#include "vmpt/consumer.h"
#include "vmpt/script_output.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vmpt_export_format {
	VMPT_EXPORT_FOLDED,
	VMPT_EXPORT_CHROME,
	VMPT_EXPORT_PERFETTO,
	VMPT_EXPORT_SQLITE,
	VMPT_EXPORT_POSTGRESQL,
};

/* What a folded stack's count is. */
enum vmpt_export_weight {
	VMPT_WEIGHT_INSNS,	/* instructions executed in it */
	VMPT_WEIGHT_TIME,	/* nanoseconds (TSC ticks without perf time) */
	VMPT_WEIGHT_SAMPLES,	/* branch samples */
};

struct vmpt_export_opts {
	enum vmpt_export_format format;
	/* The output: folded, chrome and perfetto write to out; sqlite
	 * creates the file db (it must not exist), postgresql the database
	 * db (a libpq connection string or a database name).
	 */
	FILE *out;
	const char *db;
	enum vmpt_export_weight weight;
	/* Slices (chrome, perfetto) and frames (folded) deeper than this
	 * are left out (0: all).
	 */
	unsigned max_depth;
	/* sqlite, postgresql: perf's "branches" column set (no period,
	 * weight, transaction, data_src), and no calls/call_paths tables.
	 */
	int branches_only, no_calls;
	const struct vmpt_script_opts *script;	/* event names, time conversion */
	/* The host kernel's ELF file given (perf's --vmlinux): perf names the
	 * kernel's dso by it and its symbols by file offset.  NULL: none.
	 */
	const char *vmlinux;
};

/* Totals, for the summary line. */
struct vmpt_export_stats {
	uint64_t samples, calls, call_paths, threads, symbols, dsos;
	uint64_t slices, stacks;	/* timelines, folded */
	uint64_t errors;		/* decoding errors (timelines mark them) */
	uint64_t bytes;			/* written to out */
};

struct vmpt_export;

/* An exporter for opts (kept by reference); the databases are created
 * here.  NULL on failure, with the reason in err (empty: no memory).
 */
struct vmpt_export *vmpt_export_new(const struct vmpt_export_opts *opts, char *err,
				    size_t errlen);
/* Set vmpt_script_opts.sample_fn and sample_ctx to these before creating
 * the formatter whose samples are exported.
 */
void vmpt_export_sample(void *ctx, const struct vmpt_script_sample *smp);
/* A sideband record (context switches, comms) among the samples. */
void vmpt_export_sideband(struct vmpt_export *x, const struct vmpt_perf_event *ev,
			  const struct vmpt_task *task);
/* Write what remains (open calls end as perf's "no return") and close
 * the output.  0, or a negative vmpt_err with err set.
 */
int vmpt_export_finish(struct vmpt_export *x, struct vmpt_export_stats *st, char *err,
		       size_t errlen);
void vmpt_export_free(struct vmpt_export *x);

/* "folded", "chrome", ... -> the format; -1: none such. */
int vmpt_export_format_parse(const char *name);

#ifdef __cplusplus
}
#endif

#endif
