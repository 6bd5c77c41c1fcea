/* SPDX-License-Identifier: MIT */
/* A perf.data recording as the decoder needs it: the Intel PT buffers
 * (AUXTRACE), the code image built from the sideband (MMAP/MMAP2 per
 * process, kcore_dir for the kernel, a VM recording's guest/), the decoder
 * settings (AUXTRACE_INFO, the intel_pt event's config), the TSC -> perf
 * time conversion, and who ran when (COMM, FORK, ITRACE_START, context
 * switches), so every decoded item gets its pid/tid/comm as perf's do.
 */
#ifndef VMPT_SESSION_H
#define VMPT_SESSION_H

#include "vmpt/consumer.h"
#include "vmpt/flow.h"
#include "vmpt/image.h"
#include "vmpt/perf_data.h"
#include "vmpt/task_recs.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One AUXTRACE buffer. */
struct vmpt_session_buffer {
	const uint8_t *data;
	uint64_t size;
	int cpu, tid;		/* -1: per-thread / per-cpu recording */
	uint32_t idx;		/* perf's mmap index: buffers of one queue */
	uint64_t offset;	/* of the AUXTRACE record in its file */
	uint64_t data_offset;	/* of the trace in its file */
	/* Its guest TSC packets as host TSCs (a VM recording, correlated
	 * when opened); n 0: none.
	 */
	struct vmpt_tsc_patches tsc_patches;
};

/* An executable mapping (MMAP/MMAP2) as recorded, and where its code
 * came from.
 */
struct vmpt_session_map {
	int pid;		/* -1: the kernel's, every process's */
	uint64_t start, len, pgoff;
	const char *name;	/* as recorded (in the mapped file) */
	/* perf's name of anonymous code (a JIT's, //anon): "/tmp/perf-PID.map",
	 * where perf looks for its symbols; "" for a file's.
	 */
	char anon_name[32];
	char build_id[41];	/* hex; "" when not recorded */
	/* Not decoded: a file is there, of this other build-id ("none":
	 * without one); "": found, or nothing there.
	 */
	char changed_id[41];
	uint64_t seq;		/* record order: the last mapping wins */
	uint64_t time;		/* perf time of the record (0: none) */
	uint64_t offset;	/* of the record in its file */
	/* The address space it is code of: vmpt_pid_space(pid, the
	 * generations pid started before it); 0: the kernel's.
	 */
	uint64_t space;
	int found;		/* its binary is here: its code is in the image */
};

/* Where a process's next generation of code starts: an exec (a COMM
 * record with PERF_RECORD_MISC_COMM_EXEC), or a mapping of code over code
 * it mapped since its last exec (vmpt_session_procs.c).
 */
struct vmpt_session_gen {
	uint64_t time, offset;
};

/* A process's fork (from parent) or the start of a generation of its
 * code, as read.
 */
struct vmpt_session_start {
	int pid, parent;
	int gen;
	uint64_t time, offset;
};

/* Mappings by pid, address space, address and file order, for lookups. */
struct vmpt_session_map_index {
	size_t *at;
	size_t n;
	uint64_t max_len;	/* bounds the overlap scan */
};

struct vmpt_session_proc {
	int pid, parent;	/* parent: from FORK, -1 unknown */
	uint64_t forked_at;	/* perf time of that FORK */
	/* Its generations in time order: after the i'th start, its code
	 * is address space vmpt_pid_space(pid, i).
	 */
	struct vmpt_session_gen *gens;
	size_t n_gens;
	/* Code mapped before its first generation: address space
	 * vmpt_pid_space(pid, 0) from the first such MMAP's perf time on.
	 */
	int has_maps;
	uint64_t maps_from;
};

/* How to open a recording. */
struct vmpt_session_opts {
	/* perf's --symfs: look for the recorded binaries under this
	 * directory (after the recording's own sysroot, before perf's
	 * build-id cache and the paths themselves).
	 */
	const char *symfs;
	FILE *warn;	/* warnings (a binary's build-id differs), or NULL */
	/* A VM recording with the guest's sideband (guest/perf.data): 0
	 * follows the guest's tasks (their names, their user code from
	 * guest/root), 1 reads guest code as any guest process's.
	 */
	int no_guest_tasks;
	struct vmpt_progress progress;	/* of vmpt_session_decode */
};
struct vmpt_corr;
struct vmpt_guest_tasks;

