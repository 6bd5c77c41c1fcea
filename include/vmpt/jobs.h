/* SPDX-License-Identifier: MIT */
/* Decoding one trace with several threads: the trace is cut at PSBs
 * into pieces, decoded in parallel, and handed to the consumer in trace
 * order, the same as one thread would.
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

/* Decode base->begin..end for the consumer, to f.  task: who ran it
 * (unknown: -1s); host_space: vmpt_flow_set_host_space's (0: none);
 * ref: the buffer (offsets, cpu).  jobs > 1 decodes pieces in parallel
 * (unless the consumer is serial).  0 or a negative vmpt_err
 * (-VMPT_ERR_IO: writing the output failed, errno set).
 */
int vmpt_jobs_decode(const struct vmpt_flow_config *base,
		     const struct vmpt_consumer_ops *ops, const struct vmpt_task *task,
		     uint64_t host_space, const struct vmpt_buffer_ref *ref, int jobs,
		     FILE *f);

#ifdef __cplusplus
}
#endif

#endif
