/* SPDX-License-Identifier: MIT */
/* vmpt script as a consumer of the session's decode (vmpt/consumer.h):
 * one stream per trace queue or -j piece, each with its output buffer,
 * task and counters, the sideband records among its samples, and the
 * statistics summed when a stream closes.
 */
#include "vmpt_script_int.h"
#include "vmpt/unwind.h"
#include "vmpt/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The stream's output buffer: written out when full and at the ends of
 * buffers and streams, a write error kept for the stream's end.
 */
void script_out_flush(struct vmpt_consumer *c)
{
	if (c->len && c->f && !c->werr &&
	    fwrite(c->buf, 1, c->len, c->f) != c->len)
		c->werr = errno ? errno : EIO;
	c->produced += c->len;
	c->len = 0;
}

void script_outf(struct vmpt_consumer *c, const char *fmt, ...)
{
	char big[4096];
	va_list ap;
	int n;

	if (c->len > SCRIPT_OUT_CAP - 1024)
		script_out_flush(c);
	va_start(ap, fmt);
	n = vsnprintf(c->buf + c->len, SCRIPT_OUT_CAP - c->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < SCRIPT_OUT_CAP - c->len) {
		c->len += (size_t)n;
		return;
	}
	/* Longer than the room left (a long symbol name): on its own. */
	script_out_flush(c);
	va_start(ap, fmt);
	n = vsnprintf(big, sizeof(big), fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < SCRIPT_OUT_CAP) {
		memcpy(c->buf, big, (size_t)n);
		c->len = (size_t)n;
	}
}

static void stream_begin_buffer(struct vmpt_consumer *c, const struct vmpt_buffer_ref *b)
{
	if (!b->consecutive)
		script_settle_held(c, NULL);
	/* Bases for items' stream offsets (wrapping). */
	c->buf_offset = b->file_offset - b->stream_offset;
	c->queue_offset = b->queue_offset - b->stream_offset;
	if (b->consecutive)
		return;
	c->p_cont = 0;
	c->p_last = 0;
	c->have_block = 0;
	c->last_iclass = VMPT_IC_OTHER;
	/* A new decoder starts in the host. */
	c->nr = c->from_nr = 0;
	c->vmcs = 0;
	c->err_offset = -1;
	/* perf's trace_nr: the buffer's number, one for all queues. */
	c->trace_nr = b->file_offset + 1;
}

static int stream_flush(struct vmpt_consumer *c)
{
	script_out_flush(c);
	if (c->werr) {
		errno = c->werr;
		return -VMPT_ERR_IO;
	}
	return 0;
}

static uint64_t stream_produced(const struct vmpt_consumer *c)
{
	return c->produced + c->len;
}

static void stream_set_file(struct vmpt_consumer *c, FILE *f)
{
	script_out_flush(c);
	c->f = f;
}

static void stream_set_task(struct vmpt_consumer *c, const struct vmpt_task *task)
{
	script_settle_held(c, NULL);
	c->task = *task;
}

/* perf's sample filters for another event's sample (its time is perf
 * time): --cpu, --pid, --tid, --comm, --time, --dsos, --symbols.
 */
static int other_shown(struct vmpt_consumer *c, const struct vmpt_perf_event *ev,
		       const struct vmpt_task *task)
{
	const struct vmpt_script_filter *fl = &c->o->filter;
	int in;

	if (fl->npids && !script_in_list(fl->pids, fl->npids, task->pid))
		return 0;
	if (fl->ntids && !script_in_list(fl->tids, fl->ntids, task->tid))
		return 0;
	if (fl->ncomms && !script_in_strs(fl->comms, fl->ncomms, task->comm))
		return 0;
	in = script_ns_in_time(c, ev->sid.time);
	if (in && (fl->ndsos || fl->nsyms)) {
		const struct vmpt_task saved = c->task;

		c->task = *task;
		in = script_code_shown(c, NULL, ev->sample.ip, 0);
		c->task = saved;
	}
	return in;
}

static void vdso_mapped(struct vmpt_consumer *c, const struct vmpt_perf_event *ev);

