/* SPDX-License-Identifier: MIT */
/* Samples that read counters (PERF_SAMPLE_READ: perf record -e
 * '{a,b}:S') as perf delivers them (perf_session__deliver_sample): one
 * sample per counter value, of that counter's event, its period the
 * change since the counter's last value; none where it did not change or
 * where the recording does not know the counter's id.
 */
#include "vmpt_session_int.h"
#include "vmpt/error.h"

#include <stdlib.h>

/* The slot of id in the table (open addressing; 0 is a counter's id too,
 * so slots say whether they are used).
 */
static size_t slot_of(const struct session_reads *r, uint64_t id)
{
	size_t mask = r->cap - 1, i = (size_t)((id * 0x9e3779b97f4a7c15ull) >> 20) & mask;

	while (r->used[i] && r->id[i] != id)
		i = (i + 1) & mask;
	return i;
}

static int grow(struct session_reads *r)
{
	struct session_reads bigger = { .cap = r->cap ? r->cap * 2 : 64 };

	bigger.id = calloc(bigger.cap, sizeof(*bigger.id));
	bigger.last = calloc(bigger.cap, sizeof(*bigger.last));
	bigger.used = calloc(bigger.cap, 1);
	if (!bigger.id || !bigger.last || !bigger.used) {
		session_reads_free(&bigger);
		return -VMPT_ERR_NOMEM;
	}
	for (size_t i = 0; i < r->cap; i++)
		if (r->used[i]) {
			size_t k = slot_of(&bigger, r->id[i]);

			bigger.used[k] = 1;
			bigger.id[k] = r->id[i];
			bigger.last[k] = r->last[i];
		}
	bigger.n = r->n;
	session_reads_free(r);
	*r = bigger;
	return 0;
}

int session_sample_value(struct session_reads *r, const struct vmpt_perf_data *pd,
			 const struct vmpt_perf_event *ev, uint64_t i, struct vmpt_perf_event *out)
{
	const struct vmpt_perf_attr *a;
	uint64_t id, value;
	size_t k;

	vmpt_perf_sample_read(ev, i, &id, &value);
	a = vmpt_perf_attr_by_id(pd, id);
	if (!a)
		return 0;
	if (2 * (r->n + 1) > r->cap && grow(r) < 0)
		return -VMPT_ERR_NOMEM;
	k = slot_of(r, id);
	if (!r->used[k]) {
		r->used[k] = 1;
		r->id[k] = id;
		r->last[k] = 0;
		r->n++;
	}
	*out = *ev;
	out->attr = a;
	out->sid.id = id;
	out->sample.period = value - r->last[k];
	r->last[k] = value;
	return out->sample.period != 0;
}

void session_reads_free(struct session_reads *r)
{
	free(r->id);
	free(r->last);
	free(r->used);
	*r = (struct session_reads){ 0 };
}
