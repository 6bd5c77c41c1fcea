/* SPDX-License-Identifier: MIT */
/* The block cache: each block is decoded once (vmpt_insn.c). */
#include "vmpt_block_cache.h"
#include "vmpt_insn.h"
#include "vmpt/error.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Long straight runs are cut so a block stays cheap to split at a FUP. */
#define MAX_BLOCK_INSNS VMPT_FLOW_BLOCK_MAX
/* Arenas grow from ARENA_FIRST to ARENA_CHUNK: a decoder of a little code
 * (a short trace, a fuzzer's input) maps no megabyte.
 */
#define ARENA_FIRST (64u << 10)
#define ARENA_CHUNK (1u << 20)
/* Section tables by section id: a directory of chunks made on first use,
 * 32 KB each (a new cache costs no more).
 */
#define SEC_CHUNK 4096
#define SEC_DIR 4096

struct arena {
	struct arena *prev;
	size_t used, cap;
	uint8_t mem[];
};

/* One hash table per section, sized once from the section (a block per 16
 * bytes of code at most, so chains stay short without ever growing).
 */
struct sec_table {
	size_t mask;
	_Atomic(struct vmpt_block *) bucket[];
};

struct vmpt_bcache {
	_Atomic(_Atomic(struct sec_table *) *) dir[SEC_DIR];
	/* dir[i] for i >= dir_end are empty: freeing a cache of a small
	 * image does not walk the whole directory.
	 */
	_Atomic size_t dir_end;
	pthread_mutex_t lock;		/* the arena list */
	struct arena *arenas;		/* every disassembler's, freed with the cache */
};

struct vmpt_bdisasm {
	struct vmpt_bcache *bc;
	struct arena *arena;	/* the current one, also in bc->arenas */
	uint8_t sizes[MAX_BLOCK_INSNS];	/* of the block being decoded */
};

struct vmpt_bcache *vmpt_bcache_new(void)
{
	struct vmpt_bcache *bc = calloc(1, sizeof(*bc));

	if (!bc)
		return NULL;
	if (pthread_mutex_init(&bc->lock, NULL)) {
		free(bc);
		return NULL;
	}
	return bc;
}

void vmpt_bcache_free(struct vmpt_bcache *bc)
{
	if (!bc)
		return;
	for (size_t i = 0, end = atomic_load(&bc->dir_end); i < end; i++) {
		_Atomic(struct sec_table *) *chunk = atomic_load(&bc->dir[i]);

		if (!chunk)
			continue;
		for (size_t k = 0; k < SEC_CHUNK; k++)
			free(atomic_load(&chunk[k]));
		free(chunk);
	}
	while (bc->arenas) {
		struct arena *p = bc->arenas->prev;

		free(bc->arenas);
		bc->arenas = p;
	}
	pthread_mutex_destroy(&bc->lock);
	free(bc);
}

struct vmpt_bdisasm *vmpt_bdisasm_new(struct vmpt_bcache *bc)
{
	struct vmpt_bdisasm *d = calloc(1, sizeof(*d));

	if (d)
		d->bc = bc;
	return d;
}

void vmpt_bdisasm_free(struct vmpt_bdisasm *d)
{
	free(d);
}

static void *arena_alloc(struct vmpt_bdisasm *d, size_t size)
{
	struct arena *a = d->arena;

	size = (size + 15) & ~(size_t)15;
	if (!a || a->used + size > a->cap) {
		size_t cap = !a ? ARENA_FIRST : a->cap < ARENA_CHUNK ? 2 * a->cap : ARENA_CHUNK;

		if (cap < size)
			cap = size;

		a = malloc(sizeof(*a) + cap);
		if (!a)
			return NULL;
		a->used = 0;
		a->cap = cap;
		pthread_mutex_lock(&d->bc->lock);
		a->prev = d->bc->arenas;
		d->bc->arenas = a;
		pthread_mutex_unlock(&d->bc->lock);
		d->arena = a;
	}
	a->used += size;
	return a->mem + a->used - size;
}

/* Undo the last arena_alloc (a block another thread published first). */
static void arena_unalloc(struct vmpt_bdisasm *d, size_t size)
{
	d->arena->used -= (size + 15) & ~(size_t)15;
}

static struct sec_table *sec_table(struct vmpt_bcache *bc,
				   const struct vmpt_section *sec)
{
	_Atomic(_Atomic(struct sec_table *) *) *slot = &bc->dir[sec->id / SEC_CHUNK % SEC_DIR];
	_Atomic(struct sec_table *) *chunk = atomic_load_explicit(slot, memory_order_acquire);
	struct sec_table *t;
	size_t n = 64;

	if (sec->id >= (uint64_t)SEC_DIR * SEC_CHUNK)
		return NULL;
	if (!chunk) {
		_Atomic(struct sec_table *) *fresh = calloc(SEC_CHUNK, sizeof(*fresh));

		if (!fresh)
			return NULL;
		if (atomic_compare_exchange_strong_explicit(slot, &chunk, fresh,
							    memory_order_acq_rel,
							    memory_order_acquire)) {
			size_t end = atomic_load(&bc->dir_end), i = (size_t)(slot - bc->dir);

			chunk = fresh;
			while (end <= i && !atomic_compare_exchange_weak(&bc->dir_end, &end, i + 1))
				;
		} else {
			free(fresh);	/* another thread's is there */
		}
	}
	t = atomic_load_explicit(&chunk[sec->id % SEC_CHUNK], memory_order_acquire);
	if (t)
		return t;
	while (n < sec->size / 16 && n < (1u << 22))
		n *= 2;
	struct sec_table *fresh = calloc(1, sizeof(*fresh) + n * sizeof(fresh->bucket[0]));

	if (!fresh)
		return NULL;
	fresh->mask = n - 1;
	if (atomic_compare_exchange_strong_explicit(&chunk[sec->id % SEC_CHUNK], &t, fresh,
						    memory_order_acq_rel,
						    memory_order_acquire))
		return fresh;
	free(fresh);
	return t;
}

