/* SPDX-License-Identifier: MIT */
/* Stable, shared copies of EVD sequences (see vmpt_evd_store.h): an open
 * addressing table of the sequences by hash, each copy in a chunk of an
 * arena that only grows, so a copy never moves.
 */
#include "vmpt_evd_store.h"

#include <stdlib.h>
#include <string.h>

/* EVDs per arena chunk (a sequence longer than that gets its own). */
#define CHUNK 1024

struct chunk {
	struct chunk *next;
	unsigned used, cap;
	struct vmpt_evd evd[];
};

struct slot {
	uint64_t hash;
	const struct vmpt_evd *evd;	/* NULL: empty */
	unsigned n;
};

struct vmpt_evd_store {
	struct chunk *chunks;
	struct slot *slots;
	size_t mask, used;
};

struct vmpt_evd_store *vmpt_evd_store_new(void)
{
	struct vmpt_evd_store *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->mask = 63;
	s->slots = calloc(s->mask + 1, sizeof(*s->slots));
	if (!s->slots) {
		free(s);
		return NULL;
	}
	return s;
}

void vmpt_evd_store_free(struct vmpt_evd_store *s)
{
	if (!s)
		return;
	while (s->chunks) {
		struct chunk *c = s->chunks;

		s->chunks = c->next;
		free(c);
	}
	free(s->slots);
	free(s);
}

static uint64_t hash(const struct vmpt_evd *evd, unsigned n)
{
	uint64_t h = n;

	for (unsigned i = 0; i < n; i++)
		h = (h ^ evd[i].payload ^ ((uint64_t)evd[i].type << 56)) *
		    0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static int same(const struct slot *sl, uint64_t h, const struct vmpt_evd *evd,
		unsigned n)
{
	if (sl->hash != h || sl->n != n)
		return 0;
	for (unsigned i = 0; i < n; i++)
		if (sl->evd[i].type != evd[i].type || sl->evd[i].payload != evd[i].payload)
			return 0;
	return 1;
}

static int grow(struct vmpt_evd_store *s)
{
	size_t mask = s->mask * 2 + 1;
	struct slot *slots = calloc(mask + 1, sizeof(*slots));

	if (!slots)
		return -1;
	for (size_t i = 0; i <= s->mask; i++) {
		size_t j;

		if (!s->slots[i].evd)
			continue;
		for (j = s->slots[i].hash & mask; slots[j].evd; j = (j + 1) & mask)
			;
		slots[j] = s->slots[i];
	}
	free(s->slots);
	s->slots = slots;
	s->mask = mask;
	return 0;
}

static struct vmpt_evd *copy(struct vmpt_evd_store *s, const struct vmpt_evd *evd,
			     unsigned n)
{
	struct chunk *c = s->chunks;
	struct vmpt_evd *to;

	if (!c || c->cap - c->used < n) {
		unsigned cap = n > CHUNK ? n : CHUNK;

		c = malloc(sizeof(*c) + (size_t)cap * sizeof(c->evd[0]));
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = s->chunks;
		s->chunks = c;
	}
	to = &c->evd[c->used];
	memcpy(to, evd, (size_t)n * sizeof(*evd));
	c->used += n;
	return to;
}

const struct vmpt_evd *vmpt_evd_store_intern(struct vmpt_evd_store *s,
					     const struct vmpt_evd *evd,
					     unsigned n)
{
	uint64_t h = hash(evd, n);
	size_t i;

	for (i = h & s->mask; s->slots[i].evd; i = (i + 1) & s->mask)
		if (same(&s->slots[i], h, evd, n))
			return s->slots[i].evd;
	if ((s->used + 1) * 2 > s->mask) {
		if (grow(s))
			return NULL;
		for (i = h & s->mask; s->slots[i].evd; i = (i + 1) & s->mask)
			;
	}
	s->slots[i].evd = copy(s, evd, n);
	if (!s->slots[i].evd)
		return NULL;
	s->slots[i].hash = h;
	s->slots[i].n = n;
	s->used++;
	return s->slots[i].evd;
}
