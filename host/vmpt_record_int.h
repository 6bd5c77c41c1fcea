/* SPDX-License-Identifier: MIT */
/* vmpt record's state, internal to host/ and shared by its files:
 *   vmpt_record.c         the public call: options, the main loop, the end
 *   vmpt_record_events.c  what is traced: the targets, the perf events and
 *                         their rings
 *   vmpt_record_write.c   what is written: records and AUX data, the header
 *                         records, the companions, write errors, and the
 *                         periodic sync that a SIGKILL leaves readable
 *   vmpt_record_output.c  where it goes (public: vmpt/record.h)
 *   vmpt_record_tracepoints.c  tracepoints beside the trace, their formats
 * One struct rec is one recording; nothing here is thread-safe.
 */
#ifndef VMPT_RECORD_INT_H
#define VMPT_RECORD_INT_H

#include "vmpt/aux.h"
#include "vmpt/file.h"
#include "vmpt/kvm_tsc.h"
#include "vmpt/perf_clock.h"
#include "vmpt/perf_data.h"
#include "vmpt/pmu.h"
#include "vmpt/pt_config.h"
#include "vmpt/record.h"
#include "vmpt/vcpu.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One mmap: a vCPU thread (per-thread) or a CPU (per-CPU). */
struct rec_map {
	int fd, sb_fd;		/* main event, sideband dummy (or -1) */
	int cpu;		/* -1 per-thread */
	pid_t tid;		/* -1 per-CPU */
	uint64_t id, sb_id;
	void *base;
	size_t len;
	struct vmpt_data_ring ring;
	void *aux_base;
	size_t aux_len;
	struct vmpt_aux_area aux;
	int hup;
	int *tp_fd;		/* one per tracepoint (-1: not open), or NULL */
	uint64_t *tp_id;
};

/* A tracepoint recorded beside the trace (vmpt_record_tracepoints.c). */
struct rec_tp {
	char *sys, *name, *label;	/* label: "sys:name" */
	uint64_t id;			/* tracefs's events/SYS/NAME/id */
	struct vmpt_file format;	/* events/SYS/NAME/format */
};

struct rec {
	const struct vmpt_record_opts *o;
	struct vmpt_record_stats *st;
	char *err;
	size_t errlen;
	size_t page;

	/* What is traced (vmpt_record_events.c). */
	int pt;				/* intel_pt, else sideband only */
	struct vmpt_pmu pmu;
	struct vmpt_pt_event ptev;
	char filter[4096];
	struct perf_event_attr main_attr, sb_attr;
	struct rec_map *maps;
	size_t nr_maps;
	char tracefs[4200];
	struct rec_tp *tps;
	size_t nr_tps;
	pid_t target_pid, child;
	int command;			/* the command is the target */
	struct vmpt_vcpus *vcpus;

	/* What is written (vmpt_record_write.c). */
	struct vmpt_perf_writer *w;
	struct vmpt_aux_counts counts;
	int wrote_round;
	uint64_t last_sync_ns;		/* CLOCK_MONOTONIC of the last sync */
	struct vmpt_perf_time_conv tc;

	/* What the main loop keeps (vmpt_record.c). */
	struct vmpt_kvm_tsc_series tsc;	/* each vCPU's tsc-offset over time */
	struct vmpt_perf_clock clock;
	int fifo;
};

/* The file's header and the data it covers are brought up to date this
 * often while recording: a SIGKILL loses at most what was read since
 * (and what the kernel rings hold, read every 50 ms).
 */
#define REC_SYNC_INTERVAL_NS 100000000ull

/* Set r->err; returns code. */
int rec_fail(struct rec *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Progress and warnings to opts->log, when there is one. */
void rec_log(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t rec_now_ns(void);

/* vmpt_record_events.c */
int rec_events_prepare(struct rec *r);
void rec_events_attrs(struct rec *r);
int rec_events_targets(struct rec *r);
int rec_events_build(struct rec *r);
int rec_events_open(struct rec *r);
void rec_events_enable(struct rec *r, int on);
void rec_events_close(struct rec *r);
/* perf_event_open's failure errno for what (its config) on tid or cpu. */
int rec_open_error(struct rec *r, const char *what, pid_t tid, int cpu, uint64_t config,
		   int e);

/* vmpt_record_tracepoints.c */
int rec_tp_prepare(struct rec *r);
void rec_tp_free(struct rec *r);
void rec_tp_attr(const struct rec *r, size_t i, struct perf_event_attr *a);
int rec_tp_open(struct rec *r, struct rec_map *m);
void rec_tp_enable(struct rec *r, struct rec_map *m, unsigned long req);
void rec_tp_close(struct rec *r, struct rec_map *m);
int rec_tp_write_tracing_data(struct rec *r);

/* vmpt_record_write.c */
int rec_write_open(struct rec *r);
int rec_write_header(struct rec *r);
int rec_write_synth(void *ctx, struct vmpt_perf_event *ev);
void rec_write_event(struct rec *r, const void *record);
int rec_write_drain(struct rec *r);
void rec_write_snapshot(struct rec *r);
void rec_write_sync(struct rec *r, int now);
void rec_write_tsc(struct rec *r);
int rec_write_close(struct rec *r, int rc);

#endif
