/* SPDX-License-Identifier: MIT */
/* perf script's srccode field: after a sample's line, the text of its
 * source line, "|%-8d %s\n", read from the path the binary's DWARF names
 * (perf's map__fprintf_srccode and srccode.c).  As perf, a thread's
 * sample on the line its last one printed prints none.
 */
#include "vmpt_script_int.h"
#include "vmpt/file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* A source file read (perf's srcfile), its lines found once. */
struct src_file {
	char *path;
	struct vmpt_file map;
	int ok;			/* read: perf opened and mapped it */
	size_t *lines;		/* offsets of the lines' starts */
	size_t nlines;
};

/* The last line a thread printed (perf's struct srccode_state). */
struct src_state {
	int used;
	int mpid, tid;
	const struct src_file *file;
	unsigned line;
};

struct script_srccode {
	struct src_file **files;
	size_t nfiles;
	struct src_state *states;	/* open addressing, power-of-2 size */
	size_t cap, n;
};

/* The lines of a file, as perf's countlines and fill_lines count them:
 * one more after the last newline when text follows it.
 */
static int index_lines(struct src_file *sf)
{
	const char *d = (const char *)sf->map.data;
	size_t n = 0, k = 0;

	for (size_t i = 0; i < sf->map.size; i++)
		n += d[i] == '\n';
	if (sf->map.size && d[sf->map.size - 1] != '\n')
		n++;
	sf->lines = malloc((n ? n : 1) * sizeof(*sf->lines));
	if (!sf->lines)
		return -1;
	if (n)
		sf->lines[k++] = 0;
	for (size_t i = 0; i < sf->map.size && k < n; i++)
		if (d[i] == '\n')
			sf->lines[k++] = i + 1;
	sf->nlines = n;
	return 0;
}

/* The file at path, read at its first use: a regular file only (a
 * binary's DWARF names it). NULL: no memory.
 */
static struct src_file *src_file(struct script_srccode *sc, const char *path)
{
	struct src_file *sf, **v;
	int fd;

	for (size_t i = 0; i < sc->nfiles; i++)
		if (!strcmp(sc->files[i]->path, path))
			return sc->files[i];
	v = realloc(sc->files, (sc->nfiles + 1) * sizeof(*v));
	if (!v)
		return NULL;
	sc->files = v;
	if (!(sf = calloc(1, sizeof(*sf))) || !(sf->path = strdup(path))) {
		free(sf);
		return NULL;
	}
	v[sc->nfiles++] = sf;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		sf->ok = vmpt_file_map_fd(&sf->map, fd, path) == 0 && index_lines(sf) == 0;
		close(fd);
	}
	return sf;
}

static size_t slot_of(int tid, size_t cap)
{
	return (size_t)((unsigned)tid * 0x9e3779b1u) & (cap - 1);
}

/* The state of thread (mpid, tid): a new one is zero.  NULL: no memory. */
static struct src_state *state_of(struct script_srccode *sc, int mpid, int tid)
{
	size_t i;

	if (sc->n + 1 > sc->cap / 2) {
		size_t cap = sc->cap ? sc->cap * 2 : 64;
		struct src_state *t = calloc(cap, sizeof(*t));

		if (!t)
			return NULL;
		for (size_t k = 0; k < sc->cap; k++) {
			if (!sc->states[k].used)
				continue;
			i = slot_of(sc->states[k].tid, cap);
			while (t[i].used)
				i = (i + 1) & (cap - 1);
			t[i] = sc->states[k];
		}
		free(sc->states);
		sc->states = t;
		sc->cap = cap;
	}
	for (i = slot_of(tid, sc->cap); sc->states[i].used; i = (i + 1) & (sc->cap - 1))
		if (sc->states[i].tid == tid && sc->states[i].mpid == mpid)
			return &sc->states[i];
	sc->states[i].used = 1;
	sc->states[i].mpid = mpid;
	sc->states[i].tid = tid;
	sc->n++;
	return &sc->states[i];
}

void script_print_srccode(struct vmpt_consumer *c, const struct vmpt_section *sec, uint64_t ip,
			  int guest)
{
	struct script_srccode *sc;
	const struct src_file *sf;
	struct src_state *st;
	const char *path, *text, *end;
	unsigned line;
	size_t len;

	if (!sec || script_srccode_line(c, sec, ip, &path, &line) < 0)
		return;
	pthread_mutex_lock(&c->s->lock);
	if (!(sc = c->s->srccode))
		sc = c->s->srccode = calloc(1, sizeof(*sc));
	/* A guest task's tid is of its machine. */
	st = sc ? state_of(sc, guest ? c->task.machine_pid : 0, c->task.tid) : NULL;
	sf = !st || (st->file && st->line == line && !strcmp(st->file->path, path)) ? NULL :
	     src_file(sc, path);
	if (sf && sf->ok && line >= 1 && line <= sf->nlines) {
		text = (const char *)sf->map.data + sf->lines[line - 1];
		len = sf->map.size - sf->lines[line - 1];
		if ((end = memchr(text, '\n', len)))
			len = (size_t)(end - text);
		script_outf(c, "|%-8u ", line);
		script_out_mem(c, text, len);
		script_out_char(c, '\n');
		st->file = sf;
		st->line = line;
	}
	pthread_mutex_unlock(&c->s->lock);
}

void script_srccode_free(struct vmpt_script *s)
{
	struct script_srccode *sc = s->srccode;

	if (!sc)
		return;
	for (size_t i = 0; i < sc->nfiles; i++) {
		free(sc->files[i]->path);
		free(sc->files[i]->lines);
		vmpt_file_unmap(&sc->files[i]->map);
		free(sc->files[i]);
	}
	free(sc->files);
	free(sc->states);
	free(sc);
	s->srccode = NULL;
}
