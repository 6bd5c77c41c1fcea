/* SPDX-License-Identifier: MIT */
/* Instruction-flow decoding speed: vmpt (1 thread and -j) against libipt's
 * instruction and block decoders, on the same trace and page-cache image.
 *
 * usage: flow-bench [--pagecache PREFIX] [--elf FILE@BASE] [--retcomp]
 *                   [--filter A-B] [--repeat N] [-j N] [--runs N]
 *                   [--ipt files,iscache,memory] [--vmpt-only] [--batches-only]
 *                   TRACE
 *
 * N copies of the trace are laid end to end (each starts with a PSB) to
 * make a big trace out of a small real one.  vmpt takes items in batches
 * (vmpt_flow_next_items, with TNT runs), and once more one item per call
 * (vmpt_flow_next, which walks every block; --batches-only skips it, and
 * libipt, for callgrind).  With --runs N each
 * single-threaded decoder runs N times, interleaved, and its best CPU time
 * counts (the machine is shared); -j 0 skips the threaded run.
 */
#include "vmpt/error.h"
#include "vmpt/file.h"
#include "vmpt/flow.h"
#include "vmpt/image.h"

#include <getopt.h>
#include <intel-pt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Single-threaded runs are timed in CPU time, so other load on the machine
 * does not count; -j runs in wall time, which is what they improve.
 */
static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

