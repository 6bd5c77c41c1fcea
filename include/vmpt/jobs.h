/* SPDX-License-Identifier: MIT */
/* Decoding one trace with several threads: the trace is cut at PSBs into
 * pieces, each decoded apart, and the pieces' items are handed on in trace
 * order with their seams stitched, so that they are the items one decoder
 * gives, field for field (docs/decoding.md, "Parallel decoding").
 */
#ifndef VMPT_JOBS_H
#define VMPT_JOBS_H

#include "vmpt/consumer.h"
#include "vmpt/flow.h"

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which host address space runs at a TSC (vmpt_flow_set_host_space's
 * argument; sideband context switches say it), and in *guest_space the
 * guest's (vmpt_flow_set_guest_space's, from the guest's own sideband; 0
 * when none).  Called from the decoding threads: it must only read.
 */
typedef uint64_t (*vmpt_space_fn)(void *ctx, uint64_t tsc, uint64_t *guest_space);

struct vmpt_jobs;

/* The items of cfg->begin..end, decoded ahead by jobs threads.  space_at
 * (NULL: none) is asked at each new item time, as the session does for
 * one decoder.  fold (NULL: none) folds, on those threads, the blocks
 * stream c prints nothing for (vmpt_consumer_ops.fold).  NULL: no memory.
 */
struct vmpt_jobs *vmpt_jobs_new(const struct vmpt_flow_config *cfg, int jobs,
				vmpt_space_fn space_at, void *ctx, vmpt_fold_fn fold,
				const struct vmpt_consumer *c);
/* As vmpt_flow_next_items: *items holds *n >= 1 items, valid until the
 * next call.  0, or -VMPT_ERR_EOS at the end, or -VMPT_ERR_NOMEM.
 */
int vmpt_jobs_next_items(struct vmpt_jobs *j, const struct vmpt_flow_item **items,
			 size_t *n);
void vmpt_jobs_free(struct vmpt_jobs *j);

/* Whether parallel decoding pays for this trace: enough bytes and PSBs. */
int vmpt_jobs_worth(const struct vmpt_flow_config *cfg, int jobs);

/* Decode cfg->begin..end (a raw trace) for one consumer stream writing
 * to f: the buffer ref, every item, then drain and flush; jobs threads
 * when it is worth it and the consumer is not serial.  task: who ran it
 * (unknown: -1s).  0 or a negative vmpt_err (-VMPT_ERR_IO: writing the
 * output failed, errno set).
 */
int vmpt_jobs_decode(const struct vmpt_flow_config *cfg,
		     const struct vmpt_consumer_ops *ops, const struct vmpt_task *task,
		     const struct vmpt_buffer_ref *ref, int jobs, FILE *f,
		     const struct vmpt_progress *progress);

#ifdef __cplusplus
}
#endif

#endif
