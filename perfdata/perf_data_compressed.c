/* SPDX-License-Identifier: MIT */
/* perf record -z: the sideband written as COMPRESSED records, zstd data
 * that perf compresses as one stream per file (a record's data does not
 * end a frame, and a record inside may go on in the next one's).  Each
 * file's stream is decompressed once, when the first COMPRESSED record is
 * met, and kept: the records in it are read like the file's, their
 * offset the COMPRESSED record's they start in.
 */
#include "perf_data_priv.h"
#include "vmpt/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

/* What one COMPRESSED record holds: [start, end) of its file's stream. */
struct pd_zchunk {
	unsigned part;
	uint64_t offset;	/* the record's, in its file */
	uint64_t start, end;
};

struct vmpt_perf_zstd {
	struct pd_zchunk *chunks;	/* in file order, part by part */
	size_t nr, cap;
	uint8_t **streams;		/* a stream per file (0: the data section) */
	uint64_t *lens;
	/* The first record that did not decompress: its error, again when
	 * the walk gets there (what came before it is read).
	 */
	int bad_err;
	unsigned bad_part;
	uint64_t bad_offset;
	char bad_msg[512];
};

/* A COMPRESSED record's zstd data: after the header, or (COMPRESSED2,
 * newer perf) after its size, in a record padded to 8 bytes.
 */
static int zdata(struct vmpt_perf_data *pd, const uint8_t *rec, uint64_t offset,
		 const uint8_t **data, size_t *size)
{
	uint16_t rsize = pd_u16(rec + 6);

	if (pd_u32(rec) == VMPT_PERF_RECORD_COMPRESSED) {
		*data = rec + 8;
		*size = rsize - 8u;
		return 0;
	}
	if (rsize < 16 || pd_u64(rec + 8) > rsize - 16u)
		return pd_error(pd, offset, VMPT_ERR_FORMAT,
				"COMPRESSED2 record: data size %llu in a record of %u bytes",
				rsize < 16 ? 0ULL : (unsigned long long)pd_u64(rec + 8), rsize);
	*data = rec + 16;
	*size = (size_t)pd_u64(rec + 8);
	return 0;
}

static int add_chunk(struct vmpt_perf_zstd *z, const struct pd_zchunk *c)
{
	if (z->nr == z->cap) {
		size_t cap = z->cap ? 2 * z->cap : 64;
		struct pd_zchunk *v = realloc(z->chunks, cap * sizeof(*v));

		if (!v)
			return -VMPT_ERR_NOMEM;
		z->chunks = v;
		z->cap = cap;
	}
	z->chunks[z->nr++] = *c;
	return 0;
}

/* Decompress in into the part's stream, growing it. */
static int inflate(struct vmpt_perf_data *pd, ZSTD_DCtx *dctx, unsigned part,
		   uint64_t offset, const uint8_t *data, size_t size, size_t *cap)
{
	struct vmpt_perf_zstd *z = pd->zstd;
	ZSTD_inBuffer in = { data, size, 0 };

	for (;;) {
		ZSTD_outBuffer out;
		size_t ret;

		if (*cap - z->lens[part] < ZSTD_DStreamOutSize()) {
			size_t ncap = *cap ? 2 * *cap : 4 * ZSTD_DStreamOutSize();
			uint8_t *v = realloc(z->streams[part], ncap);

			if (!v)
				return -VMPT_ERR_NOMEM;
			z->streams[part] = v;
			*cap = ncap;
		}
		out = (ZSTD_outBuffer){ z->streams[part], *cap, z->lens[part] };
		ret = ZSTD_decompressStream(dctx, &out, &in);
		if (ZSTD_isError(ret))
			return pd_error(pd, offset, VMPT_ERR_FORMAT,
					"COMPRESSED record: zstd: %s", ZSTD_getErrorName(ret));
		z->lens[part] = out.pos;
		/* done once the input is used and the output had room left */
		if (in.pos == in.size && out.pos < out.size)
			return 0;
	}
}

/* A record inside may go on in the next COMPRESSED record: the records of
 * chunk i are those that start from its first record boundary on, up to
 * the next chunk's.  Where a record is bad the walk stops: the chunks
 * after it start where their data does (reading them reports it).
 */
static void record_bounds(struct vmpt_perf_zstd *z, size_t first, unsigned part)
{
	const uint8_t *d = z->streams[part];
	uint64_t len = z->lens[part], p = 0;
	int ok = 1;

	for (size_t i = first; i < z->nr; i++) {
		struct pd_zchunk *c = &z->chunks[i];

		while (ok && p < c->start) {
			if (len - p < 8 || pd_u16(d + p + 6) < 8 || pd_u16(d + p + 6) > len - p)
				ok = 0;
			else
				p += pd_u16(d + p + 6);
		}
		c->start = p > c->start ? p : c->start;
		if (i > first)
			z->chunks[i - 1].end = c->start;
	}
	if (z->nr > first)
		z->chunks[z->nr - 1].end = len;
}

