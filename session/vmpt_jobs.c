/* SPDX-License-Identifier: MIT */
/* Parallel decoding of one trace (vmpt/jobs.h): the trace is cut at PSBs
 * into pieces of about 4 KiB (at least 4 per thread); worker threads,
 * each with its own decoder and one block cache for all, decode pieces
 * ahead of the reader into item arrays; the reader takes them in trace
 * order and mends each seam so that the items are one decoder's:
 *
 * - the piece before a seam stops at its PSB: it decodes the PSB+ (its
 *   status events and the PSB item, as one decoder does there) and, when
 *   tracing is on, walks on to the PSB+'s FUP, the last block cut there;
 * - the piece after it starts at that PSB with a fresh decoder: what it
 *   makes of the PSB+ is dropped (the piece before has it), and so is its
 *   "tracing starts" when tracing was on at the seam;
 * - the cut block and the piece's first block, which one decoder walks as
 *   one, are joined;
 * - a piece starts as a new decoder (in the host, 64-bit mode, no time):
 *   when the piece before ends in a state its PSB+ does not restore (the
 *   machine and mode while tracing is off, the time's wraps, a TSC behind
 *   the CYC estimate), the piece is decoded again taking that state over
 *   (vmpt_flow_carry): after the PSB+, or before it when the piece before
 *   had lost sync there.
 *
 * The host and guest address spaces follow the sideband as for one
 * decoder: set
 * after each new item time, and at a piece's start as at its PSB+'s TSC.
 */
#include "vmpt/jobs.h"
#include "vmpt/error.h"
#include "vmpt/packet.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A piece's items (88 bytes, ~3 per trace byte on dense traces) stay
 * until the piece after it is decoded too: 2 x jobs + 1 pieces of
 * 4 KiB hold ~1 MB each, which the reader finds still in a cache (with
 * 32 KiB pieces, -j 2 took 20-30% more wall time and twice the memory).
 */
#define PIECE_BYTES (4u << 10)
#define SPARE_MAX 8
/* cfg.release: the PSB scan drops the trace every RELEASE_STEP bytes. */
#define RELEASE_STEP (8u << 20)

struct piece {
	uint64_t start, stop;		/* trace offsets of its PSBs (stop 0: the end) */
	struct vmpt_flow_item *items;
	size_t n, cap;
	size_t skip;			/* leading items the seam before it drops */
	/* isize of its last block, joined at the seam: kept to the end, as
	 * a consumer may hold the item (vmpt_flow_item's isize lives as
	 * long as the decoder).
	 */
	uint8_t *sizes;
	int enabled;			/* tracing was on at its end */
	/* Machine and mode after its first PSB+, and at its end. */
	struct vmpt_flow_carry start_carry, end_carry;
	int ret;			/* 0, or what stopped its decoding */
	int done;
};

/* Blocks the consumer folds on the decoding threads (vmpt_jobs_new). */
struct folder {
	vmpt_fold_fn fn;
	const struct vmpt_consumer *c;
};

struct worker {
	struct vmpt_jobs *j;
	struct vmpt_flow *dec;
	pthread_t th;
	int running;
};

struct vmpt_jobs {
	struct vmpt_flow_config cfg;
	struct vmpt_bcache *own_cache;
	vmpt_space_fn space_at;
	void *ctx;
	struct piece *p;
	size_t np;
	size_t next;			/* the next piece to decode */
	size_t cur;			/* the piece being handed on */
	int handed;			/* cur's items went out */
	size_t window;			/* pieces decoded ahead of cur at most */
	struct worker *w;
	int nw;
	struct vmpt_flow *redo;		/* the reader's, for pieces decoded again */
	struct vmpt_flow_carry fresh;	/* a new decoder's state */
	/* Item arrays of pieces handed on, for the next pieces: their
	 * pages are touched once, not faulted in again for every piece.
	 */
	struct spare {
		struct vmpt_flow_item *items;
		size_t cap;
	} spare[SPARE_MAX];
	size_t n_spare;
	uint64_t released;		/* trace offset the pages before are dropped */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int quit;
	size_t redone;			/* pieces decoded again at their seam */
	struct folder folder;
};

