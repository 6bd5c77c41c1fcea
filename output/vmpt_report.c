/* SPDX-License-Identifier: MIT */
/* vmpt report as a consumer of the session's decode (vmpt/consumer.h):
 * the run and its streams, the options, and what both reports share
 * (symbols, --time).  vmpt_report_exits.c and vmpt_report_hot.c count,
 * vmpt_report_text.c and vmpt_report_json.c print.
 */
#include "vmpt_report_int.h"
#include "vmpt/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void vmpt_report_opts_init(struct vmpt_report_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->keys[0] = VMPT_KEY_COMM;
	o->keys[1] = VMPT_KEY_DSO;
	o->keys[2] = VMPT_KEY_SYM;
	o->nkeys = 3;
	o->top = 10;
}

int vmpt_report_sort_parse(struct vmpt_report_opts *o, const char *s, char *err,
			   size_t errlen)
{
	static const char *const names[VMPT_KEY_COUNT] = {
		[VMPT_KEY_MACHINE] = "machine", [VMPT_KEY_COMM] = "comm",
		[VMPT_KEY_PID] = "pid", [VMPT_KEY_TID] = "tid", [VMPT_KEY_DSO] = "dso",
		[VMPT_KEY_SYM] = "sym",
	};
	int n = 0;

	while (*s) {
		size_t len = strcspn(s, ",");
		int k;

		for (k = 0; k < VMPT_KEY_COUNT; k++)
			if (strlen(names[k]) == len && !strncmp(names[k], s, len))
				break;
		if (k == VMPT_KEY_COUNT || n == VMPT_KEY_COUNT) {
			snprintf(err, errlen, "unknown sort key '%.*s' (machine, comm, pid, "
				 "tid, dso, sym)", (int)len, s);
			return -VMPT_ERR_INVAL;
		}
		for (int i = 0; i < n; i++)
			if (o->keys[i] == (enum vmpt_report_key)k) {
				snprintf(err, errlen, "sort key '%s' given twice", names[k]);
				return -VMPT_ERR_INVAL;
			}
		o->keys[n++] = (enum vmpt_report_key)k;
		s += len;
		if (*s == ',')
			s++;
	}
	if (!n) {
		snprintf(err, errlen, "no sort key (comm,dso,sym, say)");
		return -VMPT_ERR_INVAL;
	}
	o->nkeys = n;
	return 0;
}

uint64_t report_ns(const struct vmpt_report *r, uint64_t tsc)
{
	return r->o->have_tc ? vmpt_perf_tsc_to_time(&r->o->tc, tsc) : tsc;
}

int report_in_time(const struct vmpt_report *r, uint64_t tsc)
{
	const struct vmpt_report_opts *o = r->o;
	uint64_t ns;

	if (!o->ntimes)
		return 1;
	ns = report_ns(r, tsc);
	for (size_t i = 0; i < o->ntimes; i++)
		if (ns >= o->time_from[i] && (!o->time_to[i] || ns <= o->time_to[i]))
			return 1;
	return 0;
}

int report_symbol(const struct vmpt_report *r, const struct vmpt_consumer *c, uint64_t ip,
		  int guest, const char **dso, const char **sym, uint64_t *sym_addr)
{
	struct vmpt_asid space = { VMPT_MACHINE_HOST, VMPT_ASID_ANY };
	const struct vmpt_section *sec;
	const struct vmpt_symbol *s = NULL;
	uint64_t from, to;

	*dso = *sym = NULL;
	*sym_addr = 0;
	if (!r->o->image)
		return -1;
	if (guest)
		space.machine = c->vmcs ? c->vmcs : VMPT_MACHINE_GUEST;
	else if (c->task.space)
		space.cr3 = c->task.space;
	sec = vmpt_image_find(r->o->image, &space, ip);
	if (!sec)
		return -1;
	*dso = sec->name;
	s = vmpt_section_symbol_span(sec, ip, &from, &to);
	if (s) {
		*sym = s->name;
		*sym_addr = from;	/* the symbol's address here */
	}
	return 0;
}

/* ---- The consumer ---- */

static struct vmpt_consumer *stream_open(void *ctx, FILE *f)
{
	struct vmpt_consumer *c = calloc(1, sizeof(*c));