/* A sideband record among the samples: the ones --show-*-events asks
 * for, as perf prints them; truncated AUX data as perf's "Lost trace
 * data" error; a recorded AUXTRACE_ERROR as perf prints it.
 */
static void stream_sideband(struct vmpt_consumer *c, const struct vmpt_perf_event *ev,
			    const struct vmpt_task *task)
{
	const struct vmpt_script_opts *o = c->o;
	const struct vmpt_script_filter *fl = &o->filter;
	struct vmpt_task saved = c->task;
	int show;

	if (ev->type == PERF_RECORD_AUX) {
		c->stats.aux++;
		c->stats.aux_lost += !!(ev->aux.flags & VMPT_PERF_AUX_TRUNCATED);
		c->stats.aux_partial += !!(ev->aux.flags & VMPT_PERF_AUX_PARTIAL);
		c->stats.aux_collision += !!(ev->aux.flags & VMPT_PERF_AUX_COLLISION);
	}
	if (ev->type == VMPT_PERF_RECORD_AUXTRACE_ERROR) {
		c->stats.recorded_errors++;
		script_settle_held(c, NULL);
		script_print_recorded_error(c, ev);
		return;
	}
	if (ev->type == PERF_RECORD_SAMPLE && o->sample_fn)
		return;		/* an export's: Intel PT's samples only */
	if (ev->type == PERF_RECORD_SAMPLE && !other_shown(c, ev, task))
		return;
	if (fl->ncpus && task->cpu >= 0 && (task->cpu >= fl->ncpus || !fl->cpus[task->cpu]))
		return;
	switch (ev->type) {
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		show = o->show_task;
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		if (o->vdso_unread && ev->mmap.filename && !strcmp(ev->mmap.filename, "[vdso]"))
			vdso_mapped(c, ev);
		show = o->show_mmap;
		break;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		show = o->show_switch;
		break;
	case PERF_RECORD_LOST:
		c->stats.lost_records++;
		show = o->show_lost;
		break;
	case PERF_RECORD_SAMPLE:
		script_settle_held(c, NULL);
		c->task = *task;
		script_print_other_sample(c, ev);
		c->task = saved;
		return;
	case PERF_RECORD_AUX:
		if (ev->aux.flags & VMPT_PERF_AUX_TRUNCATED) {
			struct vmpt_flow_item e = { .kind = VMPT_FLOW_EVENT,
						    .ev = VMPT_EV_ERROR };

			c->stats.lost++;
			c->task = *task;
			/* perf's intel_pt_lost: at the record's time, ip 0. */
			script_error_ns(c, &e, -VMPT_ERR_LOST, ev->sid.time);
			c->task = saved;
		}
		return;
	default:
		return;
	}
	if (!show)
		return;
	script_settle_held(c, NULL);
	c->task = *task;
	script_print_sideband(c, ev);
	c->task = saved;
}

static void stream_close(struct vmpt_consumer *c)
{
	struct vmpt_script *s;

	if (!c)
		return;
	s = c->s;
	script_eptw_drain(c, 0);
	script_out_flush(c);
	pthread_mutex_lock(&s->lock);
	s->stats.insns += c->stats.insns;
	s->stats.branches += c->stats.branches;
	s->stats.overflows += c->stats.overflows;
	s->stats.lost += c->stats.lost;
	s->stats.skipped += c->stats.skipped;
	s->stats.aux += c->stats.aux;
	s->stats.aux_lost += c->stats.aux_lost;
	s->stats.aux_partial += c->stats.aux_partial;
	s->stats.aux_collision += c->stats.aux_collision;
	s->stats.recorded_errors += c->stats.recorded_errors;
	s->stats.lost_records += c->stats.lost_records;
	s->stats.other_samples += c->stats.other_samples;
	s->stats.other_unshown += c->stats.other_unshown;
	s->stats.synthesized += c->stats.synthesized;
	s->stats.error_events += c->stats.error_events;
	for (int i = 0; i < VMPT_ERR_COUNT; i++)
		s->stats.errors[i] += c->stats.errors[i];
	for (size_t i = 0; i < c->n_missing; i++) {
		size_t k;

		for (k = 0; k < s->n_missing; k++)
			if (!strcmp(s->missing[k].name, c->missing[i].name))
				break;
		if (k == s->n_missing) {
			struct script_missing *m = realloc(s->missing, (k + 1) * sizeof(*m));

			if (!m)
				continue;
			s->missing = m;
			m[k].name = c->missing[i].name;
			m[k].errors = 0;
			c->missing[i].name = NULL;
			s->n_missing++;
		}
		s->missing[k].errors += c->missing[i].errors;
	}
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < c->n_missing; i++)
		free(c->missing[i].name);
	free(c->missing);
	free(c->buf);
	script_srclines_free(c);
	vmpt_unwinder_free(c->unwinder);
	script_syms_free(c);
	for (int m = 0; m < 3; m++) {
		if (c->insn[m])
			cs_free(c->insn[m], 1);
		if (c->cs[m])
			cs_close(&c->cs[m]);
	}
	free(c);
}

