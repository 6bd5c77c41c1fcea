/* SPDX-License-Identifier: MIT */
/* vmpt export --format=chrome: the Trace Event Format's JSON (Chrome's
 * about:tracing, Perfetto UI, speedscope open it): each thread's calls as
 * B/E slices on its track (pid, tid), named by the thread_name and
 * process_name metadata; a vCPU thread's time in its guest as a "guest"
 * slice on top of the host's calls (VM entry to VM exit), the guest's
 * calls in it.  Times in microseconds (ns as decimals), forward only
 * on each track (ties a picosecond apart).
 */
#include "vmpt_export_int.h"
#include "vmpt/error.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct chrome {
	int first;
};

static void out(struct vmpt_export *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void out(struct vmpt_export *x, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vfprintf(x->o->out, fmt, ap);
	va_end(ap);
	if (n < 0)
		export_fail(x, "writing the output: %s", strerror(errno));
	else
		x->stats.bytes += (uint64_t)n;
}

/* A JSON string. */
static void out_str(struct vmpt_export *x, const char *s)
{
	char buf[512];
	size_t n = 0;

	buf[n++] = '"';
	for (; *s && n < sizeof(buf) - 8; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char)ch;
		} else if (ch < 0x20) {
			n += (size_t)snprintf(buf + n, 7, "\\u%04x", ch);
		} else {
			buf[n++] = (char)ch;
		}
	}
	buf[n++] = '"';
	buf[n] = 0;
	out(x, "%s", buf);
}

static int chrome_begin(struct vmpt_export *x)
{
	struct chrome *c = calloc(1, sizeof(*c));

	if (!c) {
		export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
		return -1;
	}
	x->fmt = c;
	c->first = 1;
	out(x, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	return x->failed ? -1 : 0;
}

static void sep(struct vmpt_export *x)
{
	struct chrome *c = x->fmt;

	out(x, c->first ? "\n" : ",\n");
	c->first = 0;
}

static int track_pid(const struct export_thread *t)
{
	return t->host ? t->host->pid : t->pid;
}

static int track_tid(const struct export_thread *t)
{
	return t->host ? t->host->tid : t->tid;
}

/* The thread's naming metadata, once; a guest's vCPU shows on its host
 * thread's track.
 */
static void track(struct vmpt_export *x, struct export_thread *t)
{
	char name[160];

	if (t->host)
		t = t->host;
	if (t->track)
		return;
	t->track = 1;
	snprintf(name, sizeof(name), "%s %d", t->name && *t->name ? t->name : "[unknown]",
		 t->tid);
	if (!t->main->proc_track) {
		t->main->proc_track = 1;
		sep(x);
		out(x, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":%d,"
		    "\"args\":{\"name\":", t->pid, t->pid);
		out_str(x, name);
		out(x, "}}");
	}
	sep(x);
	out(x, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
	    track_pid(t), track_tid(t));
	out_str(x, name);
	out(x, "}}");
}

/* Times go forward on a track (a guest's on its host thread's), in
 * picoseconds: events at one nanosecond get a picosecond each, in file
 * order, as readers that sort by time (speedscope) take ties otherwise.
 */
static uint64_t forward(struct export_thread *t, uint64_t time)
{
	uint64_t ps = time * 1000;

	if (t->host)
		t = t->host;
	if (t->tl_time && ps <= t->tl_time)
		ps = t->tl_time + 1;
	t->tl_time = ps;
	return ps;
}

/* A slice begins (B) or ends (E).  The E carries the name too: readers
 * that sort by time (speedscope) pair ties by it.
 */
static void slice(struct vmpt_export *x, struct export_thread *t, int begin, const char *name,
		  uint64_t time)
{
	time = forward(t, time);
	track(x, t);
	sep(x);
	out(x, "{\"ph\":\"%c\",\"pid\":%d,\"tid\":%d,\"ts\":%" PRIu64 ".%06u,\"name\":",
	    begin ? 'B' : 'E', track_pid(t), track_tid(t), time / 1000000,
	    (unsigned)(time % 1000000));
	out_str(x, name);
	out(x, "}");
	x->stats.slices += !!begin;
}

static void chrome_push(struct vmpt_export *x, struct export_thread *t,
			const struct export_entry *e, uint64_t time)
{
	char name[256];

	if (!export_entry_shown(x, t, e))
		return;
	export_frame_name(e->cp, name, sizeof(name));
	slice(x, t, 1, name, time);
}

static void chrome_pop(struct vmpt_export *x, struct export_thread *t,
		       const struct export_entry *e, uint64_t time)
{
	char name[256];

	if (!export_entry_shown(x, t, e))
		return;
	export_frame_name(e->cp, name, sizeof(name));
	slice(x, t, 0, name, time);
}

/* In the guest: a "guest" slice on the host thread's calls, the guest's
 * calls on it as they were.
 */
static void chrome_guest(struct vmpt_export *x, struct export_thread *g, int open,
			 uint64_t time)
{
	if (open) {
		slice(x, g, 1, "guest", time);
		for (size_t i = 0; i < g->cnt; i++)
			chrome_push(x, g, &g->stack[i], time);
		return;
	}
	g->open = 1;
	for (size_t i = g->cnt; i--;)
		chrome_pop(x, g, &g->stack[i], time);
	g->open = 0;
	slice(x, g, 0, "guest", time);
}

/* An instant event on the thread's track. */
static void chrome_error(struct vmpt_export *x, struct export_thread *t, uint64_t time,
			 const char *what)
{
	time = forward(t, time);
	track(x, t);
	sep(x);
	out(x, "{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,\"ts\":%" PRIu64 ".%06u,"
	    "\"name\":", track_pid(t), track_tid(t), time / 1000000, (unsigned)(time % 1000000));
	out_str(x, what);
	out(x, "}");
}

static int chrome_end(struct vmpt_export *x)
{
	out(x, "\n]}\n");
	if (fflush(x->o->out) != 0)
		export_fail(x, "writing the output: %s", strerror(errno));
	return x->failed ? -1 : 0;
}

static void chrome_free(struct vmpt_export *x)
{
	free(x->fmt);
}

const struct export_format_ops export_chrome_ops = {
	.begin = chrome_begin,
	.push = chrome_push,
	.pop = chrome_pop,
	.guest = chrome_guest,
	.error = chrome_error,
	.end = chrome_end,
	.free = chrome_free,
};
