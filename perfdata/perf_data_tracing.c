/* SPDX-License-Identifier: MIT */
/* perf's tracing data cut into its parts and made from them
 * (vmpt/tracing_data.h), in the order perf's tracing_data_get writes them:
 *
 *   "\027\010\104tracing" version\0 big_endian:1 long_size:1 page_size:4
 *   "header_page\0" size:8 data   "header_event\0" size:8 data
 *   count:4 { size:8 format }              ftrace's own events
 *   count:4 { system\0 count:4 { size:8 format } }
 *   size:4 kallsyms   size:4 printk formats   (0.6 on) size:8 cmdlines
 *
 * Numbers are in the recording machine's byte order.
 */
#include "vmpt/tracing_data.h"
#include "vmpt/error.h"
#include "perf_data_write.h"

#include <stdlib.h>
#include <string.h>

static const uint8_t magic[10] = { 23, 8, 68, 't', 'r', 'a', 'c', 'i', 'n', 'g' };

struct cursor {
	const uint8_t *d;
	uint64_t size, pos;
	uint64_t at;		/* where the part being read starts */
	const char *what;	/* that part, for errors */
	int swap;
};

static int take(struct cursor *c, uint64_t n, const uint8_t **out)
{
	if (n > c->size - c->pos)
		return -VMPT_ERR_FORMAT;
	*out = c->d + c->pos;
	c->pos += n;
	return 0;
}

static int number(struct cursor *c, unsigned n, uint64_t *v)
{
	const uint8_t *p;

	if (take(c, n, &p) < 0)
		return -VMPT_ERR_FORMAT;
	*v = 0;
	for (unsigned i = 0; i < n; i++)
		*v |= (uint64_t)p[c->swap ? n - 1 - i : i] << (8 * i);
	return 0;
}

/* A NUL-terminated string. */
static int string(struct cursor *c, const char **s)
{
	c->at = c->pos;
	const uint8_t *nul = memchr(c->d + c->pos, 0, c->size - c->pos);

	if (!nul)
		return -VMPT_ERR_FORMAT;
	*s = (const char *)c->d + c->pos;
	c->pos = (uint64_t)(nul - c->d) + 1;
	return 0;
}

/* A part after its size field of n bytes. */
static int blob(struct cursor *c, unsigned n, struct vmpt_tracing_blob *b)
{
	uint64_t at = c->pos;
	int ret = number(c, n, &b->size) < 0 ? -VMPT_ERR_FORMAT : take(c, b->size, &b->data);

	c->at = at;
	return ret;
}

/* A header file: its name, then a part with an 8-byte size. */
static int header(struct cursor *c, const char *name, struct vmpt_tracing_blob *b)
{
	const char *s;

	c->what = name;
	if (string(c, &s) < 0 || strcmp(s, name))
		return -VMPT_ERR_FORMAT;
	return blob(c, 8, b);
}

/* count format files of system. */
static int formats(struct cursor *c, const char *system, struct vmpt_tracing_data *td)
{
	uint64_t count;

	c->what = "the count of a system's formats";
	c->at = c->pos;
	if (number(c, 4, &count) < 0)
		return -VMPT_ERR_FORMAT;
	/* Each takes 8 bytes at least: a count beyond that is a lie. */
	if (count > (c->size - c->pos) / 8)
		return -VMPT_ERR_FORMAT;
	c->what = "an event format";
	for (uint64_t i = 0; i < count; i++) {
		struct vmpt_tracing_format *f;

		if ((td->n_formats & (td->n_formats - 1)) == 0) {
			size_t cap = td->n_formats ? 2 * td->n_formats : 16;

			f = realloc(td->formats, cap * sizeof(*f));
			if (!f)
				return -VMPT_ERR_NOMEM;
			td->formats = f;
		}
		f = &td->formats[td->n_formats];
		f->system = system;
		if (blob(c, 8, &f->text) < 0)
			return -VMPT_ERR_FORMAT;
		td->n_formats++;
	}
	return 0;
}

