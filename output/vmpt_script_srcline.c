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

/* snprintf's count as a length in cap bytes (0: an error). */
static size_t fitted(int n, size_t cap)
{
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* perf's __get_srcline without a line: "dso[addr]" by the dso's short
 * name.
 */
static size_t dso_at(char *buf, size_t cap, const char *dso, uint64_t addr)
{
	const char *slash = strrchr(dso, '/');

	return fitted(snprintf(buf, cap, "%s[%" PRIx64 "]", slash ? slash + 1 : dso, addr), cap);
}

/* addr2line's answer at ip in sec: 0 with its file and line, else -1;
 * *addr: the address asked (perf's map__rip_2objdump: the kernel's as
 * they are).
 */
static int line_at(struct vmpt_consumer *c, const struct vmpt_section *sec, uint64_t ip,
		   uint64_t *addr, const char **file, unsigned *line)
{
	struct vmpt_srcline *sl = srcline_of(c, sec);

	*addr = !sl || sec->name[0] == '[' ? ip :
		vmpt_srcline_addr(sl, sec->file_offset + (ip - sec->vaddr));
	return sl && vmpt_srcline_find(sl, *addr, file, line) == 0 ? 0 : -1;
}

/* A recorded mapping with no code here (the kernel known by its symbols,
 * data, a heap, a binary missing): no line, its dso and the address in
 * it (as it is in memory of no file).
 */
static size_t mapping_srcline(struct vmpt_consumer *c, uint64_t ip, char *buf, size_t cap)
{
	struct vmpt_map_ref map;

	if (!c->o->map_of ||
	    c->o->map_of(c->o->map_ctx, c->task.pid, c->task.space, ip, &map) < 0)
		return 0;
	return dso_at(buf, cap, map.name, map.no_file ? ip : map.pgoff + (ip - map.start));
}

size_t script_srcline(struct vmpt_consumer *c, const struct vmpt_section *sec, uint64_t ip,
		      int guest, char *buf, size_t cap)
{
	const char *file;
	uint64_t addr;
	unsigned line;
	size_t n;

	if (!sec)
		return guest ? 0 : mapping_srcline(c, ip, buf, cap);
	/* perf asks addr2line nothing of its vdso (an offset in it). */
	if (!strcmp(sec->name, "[vdso]"))
		return dso_at(buf, cap, sec->name, sec->file_offset + (ip - sec->vaddr));
	if (line_at(c, sec, ip, &addr, &file, &line) < 0)
		return dso_at(buf, cap, sec->name, addr);
	n = fitted(snprintf(buf, cap, "%s:%u", file, line), cap);
	/* perf prints none of its SRCLINE_UNKNOWN, "??:0". */
	return strncmp(buf, "??:0", 4) ? n : 0;
}

size_t script_srcline_record(struct vmpt_consumer *c, const struct vmpt_section *sec,
			     uint64_t ip, char *buf, size_t cap)
{
	const char *file;
	uint64_t addr;
	unsigned line;

	if (!sec || sec->name[0] == '[' || line_at(c, sec, ip, &addr, &file, &line) < 0)
		return 0;
	return fitted(snprintf(buf, cap, "%s:%u", file, line), cap);
}

int script_srccode_line(struct vmpt_consumer *c, const struct vmpt_section *sec, uint64_t ip,
			const char **path, unsigned *line)
{
	struct vmpt_srcline *sl;

	/* perf's dso__name: none for the kernel, the vdso, a JIT's map */
	if (sec->name[0] == '[' || !strncmp(sec->name, "/tmp/perf-", 10) ||
	    !(sl = srcline_of(c, sec)))
		return -1;
	return vmpt_srcline_path(sl, vmpt_srcline_addr(sl, sec->file_offset + (ip - sec->vaddr)),
				 path, line) == 0 ? 0 : -1;
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