/* The product's high bits (a table has at most 2^22 buckets): its bits from
 * 32 on mix the addresses of one binary poorly, which left half the
 * buckets of bash's blocks empty and chains twice as long.
 */
static size_t hash(uint64_t ip, unsigned mode)
{
	return (size_t)(((ip ^ ((uint64_t)mode << 62)) * 0x9e3779b97f4a7c15ull) >> 40);
}

static struct vmpt_block *chain_find(struct vmpt_block *b,
					   uint64_t ip, unsigned mode)
{
	for (; b; b = b->hnext)
		if (b->ip == ip && b->mode == mode)
			return b;
	return NULL;
}

static uint64_t mode_mask(unsigned mode)
{
	return mode == VMPT_MODE_64 ? ~0ull :
	       mode == VMPT_MODE_32 ? 0xffffffffull : 0xffffull;
}

static int decode_block(struct vmpt_bdisasm *d, const struct vmpt_image *img,
			const struct vmpt_section *sec,
			const struct vmpt_asid *asid, uint64_t ip,
			unsigned mode, struct vmpt_block *b)
{
	uint8_t *sizes = d->sizes;
	uint64_t addr = ip;

	memset(b, 0, sizeof(*b));
	b->ip = ip;
	b->sec = sec;
	b->mode = (uint8_t)mode;
	for (;;) {
		uint64_t off = addr - sec->vaddr;
		const uint8_t *code;
		uint8_t window[16];
		size_t avail;
		struct vmpt_insn in;

		if (off < sec->size && sec->size - off >= 16) {
			code = sec->data + off;
			avail = 16;
		} else {
			/* Near a section's end: the instruction may go on
			 * in the next section.
			 */
			int n = vmpt_image_read(img, asid, addr, window, 16);

			if (n < 0) {
				if (!b->ninsn)
					return n;
				break;	/* the next lookup reports it */
			}
			code = window;
			avail = (size_t)n;
		}
		if (vmpt_insn_decode(code, avail, addr, mode, &in) < 0) {
			if (!b->ninsn)
				return -VMPT_ERR_NO_MATCH;
			break;	/* the next lookup reports it */
		}
		sizes[b->ninsn++] = in.size;
		b->end_ip = addr;
		addr = (addr + in.size) & mode_mask(mode);
		b->next_ip = addr;
		if (in.iclass != VMPT_IC_OTHER) {
			b->iclass = in.iclass;
			b->target = in.target;
			b->zero_call = in.iclass == VMPT_IC_CALL && b->target == addr;
			break;
		}
		/* A block stays inside its section: the next one may belong
		 * to another dso.
		 */
		if (b->ninsn == MAX_BLOCK_INSNS || addr - sec->vaddr >= sec->size)
			break;
	}
	return 0;
}

int vmpt_bcache_get(struct vmpt_bdisasm *d, const struct vmpt_image *img,
		    const struct vmpt_section *sec, const struct vmpt_asid *asid,
		    uint64_t ip, unsigned mode, struct vmpt_block **out)
{
	struct sec_table *t = sec_table(d->bc, sec);
	struct vmpt_block *head, *found;
	struct vmpt_block *b, tmp;
	size_t h;
	int ret;

	if (!t)
		return -VMPT_ERR_NOMEM;
	h = hash(ip, mode) & t->mask;
	head = atomic_load_explicit(&t->bucket[h], memory_order_acquire);
	found = chain_find(head, ip, mode);
	if (found) {
		*out = found;
		return 0;
	}
	ret = decode_block(d, img, sec, asid, ip, mode, &tmp);
	if (ret < 0)
		return ret;
	/* The sizes right behind the block: one cache line for both. */
	b = arena_alloc(d, sizeof(*b) + tmp.ninsn);
	if (!b)
		return -VMPT_ERR_NOMEM;
	*b = tmp;
	b->isize = (uint8_t *)(b + 1);
	memcpy(b->isize, d->sizes, tmp.ninsn);
	/* Publish at the head of the chain; if another thread got there
	 * first with the same block, take its block instead.
	 */
	do {
		b->hnext = head;
	} while (!atomic_compare_exchange_weak_explicit(&t->bucket[h], &head, b,
							memory_order_release,
							memory_order_acquire) &&
		 !(found = chain_find(head, ip, mode)));
	if (found) {
		arena_unalloc(d, sizeof(*b) + tmp.ninsn);
		b = NULL;
	}
	*out = found ? found : b;
	return 0;
}
