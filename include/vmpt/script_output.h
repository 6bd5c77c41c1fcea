/* SPDX-License-Identifier: MIT */
/* vmpt script's output: the instruction flow printed the way perf script
 * prints Intel PT samples.  perf's --itrace letters (vmpt/itrace.h) choose
 * the samples, its -F fields the columns, and lines are laid out column
 * for column as perf 6.1's.  The formatter is a consumer of decoding
 * (vmpt/consumer.h): the session or the raw-trace driver feeds it.
 *
 * struct vmpt_script_opts is plain data the caller fills (defaults from
 * vmpt_script_opts_init, then the command line, then the recording);
 * struct vmpt_script is opaque.
 */
#ifndef VMPT_SCRIPT_OUTPUT_H
#define VMPT_SCRIPT_OUTPUT_H

#include "vmpt/consumer.h"
#include "vmpt/error.h"
#include "vmpt/flow.h"
#include "vmpt/image.h"
#include "vmpt/itrace.h"
#include "vmpt/perf_data.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* perf script's -F fields, bits of a uint64_t ("flags" is apart:
 * vmpt_script_fields.flags).
 */
#define VMPT_F_TIME (1ull << 0)
#define VMPT_F_IP (1ull << 1)
#define VMPT_F_ADDR (1ull << 2)
#define VMPT_F_SYM (1ull << 3)
#define VMPT_F_SYMOFF (1ull << 4)
#define VMPT_F_DSO (1ull << 5)
#define VMPT_F_EVENT (1ull << 6)
#define VMPT_F_INSN (1ull << 7)
#define VMPT_F_CPU (1ull << 8)
#define VMPT_F_PID (1ull << 9)
#define VMPT_F_TID (1ull << 10)
#define VMPT_F_COMM (1ull << 11)
#define VMPT_F_IPC (1ull << 12)
#define VMPT_F_PERIOD (1ull << 13)
#define VMPT_F_CALLINDENT (1ull << 14)
#define VMPT_F_INSNLEN (1ull << 15)
#define VMPT_F_SYNTH (1ull << 16)
#define VMPT_F_BRSTACK (1ull << 17)
#define VMPT_F_BRSTACKSYM (1ull << 18)
#define VMPT_F_DISASM (1ull << 19)
#define VMPT_F_MACHINE_PID (1ull << 20)
#define VMPT_F_VCPU (1ull << 21)
#define VMPT_F_VMCS (1ull << 22)
#define VMPT_F_SRCLINE (1ull << 23)
#define VMPT_F_TRACE (1ull << 24)
/* A recorded sample's registers (perf record -I, --user-regs), memory
 * access (-W, -d, --phys-data, --data-page-size, --code-page-size), its
 * header's misc bits, and the source line's text of its ip.
 */
#define VMPT_F_IREGS (1ull << 25)
#define VMPT_F_UREGS (1ull << 26)
#define VMPT_F_WEIGHT (1ull << 27)
#define VMPT_F_INS_LAT (1ull << 28)
#define VMPT_F_DATA_SRC (1ull << 29)
#define VMPT_F_PHYS_ADDR (1ull << 30)
#define VMPT_F_DATA_PAGE_SIZE (1ull << 31)
#define VMPT_F_CODE_PAGE_SIZE (1ull << 32)
#define VMPT_F_MISC (1ull << 33)
#define VMPT_F_SRCCODE (1ull << 34)

/* perf's output types of Intel PT samples: instructions, branches and
 * transactions are hardware events, ptwrite, power and PSB events synth;
 * and of the recording's tracepoints and software events (cpu-clock).
 */
enum { VMPT_OUT_HW, VMPT_OUT_SYNTH, VMPT_OUT_TRACE, VMPT_OUT_SW, VMPT_OUT_TYPES };

struct vmpt_script_fields {
	uint64_t set[VMPT_OUT_TYPES];		/* VMPT_F_* bits */
	uint64_t named[VMPT_OUT_TYPES];		/* the ones -F asked for */
	uint64_t wild;				/* ... without a type ("-F ip,addr") */
	uint64_t unset[VMPT_OUT_TYPES];		/* the ones -F removed ("-sym") */
	uint8_t user_set[VMPT_OUT_TYPES];	/* -F changed the type's fields */
	uint8_t flags;				/* perf's print_flags */
};

/* One -F argument as perf takes it: "ip,sym" sets, "+insn" adds, "-dso"
 * removes, "hw:ip" for one type; several -F accumulate.  0, or a negative
 * vmpt_err with err in perf's words (an unknown field, a field vmpt does
 * not print, +- mixed with a plain list).
 */
int vmpt_script_fields_parse(const char *s, struct vmpt_script_fields *f,
			     char *err, size_t errlen);

/* The i-th -F field name vmpt prints, NULL past the last (completion). */
const char *vmpt_script_field_name(size_t i);

