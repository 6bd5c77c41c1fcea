/* SPDX-License-Identifier: MIT */
/* vmpt export --format=perfetto: Perfetto's protobuf trace (a Trace of
 * TracePackets, perfetto/protos/perfetto/trace/), written directly: a
 * TrackDescriptor per process and per thread, then TrackEvent slice
 * begins and ends (the calls of each thread; on a vCPU thread a "guest"
 * slice from VM entry to VM exit on the host's calls, the guest's calls
 * in it), timestamps in ns of perf time, forward only per track.
 * ui.perfetto.dev and Perfetto's trace_processor open it.
 */
#include "vmpt_export_int.h"
#include "vmpt/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The field numbers used (Perfetto's protos). */
enum {
	TRACE_PACKET = 1,
	TP_TIMESTAMP = 8, TP_SEQUENCE_ID = 10, TP_TRACK_EVENT = 11, TP_SEQUENCE_FLAGS = 13,
	TP_TRACK_DESCRIPTOR = 60,
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT_UUID = 5,
	PD_PID = 1, PD_PROCESS_NAME = 6,
	THD_PID = 1, THD_TID = 2, THD_THREAD_NAME = 5,
	TE_TYPE = 9, TE_TRACK_UUID = 11, TE_NAME = 23,
	TE_SLICE_BEGIN = 1, TE_SLICE_END = 2, TE_INSTANT = 3,
	SEQ_INCREMENTAL_STATE_CLEARED = 1,
};

/* Track ids: a process's, a thread's, a guest vCPU's. */
#define UUID_PROCESS(pid) ((1ull << 40) | (uint32_t)(pid))
#define UUID_THREAD(tid) ((2ull << 40) | (uint32_t)(tid))

struct pb {
	uint8_t *p;
	size_t n, cap;
	int nomem;
};

