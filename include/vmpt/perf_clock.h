/* SPDX-License-Identifier: MIT */
#ifndef VMPT_PERF_CLOCK_H
#define VMPT_PERF_CLOCK_H

#include "vmpt/perf_data.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "Now" on the clock of perf's records (perf_clock: the kernel's
 * local_clock), read from user space: the TSC through the recording's
 * TIME_CONV when its page has cap_user_time_zero, else the time of a
 * sample the kernel takes on request (a page fault of this thread).
 * Not thread-safe: one thread reads it.
 */
struct vmpt_perf_clock {
	struct vmpt_perf_time_conv tc;
	int fd;				/* the page-fault sampler, or -1 */
	void *ring;			/* its mmap: control page + 1 data page */
	size_t ring_len;
	volatile uint8_t *probe;	/* the page faulted on */
	size_t page;
};

/* 0 or a negative vmpt_err (the sampler cannot be opened). */
int vmpt_perf_clock_open(struct vmpt_perf_clock *c, const struct vmpt_perf_time_conv *tc);
/* 0 with *ns set, or -VMPT_ERR_IO. */
int vmpt_perf_clock_now(struct vmpt_perf_clock *c, uint64_t *ns);
void vmpt_perf_clock_close(struct vmpt_perf_clock *c);

#ifdef __cplusplus
}
#endif

#endif