/* The events perf synthesizes from an Intel PT trace. */
enum vmpt_script_event {
	VMPT_SE_INSTRUCTIONS, VMPT_SE_BRANCHES, VMPT_SE_TRANSACTIONS,
	VMPT_SE_PTWRITE, VMPT_SE_CBR, VMPT_SE_PSB, VMPT_SE_MWAIT, VMPT_SE_PWRE,
	VMPT_SE_EXSTOP, VMPT_SE_PWRX, VMPT_SE_EVT, VMPT_SE_COUNT
};

/* perf script's sample filters (-C, --pid, --tid, --comm, --dsos,
 * --symbols, --time): a sample is shown when it passes every one given.
 */
struct vmpt_script_filter {
	const uint8_t *cpus;		/* -C: cpus[n] for CPU n < ncpus */
	int ncpus;
	const int *pids, *tids;		/* --pid, --tid */
	size_t npids, ntids;
	char *const *comms, *const *dsos, *const *syms;	/* --comm --dsos --symbols */
	size_t ncomms, ndsos, nsyms;
	const uint64_t *time_from, *time_to;	/* --time: ranges, ns, to 0: open */
	size_t ntimes;
};

/* A sample as perf synthesizes it, handed to vmpt_script_opts.sample_fn
 * instead of printed (vmpt export): what perf's scripts get.
 */
struct vmpt_script_sample {
	enum vmpt_script_event ev;
	const struct vmpt_task *task;	/* who ran it (the host's thread) */
	uint64_t ip, addr;		/* 0: none (trace start, end) */
	uint64_t time;			/* TSC (vmpt_script_time: perf's ns) */
	uint64_t period;
	uint32_t flags;			/* perf's PERF_IP_FLAG_* */
	unsigned insn_len;		/* of the instruction at ip */
	int guest, addr_guest;		/* machine of ip, of addr: 1 a guest */
	uint64_t vmcs;			/* the guest's VMCS (0: unknown) */
	const struct vmpt_section *sec, *addr_sec;	/* code of ip, addr */
	uint64_t insn_cnt, cyc_cnt;	/* perf's sample insn_cnt, cyc_cnt (IPC) */
	uint64_t trace_nr;		/* perf's trace number (thread stacks) */
	uint64_t insns;			/* instructions of the stream so far */
	unsigned cbr;			/* the core:bus ratio now (cbr samples) */
	/* Not a sample but a decoding error (--itrace e; ev VMPT_SE_COUNT):
	 * a negative vmpt_err at ip, time, and the trace's file offset.
	 */
	int err;
	uint64_t offset;
};

struct vmpt_script_opts {
	struct vmpt_itrace it;
	struct vmpt_script_fields f;
	int ns;			/* --ns: times to the nanosecond */
	/* --reltime: times since the first line's; --deltatime: since the
	 * line before's (lines with a time: samples, sideband events).
	 */
	int reltime, deltatime;
	int disasm;		/* --insn-trace=disasm: the instruction's text too */
	/* --inline: callchain frames of inlined functions (perf 6.1 has
	 * none in Intel PT's callchains; later perfs add them so).
	 */
	int inline_frames;
	int hide_callchain;	/* -G: recorded samples' callchains not printed */
	/* --no-inline: nor in the stacks unwound (--call-graph dwarf),
	 * where perf adds them by default.
	 */
	int no_inline;
	unsigned pad_dso;	/* --call-trace pads dso names so (perf's 50) */
	/* perf's --guest-code: samples of guest code are of the guest's
	 * thread "[guest/PID]" (else perf's nameless ":TID").
	 */
	int guest_code;
	const struct vmpt_image *image;	/* symbols and dsos */
	vmpt_map_fn map_of;		/* missing binaries; NULL: none */
	vmpt_vdso_fn vdso_unread;	/* with map_ctx too; NULL: none */
	vmpt_ksym_fn kernel_sym;	/* with map_ctx too; NULL: none */
	void *map_ctx;
	struct vmpt_script_tp *tp;	/* tracepoints' payloads; NULL: none */
	/* perf.data: TSC -> perf time, printed sec.usec; else the TSC. */
	int have_tc;
	struct vmpt_perf_time_conv tc;
	/* Event names and the width of their column, as perf's evlist. */
	const char *ev_name[VMPT_SE_COUNT];
	char ev_mod[8];		/* the intel_pt event's modifiers (":uH") */
	int name_width;
	uint32_t max_nonturbo;	/* for cbr samples (percent) */
	uint64_t cbr2khz;	/* kHz per CBR step; 0: unknown */
	uint64_t kernel_start;	/* kernel at or above (perf's 1 << 63 on x86_64) */
	/* The recording (its sideband records' events), NULL: a raw trace. */
	const struct vmpt_perf_data *pd;
	/* perf's est_tsc: on a branch from the kernel or from nowhere into
	 * user space, a sample's time is estimated from the instructions
	 * since the last timestamp.
	 */
	int est_tsc;
	int raw;		/* a raw trace: no events, vmpt's own columns */
	/* --show-task-events (COMM, FORK, EXIT), --show-mmap-events,
	 * --show-switch-events, --show-lost-events: the sideband records
	 * among the samples, as perf script prints them.
	 */
	int show_task, show_mmap, show_switch, show_lost;
	struct vmpt_script_filter filter;
	/* Samples go here instead of being printed (NULL: printed). */
	void (*sample_fn)(void *ctx, const struct vmpt_script_sample *smp);
	void *sample_ctx;
};

