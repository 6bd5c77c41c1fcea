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

/* Append name to the line at *len, ';' first unless it is the first
 * (folded stacks split on ';' and end at the space before the count).
 */
static int add(char **buf, size_t *len, size_t *cap, const char *name)
{
	size_t l = strlen(name);

	if (*len + l + 2 > *cap) {
		char *b = realloc(*buf, (*len + l + 2) * 2);

		if (!b)
			return -1;
		*buf = b;
		*cap = (*len + l + 2) * 2;
	}
	if (*len)
		(*buf)[(*len)++] = ';';
	for (size_t k = 0; k < l; k++)
		(*buf)[(*len)++] = name[k] == ';' ? ':' : name[k] == ' ' ? '_' : name[k];
	(*buf)[*len] = 0;
	return 0;
}

/* The frames of a call path, outermost first. */
static int add_path(char **buf, size_t *len, size_t *cap, const struct export_call_path *cp)
{
	char name[256];

	if (!cp || !cp->parent)
		return 0;
	if (add_path(buf, len, cap, cp->parent) < 0)
		return -1;
	export_frame_name(cp, name, sizeof(name));
	return add(buf, len, cap, name);
}

/* "comm-tid;f1;f2" of a count (a guest's: the host's frames, [guest],
 * the guest's).
 */
static char *stack_text(const struct count *c)
{
	const struct export_thread *t = c->t, *host = t->host ? t->host : t;
	size_t len = 0, cap = 256;
	char *buf = malloc(cap), name[160];

	if (!buf)
		return NULL;
	buf[0] = 0;
	snprintf(name, sizeof(name), "%s-%d", host->name && *host->name ? host->name :
		 "[unknown]", host->tid);
	if (add(&buf, &len, &cap, name) < 0 ||
	    (t->host && (add_path(&buf, &len, &cap, c->hcp) < 0 ||
			 add(&buf, &len, &cap, "[guest]") < 0)) ||
	    add_path(&buf, &len, &cap, c->cp) < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int folded_end(struct vmpt_export *x)
{
	struct folded *f = x->fmt;
	char **lines = calloc(f->n ? f->n : 1, sizeof(*lines));
	size_t n = 0;

	if (!lines) {
		export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
		return -1;
	}
	for (size_t i = 0; i < f->n; i++) {
		char *s = stack_text(f->v[i]);
		char *line = NULL;

		if (s && asprintf(&line, "%s %" PRIu64, s, f->v[i]->n) < 0)
			line = NULL;
		free(s);
		if (!line) {
			export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
			break;
		}
		lines[n++] = line;
	}
	qsort(lines, n, sizeof(*lines), cmp_str);
	for (size_t i = 0; i < n; i++) {
		int w = fprintf(x->o->out, "%s\n", lines[i]);

		if (w > 0)
			x->stats.bytes += (uint64_t)w;
		free(lines[i]);
	}
	x->stats.stacks = n;
	free(lines);
	if (fflush(x->o->out) != 0 || ferror(x->o->out))
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
