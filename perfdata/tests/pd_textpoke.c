/* SPDX-License-Identifier: MIT */
/* pd-textpoke IN OUT ADDR OLDHEX NEWHEX [cut|late]: a copy of a file-mode
 * perf.data with a TEXT_POKE record (kernel code at ADDR changed from the
 * bytes OLDHEX to NEWHEX, cpumode kernel) first in its data section, its
 * sample_id trailer (time included) copied from the ITRACE_START record,
 * so perf takes it as recorded when tracing started.  The feature sections and
 * the AUXTRACE index follow the moved data.  cut: the record's old_len
 * says 64 bytes more than it holds (a crafted file); late: the trailer of
 * the last record, a poke while tracing.  Prints the record's
 * offset.
 */
#include "vmpt/perf_data.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FEAT_AUXTRACE 18

static uint64_t u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static size_t unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;
	unsigned v;

	while (s[0] && s[1] && n < max && sscanf(s, "%2x", &v) == 1) {
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

/* The sample_id trailer of the first ITRACE_START (tracing starts: the
 * kernel's maps are known by then), else of the first record with one;
 * late: of the last record with one.
 */
static size_t find_trailer(const char *path, uint8_t *out, int late)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	size_t n = 0;

	if (vmpt_perf_open(&pd, path) < 0)
		return 0;
	vmpt_perf_cursor_init(&pd, &cur);
	while (vmpt_perf_next(&pd, &cur, &ev) > 0) {
		if (ev.type >= 64 || ev.type == PERF_RECORD_SAMPLE || !ev.attr ||
		    !(ev.sid.present & PERF_SAMPLE_TIME))
			continue;
		if (n && ev.type != PERF_RECORD_ITRACE_START && !late)
			continue;
		n = vmpt_perf_sample_id_size(&ev.attr->attr);
		memcpy(out, ev.raw + ev.size - n, n);
		if (ev.type == PERF_RECORD_ITRACE_START && !late)
			break;
	}
	vmpt_perf_close(&pd);
	return n;
}

int main(int argc, char **argv)
{
	uint8_t *in, rec[512] = { 0 }, bytes[128], trailer[64];
	uint64_t data_off, data_size, end, pos;
	size_t in_len, n_old, n_new, tsize, body;
	uint16_t old_len, new_len, size;
	unsigned k = 0;
	FILE *f;

	if (argc < 6)
		return 2;
	const char *mode = argc > 6 ? argv[6] : "";

	tsize = find_trailer(argv[1], trailer, !strcmp(mode, "late"));
	n_old = unhex(argv[4], bytes, 64);
	n_new = unhex(argv[5], bytes + n_old, 64);
	f = fopen(argv[1], "rb");
	if (!tsize || !f || fseek(f, 0, SEEK_END) || (in_len = (size_t)ftell(f)) < 104)
		return 2;
	rewind(f);
	in = malloc(in_len);
	if (!in || fread(in, 1, in_len, f) != in_len)
		return 2;
	fclose(f);

	body = (24 + n_old + n_new + 7) & ~(size_t)7;
	size = (uint16_t)(body + tsize);
	old_len = (uint16_t)(n_old + (!strcmp(mode, "cut") ? 64 : 0));
	new_len = (uint16_t)n_new;
	rec[0] = PERF_RECORD_TEXT_POKE;
	rec[4] = PERF_RECORD_MISC_KERNEL;
	memcpy(rec + 6, &size, 2);
	put64(rec + 8, strtoull(argv[3], NULL, 0));
	memcpy(rec + 16, &old_len, 2);
	memcpy(rec + 18, &new_len, 2);
	memcpy(rec + 20, bytes, n_old + n_new);
	memcpy(rec + body, trailer, tsize);

	data_off = u64(in + 40);
	data_size = u64(in + 48);
	end = data_off + data_size;
	put64(in + 48, data_size + size);
	/* Feature sections (after the data) and the AUXTRACE index move. */
	for (unsigned bit = 0; bit < 256; bit++) {
		uint8_t *e = in + end + 16 * k;

		if (!(in[72 + bit / 8] >> (bit % 8) & 1))
			continue;
		if (bit == FEAT_AUXTRACE)
			for (pos = u64(e); pos + 8 <= u64(e) + u64(e + 8); ) {
				uint64_t nr = u64(in + pos);

				pos += 8;
				for (uint64_t i = 0; i < nr; i++, pos += 16)
					put64(in + pos, u64(in + pos) + size);
			}
		put64(e, u64(e) + size);
		k++;
	}
	f = fopen(argv[2], "wb");
	if (!f || fwrite(in, 1, data_off, f) != data_off || fwrite(rec, 1, size, f) != size ||
	    fwrite(in + data_off, 1, in_len - data_off, f) != in_len - data_off || fclose(f))
		return 2;
	printf("%#" PRIx64 "\n", data_off);
	free(in);
	return 0;
}
