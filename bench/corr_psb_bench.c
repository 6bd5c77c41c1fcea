/* SPDX-License-Identifier: MIT */
/* corr-psb-bench FILE: what reading only the PSB+s of a trace would cost
 * (bench/README.md, "VM time correlation"), against the bound of touching
 * every byte.  The file (a perf.data or a raw trace) is read into memory
 * first; then, each timed on its own (CPU time, best of 3):
 *   sum:  every 8-byte word added up (memory bandwidth: any pass's floor);
 *   psb:  the PSBs found by their 8-byte-aligned words (a PSB is 02 82 x 8:
 *         every one holds an aligned word 0x8202820282028202 or
 *         0x0282028202820282), SSE2, 16 bytes a step;
 *   psb+: and each PSB+ decoded up to its PSBEND (TSC, TMA, PIP, VMCS
 *         counted): what a learning from the PSB+s alone reads.
 * Prints MB/s of each and the counts.
 */
#include "vmpt/packet.h"

#include <emmintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PSB_A 0x8202820282028202ull
#define PSB_B 0x0282028202820282ull

static double cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t sum_words(const uint8_t *b, size_t n)
{
	uint64_t s = 0, w;

	for (size_t i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, b + i, 8);
		s += w;
	}
	return s;
}

static const uint8_t psb_bytes[16] = {
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
};

/* The PSB holding the aligned word at w (or -1): the earliest start. */
static long psb_at(const uint8_t *b, size_t n, size_t w)
{
	for (size_t s = w >= 15 ? w - 15 : 0; s <= w && s + 16 <= n; s++)
		if (!memcmp(b + s, psb_bytes, 16))
			return (long)s;
	return -1;
}

struct counts {
	uint64_t psbs, tsc, tma, pip, vmcs;
};

static void psb_plus(const uint8_t *b, size_t n, size_t at, struct counts *c)
{
	const uint8_t *p = b + at + 16, *end = b + n;
	unsigned ctx = VMPT_CTX_NONE;
	struct vmpt_packet pkt;
	int len;

	while ((len = vmpt_pkt_decode(p, end, ctx, &pkt)) > 0) {
		ctx = vmpt_pkt_next_ctx(ctx, &pkt);
		p += len;
		if (pkt.type == VMPT_PKT_TSC)
			c->tsc++;
		else if (pkt.type == VMPT_PKT_TMA)
			c->tma++;
		else if (pkt.type == VMPT_PKT_PIP)
			c->pip++;
		else if (pkt.type == VMPT_PKT_VMCS)
			c->vmcs++;
		else if (pkt.type == VMPT_PKT_PSBEND)
			break;
	}
}

static void scan(const uint8_t *b, size_t n, int parse, struct counts *c)
{
	const __m128i a = _mm_set1_epi64x((long long)PSB_A);
	const __m128i bb = _mm_set1_epi64x((long long)PSB_B);
	long last = -1;

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i + 16 <= n; i += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(b + i));
		__m128i m = _mm_or_si128(_mm_cmpeq_epi32(v, a), _mm_cmpeq_epi32(v, bb));
		int mask = _mm_movemask_epi8(m);

		if (__builtin_expect(!mask, 1))
			continue;
		for (size_t w = i; w < i + 16; w += 8) {
			uint64_t x;
			long s;

			memcpy(&x, b + w, 8);
			if (x != PSB_A && x != PSB_B)
				continue;
			s = psb_at(b, n, w);
			if (s < 0 || s == last)
				continue;
			last = s;
			c->psbs++;
			if (parse)
				psb_plus(b, n, (size_t)s, c);
		}
	}
}

int main(int argc, char **argv)
{
	FILE *f;
	uint8_t *b;
	long n;
	double best[3] = { 1e9, 1e9, 1e9 };
	struct counts c = { 0 };
	uint64_t sink = 0;

	if (argc != 2 || !(f = fopen(argv[1], "rb"))) {
		fprintf(stderr, "usage: corr-psb-bench FILE\n");
		return 2;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	b = malloc((size_t)n + 64);
	if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "corr-psb-bench: %s: cannot read\n", argv[1]);
		return 1;
	}
	fclose(f);
	for (int run = 0; run < 3; run++) {
		double t0 = cpu_now(), t1, t2, t3;

		sink += sum_words(b, (size_t)n);
		t1 = cpu_now();
		scan(b, (size_t)n, 0, &c);
		t2 = cpu_now();
		scan(b, (size_t)n, 1, &c);
		t3 = cpu_now();
		best[0] = t1 - t0 < best[0] ? t1 - t0 : best[0];
		best[1] = t2 - t1 < best[1] ? t2 - t1 : best[1];
		best[2] = t3 - t2 < best[2] ? t3 - t2 : best[2];
	}
	printf("%.1f MiB: sum %.0f MB/s (%.3f s), psb %.0f MB/s (%.3f s), psb+ %.0f MB/s "
	       "(%.3f s); %llu PSBs, %llu TSC, %llu TMA, %llu PIP, %llu VMCS (%llx)\n",
	       (double)n / 1048576, (double)n / 1048576 / best[0], best[0],
	       (double)n / 1048576 / best[1], best[1], (double)n / 1048576 / best[2], best[2],
	       (unsigned long long)c.psbs, (unsigned long long)c.tsc,
	       (unsigned long long)c.tma, (unsigned long long)c.pip,
	       (unsigned long long)c.vmcs, (unsigned long long)(sink & 0xf));
	free(b);
	return 0;
}