struct vmpt_session {
	struct vmpt_session_opts opts;
	struct vmpt_perf_data pd;
	struct vmpt_image *image;
	int own_image;			/* vmpt_session_close frees it */
	struct vmpt_flow_config cfg;	/* settings; begin/end per buffer */
	int have_tc;
	struct vmpt_perf_time_conv tc;
	struct vmpt_session_buffer *bufs;
	size_t n_bufs;
	struct vmpt_task_rec *comms;	/* sorted by tid, then time */
	size_t n_comms;
	struct vmpt_task_rec *switches;	/* sorted by cpu, then time */
	size_t n_switches;
	struct vmpt_task_rec *forks;	/* sorted by time */
	size_t n_forks;
	/* The processes, sorted by pid, made once the records are read
	 * from their forks and execs (starts) and mappings; gens holds
	 * their generations, by pid and time.
	 */
	struct vmpt_session_proc *procs;
	size_t n_procs;
	struct vmpt_session_start *starts;
	size_t n_starts;
	struct vmpt_session_gen *gens;
	struct vmpt_session_map *maps;		/* executable, file order */
	size_t n_maps;
	size_t *maps_by_pid;	/* maps' indices by pid, address, file order (made on use) */
	/* Mappings of no code (a stack, a heap, data: perf record -d),
	 * file order: perf's maps too, read by its unwinder as zeros.
	 */
	struct vmpt_session_map *data_maps;
	size_t n_data_maps;
	struct vmpt_session_map_index map_index, data_index;
	char own_vdso[4096];	/* the copy of this machine's vdso, once made */
	/* The kernel's symbols where no kernel code is given
	 * (vmpt_session_kernel_sym): the kallsyms to read
	 * ("": none), read on first use; the recording's _text; delta:
	 * theirs to the recording's addresses (another boot's KASLR).
	 */
	char ksym_path[4200];
	uint64_t ksym_text;
	pthread_mutex_t ksym_lock;	/* with ksym_path set */
	int ksym_loaded;
	const struct vmpt_symbol *ksyms;
	size_t n_ksyms;
	uint64_t ksym_delta;
	/* Records consumers may show, in file order: COMM, FORK, EXIT,
	 * MMAP, MMAP2, SWITCH, SWITCH_CPU_WIDE, LOST, AUX and the samples
	 * of events other than Intel PT's.
	 */
	struct vmpt_perf_event *sb;
	size_t n_sb;
	size_t n_samples;	/* SAMPLE records among them: other events' */
	size_t n_records;	/* in the file, of every type (perf's event count) */
	/* The Intel PT event and its AUXTRACE_INFO (NULL: none). */
	const struct perf_event_attr *intel_pt;
	struct vmpt_perf_intel_pt_info info;
	int have_info;
	/* A VM recording's correlation (guest TSC -> host TSC), or NULL. */
	struct vmpt_corr *corr;
	/* The guest's tasks on the host's time line, or NULL. */
	struct vmpt_guest_tasks *guest;
	char errmsg[600];	/* after a failure: what, naming the file */
};

/* Read a perf.data (file or directory form): image, settings, buffers and
 * sideband; a VM recording is correlated (correlate.h), so that guest
 * times come out in host time.  img: code the caller added already (e.g. a vmlinux), which
 * the sideband's code is added to and which the session then uses (not
 * frees); NULL: a new image.  Missing binaries are no error (their code
 * shows up as decoding errors at its IPs).  0 or a negative vmpt_err with
 * errmsg set; call vmpt_session_close in both cases.
 */
int vmpt_session_open(struct vmpt_session *s, const char *path,
		      struct vmpt_image *img);
/* The same with options (NULL: none). */
int vmpt_session_open_opts(struct vmpt_session *s, const char *path,
			   struct vmpt_image *img, const struct vmpt_session_opts *opts);

/* The recording's own sysroot, where vmpt archive copies the binaries it
 * maps: DIR/root for perf's directory form, FILE.root next to a file.
 * 0, or -VMPT_ERR_INVAL when it does not fit.
 */
int vmpt_session_sysroot(const char *recording, char *buf, size_t size);
void vmpt_session_close(struct vmpt_session *s);

/* perf script --guest-code: the guest runs the code of the host process
 * that runs it, at the same addresses (KVM selftests: the test program is
 * the hypervisor and its own functions the guest's code).  Adds every
 * process's executable mappings as code of the guest machine too.  0 or
 * a negative vmpt_err (errmsg set).
 */
int vmpt_session_add_guest_code(struct vmpt_session *s);

/* Who ran buffer b's code at perf time `time`: cpu, pid, tid, comm and the
 * address space of the process, as perf script shows them.
 */
void vmpt_session_task(const struct vmpt_session *s,
		       const struct vmpt_session_buffer *b, uint64_t time,
		       struct vmpt_task *task);

/* The name of thread tid at perf time `time` (NULL: none known). */
const char *vmpt_session_comm(const struct vmpt_session *s, int tid, uint64_t time);

/* vmpt_map_fn over the recorded mappings (ctx: the session). */
int vmpt_session_map_of(void *ctx, int pid, uint64_t space, uint64_t addr,
			struct vmpt_map_ref *map);
/* vmpt_ksym_fn (ctx: the session): the symbol of addr in the kernel's
 * mapping when only this machine's kallsyms names it (no vmlinux or kcore
 * given): as perf without them, /proc/kallsyms for a recording of the
 * running kernel (or of no kernel build-id: the pipe form), else the
 * build-id cache's ~/.debug/[kernel.kallsyms]/ID/kallsyms.
 */
int vmpt_session_kernel_sym(void *ctx, uint64_t addr, const char **name, uint64_t *start);
/* vmpt_vdso_fn over the recorded mappings (ctx: the session). */
size_t vmpt_session_vdso_unread(void *ctx, const struct vmpt_perf_event *ev,
				const char **names, size_t max);

/* The host address space (vmpt_pid_space) process pid's code is in at
 * perf time `time`: the one of its last generation before (an exec, or
 * code mapped over its own), else its own once it mapped code, else its
 * parent's at the fork (a fork runs the parent's code until it execs).
 * 0: unknown.
 */
uint64_t vmpt_session_space(const struct vmpt_session *s, int pid, uint64_t time);

/* Decode every buffer and hand the items to the consumer as perf script
 * sees them: the items of all queues (CPUs, threads) merged in time order,
 * each with its task, and the sideband records among them.  jobs > 1
 * decodes in pieces in parallel with the same result (vmpt/jobs.h).
 * 0 or a negative vmpt_err (errmsg set).
 */
int vmpt_session_decode(struct vmpt_session *s, const struct vmpt_consumer_ops *ops,
			int jobs, FILE *f);

#ifdef __cplusplus
}
#endif

#endif