static struct vmpt_consumer *stream_open(void *ctx, FILE *f)
{
	static const cs_mode modes[3] = { CS_MODE_64, CS_MODE_32, CS_MODE_16 };
	struct vmpt_script *s = ctx;
	const struct vmpt_script_opts *o = s->o;
	struct vmpt_consumer *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->s = s;
	c->o = o;
	c->f = f;
	c->task = (struct vmpt_task){ .cpu = -1, .pid = -1, .tid = -1 };
	c->cbr_seen = ~0u;
	c->err_offset = -1;
	c->fast = script_fast_ok(s);
	c->branches_quiet = !s->o->it.branches && !s->use_stacks;
	c->quiet_taken = script_fold_mask(o, s->use_stacks);
	c->fold = c->quiet_taken != 0;
	if (script_time_period(c) && o->it.insns && o->it.period) {
		/* perf: the period in TSC ticks, rounded down to a power of
		 * two (raw traces: the period is in ticks already).
		 */
		uint64_t t = o->it.period;

		if (o->it.period_type == VMPT_ITRACE_PERIOD_NS && o->have_tc &&
		    o->tc.time_mult)
			t = ((t / o->tc.time_mult) << o->tc.time_shift) +
			    ((t % o->tc.time_mult) << o->tc.time_shift) / o->tc.time_mult;
		while (t & (t - 1))
			t &= t - 1;
		c->p_ticks = t;
		c->p_mask = ~(t - 1);
	}
	c->buf = malloc(SCRIPT_OUT_CAP);
	if (!c->buf) {
		free(c);
		return NULL;
	}
	for (int m = 0; m < 3; m++) {
		if (cs_open(CS_ARCH_X86, modes[m], &c->cs[m]) != CS_ERR_OK ||
		    !(c->insn[m] = cs_malloc(c->cs[m]))) {
			stream_close(c);
			return NULL;
		}
	}
	return c;
}

static int stream_time_wanted(void *ctx, uint64_t from_ns, uint64_t to_ns)
{
	const struct vmpt_script_filter *fl = &((struct vmpt_script *)ctx)->o->filter;

	if (!fl->ntimes)
		return 1;
	for (size_t i = 0; i < fl->ntimes; i++)
		if (to_ns >= fl->time_from[i] && (!fl->time_to[i] || from_ns <= fl->time_to[i]))
			return 1;
	return 0;
}

struct vmpt_script *vmpt_script_new(const struct vmpt_script_opts *opts)
{
	struct vmpt_script *s = calloc(1, sizeof(*s));
	const struct vmpt_itrace *it = &opts->it;

