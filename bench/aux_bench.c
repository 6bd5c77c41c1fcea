/* SPDX-License-Identifier: MIT */
/* The recorder's AUX consumer under load: a producer thread plays the
 * hardware and the kernel, writing an Intel PT stream into a simulated AUX
 * area (a power of two, aux_head/aux_tail as the kernel keeps them) at a
 * set rate; the consumer is vmpt record's loop: wake at the watermark (or
 * after 50 ms, as its poll does), vmpt_aux_read into the perf.data writer.
 * Bytes that find the area full are lost (the kernel's TRUNCATED).  For
 * each output file (tmpfs, a real disk) the highest rate with no loss is
 * found by bisection, next to what the machine can do at all: memcpy and
 * plain write() bandwidth into the same file.
 *
 * usage: aux-bench [--area BYTES] [--mb N] OUTFILE...
 */
#include "vmpt/aux.h"
#include "vmpt/perf_data.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 4096		/* what the producer writes at a time */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct sim {
	struct perf_event_mmap_page pc;
	uint8_t *area;
	uint64_t size, total;	/* area size; bytes to produce */
	double rate;		/* bytes per second */
	uint64_t lost;
	atomic_int done;
	pthread_mutex_t mu;
	pthread_cond_t wake;	/* the watermark: half the area, as perf's default */
};