static double wall(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

struct piece {
	struct vmpt_flow_config cfg;
	uint64_t start;
	uint64_t insns;
	int one_by_one;		/* vmpt_flow_next instead of vmpt_flow_next_items */
};

static void *vmpt_piece(void *arg)
{
	struct piece *p = arg;
	struct vmpt_flow *dec = vmpt_flow_new(&p->cfg);
	const struct vmpt_flow_item *it;
	struct vmpt_flow_item one;
	size_t n;

	if (!dec)
		return NULL;
	vmpt_flow_sync_at(dec, p->start, p->cfg.stop_offset);
	if (p->one_by_one) {
		while (vmpt_flow_next(dec, &one) == 0)
			if (one.kind == VMPT_FLOW_BLOCK)
				p->insns += one.ninsn;
	}
	while (!p->one_by_one && vmpt_flow_next_items(dec, &it, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (it[i].kind == VMPT_FLOW_BLOCK)
				p->insns += it[i].ninsn;
	vmpt_flow_free(dec);
	return NULL;
}

static uint64_t run_vmpt(const struct vmpt_flow_config *base, int jobs, int one_by_one)
{
	uint64_t *psbs, total = 0;
	size_t n;
	struct piece *ps;
	struct vmpt_bcache *cache;
	pthread_t *th;

	vmpt_flow_psb_offsets(base->begin, base->end, &psbs, &n);
	if ((size_t)jobs > n)
		jobs = n ? (int)n : 1;
	ps = calloc((size_t)jobs, sizeof(*ps));
	th = calloc((size_t)jobs, sizeof(*th));
	/* One block cache for all threads, new for every run: each run
	 * disassembles the code it meets once.
	 */
	cache = vmpt_bcache_new();
	for (int k = 0; k < jobs; k++) {
		ps[k].cfg = *base;
		ps[k].cfg.cache = cache;
		ps[k].one_by_one = one_by_one;
		ps[k].start = k ? psbs[(size_t)k * n / (size_t)jobs] : 0;
		ps[k].cfg.stop_offset = k + 1 < jobs ? psbs[(size_t)(k + 1) * n / (size_t)jobs] : 0;
		pthread_create(&th[k], NULL, vmpt_piece, &ps[k]);
	}
	for (int k = 0; k < jobs; k++) {
		pthread_join(th[k], NULL);
		total += ps[k].insns;
	}
	vmpt_bcache_free(cache);
	free(ps);
	free(th);
	free(psbs);
	return total;
}

/* libipt gets the same code three ways (issue 18: its best, and the way
 * the bench gave it before):
 * - files: a file section per 4 KiB page of a page cache, no cache; libipt
 *   maps and unmaps them as the decoder moves (slow: syscalls);
 * - iscache: what ptxed does: an image section cache holding every section
 *   mapped, with the pages that are contiguous in the file and in memory
 *   merged into one section;
 * - memory: a read-memory callback over the code in memory (vmpt's image,
 *   adjacent pages already merged), binary search by address.
 */
enum ipt_src { IPT_FILES, IPT_ISCACHE, IPT_MEMORY, IPT_NCONF };
static const char *const ipt_src_name[IPT_NCONF] = { "files", "iscache", "memory" };

struct ipt_image_src {
	const char *pagecache[8];
	size_t n_pc;
	const struct vmpt_image *elfs;
	/* The memory config: vmpt's image's sections sorted by address. */
	const struct vmpt_section **secs;
	unsigned n_secs;
	struct pt_image_section_cache *iscache;
};

struct page { uint64_t addr, off; };

static int cmp_section(const void *a, const void *b)
{
	const struct vmpt_section *x = *(const struct vmpt_section *const *)a;
	const struct vmpt_section *y = *(const struct vmpt_section *const *)b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

static int cmp_page(const void *a, const void *b)
{
	const struct page *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int add_pagecache(struct pt_image *image, const char *prefix,
			 struct pt_image_section_cache *iscache)
{
	char apath[4096], dpath[4096];
	struct page *pages = NULL;
	size_t n = 0, cap = 0;
	uint64_t addr;
	FILE *f;

	snprintf(apath, sizeof(apath), "%s.addr", prefix);
	snprintf(dpath, sizeof(dpath), "%s.dump", prefix);
	f = fopen(apath, "rb");
	if (!f)
		return -1;
	while (fread(&addr, sizeof(addr), 1, f) == 1) {
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			pages = realloc(pages, cap * sizeof(*pages));
			if (!pages)
				return -1;
		}
		pages[n] = (struct page){ addr, n * 4096 };
		n++;
	}
	fclose(f);
	if (!iscache) {
		for (size_t i = 0; i < n; i++)
			pt_image_add_file(image, dpath, pages[i].off, 4096, NULL, pages[i].addr);
		free(pages);
		return 0;
	}
	qsort(pages, n, sizeof(*pages), cmp_page);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && pages[j].addr == pages[j - 1].addr + 4096 &&
		     pages[j].off == pages[j - 1].off + 4096; j++)
			;
		int isid = pt_iscache_add_file(iscache, dpath, pages[i].off,
					       (j - i) * 4096, pages[i].addr);

		if (isid >= 0)
			pt_image_add_cached(image, iscache, isid, NULL);
	}
	free(pages);
	return 0;
}

static int read_memory(uint8_t *buf, size_t size, const struct pt_asid *asid,
		       uint64_t ip, void *ctx)
{
	const struct ipt_image_src *src = ctx;
	unsigned lo = 0, hi = src->n_secs;

	(void)asid;
	/* The last section starting at or below ip. */
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (src->secs[mid]->vaddr <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -pte_nomap;
	const struct vmpt_section *s = src->secs[lo - 1];

	if (ip - s->vaddr >= s->size)
		return -pte_nomap;
	if (size > s->size - (ip - s->vaddr))
		size = s->size - (ip - s->vaddr);
	memcpy(buf, s->data + (ip - s->vaddr), size);
	return (int)size;
}

static void ipt_image(struct pt_image *image, const struct ipt_image_src *src,
		      enum ipt_src how)
{
	if (how == IPT_MEMORY) {
		pt_image_set_callback(image, read_memory, (void *)src);
		return;
	}
	for (size_t i = 0; i < src->n_pc; i++)
		add_pagecache(image, src->pagecache[i], how == IPT_ISCACHE ? src->iscache : NULL);
	for (unsigned i = 0; i < vmpt_image_count(src->elfs); i++) {
		const struct vmpt_section *s = vmpt_image_section(src->elfs, i);

		if (how == IPT_ISCACHE) {
			int isid = pt_iscache_add_file(src->iscache, s->name, s->file_offset,
						       s->size, s->vaddr);

			if (isid >= 0)
				pt_image_add_cached(image, src->iscache, isid, NULL);
		} else {
			pt_image_add_file(image, s->name, s->file_offset, s->size, NULL,
					  s->vaddr);
		}
	}
}

static void ipt_config(struct pt_config *c, const uint8_t *b, size_t size,
		       uint64_t fa, uint64_t fb)
{
	pt_config_init(c);
	c->begin = (uint8_t *)b;
	c->end = (uint8_t *)b + size;
	if (fa || fb) {
		c->addr_filter.config.ctl.addr0_cfg = 1;
		c->addr_filter.addr0_a = fa;
		c->addr_filter.addr0_b = fb;
	}
}

static uint64_t run_ipt_insn(const uint8_t *b, size_t size,
			     const struct ipt_image_src *src, enum ipt_src how,
			     uint64_t fa, uint64_t fb)
{
	struct pt_config c;
	struct pt_insn_decoder *d;
	uint64_t n = 0;

	ipt_config(&c, b, size, fa, fb);
	d = pt_insn_alloc_decoder(&c);
	ipt_image(pt_insn_get_image(d), src, how);
	for (;;) {
		int st = pt_insn_sync_forward(d);

		if (st < 0) {
			if (st == -pte_eos)
				break;
			continue;
		}
		for (;;) {
			struct pt_insn insn;

			while (st & pts_event_pending) {
				struct pt_event ev;

				st = pt_insn_event(d, &ev, sizeof(ev));
				if (st < 0)
					break;
			}
			if (st < 0 || (st & pts_eos))
				break;
			st = pt_insn_next(d, &insn, sizeof(insn));
			if (insn.iclass != ptic_error)
				n++;
			if (st < 0)
				break;
		}
		if (st == -pte_eos)
			break;
	}
	pt_insn_free_decoder(d);
	return n;
}

static uint64_t run_ipt_block(const uint8_t *b, size_t size,
			      const struct ipt_image_src *src, enum ipt_src how,
			      uint64_t fa, uint64_t fb)
{
	struct pt_config c;
	struct pt_block_decoder *d;
	uint64_t n = 0;

	ipt_config(&c, b, size, fa, fb);
	d = pt_blk_alloc_decoder(&c);
	ipt_image(pt_blk_get_image(d), src, how);
	for (;;) {
		int st = pt_blk_sync_forward(d);

		if (st < 0) {
			if (st == -pte_eos)
				break;
			continue;
		}
		for (;;) {
			struct pt_block blk;

			while (st & pts_event_pending) {
				struct pt_event ev;

				st = pt_blk_event(d, &ev, sizeof(ev));
				if (st < 0)
					break;
			}
			if (st < 0 || (st & pts_eos))
				break;
			st = pt_blk_next(d, &blk, sizeof(blk));
			n += blk.ninsn;
			if (st < 0)
				break;
		}
		if (st == -pte_eos)
			break;
	}
	pt_blk_free_decoder(d);
	return n;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pagecache", required_argument, NULL, 'p' },
		{ "elf", required_argument, NULL, 'e' },
		{ "retcomp", no_argument, NULL, 'r' },
		{ "filter", required_argument, NULL, 'f' },
		{ "repeat", required_argument, NULL, 'n' },
		{ "vmpt-only", no_argument, NULL, 'v' },
		{ "runs", required_argument, NULL, 'R' },
		{ "batches-only", no_argument, NULL, 'B' },
		{ "ipt", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	struct vmpt_flow_config cfg = { 0 };
	struct vmpt_asid any = vmpt_asid_any();
	struct vmpt_image *img = vmpt_image_new();
	struct ipt_image_src src = { .elfs = vmpt_image_new() };
	struct vmpt_file f;
	uint64_t fa = 0, fb = 0, n;
	size_t repeat = 1, size;
	uint8_t *buf;
	int jobs = 2, vmpt_only = 0, batches_only = 0, runs = 1, c, ret;
	unsigned ipt_mask = (1u << IPT_NCONF) - 1;
	double t, mb, t_v1, t_v1w, t_vj, c_vj;

	while ((c = getopt_long(argc, argv, "j:", longopts, NULL)) != -1) {
		char *at;

		ret = 0;
		switch (c) {
		case 'p':
			if (src.n_pc == 8)
				return 2;
			src.pagecache[src.n_pc++] = optarg;
			ret = vmpt_image_add_pagecache(img, optarg, &any);
			break;
		case 'e':
			at = strrchr(optarg, '@');
			if (!at)
				return 2;
			*at = '\0';
			ret = vmpt_image_add_elf(img, optarg, strtoull(at + 1, NULL, 0), &any);
			if (!ret)
				ret = vmpt_image_add_elf((struct vmpt_image *)src.elfs, optarg,
							 strtoull(at + 1, NULL, 0), &any);
			break;
		case 'r': cfg.retcomp = 1; break;
		case 'f':
			at = strchr(optarg, '-');
			if (!at)
				return 2;
			fa = strtoull(optarg, NULL, 0);
			fb = strtoull(at + 1, NULL, 0);
			break;
		case 'n': repeat = strtoull(optarg, NULL, 0); break;
		case 'j': jobs = atoi(optarg); break;
		case 'v': vmpt_only = 1; break;
		case 'R': runs = atoi(optarg); break;
		case 'B': batches_only = vmpt_only = 1; break;
		case 'i':
			ipt_mask = 0;
			for (int how = 0; how < IPT_NCONF; how++)
				if (strstr(optarg, ipt_src_name[how]))
					ipt_mask |= 1u << how;
			break;
		default: return 2;
		}
		if (ret < 0) {
			fprintf(stderr, "%s: %s\n", optarg, vmpt_strerror(ret));
			return 1;
		}
	}
	if (optind + 1 != argc || !repeat || jobs < 0 || runs < 1) {
		fprintf(stderr, "usage: %s [--pagecache PREFIX] [--elf FILE@BASE] [--retcomp] "
			"[--filter A-B] [--repeat N] [-j N] [--runs N] [--ipt files,iscache,memory] "
			"[--vmpt-only] [--batches-only] TRACE\n", argv[0]);
		return 2;
	}
	if (vmpt_file_map(&f, argv[optind]) < 0) {
		fprintf(stderr, "%s: cannot read\n", argv[optind]);
		return 1;
	}
	size = f.size * repeat;
	buf = malloc(size);
	if (!buf)
		return 1;
	for (size_t i = 0; i < repeat; i++)
		memcpy(buf + i * f.size, f.data, f.size);
	mb = (double)size / 1e6;
	cfg.begin = buf;
	cfg.end = buf + size;
	cfg.image = img;
	if (fa || fb) {
		cfg.filter_a[0] = fa;
		cfg.filter_b[0] = fb;
		cfg.n_filters = 1;
	}

	/* The single-threaded decoders, interleaved, best of runs each:
	 * vmpt batches, vmpt one item per call, then libipt's block and
	 * instruction decoders in each configuration asked for.
	 */
	enum { D_VMPT, D_ONE, D_IPT, D_N = D_IPT + 2 * IPT_NCONF };
	double best[D_N] = { 0 };
	uint64_t insns[D_N] = { 0 };

	if (!vmpt_only) {
		src.n_secs = (unsigned)vmpt_image_count(img);
		src.secs = malloc(src.n_secs * sizeof(*src.secs));
		if (!src.secs)
			return 1;
		for (unsigned i = 0; i < src.n_secs; i++)
			src.secs[i] = vmpt_image_section(img, i);
		qsort(src.secs, src.n_secs, sizeof(*src.secs), cmp_section);
		/* Every section stays mapped: a cache as big as needed. */
		src.iscache = pt_iscache_alloc(NULL);
		pt_iscache_set_limit(src.iscache, UINT64_MAX);
	}
	for (int r = 0; r < runs; r++) {
		for (int d = 0; d < D_N; d++) {
			int how = (d - D_IPT) / 2;

			if (d >= D_IPT && (vmpt_only || !(ipt_mask & (1u << how))))
				continue;
			if (d == D_ONE && batches_only)
				continue;
			t = now();
			if (d == D_VMPT || d == D_ONE)
				n = run_vmpt(&cfg, 1, d == D_ONE);
			else if ((d - D_IPT) % 2 == 0)
				n = run_ipt_block(buf, size, &src, how, fa, fb);
			else
				n = run_ipt_insn(buf, size, &src, how, fa, fb);
			t = now() - t;
			if (!best[d] || t < best[d])
				best[d] = t;
			insns[d] = n;
		}
	}
	for (int d = 0; d < D_N; d++) {
		char name[40];

		if (!best[d])
			continue;
		if (d == D_VMPT)
			snprintf(name, sizeof(name), "vmpt 1 thread");
		else if (d == D_ONE)
			snprintf(name, sizeof(name), "  one item per call");
		else
			snprintf(name, sizeof(name), "libipt %s, %s",
				 (d - D_IPT) % 2 ? "insn" : "block", ipt_src_name[(d - D_IPT) / 2]);
		printf("%-22s %12" PRIu64 " insns %8.3f s %9.1f MB/s %6.0f Minsn/s (CPU, best of %d)\n",
		       name, insns[d], best[d], mb / best[d], (double)insns[d] / best[d] / 1e6, runs);
	}
	t_v1 = best[D_VMPT];
	if (!vmpt_only) {
		/* Fair: libipt's best of the configurations its authors
		 * recommend (iscache, memory); files is the old bench's.
		 */
		double fb_blk = 0, fb_insn = 0;

		for (int how = IPT_ISCACHE; how < IPT_NCONF; how++) {
			double tb = best[D_IPT + 2 * how], ti = best[D_IPT + 2 * how + 1];

			if (tb && (!fb_blk || tb < fb_blk))
				fb_blk = tb;
			if (ti && (!fb_insn || ti < fb_insn))
				fb_insn = ti;
		}
		printf("trace %.1f MB; vmpt is %.1fx libipt block, %.1fx libipt insn (fair: best of "
		       "iscache, memory)", mb, fb_blk / t_v1, fb_insn / t_v1);
		if (best[D_IPT])
			printf("; %.1fx libipt block with files", best[D_IPT] / t_v1);
		printf("\n");
		pt_iscache_free(src.iscache);
		free(src.secs);
	}
	if (jobs > 0) {
		t = wall();
		run_vmpt(&cfg, 1, 0);
		t_v1w = wall() - t;
		t = wall();
		c_vj = now();
		n = run_vmpt(&cfg, jobs, 0);
		t_vj = wall() - t;
		c_vj = now() - c_vj;
		/* On a loaded machine the wall time says little; CPU time shows
		 * what the threads cost together (1 thread: t_v1).
		 */
		printf("vmpt -j %-14d %12" PRIu64 " insns %8.3f s %9.1f MB/s (wall; 1 thread %.3f s, "
		       "%.2fx; CPU %.3f s, %.2fx of 1 thread)\n",
		       jobs, n, t_vj, mb / t_vj, t_v1w, t_v1w / t_vj, c_vj, c_vj / t_v1);
	}
	vmpt_image_free(img);
	vmpt_image_free((struct vmpt_image *)src.elfs);
	free(buf);
	vmpt_file_unmap(&f);
	return 0;
}
