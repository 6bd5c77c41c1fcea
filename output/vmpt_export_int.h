/* SPDX-License-Identifier: MIT */
/* vmpt export inside: the objects perf's db-export.c numbers (machines,
 * threads, comms, dsos, symbols, call paths), each thread's call stack as
 * perf's thread-stack.c keeps it with a call/return processor, and the
 * table of formats, one file each (vmpt_export_FORMAT.c).  Internal to
 * output/.
 */
#ifndef VMPT_EXPORT_INT_H
#define VMPT_EXPORT_INT_H

#include "vmpt/export.h"

#include <stdint.h>

/* A map of three-word keys to pointers (open addressing). */
struct export_map {
	struct export_slot { uint64_t k[3]; void *v; } *slot;
	size_t n, cap;
};
void *export_map_get(const struct export_map *m, uint64_t a, uint64_t b, uint64_t c);
int export_map_put(struct export_map *m, uint64_t a, uint64_t b, uint64_t c, void *v);
void export_map_free(struct export_map *m);

struct export_machine {
	uint64_t key;		/* VMPT_MACHINE_HOST, a VMCS, VMPT_MACHINE_GUEST */
	int pid;		/* perf's: -1 the host, a guest's QEMU pid */
	uint64_t db_id;
};

struct export_dso {
	const char *long_name, *short_name;
	const char *build_id;	/* "" when unknown */
	struct export_machine *machine;
	int kernel;		/* symbols at their addresses, not file offsets */
	uint64_t db_id;
	/* perf's dso->last_find_result: the last address looked up and the
	 * symbol it gave.
	 */
	uint64_t cache_addr;
	struct export_sym *cache_sym;
};

/* A symbol as perf's dso holds it: sym_start/sym_end relative to the
 * file (perf's map_ip), or "unknown" at one address (perf's db-export
 * makes one where no symbol is).
 */
struct export_sym {
	struct export_dso *dso;
	const char *name;
	uint64_t start, end;	/* perf's, in the dso */
	uint64_t addr;		/* where it starts here */
	uint8_t binding;
	uint64_t db_id;
};

struct export_call_path {
	struct export_call_path *parent;
	struct export_sym *sym;	/* NULL: no symbol (ip says where) */
	uint64_t ip;		/* 0 with a symbol, as perf's */
	int in_kernel;
	unsigned depth;
	uint64_t db_id;
};

struct export_comm {
	const char *name;
	uint64_t time;
	int exec;
	struct export_thread *thread;	/* the first thread it was exported with */
	uint64_t db_id;
};

/* An entry of a thread's stack (perf's thread_stack_entry). */
struct export_entry {
	uint64_t ret_addr, time, ref;
	uint64_t branch_count, insn_count, cyc_count;
	uint64_t db_id;
	struct export_call_path *cp;
	uint8_t no_call, trace_end, non_call;
};

/* perf's call_return. */
struct export_call_return {
	struct export_thread *thread;
	struct export_comm *comm;
	struct export_call_path *cp;
	uint64_t call_time, return_time;	/* perf ns */
	uint64_t branch_count, insn_count, cyc_count;
	uint64_t db_id, call_ref, return_ref, parent_db_id;
	uint32_t flags;		/* 1 no call, 2 no return, 4 non call */
};

struct export_thread {
	struct export_machine *machine;
	int pid, tid, cpu;	/* cpu: the idle task's stack is per CPU */
	struct export_thread *main;	/* the process's main thread (itself) */
	struct export_thread *twin;	/* the idle task's stack of another CPU */
	struct export_comm *comm;	/* the stack's (perf flushes on exec) */
	uint64_t db_id;
	/* A guest's vCPU, shown on the host thread's timeline. */
	struct export_thread *host;
	int open;		/* timelines: in the guest now */
	int comm_set;		/* named by a COMM or FORK record (perf's) */
	struct export_entry *stack;
	size_t cnt, sz;
	uint64_t trace_nr, branch_count, insn_count, cyc_count, last_time;
	int retpoline;		/* perf's rstate: 1 possible, 2 detected */
	uint64_t last_insns, weigh_time;	/* folded weights */
	int have_weigh;
	uint64_t track;		/* timelines: its track's id */
	uint64_t tl_time;	/* timelines: its last time (they go forward) */
	int proc_track;		/* perfetto: its process's track is out */
	const char *name;	/* comm for timelines */
};

/* One sample on its way to the formats. */
struct export_sample {
	const struct vmpt_script_sample *s;
	uint64_t db_id, time;	/* perf ns */
	struct export_thread *thread;
	struct export_comm *comm;
	struct export_sym *sym, *to_sym;
	uint64_t evsel_db_id;
	uint64_t call_path_db_id;
};

struct export_format_ops;

struct vmpt_export {
	const struct vmpt_export_opts *o;
	const struct export_format_ops *ops;
	void *fmt;		/* the format's state */
	struct export_map machines, dsos, syms, paths, threads, comms;
	struct export_call_path root;
	uint64_t last_id[11];	/* db ids by kind (enum export_kind) */
	uint64_t evsel_db_id[VMPT_SE_COUNT];
	struct export_thread **thread_list;
	size_t n_threads;
	uint64_t kernel_start;
	char **strings;		/* names it owns */
	size_t n_strings;
	struct vmpt_export_stats stats;
	int failed;		/* the format failed: err holds why */
	char err[512];
};

