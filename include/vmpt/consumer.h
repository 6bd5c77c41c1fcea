/* SPDX-License-Identifier: MIT */
/* What decoding hands on: the flow items of each trace queue, who ran
 * them, and the recording's sideband in time order, to a consumer that
 * formats them (perf's struct perf_tool).  session/ drives decoding and
 * calls these; output/ implements them (vmpt script's lines), so the
 * session knows no formatter.
 */
#ifndef VMPT_CONSUMER_H
#define VMPT_CONSUMER_H

#include "vmpt/flow.h"
#include "vmpt/perf_data.h"

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Who ran the code being decoded (sideband), as perf shows it: -1 when
 * unknown; comm NULL prints perf's ":TID".
 */
struct vmpt_task {
	int cpu, pid, tid;
	const char *comm;
	uint64_t space;	/* host address space of pid (vmpt_pid_space), 0: any */
	/* The guest task on the vCPU this host thread runs (a VM recording
	 * with the guest's sideband, vmpt/guest_tasks.h): machine_pid > 0
	 * then, the QEMU process, as perf's sample machine_pid.
	 */
	int machine_pid, vcpu;
	int guest_pid, guest_tid;
	const char *guest_comm;
	uint64_t guest_space;	/* vmpt_guest_space(), 0: any */
};

/* The mapping (MMAP) an address is in, for naming code whose binary is
 * missing here (perf names it by the mapping's path).
 */
struct vmpt_map_ref {
	const char *name;
	uint64_t start;		/* the address the mapping starts at */
	uint64_t pgoff;		/* the file offset there */
	const char *build_id;	/* hex, or NULL when not recorded */
	/* Memory of no file (anonymous, a stack, a heap, SysV shared memory):
	 * perf's addresses in it are as they are, not file offsets.
	 */
	int no_file;
};
/* The mapping of addr in process pid's address space `space` (its
 * vmpt_task.space; 0: pid's last mapping there, whatever exec), its
 * parents' before it forked, the kernel's: 0, or -VMPT_ERR_NOT_FOUND.
 */
typedef int (*vmpt_map_fn)(void *ctx, int pid, uint64_t space, uint64_t addr,
			   struct vmpt_map_ref *map);
/* The kernel symbol at addr (its name, its address) where no code in the
 * image names it: 0, or -VMPT_ERR_NOT_FOUND.
 */
typedef int (*vmpt_ksym_fn)(void *ctx, uint64_t addr, const char **name, uint64_t *start);
/* The binaries perf fails to read as process ev->mmap.pid maps its vdso
 * (ev, a "[vdso]" MMAP): perf asks its mappings for their ELF class in
 * address order until a binary answers (machine__thread_dso_type), and a
 * binary it cannot open has its data status ERROR from then on.  Up to
 * max names of binaries missing here; their count.
 */
typedef size_t (*vmpt_vdso_fn)(void *ctx, const struct vmpt_perf_event *ev,
			       const char **names, size_t max);

/* A trace buffer a stream goes on with. */
struct vmpt_buffer_ref {
	uint64_t file_offset;	/* of its first byte in its file (0: a raw trace) */
	/* Of its first byte in its queue's trace: the sizes of the queue's
	 * buffers before it (perf's PSB offsets count so).
	 */
	uint64_t queue_offset;
	/* Of its first byte in the decoder's stream (items' offsets count
	 * from the stream's first byte): 0 but in a run of buffers.
	 */
	uint64_t stream_offset;
	int cpu;		/* -1: not per-cpu */
	/* 1: it continues the stream's previous buffer (a queue's buffers,
	 * one after another, decoded as one stream): nothing is restarted.
	 */
	int consecutive;
};

struct vmpt_consumer;	/* one output stream: a trace queue's, or a worker's */

/* vmpt_consumer_ops.fold */
typedef size_t (*vmpt_fold_fn)(const struct vmpt_consumer *c, struct vmpt_flow_item *sum,
			       const struct vmpt_flow_item *it, size_t n);

struct vmpt_consumer_ops {
	/* A new stream writing to f (NULL: set later).  NULL: no memory. */
	struct vmpt_consumer *(*open)(void *ctx, FILE *f);
	void (*close)(struct vmpt_consumer *c);
	void (*set_file)(struct vmpt_consumer *c, FILE *f);
	void (*set_task)(struct vmpt_consumer *c, const struct vmpt_task *task);
	void (*begin_buffer)(struct vmpt_consumer *c, const struct vmpt_buffer_ref *b);
	void (*item)(struct vmpt_consumer *c, const struct vmpt_flow_item *it);
	/* n items in a row, as item for each (NULL: item is called). */
	void (*items)(struct vmpt_consumer *c, const struct vmpt_flow_item *it, size_t n);
	/* On a decoding thread, ahead of the stream: how many of the n
	 * items at it, which come after *sum, are blocks the stream prints
	 * nothing for, folded into *sum.  *sum is the block before them
	 * (nothing folded yet) or a VMPT_FLOW_FOLDED item, which item and
	 * items then take in the folded blocks' place.  Reads only what the
	 * stream does not change after open.  NULL: never.
	 */
	vmpt_fold_fn fold;
	/* Will item it, the next to come, set the stream's time from an
	 * estimate (perf's est_timestamp on a branch into user space, by
	 * which perf orders its queues)?  1 and that time, else 0.  NULL:
	 * never.
	 */
	int (*estimate)(struct vmpt_consumer *c, const struct vmpt_flow_item *it,
			uint64_t *time);
	/* estimate is asked only of a block branching from this address or
	 * above to below it, or of tracing enabled below it (0: never).
	 */
	uint64_t estimate_below;
	/* Items the stream held back (time periods) go out, given the time
	 * of the item after them (0: the end of the trace).
	 */
	void (*drain)(struct vmpt_consumer *c, uint64_t next_time);
	/* Write out what is buffered.  0, or -VMPT_ERR_IO (errno set) when
	 * the output failed: decoding should stop.
	 */
	int (*flush)(struct vmpt_consumer *c);
	/* Bytes the stream produced so far, buffered ones included. */
	uint64_t (*produced)(const struct vmpt_consumer *c);
	/* A sideband record, in time order among the items, on stream c
	 * (the one printing last, or any); task: the record's thread (comm)
	 * and sample id (pid, tid, cpu).
	 */
	void (*sideband)(struct vmpt_consumer *c, const struct vmpt_perf_event *ev,
			 const struct vmpt_task *task);
	/* Is the item's sample time (perf time, ns) wanted (--time)?  NULL:
	 * every time is.  Lets the session skip whole buffers.
	 */
	int (*time_wanted)(void *ctx, uint64_t from_ns, uint64_t to_ns);
	/* The consumer uses the items' cycle counts (IPC), which count on
	 * from the trace's start: the trace takes one decoder (vmpt/jobs.h).
	 */
	int serial;
	void *ctx;
};

/* n items to stream c: at once where ops take them so. */
static inline void vmpt_consumer_items(const struct vmpt_consumer_ops *ops,
				       struct vmpt_consumer *c,
				       const struct vmpt_flow_item *it, size_t n)
{
	if (ops->items) {
		if (n)
			ops->items(c, it, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		ops->item(c, &it[i]);
}

/* How far decoding is: trace bytes done of total, now and then (about
 * every 16k items).  fn NULL: not wanted.
 */
struct vmpt_progress {
	void (*fn)(void *ctx, uint64_t done, uint64_t total);
	void *ctx;
};

#ifdef __cplusplus
}
#endif

#endif