static void pb_put(struct pb *b, const void *data, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = (b->n + n) * 2 + 64;
		uint8_t *p = realloc(b->p, cap);

		if (!p) {
			b->nomem = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, data, n);
	b->n += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t buf[10];
	size_t n = 0;

	do {
		buf[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			buf[n] |= 0x80;
		n++;
	} while (v);
	pb_put(b, buf, n);
}

static void pb_uint(struct pb *b, unsigned field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

static void pb_bytes(struct pb *b, unsigned field, const void *data, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	pb_put(b, data, n);
}

static void pb_str(struct pb *b, unsigned field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

static void pb_msg(struct pb *b, unsigned field, struct pb *m)
{
	pb_bytes(b, field, m->p, m->n);
	b->nomem |= m->nomem;
	m->n = 0;
}

struct perfetto {
	struct pb packet, inner, inner2;
	int first;
};

/* A TracePacket of one message (field) at time ts (0: none). */
static void packet(struct vmpt_export *x, uint64_t ts, unsigned field, struct pb *m)
{
	struct perfetto *p = x->fmt;
	struct pb *pk = &p->packet;
	struct pb frame = { 0 };

	pk->n = 0;
	if (ts)
		pb_uint(pk, TP_TIMESTAMP, ts);
	pb_uint(pk, TP_SEQUENCE_ID, 1);
	if (p->first) {
		pb_uint(pk, TP_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
		p->first = 0;
	}
	pb_msg(pk, field, m);
	pb_msg(&frame, TRACE_PACKET, pk);
	if (frame.nomem || pk->nomem) {
		export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
	} else if (fwrite(frame.p, 1, frame.n, x->o->out) != frame.n) {
		export_fail(x, "writing the output: %s", strerror(errno));
	} else {
		x->stats.bytes += frame.n;
	}
	free(frame.p);
}

static int perfetto_begin(struct vmpt_export *x)
{
	struct perfetto *p = calloc(1, sizeof(*p));

	if (!p) {
		export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
		return -1;
	}
	p->first = 1;
	x->fmt = p;
	return 0;
}

/* A guest's vCPU is on its host thread's track. */
static uint64_t track_uuid(const struct export_thread *t)
{
	return UUID_THREAD(t->host ? t->host->tid : t->tid);
}

/* The descriptors of t's track (and its process's), once. */
static void track(struct vmpt_export *x, struct export_thread *t)
{
	struct perfetto *p = x->fmt;
	struct pb *td = &p->inner, *d = &p->inner2;
	char name[160];

	if (t->host)
		t = t->host;
	if (t->track)
		return;
	t->track = 1;
	snprintf(name, sizeof(name), "%s %d", t->name && *t->name ? t->name : "[unknown]",
		 t->tid);
	if (!t->main->proc_track) {
		/* the process's track first */
		t->main->proc_track = 1;
		pb_uint(td, TD_UUID, UUID_PROCESS(t->pid));
		pb_uint(d, PD_PID, (uint32_t)t->pid);
		pb_str(d, PD_PROCESS_NAME, name);
		pb_msg(td, TD_PROCESS, d);
		packet(x, 0, TP_TRACK_DESCRIPTOR, td);
	}
	pb_uint(td, TD_UUID, track_uuid(t));
	pb_uint(td, TD_PARENT_UUID, UUID_PROCESS(t->pid));
	pb_uint(d, THD_PID, (uint32_t)t->pid);
	pb_uint(d, THD_TID, (uint32_t)t->tid);
	pb_str(d, THD_THREAD_NAME, name);
	pb_msg(td, TD_THREAD, d);
	packet(x, 0, TP_TRACK_DESCRIPTOR, td);
}

static void event(struct vmpt_export *x, struct export_thread *t, unsigned type,
		  const char *name, uint64_t time)
{
	struct perfetto *p = x->fmt;
	struct pb *te = &p->inner;

	struct export_thread *h = t->host ? t->host : t;

	/* forward on the track (a guest's is its host thread's) */
	if (time < h->tl_time)
		time = h->tl_time;
	h->tl_time = time;
	track(x, t);
	pb_uint(te, TE_TYPE, type);
	pb_uint(te, TE_TRACK_UUID, track_uuid(t));
	if (name)
		pb_str(te, TE_NAME, name);
	x->stats.slices += type == TE_SLICE_BEGIN;
	packet(x, time, TP_TRACK_EVENT, te);
}

static void slice(struct vmpt_export *x, struct export_thread *t, const char *name,
		  uint64_t time)
{
	event(x, t, name ? TE_SLICE_BEGIN : TE_SLICE_END, name, time);
}

static void perfetto_error(struct vmpt_export *x, struct export_thread *t, uint64_t time,
			   const char *what)
{
	event(x, t, TE_INSTANT, what, time);
}

static void perfetto_push(struct vmpt_export *x, struct export_thread *t,
			  const struct export_entry *e, uint64_t time)
{
	char name[256];

	if (!export_entry_shown(x, t, e))
		return;
	export_frame_name(e->cp, name, sizeof(name));
	slice(x, t, name, time);
}

static void perfetto_pop(struct vmpt_export *x, struct export_thread *t,
			 const struct export_entry *e, uint64_t time)
{
	if (export_entry_shown(x, t, e))
		slice(x, t, NULL, time);
}

static void perfetto_guest(struct vmpt_export *x, struct export_thread *g, int open,
			   uint64_t time)
{
	if (open) {
		slice(x, g, "guest", time);
		for (size_t i = 0; i < g->cnt; i++)
			perfetto_push(x, g, &g->stack[i], time);
		return;
	}
	g->open = 1;
	for (size_t i = g->cnt; i--;)
		perfetto_pop(x, g, &g->stack[i], time);
	g->open = 0;
	slice(x, g, NULL, time);
}

static int perfetto_end(struct vmpt_export *x)
{
	if (fflush(x->o->out) != 0)
		export_fail(x, "writing the output: %s", strerror(errno));
	return x->failed ? -1 : 0;
}

static void perfetto_free(struct vmpt_export *x)
{
	struct perfetto *p = x->fmt;

	if (!p)
		return;
	free(p->packet.p);
	free(p->inner.p);
	free(p->inner2.p);
	free(p);
}

const struct export_format_ops export_perfetto_ops = {
	.begin = perfetto_begin,
	.push = perfetto_push,
	.pop = perfetto_pop,
	.guest = perfetto_guest,
	.error = perfetto_error,
	.end = perfetto_end,
	.free = perfetto_free,
};