/* A packet decoder over cfg's trace (a buffer, or parts). */
static void trace_init(struct vmpt_pkt_decoder *pd, const struct vmpt_flow_config *cfg)
{
	if (cfg->n_parts)
		vmpt_pkt_decoder_init_parts(pd, cfg->parts, cfg->n_parts);
	else
		vmpt_pkt_decoder_init(pd, cfg->begin, (size_t)(cfg->end - cfg->begin));
}

static uint64_t trace_size(const struct vmpt_flow_config *cfg)
{
	uint64_t size = (uint64_t)(cfg->end - cfg->begin);

	if (cfg->n_parts)
		size = 0;
	for (size_t i = 0; i < cfg->n_parts; i++)
		size += (uint64_t)(cfg->parts[i].end - cfg->parts[i].begin);
	return size;
}

/* cfg.release: drop the pages of trace offsets [*from, to) that no
 * piece still reads (whole pages; *from moves on to to).
 */
static void release_trace(const struct vmpt_flow_config *cfg, uint64_t *from, uint64_t to)
{
	const uint8_t *base = cfg->n_parts ? cfg->parts[0].begin : cfg->begin;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)(base + *from) + page - 1) & ~(page - 1);
	uintptr_t b = (uintptr_t)(base + to) & ~(page - 1);

	if (!cfg->release || cfg->n_parts > 1 || to <= *from)
		return;
	if (b > a)
		madvise((void *)a, b - a, MADV_DONTNEED);
	*from = to;
}

/* The TSC in the PSB+ at offset off (0: none), the time a piece starts at. */
static uint64_t psb_tsc(const struct vmpt_flow_config *cfg, uint64_t off)
{
	struct vmpt_pkt_decoder pd;
	struct vmpt_packet pkt;

	trace_init(&pd, cfg);
	if (vmpt_pkt_seek(&pd, off) < 0)
		return 0;
	while (vmpt_pkt_next(&pd, &pkt) > 0) {
		if (pkt.type == VMPT_PKT_TSC)
			return pkt.tsc;
		if (pkt.type == VMPT_PKT_PSBEND)
			break;
	}
	return 0;
}

/* The offsets of the trace's PSBs. */
static int psb_offsets(const struct vmpt_flow_config *cfg, uint64_t **offsets, size_t *n)
{
	struct vmpt_pkt_decoder pd;
	uint64_t *o = NULL, released = 0;
	size_t cnt = 0, cap = 0;

	trace_init(&pd, cfg);
	while (vmpt_pkt_sync_forward(&pd) == 0) {
		/* The scan reads the whole trace: keep none of it. */
		if (vmpt_pkt_offset(&pd) - released > RELEASE_STEP)
			release_trace(cfg, &released, vmpt_pkt_offset(&pd));
		if (cnt == cap) {
			uint64_t *t;

			cap = cap ? cap * 2 : 64;
			t = realloc(o, cap * sizeof(*t));
			if (!t) {
				free(o);
				return -VMPT_ERR_NOMEM;
			}
			o = t;
		}
		o[cnt++] = vmpt_pkt_offset(&pd);
	}
	*offsets = o;
	*n = cnt;
	return 0;
}

static int is_event(const struct vmpt_flow_item *it, unsigned ev)
{
	return it->kind == VMPT_FLOW_EVENT && it->ev == ev;
}

static int append(struct piece *p, const struct vmpt_flow_item *it, size_t n)
{
	if (p->cap - p->n < n) {
		size_t cap = p->cap ? p->cap : 4096;
		struct vmpt_flow_item *v;

		while (cap - p->n < n)
			cap *= 2;
		v = realloc(p->items, cap * sizeof(*v));
		if (!v)
			return -VMPT_ERR_NOMEM;
		p->items = v;
		p->cap = cap;
	}
	memcpy(p->items + p->n, it, n * sizeof(*it));
	p->n += n;
	return 0;
}

/* The address spaces a decoder is in (host, guest). */
struct spaces {
	uint64_t host, guest;
};

/* Set the spaces of time tsc on dec when they changed from *cur. */
static void spaces_at(struct vmpt_jobs *j, struct vmpt_flow *dec, uint64_t tsc,
		      struct spaces *cur)
{
	struct spaces s = { 0, 0 };

	s.host = j->space_at(j->ctx, tsc, &s.guest);
	if (s.host != cur->host)
		vmpt_flow_set_host_space(dec, s.host);
	if (s.guest != cur->guest)
		vmpt_flow_set_guest_space(dec, s.guest);
	*cur = s;
}