	if (!s)
		return NULL;
	s->o = opts;
	pthread_mutex_init(&s->lock, NULL);
	s->use_stacks = it->callchain || it->last_branch ||
			((opts->f.set[VMPT_OUT_HW] | opts->f.set[VMPT_OUT_SYNTH]) &
			 VMPT_F_CALLINDENT);
	s->stacks.br_sz = it->last_branch ? it->last_branch_sz : 0;
	s->ops = (struct vmpt_consumer_ops){
		.open = stream_open, .close = stream_close, .set_file = stream_set_file,
		.set_task = stream_set_task, .begin_buffer = stream_begin_buffer,
		/* the PTWRITE emulation's wrapper only where it is on */
		.item = it->ptwrites ? script_eptw_item : script_stream_item,
		.items = script_stream_items,
		.fold = script_fold_mask(opts, s->use_stacks) ? script_stream_fold : NULL,
		.estimate = script_stream_estimate,
		.estimate_below = opts->est_tsc ? opts->kernel_start : 0,
		.drain = script_eptw_drain, .flush = stream_flush,
		.produced = stream_produced, .sideband = stream_sideband,
		.time_wanted = opts->filter.ntimes ? stream_time_wanted : NULL,
		.serial = !!(opts->f.set[VMPT_OUT_HW] & VMPT_F_IPC),
		.ctx = s,
	};
	return s;
}

void vmpt_script_free(struct vmpt_script *s)
{
	if (!s)
		return;
	script_stacks_free(&s->stacks);
	for (size_t i = 0; i < s->n_missing; i++)
		free(s->missing[i].name);
	free(s->missing);
	for (size_t i = 0; i < s->n_unread; i++)
		free(s->unread[i].name);
	free(s->unread);
	script_srccode_free(s);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

const struct vmpt_consumer_ops *vmpt_script_consumer(struct vmpt_script *s)
{
	return &s->ops;
}

/* The status of binary name (NULL: no memory), under s->lock. */
static struct script_unread *unread_of(struct vmpt_script *s, const char *name)
{
	struct script_unread *v;

	for (size_t i = 0; i < s->n_unread; i++)
		if (!strcmp(s->unread[i].name, name))
			return &s->unread[i];
	v = realloc(s->unread, (s->n_unread + 1) * sizeof(*v));
	if (!v)
		return NULL;
	s->unread = v;
	v += s->n_unread;
	*v = (struct script_unread){ .name = strdup(name) };
	if (!v->name)
		return NULL;
	s->n_unread++;
	return v;
}

void script_unread_looked_up(struct vmpt_consumer *c, const char *name)
{
	struct script_unread *u;

	/* perf loads a kernel's symbols once: that first time is as a
	 * failed read, the status ERROR, seen if it was ERROR already.
	 */
	pthread_mutex_lock(&c->s->lock);
	if ((u = unread_of(c->s, name)) && !u->looked_up) {
		u->looked_up = 1;
		u->seen |= u->error;
		u->error = 1;
	}
	pthread_mutex_unlock(&c->s->lock);
}

/* A process maps its vdso: the binaries perf then fails to open have
 * their status ERROR (vmpt_vdso_fn), not yet seen.
 */
static void vdso_mapped(struct vmpt_consumer *c, const struct vmpt_perf_event *ev)
{
	const char *names[64];
	size_t n = c->o->vdso_unread(c->o->map_ctx, ev, names, 64);
	struct script_unread *u;

	pthread_mutex_lock(&c->s->lock);
	for (size_t i = 0; i < n; i++)
		if ((u = unread_of(c->s, names[i])))
			u->error = 1;
	pthread_mutex_unlock(&c->s->lock);
}

int script_unread_silent(struct vmpt_consumer *c, const char *name)
{
	struct script_unread *u;
	int silent = 0;

	pthread_mutex_lock(&c->s->lock);
	if ((u = unread_of(c->s, name))) {
		/* perf: status ERROR && dso__data_status_seen() */
		silent = u->error && u->seen;
		u->seen |= u->error;
		u->error = 1;
	}
	pthread_mutex_unlock(&c->s->lock);
	return silent;
}

void vmpt_script_get_stats(struct vmpt_script *s, struct vmpt_script_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->stats;
	pthread_mutex_unlock(&s->lock);
}

size_t vmpt_script_missing(struct vmpt_script *s, size_t i, const char **name,
			   uint64_t *errors)
{
	if (i >= s->n_missing)
		return 0;
	*name = s->missing[i].name;
	*errors = s->missing[i].errors;
	return 1;
}
