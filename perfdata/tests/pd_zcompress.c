/* SPDX-License-Identifier: MIT */
/* pd-zcompress IN OUT [SPLIT [corrupt]]: a copy of a file-mode perf.data
 * with its records (not the AUXTRACE ones) written as perf record -z writes
 * them: COMPRESSED records of one zstd stream for the whole file, flushed,
 * never ended, per record.  The records are cut every SPLIT bytes (default
 * 4096) wherever that falls, so records go on from one COMPRESSED record
 * into the next.  The AUXTRACE index (HEADER_AUXTRACE) follows the moved
 * records.  corrupt: one byte of the third COMPRESSED record's data
 * flipped.  Prints the
 * offset of each COMPRESSED record written.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define AUXTRACE 71
#define COMPRESSED 81
#define FEAT_AUXTRACE 18
#define FEAT_COMPRESSED 27
#define MAX_DATA (65535 - 8)

static uint8_t *in, *out;
static size_t in_len, out_len, out_cap;
static ZSTD_CCtx *cctx;
static unsigned n_written, corrupt;
static uint64_t *old_aux, *new_aux;
static size_t n_aux;

static uint64_t u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static void emit(const void *p, size_t n)
{
	if (out_len + n > out_cap) {
		out_cap = 2 * (out_len + n);
		out = realloc(out, out_cap);
		if (!out)
			exit(2);
	}
	memcpy(out + out_len, p, n);
	out_len += n;
}

/* One piece of the record bytes into COMPRESSED records. */
static void compress_piece(const uint8_t *p, size_t n)
{
	ZSTD_inBuffer src = { p, n, 0 };
	size_t left;

	do {
		uint8_t buf[8 + MAX_DATA];
		ZSTD_outBuffer dst = { buf + 8, MAX_DATA, 0 };
		uint16_t size;

		left = ZSTD_compressStream2(cctx, &dst, &src, ZSTD_e_flush);
		if (ZSTD_isError(left))
			exit(3);
		if (!dst.pos)
			continue;
		size = (uint16_t)(8 + dst.pos);
		memset(buf, 0, 8);
		buf[0] = COMPRESSED;
		memcpy(buf + 6, &size, 2);
		n_written++;
		if (corrupt && n_written == 3)
			buf[8 + dst.pos / 2] ^= 0x5a;
		printf("%#zx\n", out_len);
		emit(buf, size);
	} while (left || src.pos < src.size);
}

static void flush_records(const uint8_t *p, size_t n, size_t split)
{
	for (size_t off = 0; off < n; off += split)
		compress_piece(p + off, n - off < split ? n - off : split);
}

int main(int argc, char **argv)
{
	size_t split = argc > 3 ? strtoul(argv[3], NULL, 0) : 4096;
	uint64_t data_off, data_size, pos, end, run = 0, new_size;
	FILE *f;

	if (argc < 3 || !split)
		return 2;
	corrupt = argc > 4 && !strcmp(argv[4], "corrupt");
	f = fopen(argv[1], "rb");
	if (!f || fseek(f, 0, SEEK_END) || (in_len = (size_t)ftell(f)) < 104)
		return 2;
	rewind(f);
	in = malloc(in_len);
	if (!in || fread(in, 1, in_len, f) != in_len)
		return 2;
	fclose(f);
	cctx = ZSTD_createCCtx();
	data_off = u64(in + 40);
	data_size = u64(in + 48);
	end = data_off + data_size;
	emit(in, data_off);
	old_aux = calloc(in_len / 48 + 1, 8);
	new_aux = calloc(in_len / 48 + 1, 8);
	for (pos = run = data_off; pos < end;) {
		uint32_t type;
		uint16_t size;
		uint64_t payload = 0;

		memcpy(&type, in + pos, 4);
		memcpy(&size, in + pos + 6, 2);
		if (type == AUXTRACE) {
			flush_records(in + run, pos - run, split);
			payload = u64(in + pos + 8);
			old_aux[n_aux] = pos;
			new_aux[n_aux++] = out_len;
			emit(in + pos, size + payload);
			run = pos + size + payload;
		}
		pos += size + payload;
	}
	flush_records(in + run, end - run, split);
	new_size = out_len - data_off;
	put64(out + 48, new_size);
	/* the feature sections after the data, and perf's HEADER_COMPRESSED
	 * (perf reads COMPRESSED records only with it: its mmap_len sizes
	 * perf's buffer)
	 */
	{
		uint64_t ent[256][2], old_table = end, old_body, new_table = out_len, delta;
		uint32_t comp[5] = { 0, 1 /* zstd */, 1, 2, 1u << 20 };
		unsigned nfeat = 0, n = 0;
		int add = !(in[72 + FEAT_COMPRESSED / 8] >> (FEAT_COMPRESSED % 8) & 1);

		for (unsigned bit = 0; bit < 256; bit++)
			nfeat += in[72 + bit / 8] >> (bit % 8) & 1;
		old_body = old_table + 16 * nfeat;
		delta = new_table + 16 * (nfeat + add) - old_body;
		for (unsigned bit = 0; bit < 256; bit++) {
			if (bit == FEAT_COMPRESSED && add) {
				ent[n][0] = new_table + 16 * (nfeat + add) + (in_len - old_body);
				ent[n++][1] = sizeof(comp);
			}
			if (!(in[72 + bit / 8] >> (bit % 8) & 1))
				continue;
			ent[n][0] = u64(in + old_table + 16 * (n - (bit > FEAT_COMPRESSED && add))) +
				    delta;
			ent[n][1] = u64(in + old_table + 16 * (n - (bit > FEAT_COMPRESSED && add)) + 8);
			n++;
		}
		emit(ent, 16 * n);
		emit(in + old_body, in_len - old_body);
		if (add) {
			emit(comp, sizeof(comp));
			out[72 + FEAT_COMPRESSED / 8] |= 1 << (FEAT_COMPRESSED % 8);
		}
		/* the AUXTRACE index names the moved AUXTRACE records */
		for (unsigned k = 0, bit = 0; bit < 256; bit++) {
			uint8_t *s, *e;

			if (!(out[72 + bit / 8] >> (bit % 8) & 1))
				continue;
			if (bit != FEAT_AUXTRACE) {
				k++;
				continue;
			}
			s = out + ent[k][0];
			e = s + ent[k][1];
			while (s + 8 <= e) {
				uint64_t nr = u64(s);

				s += 8;
				for (uint64_t i = 0; i < nr && s + 16 <= e; i++, s += 16)
					for (size_t j = 0; j < n_aux; j++)
						if (u64(s) == old_aux[j]) {
							put64(s, new_aux[j]);
							break;
						}
			}
			k++;
		}
	}
	f = fopen(argv[2], "wb");
	if (!f || fwrite(out, 1, out_len, f) != out_len || fclose(f))
		return 2;
	return 0;
}
