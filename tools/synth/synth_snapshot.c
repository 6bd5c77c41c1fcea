/* SPDX-License-Identifier: MIT */
/* Snapshot mode (perf record -S): the AUX area is a ring the trace unit
 * overwrites (the kernel's overwrite mode reports the write position as the
 * AUX head), and a snapshot copies what perf's intel_pt_find_snapshot and
 * __auxtrace_mmap__read take of it: once the ring is judged wrapped (a
 * sticky flag, set when the last 4 KiB of the ring hold anything: snapshot
 * sizes up to 64 KiB keep no reference copy), the whole ring ending at the
 * head; before, what was written since the previous snapshot.  The
 * truth says which bytes of the stream and which instructions each holds.
 */
#include "synth.h"
#include "vmpt/error.h"

#include <stdlib.h>
#include <string.h>

/* The ring's byte i: the stream's latest byte at a position = i modulo
 * len, or 0 (never written: the kernel's AUX pages start zeroed). */
static uint8_t ring_byte(const struct synth_pt *pt, uint64_t len, uint64_t i)
{
	if (i >= pt->len)
		return 0;
	return pt->buf[i + (pt->len - 1 - i) / len * len];
}

/* intel_pt_first_wrap: anything in the ring's last 512 u64 words. */
static int first_wrap(const struct synth_pt *pt, uint64_t len)
{
	uint64_t b = len / 8, a = b > 512 ? b - 512 : 0;

	for (uint64_t i = a * 8; i < b * 8; i++)
		if (ring_byte(pt, len, i))
			return 1;
	return 0;
}

/* The last PSB+ in the stream's bytes [lo, hi), as its offset + 1 (0: none). */
static uint64_t last_psb(const struct synth_pt *pt, int64_t lo, uint64_t hi)
{
	for (size_t i = pt->n_marks; i--;)
		if (pt->marks[i].off < hi)
			return (int64_t)pt->marks[i].off >= lo ? pt->marks[i].off + 1 : 0;
	return 0;
}

/* How sn overlaps prev (PSB+ positions as offset + 1, 0 none).  perf finds
 * the overlap by the TSC of prev's last PSB+ when the trace has TSC, else
 * by comparing bytes from sn's first PSB+, which must be one of prev's. */
static int overlap(const struct synth_snapshot *prev,
		   const struct synth_snapshot *sn)
{
	if (!prev || (int64_t)prev->end <= sn->start)
		return SO_NONE;
	if (sn->psb_lo && sn->psb_lo >= prev->psb_lo && prev->psb_lo &&
	    sn->psb_lo <= prev->psb_hi)
		return SO_FIRST_PSB;
	if (prev->psb_hi && (int64_t)prev->psb_hi - 1 >= sn->start)
		return SO_LAST_PSB;
	return SO_TAIL;
}

static const struct synth_psb_mark *first_psb(const struct synth_pt *pt,
					      int64_t lo)
{
	for (size_t i = 0; i < pt->n_marks; i++)
		if ((int64_t)pt->marks[i].off >= lo)
			return &pt->marks[i];
	return NULL;
}

int synth_snapshot_take(struct synth_snapshots *ss, const struct synth_pt *pt,
			uint64_t lines, uint64_t blines)
{
	const struct synth_psb_mark *psb;
	uint64_t len = ss->aux_size, mask = len - 1;
	uint64_t head = pt->len & mask, old = ss->prev;
	uint64_t head_off, old_off, size;
	struct synth_snapshot *sn, *prev;

	if (!ss->wrapped && first_wrap(pt, len))
		ss->wrapped = 1;
	if (ss->wrapped) {
		old = head;
		head += len;
	} else {
		old &= mask;
		if (old > head)
			head += len;
	}
	if (old == head)
		return 0;	/* nothing new: perf writes nothing */
	head_off = head & mask;
	old_off = old & mask;
	size = head_off > old_off ? head_off - old_off : len - (old_off - head_off);
	if (ss->n == ss->cap) {
		size_t ncap = ss->cap ? ss->cap * 2 : 16;

		sn = realloc(ss->v, ncap * sizeof(*sn));
		if (!sn)
			return -VMPT_ERR_NOMEM;
		ss->v = sn;
		ss->cap = ncap;
	}
	sn = &ss->v[ss->n];
	memset(sn, 0, sizeof(*sn));
	sn->data = malloc(size);
	if (!sn->data)
		return -VMPT_ERR_NOMEM;
	sn->size = size;
	sn->offset = head - size;
	sn->head = pt->len & mask;
	sn->tsc = pt->tsc;
	sn->end = pt->len;
	sn->start = (int64_t)pt->len - (int64_t)size;
	for (uint64_t i = 0; i < size; i++) {
		int64_t p = sn->start + (int64_t)i;

		sn->data[i] = p < 0 ? 0 : pt->buf[p];
	}
	psb = first_psb(pt, sn->start);
	sn->first = psb ? psb->next_line : 0;
	sn->bfirst = psb ? psb->next_bline : 0;
	sn->psb_lo = psb ? psb->off + 1 : 0;
	sn->psb_hi = last_psb(pt, sn->start, sn->end);
	sn->last = lines;
	sn->blast = blines;
	prev = ss->n ? &ss->v[ss->n - 1] : NULL;
	sn->after = prev ? prev->last + 1 : 1;
	sn->bafter = prev ? prev->blast + 1 : 1;
	sn->overlap = overlap(prev, sn);
	ss->prev = head;
	ss->n++;
	return 0;
}

void synth_snapshots_free(struct synth_snapshots *ss)
{
	for (size_t i = 0; i < ss->n; i++)
		free(ss->v[i].data);
	free(ss->v);
	ss->v = NULL;
	ss->n = ss->cap = 0;
}
