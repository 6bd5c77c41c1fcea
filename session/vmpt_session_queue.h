/* SPDX-License-Identifier: MIT */
/* The queues of a recording as vmpt_session_decode.c decodes them and
 * vmpt_session_merge.c merges them.
 */
#ifndef VMPT_SESSION_QUEUE_H
#define VMPT_SESSION_QUEUE_H

#include "vmpt/consumer.h"
#include "vmpt/flow.h"
#include "vmpt_session_int.h"

#include <stdint.h>
#include <stdio.h>

/* One queue of buffers (a CPU, or a thread).  Its consecutive buffers
 * (all of them but in snapshot mode, where a snapshot goes on from the one
 * before only when perf finds where that one ends in it) are a run,
 * decoded as one stream by one decoder, as perf does; item is the next
 * one to hand on.
 */
struct queue {
	size_t *bufs, n, next;
	/* Snapshot mode: the bytes of each buffer the one before has, and
	 * whether it goes on from it (NULL: none, buffers continue).
	 */
	size_t *skip;
	uint8_t *cont;
	uint64_t bytes;		/* in the buffers before the run */
	/* The run: bufs[run..run + n_parts - 1], their parts and their TSC
	 * patches at stream offsets; cur: the buffer items are in, and the
	 * stream offset of the one after it.
	 */
	size_t run, cur;
	struct vmpt_pkt_part *parts;
	size_t n_parts;
	uint64_t run_size, next_start;
	struct vmpt_tsc_patch *patch_v;
	struct vmpt_tsc_patches patches;
	const struct vmpt_session_buffer *buf;
	/* The run's first buffer: its cpu and tid (the queue's), for the
	 * threads of q->jobs, which must not read buf as it moves on.
	 */
	const struct vmpt_session_buffer *run_buf;
	const struct vmpt_session *s;
	/* The run's decoder, or with -j its parallel decoding. */
	struct vmpt_flow *dec;
	struct vmpt_jobs *jobs;
	int dec_done;		/* at the run's end */
	struct vmpt_consumer *out;
	/* The next item (NULL: none), and the rest of its batch. */
	const struct vmpt_flow_item *item, *batch;
	size_t left;
	struct vmpt_task task;
	uint64_t task_from, task_until;	/* perf time the task holds for */
	uint64_t task_tsc;		/* the item time it was looked up for */
	/* The time the instructions of its next block print at before its
	 * last (the last block's or trace start's: perf walked them before
	 * the packets that decide the branch), 0: none yet; and the last
	 * instruction of a block handed on in two.
	 */
	uint64_t lead;
	uint64_t ts;		/* perf's queue time: its samples' so far */
	uint64_t cbr;		/* the last CBR handed on */
	int off;		/* tracing is off (the last was a trace end) */
	struct vmpt_flow_item tail;
	uint64_t seq;		/* when it went back on perf's heap */
	/* The stream's estimate for item (estimated()), known or not. */
	int est_known, est_yes;
	uint64_t est_t;
};

struct decode {
	struct vmpt_session *s;
	const struct vmpt_consumer_ops *ops;
	int jobs;
	uint64_t items, total;	/* handed on; trace bytes of all buffers */
	struct queue *qs;
	size_t nq;
	int snapshot;		/* buffers overlap: none continues another */
	size_t *sb;		/* sideband records in time order */
	size_t n_sb, next_sb;
	/* The TSC from which the next record is due (0: at once): items
	 * before it pass without a look at the sideband.
	 */
	uint64_t sb_due;
	uint64_t seq;		/* the queues' last seq */
	uint64_t est_below;	/* ops->estimate_below with queues to order */
};

/* The item's perf time for sideband lookups. */

/* vmpt_session_decode.c */
/* Make q->item the queue's next item, from the decoder's batch; 0, or
 * -VMPT_ERR_EOS when done.
 */
int session_queue_fill(struct decode *d, struct queue *q);
/* The sideband records before time tsc (all: UINT64_MAX) on stream c. */
void session_sideband_until(struct decode *d, struct vmpt_consumer *c, uint64_t tsc);
int session_progress_on(const struct decode *d);
void session_report_progress(struct decode *d);

/* vmpt_session_merge.c */
/* All queues' items and the sideband, merged, to their streams. */
int session_merge(struct decode *d, FILE *f);
/* q->item is new, or its stream's state is. */
void session_merge_item_new(const struct decode *d, struct queue *q);

#endif
