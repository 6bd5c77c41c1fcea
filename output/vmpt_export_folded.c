/* SPDX-License-Identifier: MIT */
/* vmpt export --format=folded: Brendan Gregg's folded stacks, one line
 * per stack, "comm;caller;callee COUNT", as flamegraph.pl and speedscope
 * read them.  A stack's count is what ran with it on top (instructions,
 * time or samples); guest code is on its vCPU thread under "[guest]".
 */
#include "vmpt_export_int.h"
#include "vmpt/error.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct folded {
	struct export_map counts;	/* (call path, thread) -> struct count */
	struct count { const struct export_call_path *cp; const struct export_thread *t;
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
	struct count *c;

	while (x->o->max_depth && cp->depth > x->o->max_depth)
		cp = cp->parent;
	c = export_map_get(&f->counts, (uint64_t)(uintptr_t)cp, (uint64_t)(uintptr_t)t, 0);
	if (!c) {
		struct count **v = realloc(f->v, (f->n + 1) * sizeof(*v));

		c = calloc(1, sizeof(*c));
		if (v)
			f->v = v;
		if (!v || !c || export_map_put(&f->counts, (uint64_t)(uintptr_t)cp,
					       (uint64_t)(uintptr_t)t, 0, c) < 0) {
			free(c);
			export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
			return;
		}
		c->cp = cp;
		c->t = t;
		f->v[f->n++] = c;
	}
	c->n += w;
}

/* "comm;f1;f2" of a count. */
static char *stack_text(const struct count *c)
{
	const struct export_call_path *cp;
	const struct export_thread *t = c->t;
	size_t len = 0, cap = 256;
	char *buf = malloc(cap), name[256];
	const char *parts[2] = { t->host ? t->host->name : t->name, t->host ? "[guest]" : NULL };
	const struct export_call_path **path;
	size_t n = 0;

	if (!buf)
		return NULL;
	path = malloc((c->cp->depth + 1) * sizeof(*path));
	if (!path) {
		free(buf);
		return NULL;
	}
	for (cp = c->cp; cp && cp->parent; cp = cp->parent)
		path[n++] = cp;
	buf[0] = 0;
	for (size_t i = 0; i < 2 + n; i++) {
		const char *p;
		size_t l;

		if (i < 2) {
			p = parts[i];
			if (!p)
				continue;
			if (i == 0) {
				snprintf(name, sizeof(name), "%s-%d", p && *p ? p : "[unknown]",
					 t->tid);
				p = name;
			}
		} else {
			export_frame_name(path[n - 1 - (i - 2)], name, sizeof(name));
			p = name;
		}
		l = strlen(p);
		if (len + l + 2 > cap) {
			char *b;

			cap = (len + l + 2) * 2;
			b = realloc(buf, cap);
			if (!b) {
				free(buf);
				free(path);
				return NULL;
			}
			buf = b;
		}
		if (len)
			buf[len++] = ';';
		/* folded stacks split on ';' and end at a space and count */
		for (size_t k = 0; k < l; k++)
			buf[len++] = p[k] == ';' ? ':' : p[k];
		buf[len] = 0;
	}
	free(path);
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