/* A piece starts in the address spaces of its PSB+'s time (tsc). */
static void set_space(struct vmpt_jobs *j, struct vmpt_flow *dec, const struct piece *p,
		      uint64_t *tsc, struct spaces *cur)
{
	*tsc = 0;
	*cur = (struct spaces){ 0, 0 };
	vmpt_flow_set_host_space(dec, 0);
	vmpt_flow_set_guest_space(dec, 0);
	if (j->space_at && p->start)
		spaces_at(j, dec, *tsc = psb_tsc(&j->cfg, p->start), cur);
}

/* Decode piece p with dec, from a new decoder's state or, with over,
 * taking that over: before its first PSB+ (at_sync) or after it.
 */
/* Items onto p as they are decoded, where f folds the blocks of each run
 * after a block into one item (never before the second block after p's
 * first PSB: the seam before p joins the first).
 */
struct folding {
	struct vmpt_flow_item sum;	/* the block the run follows, or the run */
	int open;			/* sum holds one */
	int seam;			/* -1 before p's first PSB, then its blocks */
};

static int append_folded(struct piece *p, const struct folder *f, struct folding *fs,
			 const struct vmpt_flow_item *it, size_t n)
{
	size_t from = 0, k;

	if (!f->fn)
		return append(p, it, n);
	for (size_t i = 0; i < n; i++) {
		if (fs->open) {
			k = f->fn(f->c, &fs->sum, it + i, n - i);
			i += k;
			from = i;
			if (i == n)
				break;
			if (fs->sum.kind == VMPT_FLOW_FOLDED && append(p, &fs->sum, 1) < 0)
				return -VMPT_ERR_NOMEM;
			fs->open = 0;
		}
		if (fs->seam < 0 && is_event(&it[i], VMPT_EV_PSB))
			fs->seam = 0;
		else if (fs->seam >= 0 && fs->seam < 2 && it[i].kind == VMPT_FLOW_BLOCK)
			fs->seam++;
		if (fs->seam >= 2 && it[i].kind == VMPT_FLOW_BLOCK) {
			if (append(p, it + from, i + 1 - from) < 0)
				return -VMPT_ERR_NOMEM;
			from = i + 1;
			fs->sum = it[i];
			fs->open = 1;
		}
	}
	return append(p, it + from, n - from);
}

