/* SPDX-License-Identifier: MIT */
/* Memoized TNT runs: a direct-mapped table, a newer run replacing an
 * older one in its slot, so memory stays bounded however long the trace.
 * A run is recorded the second time its start is seen: a walk that never
 * repeats (random code) would only pay for recording.
 */
#include "vmpt_tnt_memo.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The table starts small and grows by 4 up to MEMO_SLOTS while it fills
 * (a short trace, or a decoder made per input as the fuzzer does, then
 * allocates 40 KB, not 640 KB).  A slot's index is the low bits of one
 * hash, so growing moves every run to a slot of its own: none is lost.
 */
#define MEMO_SLOTS (1u << 14)
#define MEMO_SLOTS_FIRST (1u << 10)
/* A memo that hits fewer than half of PROBE_WINDOW probes rests (no
 * probes, no recording) for REST_PROBES: a walk that does not repeat
 * itself then costs nothing.
 */
#define PROBE_WINDOW 4096
#define REST_PROBES (16 * PROBE_WINDOW)

/* A run's start: the tags are kept beside the pointer, so a miss reads
 * one line.
 */
struct start {
	const struct vmpt_block *first;
	uint64_t key;
};

struct slot {
	struct start tag;
	struct vmpt_run *run;
};

struct vmpt_tnt_memo {
	struct slot *slot;
	struct start *seen;		/* the last start missed per slot */
	size_t mask;			/* slots - 1 */
	struct vmpt_run *scratch;	/* being recorded, VMPT_RUN_MAX steps */
	size_t n_runs;			/* slots holding a run: none, nothing to free */
	uint32_t probes, hits, rest;
};

struct vmpt_tnt_memo *vmpt_tnt_memo_new(void)
{
	struct vmpt_tnt_memo *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->mask = MEMO_SLOTS_FIRST - 1;
	m->slot = calloc(MEMO_SLOTS_FIRST, sizeof(*m->slot));
	m->seen = calloc(MEMO_SLOTS_FIRST, sizeof(*m->seen));
	m->scratch = malloc(sizeof(*m->scratch) +
			    VMPT_RUN_MAX * (sizeof(m->scratch->item[0]) +
					    sizeof(m->scratch->step[0])));
	if (!m->slot || !m->seen || !m->scratch) {
		vmpt_tnt_memo_free(m);
		return NULL;
	}
	m->scratch->step = (struct vmpt_run_step *)&m->scratch->item[VMPT_RUN_MAX];
	return m;
}

void vmpt_tnt_memo_free(struct vmpt_tnt_memo *m)
{
	if (!m)
		return;
	for (size_t i = 0; m->n_runs && i <= m->mask; i++)
		if (m->slot[i].run) {
			free(m->slot[i].run);
			m->n_runs--;
		}
	free(m->slot);
	free(m->seen);
	free(m->scratch);
	free(m);
}

static size_t slot_of(const struct vmpt_tnt_memo *m, const struct vmpt_block *first,
		      uint64_t key)
{
	uint64_t h = ((uint64_t)(uintptr_t)first ^ key * 0xff51afd7ed558ccdull) *
		     0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 50) & m->mask;
}

/* Four times the slots, each entry at the slot its hash's low bits name
 * now; no memory: the table stays as it is.
 */
static void grow(struct vmpt_tnt_memo *m)
{
	size_t n = 4 * (m->mask + 1);
	struct slot *slot = calloc(n, sizeof(*slot));
	struct start *seen = calloc(n, sizeof(*seen));
	size_t old_mask = m->mask;

	if (!slot || !seen) {
		free(slot);
		free(seen);
		return;
	}
	m->mask = n - 1;
	for (size_t i = 0; i <= old_mask; i++) {
		if (m->slot[i].run) {
			const struct vmpt_run *r = m->slot[i].run;

			slot[slot_of(m, r->first, r->key)] = m->slot[i];
		}
		if (m->seen[i].first)
			seen[slot_of(m, m->seen[i].first, m->seen[i].key)] = m->seen[i];
	}
	free(m->slot);
	free(m->seen);
	m->slot = slot;
	m->seen = seen;
}

struct vmpt_run *vmpt_tnt_memo_find(struct vmpt_tnt_memo *m,
				    const struct vmpt_block *first, uint64_t key)
{
	const struct slot *sl;

	if (m->rest) {
		m->rest--;
		return NULL;
	}
	sl = &m->slot[slot_of(m, first, key)];
	if (sl->tag.first == first && sl->tag.key == key && sl->run) {
		m->hits++;
		return sl->run;
	}
	if (++m->probes == PROBE_WINDOW) {
		if (m->hits < PROBE_WINDOW / 2)
			m->rest = REST_PROBES;
		m->probes = m->hits = 0;
	}
	return NULL;
}