/* The COMPRESSED records of one file, in order, into its stream.  A bad
 * record ends it (the stream cannot go on past it), kept to be reported
 * when the walk gets there; so does a bad record of any type, which the
 * walk reports itself.
 */
static int expand_part(struct vmpt_perf_data *pd, unsigned part)
{
	struct vmpt_perf_zstd *z = pd->zstd;
	struct vmpt_perf_cursor cur;
	ZSTD_DCtx *dctx = ZSTD_createDCtx();
	size_t cap = 0, first = z->nr;
	int ret = 0;

	if (!dctx)
		return -VMPT_ERR_NOMEM;
	vmpt_perf_cursor_init(pd, &cur);
	if (part) {
		cur.part = part;
		cur.pos = 0;
		cur.end = pd->parts[part - 1].size;
	}
	while (cur.pos < cur.end) {
		struct pd_zchunk c = { part, cur.pos, 0, 0 };
		const uint8_t *rec, *data = NULL;
		size_t size = 0;
		uint32_t type;

		if (pd_step(pd, &cur) <= 0) {
			pd->errmsg[0] = 0;
			break;
		}
		rec = pd->cur_file->data + c.offset;
		type = pd_u32(rec);
		if (type != VMPT_PERF_RECORD_COMPRESSED && type != VMPT_PERF_RECORD_COMPRESSED2)
			continue;
		ret = zdata(pd, rec, c.offset, &data, &size);
		c.start = z->lens[part];
		if (ret == 0)
			ret = inflate(pd, dctx, part, c.offset, data, size, &cap);
		c.end = z->lens[part];
		if (ret == 0)
			ret = add_chunk(z, &c);
		if (ret < 0)
			break;
	}
	ZSTD_freeDCtx(dctx);
	record_bounds(z, first, part);
	if (ret == -VMPT_ERR_FORMAT && !z->bad_err) {
		z->bad_err = ret;
		z->bad_part = part;
		z->bad_offset = pd->err_offset;
		snprintf(z->bad_msg, sizeof(z->bad_msg), "%s", pd->errmsg);
	}
	if (ret == -VMPT_ERR_FORMAT) {
		pd->errmsg[0] = 0;
		ret = 0;
	}
	return ret;
}

int pd_zstd_expand(struct vmpt_perf_data *pd)
{
	const struct vmpt_file *walking = pd->cur_file;
	unsigned nparts = (unsigned)pd->nr_parts + 1;
	int ret = 0;

	if (pd->zstd)
		return 0;
	pd->zstd = calloc(1, sizeof(*pd->zstd));
	if (pd->zstd) {
		pd->zstd->streams = calloc(nparts, sizeof(*pd->zstd->streams));
		pd->zstd->lens = calloc(nparts, sizeof(*pd->zstd->lens));
	}
	if (!pd->zstd || !pd->zstd->streams || !pd->zstd->lens)
		return -VMPT_ERR_NOMEM;
	for (unsigned part = 0; part < nparts && ret == 0; part++)
		ret = expand_part(pd, part);
	pd->cur_file = walking;
	return ret;
}

int pd_zstd_chunk(struct vmpt_perf_data *pd, unsigned part, uint64_t offset,
		  const uint8_t **stream, uint64_t *len, uint64_t *start, uint64_t *end)
{
	const struct vmpt_perf_zstd *z;
	size_t lo = 0, hi;
	int ret = pd_zstd_expand(pd);

	if (ret < 0)
		return ret;
	z = pd->zstd;
	hi = z->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct pd_zchunk *c = &z->chunks[mid];

		if (c->part < part || (c->part == part && c->offset < offset))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == z->nr || z->chunks[lo].part != part || z->chunks[lo].offset != offset) {
		if (z->bad_err && z->bad_part == part && z->bad_offset == offset) {
			snprintf(pd->errmsg, sizeof(pd->errmsg), "%s", z->bad_msg);
			pd->err_offset = offset;
			return z->bad_err;
		}
		return -VMPT_ERR_NOT_FOUND;
	}
	*stream = z->streams[part];
	*len = z->lens[part];
	*start = z->chunks[lo].start;
	*end = z->chunks[lo].end;
	return 0;
}

int pd_zstd_failure(struct vmpt_perf_data *pd, unsigned part)
{
	const struct vmpt_perf_zstd *z = pd->zstd;

	if (!z || !z->bad_err || z->bad_part != part)
		return 0;
	snprintf(pd->errmsg, sizeof(pd->errmsg), "%s", z->bad_msg);
	pd->err_offset = z->bad_offset;
	return z->bad_err;
}

void pd_zstd_free(struct vmpt_perf_data *pd)
{
	struct vmpt_perf_zstd *z = pd->zstd;

	if (!z)
		return;
	for (size_t i = 0; z->streams && i <= pd->nr_parts; i++)
		free(z->streams[i]);
	free(z->streams);
	free(z->lens);
	free(z->chunks);
	free(z);
	pd->zstd = NULL;
}