	(void)f;
	if (!c)
		return NULL;
	c->r = ctx;
	c->task.cpu = c->task.pid = c->task.tid = -1;
	return c;
}

static void stream_close(struct vmpt_consumer *c)
{
	free(c);
}

static void stream_set_file(struct vmpt_consumer *c, FILE *f)
{
	(void)c;
	(void)f;
}

static void stream_set_task(struct vmpt_consumer *c, const struct vmpt_task *task)
{
	c->task = *task;
	snprintf(c->comm, sizeof(c->comm), "%s", task->comm ? task->comm : "");
	c->task.comm = task->comm ? c->comm : NULL;
}

static void stream_begin_buffer(struct vmpt_consumer *c, const struct vmpt_buffer_ref *b)
{
	if (b->consecutive)
		return;
	/* A new decoder starts in the host, with nothing pending. */
	c->nr = c->from_nr = 0;
	c->vmcs = 0;
	c->cfe_on = 0;
	c->want_handler = 0;
	c->open = 0;
	c->last_entry = 0;
	c->have_time = 0;
	c->nran = 0;
}

static void stream_item(struct vmpt_consumer *c, const struct vmpt_flow_item *it)
{
	if (c->r->o->vm_exits)
		report_exits_item(c, it);
	else
		report_hot_item(c, it);
}

static void stream_drain(struct vmpt_consumer *c, uint64_t next_time)
{
	(void)c;
	(void)next_time;
}

static int stream_flush(struct vmpt_consumer *c)
{
	(void)c;
	return 0;
}

static uint64_t stream_produced(const struct vmpt_consumer *c)
{
	(void)c;
	return 0;
}

static void stream_sideband(struct vmpt_consumer *c, const struct vmpt_perf_event *ev,
			    const struct vmpt_task *task)
{
	(void)c;
	(void)ev;
	(void)task;
}

static int time_wanted(void *ctx, uint64_t from_ns, uint64_t to_ns)
{
	const struct vmpt_report *r = ctx;

	/* VM exits need the entries around a range: every buffer. */
	if (!r->o->ntimes || r->o->vm_exits)
		return 1;
	for (size_t i = 0; i < r->o->ntimes; i++)
		if (to_ns >= r->o->time_from[i] &&
		    (!r->o->time_to[i] || from_ns <= r->o->time_to[i]))
			return 1;
	return 0;
}

struct vmpt_report *vmpt_report_new(const struct vmpt_report_opts *opts)
{
	struct vmpt_report *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->o = opts;
	pthread_mutex_init(&r->lock, NULL);
	r->ops = (struct vmpt_consumer_ops){
		.open = stream_open, .close = stream_close, .set_file = stream_set_file,
		.set_task = stream_set_task, .begin_buffer = stream_begin_buffer,
		.item = stream_item, .drain = stream_drain, .flush = stream_flush,
		.produced = stream_produced, .sideband = stream_sideband,
		.time_wanted = time_wanted,
		/* exits span a queue's pieces, and IPC counts on from its start */
		.serial = 1, .ctx = r,
	};
	return r;
}

void vmpt_report_free(struct vmpt_report *r)
{
	if (!r)
		return;
	pthread_mutex_destroy(&r->lock);
	free(r->exits);
	free(r->vcpu_vmcs);
	free(r->rows);
	free(r->hash);
	for (size_t i = 0; i < r->n_strs; i++)
		free(r->strs[i]);
	free(r->strs);
	free(r);
}

const struct vmpt_consumer_ops *vmpt_report_consumer(struct vmpt_report *r)
{
	return &r->ops;
}

size_t vmpt_report_exits(struct vmpt_report *r, const struct vmpt_vm_exit **exits)
{
	report_exits_finish(r);
	*exits = r->exits;
	return r->n_exits;
}

int vmpt_report_print(struct vmpt_report *r, FILE *f)
{
	int ret;

	if (r->o->vm_exits) {
		report_exits_finish(r);
		ret = r->o->json ? report_print_exits_json(r, f) : report_print_exits_text(r, f);
	} else {
		report_hot_finish(r);
		ret = r->o->json ? report_print_hot_json(r, f) : report_print_hot_text(r, f);
	}
	if (ret == 0 && (fflush(f) != 0 || ferror(f))) {
		if (!errno)
			errno = EIO;
		ret = -VMPT_ERR_IO;
	}
	return ret;
}