enum export_kind { EK_EVSEL, EK_MACHINE, EK_THREAD, EK_COMM, EK_DSO, EK_SYMBOL,
		   EK_SAMPLE, EK_CALL_PATH, EK_CALL_RETURN, EK_COMM_THREAD, EK_SWITCH };

/* A format: every callback may be NULL. */
struct export_format_ops {
	int (*begin)(struct vmpt_export *x);
	/* Objects as perf's db-export exports them, first use first. */
	void (*evsel)(struct vmpt_export *x, uint64_t id, const char *name);
	void (*machine)(struct vmpt_export *x, const struct export_machine *m);
	void (*thread)(struct vmpt_export *x, const struct export_thread *t);
	void (*comm)(struct vmpt_export *x, const struct export_comm *c);
	void (*comm_thread)(struct vmpt_export *x, uint64_t id, const struct export_comm *c,
			    const struct export_thread *t);
	void (*dso)(struct vmpt_export *x, const struct export_dso *d);
	void (*symbol)(struct vmpt_export *x, const struct export_sym *s);
	void (*call_path)(struct vmpt_export *x, const struct export_call_path *cp);
	void (*sample)(struct vmpt_export *x, const struct export_sample *es);
	void (*call_return)(struct vmpt_export *x, const struct export_call_return *cr);
	void (*context_switch)(struct vmpt_export *x, uint64_t id, uint64_t machine_id,
			       uint64_t time, int cpu, uint64_t out_thread, uint64_t out_comm,
			       uint64_t in_thread, uint64_t in_comm, int flags);
	/* Timelines: an entry pushed or popped at time (ns), the thread's
	 * weight (folded) before a sample moves its stack.
	 */
	void (*push)(struct vmpt_export *x, struct export_thread *t,
		     const struct export_entry *e, uint64_t time);
	void (*pop)(struct vmpt_export *x, struct export_thread *t,
		    const struct export_entry *e, uint64_t time);
	/* A guest's vCPU starts (open) or stops running in the guest. */
	void (*guest)(struct vmpt_export *x, struct export_thread *g, int open,
		      uint64_t time);
	void (*weigh)(struct vmpt_export *x, struct export_thread *t, uint64_t w);
	/* A decoding error at time (ns) on t's track: an instant event. */
	void (*error)(struct vmpt_export *x, struct export_thread *t, uint64_t time,
		      const char *what);
	int (*end)(struct vmpt_export *x);
	void (*free)(struct vmpt_export *x);
};

extern const struct export_format_ops export_folded_ops, export_chrome_ops,
	export_perfetto_ops, export_sqlite_ops, export_postgresql_ops;

/* vmpt_export_stack.c: a branch sample moves its thread's stack (perf's
 * thread_stack__process); a flush ends every call as "no return".
 */
void export_stack_sample(struct vmpt_export *x, struct export_thread *t,
			 const struct export_sample *es);
void export_stack_flush(struct vmpt_export *x, struct export_thread *t);

/* Does a timeline show entry e of t's stack: not past --max-depth (a
 * guest's calls above its host thread's), a guest's only while it runs?
 */
int export_entry_shown(const struct vmpt_export *x, const struct export_thread *t,
		       const struct export_entry *e);
/* The name a timeline or flame graph shows for an entry's function. */
void export_frame_name(const struct export_call_path *cp, char *buf, size_t size);
/* Record a failure of the format (the first one counts). */
void export_fail(struct vmpt_export *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* vmpt_export_objects.c: perf's db-export objects, made on first use. */
/* A copy of s kept until the export is freed ("" when out of memory). */
const char *export_own_str(struct vmpt_export *x, const char *s);
/* Put v in m (freed, and the export failed, when out of memory). */
int export_keep(struct vmpt_export *x, struct export_map *m, uint64_t a, uint64_t b,
		uint64_t c, void *v);
/* The machine of key (VMPT_MACHINE_HOST, a VMCS or VMPT_MACHINE_GUEST),
 * a guest's of the QEMU process pid; handed to the format once.
 */
struct export_machine *export_machine_of(struct vmpt_export *x, uint64_t key, int pid);
struct export_machine *export_machine_export(struct vmpt_export *x, struct export_machine *m);
struct export_comm *export_comm_new(struct vmpt_export *x, const char *name, uint64_t time,
				    int exec);
/* The idle task's thread a per-CPU twin stands for. */
struct export_thread *export_ident(struct export_thread *t);
struct export_thread *export_thread_of(struct vmpt_export *x, struct export_machine *m,
				       int pid, int tid, int cpu);
/* The comm a thread has now (name: the session's, when no COMM was seen). */
struct export_comm *export_current_comm(struct vmpt_export *x, struct export_thread *t,
					const char *name);
/* perf's db_export__threads: the main thread and its exec comm first. */
struct export_comm *export_threads_export(struct vmpt_export *x, struct export_thread *t,
					  const char *name);
/* The symbol at addr in sec as perf's db-export finds it; *dso its dso. */
struct export_sym *export_sym_find(struct vmpt_export *x, const struct vmpt_section *sec,
				   uint64_t addr, struct export_machine *m, int pid,
				   struct export_dso **dso);
/* perf's "unknown" symbol where code has none. */
struct export_sym *export_sym_unknown(struct vmpt_export *x, struct export_dso *d,
				      const struct vmpt_section *sec, uint64_t addr);
void export_sym_export(struct vmpt_export *x, struct export_sym *s);

#endif