struct vmpt_run *vmpt_tnt_memo_start(struct vmpt_tnt_memo *m,
				     const struct vmpt_block *first,
				     uint64_t key)
{
	struct start *seen = &m->seen[slot_of(m, first, key)];

	if (m->rest)
		return NULL;
	if (seen->first != first || seen->key != key) {
		seen->first = first;
		seen->key = key;
		return NULL;
	}
	m->scratch->first = first;
	m->scratch->key = key;
	m->scratch->nsteps = 0;
	m->scratch->ninsn = 0;
	m->scratch->nbits = 0;
	m->scratch->pushes = 0;
	m->scratch->npkts = 1;
	m->scratch->chain_head = 0;
	m->scratch->seg[0] = 0;
	return m->scratch;
}

static void keep(struct vmpt_tnt_memo *m, struct vmpt_run *r)
{
	struct slot *sl = &m->slot[slot_of(m, r->first, r->key)];

	/* Another run's slot: a table this full wants more room first. */
	if (sl->run && (sl->tag.first != r->first || sl->tag.key != r->key) &&
	    m->mask + 1 < MEMO_SLOTS) {
		grow(m);
		sl = &m->slot[slot_of(m, r->first, r->key)];
	}
	if (!sl->run)
		m->n_runs++;
	free(sl->run);
	sl->run = r;
	sl->tag.first = r->first;
	sl->tag.key = r->key;
}

static struct vmpt_run *run_alloc(uint32_t nsteps)
{
	struct vmpt_run *r = malloc(sizeof(*r) + nsteps * (sizeof(r->item[0]) +
							   sizeof(r->step[0])));

	if (r)
		r->step = (struct vmpt_run_step *)&r->item[nsteps];
	return r;
}

void vmpt_tnt_memo_commit(struct vmpt_tnt_memo *m)
{
	const struct vmpt_run *s = m->scratch;
	struct vmpt_run *r = run_alloc(s->nsteps);

	if (!r)
		return;
	memcpy(r, s, offsetof(struct vmpt_run, step));
	memcpy(r->item, s->item, s->nsteps * sizeof(s->item[0]));
	memcpy(r->step, s->step, s->nsteps * sizeof(s->step[0]));
	keep(m, r);
}

struct vmpt_run *vmpt_tnt_memo_find_chain(struct vmpt_tnt_memo *m,
					  const struct vmpt_block *first,
					  uint64_t key)
{
	const struct slot *sl = &m->slot[slot_of(m, first, key)];

	if (m->rest || sl->tag.first != first || sl->tag.key != key)
		return NULL;
	return sl->run;
}

void vmpt_tnt_memo_chain(struct vmpt_tnt_memo *m, struct vmpt_run *const runs[],
			 unsigned n, uint64_t key)
{
	const struct vmpt_run *old = m->slot[slot_of(m, runs[0]->first, key)].run;
	struct start *seen = &m->seen[slot_of(m, runs[0]->first, key)];
	uint32_t nsteps = 0;
	struct vmpt_run *r;

	if (m->rest)
		return;
	if (seen->first != runs[0]->first || seen->key != key) {
		seen->first = runs[0]->first;
		seen->key = key;
		return;
	}
	for (unsigned k = 0; k < n; k++) {
		if (runs[k] == old)
			return;
		nsteps += runs[k]->nsteps;
	}
	r = run_alloc(nsteps);
	if (!r)
		return;
	r->first = runs[0]->first;
	r->key = key;
	r->nsteps = r->ninsn = r->nbits = r->pushes = 0;
	r->first_bit = runs[0]->first_bit;
	r->npkts = n;
	r->chain_head = 0;
	runs[0]->chain_head = 1;
	for (unsigned k = 0; k < n; k++) {
		const struct vmpt_run *s = runs[k];

		r->seg[k] = r->nsteps;
		memcpy(&r->item[r->nsteps], s->item, s->nsteps * sizeof(s->item[0]));
		memcpy(&r->step[r->nsteps], s->step, s->nsteps * sizeof(s->step[0]));
		r->nsteps += s->nsteps;
		r->ninsn += s->ninsn;
		r->nbits += s->nbits;
		r->pushes += s->pushes;
	}
	for (uint32_t i = 0; i < r->nsteps; i++)
		r->item[i].cyc = 0;	/* a count of the runs' last playing */
	keep(m, r);
}
