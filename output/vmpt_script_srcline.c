/* SPDX-License-Identifier: MIT */
/* perf script's srcline field: where a sample's code is in the source,
 * per stream, each binary's DWARF opened once (vmpt/srcline.h).
 */
#include "vmpt_script_int.h"
#include "vmpt/image.h"
#include "vmpt/file.h"
#include "vmpt/srcline.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The binaries of one stream's samples: few, so a list. */
struct script_srclines {
	struct srcline_of {
		const struct vmpt_file *file;
		struct vmpt_srcline *sl;
	} *v;
	size_t n;
	const struct vmpt_section *last_sec;	/* and its entry */
	struct vmpt_srcline *last;
};

static struct vmpt_srcline *srcline_of(struct vmpt_consumer *c, const struct vmpt_section *sec)
{
	struct script_srclines *t = c->srclines;
	const struct vmpt_file *f;
	struct srcline_of *v;

	if (!t) {
		t = c->srclines = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
	}
	if (t->last_sec == sec)
		return t->last;
	f = vmpt_image_section_file(c->o->image, sec);
	if (!f)
		return NULL;
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i].file == f) {
			t->last_sec = sec;
			t->last = t->v[i].sl;
			return t->last;
		}
	}
	v = realloc(t->v, (t->n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	t->v = v;
	v[t->n].file = f;
	v[t->n].sl = vmpt_srcline_open(f->path, f->data, f->size);
	if (!v[t->n].sl)
		return NULL;
	t->last_sec = sec;
	t->last = v[t->n++].sl;
	return t->last;
}

size_t script_srcline(struct vmpt_consumer *c, const struct vmpt_section *sec, uint64_t ip,
		      char *buf, size_t cap)
{
	struct vmpt_srcline *sl;
	const char *file, *slash;
	uint64_t addr;
	unsigned line;
	int n;

	if (!sec)
		return 0;
	/* perf asks addr2line nothing of a dso named "[...]" (its vdso's
	 * address as an offset in it).
	 */
	if (!strcmp(sec->name, "[vdso]")) {
		n = snprintf(buf, cap, "[vdso][%" PRIx64 "]", sec->file_offset + (ip - sec->vaddr));
		return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
	}
	sl = srcline_of(c, sec);
	/* perf's map__rip_2objdump: the kernel's addresses as they are. */
	addr = !sl || sec->name[0] == '[' ? ip :
	       vmpt_srcline_addr(sl, sec->file_offset + (ip - sec->vaddr));
	if (sl && vmpt_srcline_find(sl, addr, &file, &line) == 0) {
		n = snprintf(buf, cap, "%s:%u", file, line);
		/* perf prints none of its SRCLINE_UNKNOWN, "??:0". */
		if (!strncmp(buf, "??:0", 4))
			return 0;
	} else {
		/* perf's __get_srcline without a line: "dso[addr]" by the
		 * dso's short name.
		 */
		slash = strrchr(sec->name, '/');
		n = snprintf(buf, cap, "%s[%" PRIx64 "]", slash ? slash + 1 : sec->name, addr);
	}
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

size_t script_srcline_record(struct vmpt_consumer *c, const struct vmpt_section *sec,
			     uint64_t ip, char *buf, size_t cap)
{
	struct vmpt_srcline *sl = sec && sec->name[0] != '[' ? srcline_of(c, sec) : NULL;
	const char *file;
	unsigned line;
	int n;

	if (!sl || vmpt_srcline_find(sl, vmpt_srcline_addr(sl, sec->file_offset + (ip - sec->vaddr)),
				     &file, &line) < 0)
		return 0;
	n = snprintf(buf, cap, "%s:%u", file, line);
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

size_t script_inlines(struct vmpt_consumer *c, const struct vmpt_section *sec, uint64_t ip,
		      const struct vmpt_inline_frame **frames)
{
	struct vmpt_srcline *sl = srcline_of(c, sec);

	if (!sl || sec->name[0] == '[')
		return 0;
	return vmpt_srcline_inlines(sl, vmpt_srcline_addr(sl, sec->file_offset +
							 (ip - sec->vaddr)), frames);
}

void script_srclines_free(struct vmpt_consumer *c)
{
	struct script_srclines *t = c->srclines;

	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		vmpt_srcline_free(t->v[i].sl);
	free(t->v);
	free(t);
	c->srclines = NULL;
}