/* Tracepoints' payloads (perf's -F trace), from pd's tracing data with
 * libtraceevent (opened now).  *tp NULL when pd has no tracepoint.  0, or
 * a negative vmpt_err with err telling why (-VMPT_ERR_FORMAT: where in
 * pd's file; -VMPT_ERR_NO_LIBRARY: libtraceevent missing).
 */
struct vmpt_script_tp;
int vmpt_script_tp_open(const struct vmpt_perf_data *pd, struct vmpt_script_tp **tp,
			char *err, size_t errlen);
void vmpt_script_tp_free(struct vmpt_script_tp *tp);
/* The event formats not read: they crash libtraceevent (tried in a child
 * process first), and their events print no payload.
 */
size_t vmpt_script_tp_formats_left_out(const struct vmpt_script_tp *tp);
/* "system:name" of tracepoint id in buf, or NULL when tp has no such. */
const char *vmpt_script_tp_name(struct vmpt_script_tp *tp, uint64_t id, char *buf,
				size_t size);

/* perf script's defaults: --itrace=cewxpo (vmpt_itrace_default), the
 * fields perf prints for Intel PT's hardware and synth events.
 */
void vmpt_script_opts_init(struct vmpt_script_opts *o);

/* perf's shortcuts: "call-trace", "call-ret-trace", "insn-trace" (arg
 * NULL, or "disasm" for the instruction's text), applied as perf does
 * (fields and --itrace).  -VMPT_ERR_INVAL on an unknown one.
 */
int vmpt_script_opts_shortcut(struct vmpt_script_opts *o, const char *name,
			      const char *arg);

/* Settle the options for a perf.data: event names and their column width
 * as perf's evlist has them, fields the samples do not carry dropped
 * from the defaults (cpu for a per-thread recording, time for a timeless
 * one) or, when asked for with -F, refused in perf's words.  intel_pt:
 * the Intel PT event's attr; info: AUXTRACE_INFO's words (NULL: none).
 * 0 or -VMPT_ERR_INVAL with err set.
 */
int vmpt_script_opts_recording(struct vmpt_script_opts *o, const struct vmpt_perf_data *pd,
			       const struct perf_event_attr *intel_pt,
			       const struct vmpt_perf_intel_pt_info *info,
			       char *err, size_t errlen);

/* Settle the options for a raw trace: no sideband, no events; branch
 * lines show flags, ip, symbols and the target unless -F says otherwise.
 */
void vmpt_script_opts_raw(struct vmpt_script_opts *o);

/* What a run printed and what went wrong, for the summary on stderr. */
struct vmpt_script_stats {
	uint64_t insns, branches;	/* decoded (not only those shown) */
	uint64_t errors[VMPT_ERR_COUNT];	/* by -vmpt_err */
	uint64_t overflows, lost;	/* OVF packets, lost AUX data */
	uint64_t skipped;		/* trace bytes not decoded after errors */
	/* AUX records, and those telling of lost, partial (gaps) or
	 * collided data (perf's end warnings); AUXTRACE_ERROR records.
	 */
	uint64_t aux, aux_lost, aux_partial, aux_collision, recorded_errors;
	uint64_t lost_records;		/* LOST: sideband the kernel dropped */
	/* Samples of other events: printed, and not (tracepoints, PMUs'). */
	uint64_t other_samples, other_unshown;
	uint64_t synthesized;		/* samples and errors made (perf's count) */
	uint64_t error_events;		/* errors made (--itrace e): perf's count */
};

struct vmpt_script;

/* A formatter for these options (kept by reference).  NULL: no memory or
 * no capstone.
 */
struct vmpt_script *vmpt_script_new(const struct vmpt_script_opts *opts);
void vmpt_script_free(struct vmpt_script *s);
/* Its consumer interface (ops.ctx is s). */
const struct vmpt_consumer_ops *vmpt_script_consumer(struct vmpt_script *s);
/* Totals over all its streams (closed ones included). */
void vmpt_script_get_stats(struct vmpt_script *s, struct vmpt_script_stats *st);
/* The i-th binary missing here that decoding needed (the mapping's
 * name, as vmpt_script_opts.map_of gave it) and its decoding errors.  1,
 * or 0 past the last one.
 */
size_t vmpt_script_missing(struct vmpt_script *s, size_t i, const char **name,
			   uint64_t *errors);

/* TSC -> ns of perf time with opts' conversion (the TSC when none). */
uint64_t vmpt_script_time(const struct vmpt_script_opts *opts, uint64_t tsc);

#ifdef __cplusplus
}
#endif

#endif