static void *producer(void *arg)
{
	struct sim *s = arg;
	uint64_t made = 0, head = 0;
	double t0 = now();
	uint8_t chunk[CHUNK];

	for (size_t i = 0; i < CHUNK; i++)
		chunk[i] = (uint8_t)(i * 7 + 1);
	while (made < s->total) {
		/* Pace: the stream is due at made / rate. */
		double due = t0 + (double)made / s->rate, wait = due - now();

		/* Sleep while far from due, so the producer leaves the
		 * consumer its core (on hardware the trace costs no CPU). */
		if (wait > 200e-6) {
			struct timespec ts = { 0, (long)((wait - 100e-6) * 1e9) };

			nanosleep(&ts, NULL);
		}
		while (now() < due)
			;
		uint64_t tail = __atomic_load_n(&s->pc.aux_tail, __ATOMIC_ACQUIRE);

		if (head + CHUNK - tail > s->size) {
			s->lost += CHUNK;	/* full: the hardware stops */
		} else {
			memcpy(s->area + (head & (s->size - 1)), chunk, CHUNK);
			head += CHUNK;
			__atomic_store_n(&s->pc.aux_head, head, __ATOMIC_RELEASE);
			if (head - tail >= s->size / 2) {
				pthread_mutex_lock(&s->mu);
				pthread_cond_signal(&s->wake);
				pthread_mutex_unlock(&s->mu);
			}
		}
		made += CHUNK;
	}
	atomic_store(&s->done, 1);
	pthread_mutex_lock(&s->mu);
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static int sink(void *ctx, uint64_t offset, const void *a, size_t alen,
		const void *b, size_t blen)
{
	struct iovec iov[2] = { { (void *)a, alen }, { (void *)b, blen } };

	return vmpt_perf_write_auxtrace_iov(ctx, iov, blen ? 2 : 1, offset, 0, 0, 1, 0);
}

/* One run at rate MB/s; returns the bytes lost, or -1 on a write error. */
static int64_t run(const char *path, uint64_t area, uint64_t slice, uint64_t total,
		   double rate)
{
	struct sim s = { .size = area, .total = total, .rate = rate };
	struct vmpt_aux_area a = { 0 };
	struct vmpt_perf_writer *w;
	struct perf_event_attr attr = { .type = 10, .size = sizeof(attr) };
	uint64_t id = 1;
	pthread_t th;
	int err = 0;

	s.area = aligned_alloc(4096, area);
	if (!s.area || vmpt_perf_writer_open(&w, path, NULL) < 0 ||
	    vmpt_perf_writer_add_attr(w, &attr, "intel_pt//", &id, 1) < 0)
		return -1;
	pthread_mutex_init(&s.mu, NULL);
	pthread_cond_init(&s.wake, NULL);
	a.pc = &s.pc;
	a.base = s.area;
	a.size = area;
	a.slice = slice;
	pthread_create(&th, NULL, producer, &s);
	for (;;) {
		int done = atomic_load(&s.done);

		if (vmpt_aux_read(&a, sink, w) < 0)
			err = -1;
		if (done)
			break;
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50000000;
		if (ts.tv_nsec >= 1000000000)
			ts.tv_sec++, ts.tv_nsec -= 1000000000;
		pthread_mutex_lock(&s.mu);
		if (!atomic_load(&s.done) &&
		    __atomic_load_n(&s.pc.aux_head, __ATOMIC_ACQUIRE) - s.pc.aux_tail < area / 2)
			pthread_cond_timedwait(&s.wake, &s.mu, &ts);
		pthread_mutex_unlock(&s.mu);
	}
	pthread_join(th, NULL);
	if (vmpt_perf_writer_close(w) < 0)
		err = -1;
	free(s.area);
	return err ? -1 : (int64_t)s.lost;
}

/* MB/s of memcpy, and of write() in 64 KiB pieces into path. */
static double memcpy_rate(uint64_t total)
{
	uint8_t *a = malloc(1 << 20), *b = malloc(1 << 20);
	double t = now();

	memset(a, 1, 1 << 20);
	for (uint64_t n = 0; n < total; n += 1 << 20) {
		memcpy(b, a, 1 << 20);
		__asm__ volatile("" ::"r"(b) : "memory");	/* keep the copy */
	}
	t = now() - t;
	free(a);
	free(b);
	return (double)total / t / 1e6;
}

static double write_rate(const char *path, uint64_t total)
{
	static uint8_t buf[65536];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	double t = now();

	if (fd < 0)
		return 0;
	for (uint64_t n = 0; n < total; n += sizeof(buf))
		if (write(fd, buf, sizeof(buf)) != sizeof(buf))
			break;
	fsync(fd);
	t = now() - t;
	close(fd);
	return (double)total / t / 1e6;
}

/* The highest loss-free rate in MB/s, to 2% of the limit; -1: a write
 * error. */
static double bisect(const char *path, uint64_t area, uint64_t slice, uint64_t total,
		     double limit)
{
	double lo = 0, hi = limit * 1.5;

	while (hi - lo > limit * 0.02) {
		double mid = (lo + hi) / 2;
		int64_t lost = run(path, area, slice, total, mid * 1e6);

		if (lost < 0) {
			fprintf(stderr, "aux-bench: %s: write error\n", path);
			return -1;
		}
		if (lost)
			hi = mid;
		else
			lo = mid;
	}
	return lo;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "area", required_argument, NULL, 'a' },
		{ "mb", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t area = 4 << 20, total = 512ull << 20;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'a')
			area = strtoull(optarg, NULL, 0);
		else if (c == 'm')
			total = strtoull(optarg, NULL, 0) << 20;
		else
			return 2;
	}
	if (optind == argc || area & (area - 1) || area < 2 * CHUNK) {
		fprintf(stderr, "usage: aux-bench [--area BYTES (power of two)] [--mb N] OUTFILE...\n");
		return 2;
	}
	printf("memcpy %.0f MB/s\n", memcpy_rate(total));
	for (int i = optind; i < argc; i++) {
		const char *path = argv[i];
		double limit = write_rate(path, total);

		/* vmpt record's slices (an eighth of the area), then the
		 * whole half area in one write, as perf record does */
		for (uint64_t slice = area / 8;; slice = 0) {
			double lo = bisect(path, area, slice, total, limit);

			if (lo < 0)
				return 1;
			printf("%s: write() %.0f MB/s; the AUX consumer kept up to %.0f MB/s "
			       "with no loss (%.0f%% of write()), %llu KiB area, %s\n",
			       path, limit, lo, 100 * lo / limit,
			       (unsigned long long)(area >> 10),
			       slice ? "released in eighths" : "released whole");
			if (!slice)
				break;
		}
		unlink(path);
	}
	return 0;
}
