/* SPDX-License-Identifier: MIT */
/* vmpt export --format=folded: Brendan Gregg's folded stacks, one line
 * per stack, "comm;caller;callee COUNT", as flamegraph.pl and speedscope
 * read them.  A stack's count is what ran with it on top (instructions,
 * time or samples); guest code is on its vCPU thread, above the host's
 * calls that entered the guest and a "[guest]" frame.
 */
#include "vmpt_export_int.h"
#include "vmpt/error.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct folded {
	struct export_map counts;	/* (call path, thread, host's) -> struct count */
	struct count { const struct export_call_path *cp, *hcp; const struct export_thread *t;
		       uint64_t n; } **v;
	size_t n;
};

static int folded_begin(struct vmpt_export *x)
{
	x->fmt = calloc(1, sizeof(struct folded));
	if (!x->fmt) {
		export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
		return -1;
	}
	return 0;
}

static void folded_weigh(struct vmpt_export *x, struct export_thread *t, uint64_t w)
{
	struct folded *f = x->fmt;
	const struct export_call_path *cp = t->cnt ? t->stack[t->cnt - 1].cp : &x->root;
	const struct export_call_path *hcp = NULL;
	struct count *c;

	if (t->host)
		hcp = t->host->cnt ? t->host->stack[t->host->cnt - 1].cp : &x->root;
	while (x->o->max_depth && cp->depth > x->o->max_depth)
		cp = cp->parent;
	c = export_map_get(&f->counts, (uint64_t)(uintptr_t)cp, (uint64_t)(uintptr_t)t,
			   (uint64_t)(uintptr_t)hcp);
	if (!c) {
		struct count **v = realloc(f->v, (f->n + 1) * sizeof(*v));

		c = calloc(1, sizeof(*c));
		if (v)
			f->v = v;
		if (!v || !c || export_map_put(&f->counts, (uint64_t)(uintptr_t)cp,
					       (uint64_t)(uintptr_t)t, (uint64_t)(uintptr_t)hcp,
					       c) < 0) {
			free(c);
			export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
			return;
		}
		c->cp = cp;
		c->hcp = hcp;
		c->t = t;
		f->v[f->n++] = c;
	}
	c->n += w;
}

/* A frame's name as folded stacks take it: ';' splits frames, a space
 * ends them.
 */
static size_t put_name(FILE *f, const char *name)
{
	size_t n = 0;

	for (; name[n]; n++)
		putc(name[n] == ';' ? ':' : name[n] == ' ' ? '_' : name[n], f);
	return n;
}

/* The frames of a call path, outermost first, each after a ';'.
 * Returns the bytes written.
 */
static size_t put_path(FILE *f, const struct export_call_path *cp)
{
	char name[256];
	size_t n;

	if (!cp || !cp->parent)
		return 0;
	n = put_path(f, cp->parent);
	export_frame_name(cp, name, sizeof(name));
	putc(';', f);
	return n + 1 + put_name(f, name);
}

/* A line per stack, in the order the stacks first ran, written as it
 * goes (deep stacks make long lines: nothing is kept whole).
 */
static int folded_end(struct vmpt_export *x)
{
	struct folded *f = x->fmt;
	FILE *out = x->o->out;

	for (size_t i = 0; i < f->n; i++) {
		const struct count *c = f->v[i];
		const struct export_thread *t = c->t, *host = t->host ? t->host : t;
		size_t n = put_name(out, host->name && *host->name ? host->name : "[unknown]");
		int k = fprintf(out, "-%d", host->tid);

		n += k > 0 ? (size_t)k : 0;
		if (t->host) {
			n += put_path(out, c->hcp);
			n += (size_t)fprintf(out, ";[guest]");
		}
		n += put_path(out, c->cp);
		k = fprintf(out, " %" PRIu64 "\n", c->n);
		x->stats.bytes += n + (k > 0 ? (size_t)k : 0);
	}
	x->stats.stacks = f->n;
	if (fflush(out) != 0 || ferror(out))
		export_fail(x, "writing the output: %s", strerror(errno ? errno : EIO));
	return x->failed ? -1 : 0;
}

static void folded_free(struct vmpt_export *x)
{
	struct folded *f = x->fmt;

	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i]);
	free(f->v);
	export_map_free(&f->counts);
	free(f);
}

const struct export_format_ops export_folded_ops = {
	.begin = folded_begin,
	.weigh = folded_weigh,
	.end = folded_end,
	.free = folded_free,
};
