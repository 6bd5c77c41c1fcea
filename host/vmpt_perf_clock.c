/* SPDX-License-Identifier: MIT */
/* perf's sample clock from user space (include/vmpt/perf_clock.h).  With
 * cap_user_time_zero the TSC converts to it as perf's tsc.c does.  Without
 * (kvmclock as sched_clock, an unstable TSC) nothing maps to it, so the
 * kernel is asked: a software page-fault event samples this thread with
 * PERF_SAMPLE_TIME, and touching a page just dropped makes one sample.
 */
#include "vmpt/perf_clock.h"
#include "vmpt/error.h"

#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

int vmpt_perf_clock_open(struct vmpt_perf_clock *c, const struct vmpt_perf_time_conv *tc)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_PAGE_FAULTS_MIN,
		.sample_period = 1,
		.sample_type = PERF_SAMPLE_TIME,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};
	void *probe;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->tc = *tc;
	if (tc->cap_user_time_zero)
		return 0;
	c->page = (size_t)sysconf(_SC_PAGESIZE);
	c->fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (c->fd < 0)
		return -VMPT_ERR_IO;
	c->ring_len = 2 * c->page;
	c->ring = mmap(NULL, c->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
	probe = mmap(NULL, c->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->ring == MAP_FAILED || probe == MAP_FAILED) {
		if (probe != MAP_FAILED)
			munmap(probe, c->page);
		if (c->ring == MAP_FAILED)
			c->ring = NULL;
		vmpt_perf_clock_close(c);
		return -VMPT_ERR_IO;
	}
	c->probe = probe;
	return 0;
}

/* The time of the last sample in the ring (0 when none); empties it. */
static uint64_t last_sample_time(struct vmpt_perf_clock *c)
{
	struct perf_event_mmap_page *pc = c->ring;
	const uint8_t *data = (const uint8_t *)c->ring + c->page;
	uint64_t head = __atomic_load_n(&pc->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pc->data_tail, time = 0;

	while (tail + sizeof(struct perf_event_header) <= head) {
		struct perf_event_header h;
		uint64_t off = tail & (c->page - 1);

		/* records are 8-byte multiples in a power-of-2 ring: a header
		 * never wraps, and a sample is 16 bytes */
		memcpy(&h, data + off, sizeof(h));
		if (h.size < sizeof(h))
			break;
		if (h.type == PERF_RECORD_SAMPLE && h.size == 16 && off + 16 <= c->page)
			memcpy(&time, data + off + 8, 8);
		tail += h.size;
	}
	__atomic_store_n(&pc->data_tail, head, __ATOMIC_RELEASE);
	return time;
}

int vmpt_perf_clock_now(struct vmpt_perf_clock *c, uint64_t *ns)
{
	uint64_t t;

	if (c->tc.cap_user_time_zero) {
		*ns = vmpt_perf_tsc_to_time(&c->tc, __rdtsc());
		return 0;
	}
	if (c->fd < 0)
		return -VMPT_ERR_IO;
	last_sample_time(c);	/* older faults of this thread */
	madvise((void *)c->probe, c->page, MADV_DONTNEED);
	c->probe[0] = 1;
	t = last_sample_time(c);
	if (!t)
		return -VMPT_ERR_IO;
	*ns = t;
	return 0;
}

void vmpt_perf_clock_close(struct vmpt_perf_clock *c)
{
	if (c->probe)
		munmap((void *)c->probe, c->page);
	if (c->ring)
		munmap(c->ring, c->ring_len);
	if (c->fd >= 0)
		close(c->fd);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}
