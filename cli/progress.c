/* SPDX-License-Identifier: MIT */
/* The progress line (progress.h). */
#include "progress.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static const char *size_text(double bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;

	while (bytes >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
	return buf;
}

static void show(void *ctx, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	struct timespec now;
	char d[32], t[32], r[32];
	double secs, rate, left;

	clock_gettime(CLOCK_MONOTONIC, &now);
	secs = since(&p->start, &now);
	if (secs < p->delay || (p->shown && since(&p->last, &now) < 0.5) || done > total)
		return;
	p->last = now;
	rate = secs > 0 ? (double)done / secs : 0;
	left = rate > 0 ? (double)(total - done) / rate : 0;
	fprintf(stderr, "\r%s: %s of %s (%u%%), %s/s, %u:%02u left\033[K", p->cmd,
		size_text((double)done, d, sizeof(d)), size_text((double)total, t, sizeof(t)),
		total ? (unsigned)(done * 100 / total) : 100, size_text(rate, r, sizeof(r)),
		(unsigned)(left / 60), (unsigned)left % 60);
	p->shown = 1;
}

struct vmpt_progress progress_start(struct progress *p, const char *cmd)
{
	const char *delay = getenv("VMPT_PROGRESS_DELAY");

	p->cmd = cmd;
	p->shown = 0;
	p->on = isatty(STDERR_FILENO) && !isatty(STDOUT_FILENO);
	p->delay = delay ? atof(delay) : 1.0;
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	return (struct vmpt_progress){ p->on ? show : NULL, p };
}

void progress_end(struct progress *p)
{
	if (p->shown)
		fprintf(stderr, "\r\033[K");
	p->shown = 0;
}