static int parse(struct cursor *c, struct vmpt_tracing_data *td)
{
	const uint8_t *p;
	uint64_t v, systems;
	int ret;

	c->what = "the magic \\027\\010Dtracing";
	if (take(c, sizeof(magic), &p) < 0 || memcmp(p, magic, sizeof(magic)))
		return -VMPT_ERR_FORMAT;
	c->what = "the version";
	if (string(c, &td->version) < 0)
		return -VMPT_ERR_FORMAT;
	c->what = "the byte order, long and page sizes";
	c->at = c->pos;
	if (take(c, 2, &p) < 0)
		return -VMPT_ERR_FORMAT;
	td->big_endian = p[0];
	td->long_size = p[1];
	c->swap = td->big_endian;
	if (number(c, 4, &v) < 0 || !v)
		return -VMPT_ERR_FORMAT;
	td->page_size = (uint32_t)v;
	if (header(c, "header_page", &td->header_page) < 0 ||
	    header(c, "header_event", &td->header_event) < 0)
		return -VMPT_ERR_FORMAT;
	if ((ret = formats(c, "ftrace", td)) < 0)
		return ret;
	c->what = "the count of systems";
	c->at = c->pos;
	if (number(c, 4, &systems) < 0)
		return -VMPT_ERR_FORMAT;
	for (uint64_t i = 0; i < systems; i++) {
		const char *system;

		c->what = "a system's name";
		if (string(c, &system) < 0)
			return -VMPT_ERR_FORMAT;
		if ((ret = formats(c, system, td)) < 0)
			return ret;
	}
	c->what = "kallsyms";
	if (blob(c, 4, &td->kallsyms) < 0)
		return -VMPT_ERR_FORMAT;
	c->what = "the printk formats";
	if (blob(c, 4, &td->printk) < 0)
		return -VMPT_ERR_FORMAT;
	/* perf compares the version as a number: 0.6 and later have them. */
	c->what = "the saved command lines";
	if (strtod(td->version, NULL) >= 0.6 && blob(c, 8, &td->cmdlines) < 0)
		return -VMPT_ERR_FORMAT;
	return 0;
}

int vmpt_tracing_data_parse(const uint8_t *data, uint64_t size, struct vmpt_tracing_data *td,
			    uint64_t *err_off, const char **what)
{
	struct cursor c = { .d = data, .size = size };
	int ret;

	memset(td, 0, sizeof(*td));
	ret = parse(&c, td);
	if (ret < 0) {
		*err_off = c.at;
		*what = c.what;
		vmpt_tracing_data_free(td);
	}
	return ret;
}

void vmpt_tracing_data_free(struct vmpt_tracing_data *td)
{
	free(td->formats);
	memset(td, 0, sizeof(*td));
}

static void put_blob(struct pw_buf *b, unsigned size_bytes, const struct vmpt_tracing_blob *blob)
{
	if (size_bytes == 4)
		pw_put32(b, (uint32_t)blob->size);
	else
		pw_put64(b, blob->size);
	pw_put(b, blob->data, (size_t)blob->size);
}

static int is_ftrace(const struct vmpt_tracing_format *f)
{
	return !strcmp(f->system, "ftrace");
}

/* The formats of f's system, f the first of them: count, then each. */
static void put_system(struct pw_buf *b, const struct vmpt_tracing_data *td, size_t first)
{
	uint32_t n = 0;

	for (size_t i = first; i < td->n_formats; i++)
		n += !strcmp(td->formats[i].system, td->formats[first].system);
	pw_put32(b, n);
	for (size_t i = first; i < td->n_formats; i++)
		if (!strcmp(td->formats[i].system, td->formats[first].system))
			put_blob(b, 8, &td->formats[i].text);
}

/* Is format i the first of its system? */
static int first_of_system(const struct vmpt_tracing_data *td, size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (!strcmp(td->formats[k].system, td->formats[i].system))
			return 0;
	return 1;
}

int vmpt_tracing_data_build(const struct vmpt_tracing_data *td, uint8_t **data, size_t *size)
{
	struct pw_buf b = { 0 };
	uint8_t order[2] = { td->big_endian, td->long_size };
	const struct vmpt_tracing_format *ftrace = NULL;
	uint32_t systems = 0;

	pw_put(&b, magic, sizeof(magic));
	pw_put(&b, td->version, strlen(td->version) + 1);
	pw_put(&b, order, 2);
	pw_put32(&b, td->page_size);
	pw_put(&b, "header_page", 12);
	put_blob(&b, 8, &td->header_page);
	pw_put(&b, "header_event", 13);
	put_blob(&b, 8, &td->header_event);
	for (size_t i = 0; i < td->n_formats && !ftrace; i++)
		if (is_ftrace(&td->formats[i]))
			ftrace = &td->formats[i];
	if (ftrace)
		put_system(&b, td, (size_t)(ftrace - td->formats));
	else
		pw_put32(&b, 0);
	for (size_t i = 0; i < td->n_formats; i++)
		systems += !is_ftrace(&td->formats[i]) && first_of_system(td, i);
	pw_put32(&b, systems);
	for (size_t i = 0; i < td->n_formats; i++) {
		if (is_ftrace(&td->formats[i]) || !first_of_system(td, i))
			continue;
		pw_put(&b, td->formats[i].system, strlen(td->formats[i].system) + 1);
		put_system(&b, td, i);
	}
	put_blob(&b, 4, &td->kallsyms);
	put_blob(&b, 4, &td->printk);
	if (strtod(td->version, NULL) >= 0.6)
		put_blob(&b, 8, &td->cmdlines);
	if (b.nomem) {
		free(b.p);
		return -VMPT_ERR_NOMEM;
	}
	*data = b.p;
	*size = b.len;
	return 0;
}