static void decode_piece(struct vmpt_jobs *j, struct vmpt_flow *dec, struct piece *p,
			 const struct vmpt_flow_carry *over, int at_sync, const struct folder *f)
{
	const struct vmpt_flow_item *it;
	struct spaces space;
	uint64_t last_time;
	struct folding fs = { .seam = p->start ? -1 : 2 };
	int at_psb = !p->start;
	size_t n, before;
	int ret;

	p->n = 0;
	vmpt_flow_sync_at(dec, p->start, p->stop);
	vmpt_flow_carry_set(dec, over && at_sync ? over : &j->fresh);
	p->start_carry = j->fresh;
	set_space(j, dec, p, &last_time, &space);
	while ((ret = vmpt_flow_next_items(dec, &it, &n)) == 0) {
		before = p->n;
		if (append_folded(p, f, &fs, it, n) < 0) {
			ret = -VMPT_ERR_NOMEM;
			break;
		}
		/* Events come one at a time: at the PSB item the decoder has
		 * read the PSB+ and no further.
		 */
		if (!at_psb && is_event(it, VMPT_EV_PSB)) {
			at_psb = 1;
			vmpt_flow_carry_get(dec, &p->start_carry);
			if (over && !at_sync)
				vmpt_flow_carry_set(dec, over);
		}
		for (size_t i = 0; j->space_at && i < n; i++) {
			if (it[i].time == last_time && (i || before))
				continue;
			last_time = it[i].time;
			spaces_at(j, dec, last_time, &space);
		}
	}
	if (fs.open && fs.sum.kind == VMPT_FLOW_FOLDED && append(p, &fs.sum, 1) < 0)
		ret = -VMPT_ERR_NOMEM;
	p->enabled = vmpt_flow_enabled(dec);
	vmpt_flow_carry_get(dec, &p->end_carry);
	p->ret = ret == -VMPT_ERR_EOS ? 0 : ret;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct vmpt_jobs *j = w->j;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		struct piece *p;

		while (!j->quit && !(j->next < j->np && j->next < j->cur + j->window))
			pthread_cond_wait(&j->cond, &j->lock);
		if (j->quit)
			break;
		p = &j->p[j->next++];
		if (j->n_spare) {
			p->items = j->spare[--j->n_spare].items;
			p->cap = j->spare[j->n_spare].cap;
		}
		pthread_mutex_unlock(&j->lock);
		decode_piece(j, w->dec, p, NULL, 0, &j->folder);
		pthread_mutex_lock(&j->lock);
		p->done = 1;
		pthread_cond_broadcast(&j->cond);
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

/* 1 + the index of a's item for the PSB at b's start, 0 when a had lost
 * sync (an error) there: one decoder then syncs there as b did.
 */
static size_t seam_psb(const struct piece *a, const struct piece *b)
{
	size_t psb;

	for (psb = a->n; psb && !is_event(&a->items[psb - 1], VMPT_EV_PSB); psb--)
		;
	return psb && a->items[psb - 1].payload == b->start ? psb : 0;
}

/* a had lost sync at b's PSB: b's decoder makes that PSB+'s events
 * again in the state a ended in.  When the state after is b's, those
 * events replace b's (a new decoder tells every PIP, say, one decoder
 * only a new one) and b stands: 1.  0: b must be decoded again.
 */
static int redo_psb_plus(struct vmpt_jobs *j, const struct piece *a, struct piece *b)
{
	const struct vmpt_flow_item *it;
	struct vmpt_flow_carry after;
	struct piece pre = { 0 };
	struct spaces space;
	size_t n, psb;
	uint64_t tsc;
	int same = 0;

	for (psb = 0; psb < b->n && !is_event(&b->items[psb], VMPT_EV_PSB); psb++)
		;
	if (psb == b->n)
		return 0;
	vmpt_flow_sync_at(j->redo, b->start, b->stop);
	vmpt_flow_carry_set(j->redo, &a->end_carry);
	set_space(j, j->redo, b, &tsc, &space);
	while (vmpt_flow_next_items(j->redo, &it, &n) == 0 && it->kind == VMPT_FLOW_EVENT &&
	       append(&pre, it, n) == 0) {
		if (is_event(it, VMPT_EV_PSB)) {
			vmpt_flow_carry_get(j->redo, &after);
			same = vmpt_flow_carry_equal(&after, &b->start_carry);
			break;
		}
	}
	if (same && append(&pre, b->items + psb + 1, b->n - psb - 1) == 0) {
		free(b->items);
		b->items = pre.items;
		b->n = pre.n;
		b->cap = pre.cap;
		return 1;
	}
	free(pre.items);
	return 0;
}

/* Before the seam between a and b: decode b again when it started from
 * another state than the one a left (see the top of the file).  Called
 * with the lock held.
 */
static int settle(struct vmpt_jobs *j, const struct piece *a, struct piece *b)
{
	int at_sync = !seam_psb(a, b);

	if (!at_sync && vmpt_flow_carry_settle(&a->end_carry, &b->start_carry, &b->end_carry))
		return 0;
	j->redone++;
	pthread_mutex_unlock(&j->lock);
	if (!j->redo)
		j->redo = vmpt_flow_new(&j->cfg);
	if (j->redo && (!at_sync || !redo_psb_plus(j, a, b)))
		decode_piece(j, j->redo, b, &a->end_carry, at_sync, &j->folder);
	pthread_mutex_lock(&j->lock);
	return j->redo ? 0 : -VMPT_ERR_NOMEM;
}

/* Mend the seam between a and b (see the top of the file). */
static int stitch(struct piece *a, struct piece *b)
{
	struct vmpt_flow_item *cut, *first;
	size_t psb = seam_psb(a, b), i;
	uint32_t n;

	if (!psb)
		return 0;
	for (i = 0; i < b->n && !is_event(&b->items[i], VMPT_EV_PSB); i++)
		;
	if (i == b->n)
		return 0;
	b->skip = i + 1;
	if (a->enabled && b->skip < b->n && is_event(&b->items[b->skip], VMPT_EV_ENABLED) &&
	    b->items[b->skip].payload == VMPT_ENABLED_PSB)
		b->skip++;
	cut = &a->items[a->n - 1];
	first = &b->items[b->skip];
	if (a->n == psb || b->skip == b->n || cut->kind != VMPT_FLOW_BLOCK ||
	    cut->iclass != VMPT_IC_OTHER || cut->taken || first->kind != VMPT_FLOW_BLOCK ||
	    first->ip != cut->to || first->sec != cut->sec || first->mode != cut->mode)
		return 0;
	/* One decoder's block goes from the cut block's start to the first
	 * block's end, or to the most a block holds (the rest then its own).
	 */
	n = cut->ninsn + first->ninsn;
	if (n > VMPT_FLOW_BLOCK_MAX)
		n = VMPT_FLOW_BLOCK_MAX;
	a->sizes = malloc(n);
	if (!a->sizes)
		return -VMPT_ERR_NOMEM;
	memcpy(a->sizes, cut->isize, cut->ninsn);
	memcpy(a->sizes + cut->ninsn, first->isize, n - cut->ninsn);
	if (n == cut->ninsn + first->ninsn) {
		uint64_t ip = cut->ip;

		*cut = *first;
		cut->ip = ip;
		b->skip++;
	} else {
		uint32_t moved = n - cut->ninsn;
		uint64_t end = first->ip;

		for (uint32_t k = 0; k + 1 < moved; k++)
			end += first->isize[k];
		cut->end_ip = end;
		cut->to = end + first->isize[moved - 1];
		cut->time = first->time;
		cut->offset = first->offset;
		first->ip = cut->to;
		first->isize += moved;
		first->ninsn -= moved;
	}
	cut->ninsn = n;
	cut->isize = a->sizes;
	return 0;
}

int vmpt_jobs_worth(const struct vmpt_flow_config *cfg, int jobs)
{
	struct vmpt_pkt_decoder pd;

	/* Two PSBs make two pieces. */
	trace_init(&pd, cfg);
	return jobs > 1 && vmpt_pkt_sync_forward(&pd) == 0 && vmpt_pkt_sync_forward(&pd) == 0;
}

struct vmpt_jobs *vmpt_jobs_new(const struct vmpt_flow_config *cfg, int jobs,
				vmpt_space_fn space_at, void *ctx, vmpt_fold_fn fold,
				const struct vmpt_consumer *c)
{
	struct vmpt_jobs *j = calloc(1, sizeof(*j));
	/* Folded, a piece's items are few: bigger pieces cost less. */
	size_t size = (size_t)trace_size(cfg), n_psbs = 0, np, bytes = fold ? 8 * PIECE_BYTES :
									 PIECE_BYTES;
	uint64_t *psbs = NULL;

	if (!j)
		return NULL;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	j->cfg = *cfg;
	j->space_at = space_at;
	j->ctx = ctx;
	j->folder = (struct folder){ fold, c };
	if (jobs < 1)
		jobs = 1;
	/* One block cache for all workers: no code is disassembled twice. */
	if (!j->cfg.cache && !(j->cfg.cache = j->own_cache = vmpt_bcache_new()))
		goto fail;
	if (psb_offsets(cfg, &psbs, &n_psbs) < 0)
		goto fail;
	np = size / bytes > (size_t)jobs * 4 ? size / bytes : (size_t)jobs * 4;
	if (np > n_psbs)
		np = n_psbs ? n_psbs : 1;
	j->p = calloc(np, sizeof(*j->p));
	if (!j->p)
		goto fail;
	j->np = np;
	for (size_t i = 0; i < np; i++) {
		j->p[i].start = i ? psbs[i * n_psbs / np] : 0;
		j->p[i].stop = i + 1 < np ? psbs[(i + 1) * n_psbs / np] : 0;
	}
	free(psbs);
	psbs = NULL;
	j->nw = (size_t)jobs < np ? jobs : (int)np;
	/* A piece waits for the one after it (its seam), and each worker
	 * has one in hand.
	 */
	j->window = (size_t)j->nw * 2 + 1;
	j->w = calloc((size_t)j->nw, sizeof(*j->w));
	if (!j->w)
		goto fail;
	for (int k = 0; k < j->nw; k++) {
		j->w[k].j = j;
		j->w[k].dec = vmpt_flow_new(&j->cfg);
		if (!j->w[k].dec)
			goto fail;
	}
	vmpt_flow_carry_get(j->w[0].dec, &j->fresh);
	for (int k = 0; k < j->nw; k++) {
		if (pthread_create(&j->w[k].th, NULL, work, &j->w[k]) != 0)
			break;
		j->w[k].running = 1;
	}
	if (!j->w[0].running)
		goto fail;
	return j;
fail:
	free(psbs);
	vmpt_jobs_free(j);
	return NULL;
}

int vmpt_jobs_next_items(struct vmpt_jobs *j, const struct vmpt_flow_item **items,
			 size_t *n)
{
	int ret = -VMPT_ERR_EOS;

	pthread_mutex_lock(&j->lock);
	while (j->cur < j->np) {
		struct piece *p = &j->p[j->cur];

		if (j->handed) {
			/* Its trace is read no more (but for the PSB+ the
			 * next piece starts with).
			 */
			release_trace(&j->cfg, &j->released, p->stop);
			if (p->items && j->n_spare < SPARE_MAX)
				j->spare[j->n_spare++] = (struct spare){ p->items, p->cap };
			else
				free(p->items);
			p->items = NULL;
			j->cur++;
			j->handed = 0;
			pthread_cond_broadcast(&j->cond);
			continue;
		}
		while (!p->done || (j->cur + 1 < j->np && !p[1].done))
			pthread_cond_wait(&j->cond, &j->lock);
		j->handed = 1;
		if (p->ret < 0) {
			ret = p->ret;
			break;
		}
		if (j->cur + 1 < j->np && (ret = settle(j, p, p + 1)) < 0)
			break;
		if (j->cur + 1 < j->np && (ret = stitch(p, p + 1)) < 0)
			break;
		ret = -VMPT_ERR_EOS;
		if (p->skip < p->n) {
			*items = p->items + p->skip;
			*n = p->n - p->skip;
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&j->lock);
	return ret;
}

void vmpt_jobs_free(struct vmpt_jobs *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	j->quit = 1;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	for (int k = 0; j->w && k < j->nw; k++) {
		if (j->w[k].running)
			pthread_join(j->w[k].th, NULL);
		vmpt_flow_free(j->w[k].dec);
	}
	vmpt_flow_free(j->redo);
	for (size_t i = 0; i < j->n_spare; i++)
		free(j->spare[i].items);
	for (size_t i = 0; i < j->np; i++) {
		free(j->p[i].items);
		free(j->p[i].sizes);
	}
	free(j->p);
	free(j->w);
	vmpt_bcache_free(j->own_cache);
	pthread_cond_destroy(&j->cond);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

int vmpt_jobs_decode(const struct vmpt_flow_config *cfg,
		     const struct vmpt_consumer_ops *ops, const struct vmpt_task *task,
		     const struct vmpt_buffer_ref *ref, int jobs, FILE *f,
		     const struct vmpt_progress *progress)
{
	uint64_t total = trace_size(cfg), items = 0;
	struct vmpt_consumer *out = ops->open(ops->ctx, f);
	struct vmpt_jobs *j = NULL;
	struct vmpt_flow *dec = NULL;
	const struct vmpt_flow_item *it;
	size_t n;
	int ret;

	if (!out)
		return -VMPT_ERR_NOMEM;
	/* Cycle counts go on from the trace's start: IPC takes one decoder. */
	if (!ops->serial && vmpt_jobs_worth(cfg, jobs))
		j = vmpt_jobs_new(cfg, jobs, NULL, NULL, ops->fold, out);
	else
		dec = vmpt_flow_new(cfg);
	ret = j || dec ? 0 : -VMPT_ERR_NOMEM;
	if (ret == 0) {
		ops->set_task(out, task);
		ops->begin_buffer(out, ref);
		while ((ret = j ? vmpt_jobs_next_items(j, &it, &n) :
				  vmpt_flow_next_items(dec, &it, &n)) == 0) {
			vmpt_consumer_items(ops, out, it, n);
			if (progress && progress->fn && (items += n) >= 16384) {
				items = 0;
				progress->fn(progress->ctx, it[n - 1].offset, total);
			}
		}
		ops->drain(out, 0);
		if (ret == -VMPT_ERR_EOS)
			ret = ops->flush(out);
	}
	ops->close(out);
	vmpt_jobs_free(j);
	vmpt_flow_free(dec);
	return ret;
}
