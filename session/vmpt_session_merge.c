/* SPDX-License-Identifier: MIT */
/* The queues of a recording merged as perf's heap of queues orders them:
 * by each one's state time (a block's instructions before its branch at
 * the time of the walk, its branch at the packet that decided it, an
 * estimate's on a branch into user space), forward only, ties to the queue
 * waiting longest; the running queue goes on while it prints no later
 * than the next; sideband records in between by their time.
 */
#include "vmpt_session_queue.h"
#include "vmpt/error.h"

#include <stdint.h>

/* When q's next item prints, as perf orders its queues by the time of
 * each sample: a block's instructions before its last one at the time
 * the walk reached them (q->lead), its branch at its own.
 */
static int branch_own_time(const struct vmpt_flow_item *b)
{
	/* the trace decided it: a conditional branch, a return or an
	 * indirect one, not a direct jump or call
	 */
	return b->iclass == VMPT_IC_JCC ||
	       (b->taken && b->iclass != VMPT_IC_JMP && b->iclass != VMPT_IC_CALL &&
		b->iclass != VMPT_IC_OTHER);
}

/* q->item is new, or its stream's state is: no estimate known for it,
 * or none to be asked for.
 */
void session_merge_item_new(const struct decode *d, struct queue *q)
{
	const struct vmpt_flow_item *it = q->item;
	uint64_t below = d->est_below;

	q->est_yes = 0;
	q->est_known = !below || !it ||
		       !(it->kind == VMPT_FLOW_BLOCK ?
			 it->taken && it->to < below && it->end_ip >= below :
			 it->kind == VMPT_FLOW_EVENT && it->ev == VMPT_EV_ENABLED && it->ip < below);
}

/* perf orders its queues by each one's state time, which an estimate
 * sets on a branch into user space (where it may go back).
 */
static int estimated(const struct decode *d, struct queue *q, uint64_t *t)
{
	/* (the stream's state stays while q->item waits) */
	if (!q->est_known) {
		q->est_yes = d->ops->estimate(q->out, q->item, &q->est_t);
		q->est_known = 1;
	}
	if (q->est_yes)
		*t = q->est_t;
	return q->est_yes;
}

static inline uint64_t print_time(const struct decode *d, struct queue *q)
{
	const struct vmpt_flow_item *it = q->item;
	uint64_t t = it->time;

	if (it->kind == VMPT_FLOW_BLOCK && q->lead && q->lead < it->time &&
	    (it->ninsn > 1 || !branch_own_time(it)))
		t = q->lead;
	/* (a block's other instructions come at their own time) */
	else if ((it->kind != VMPT_FLOW_BLOCK || it->ninsn == 1) && estimated(d, q, &t))
		return t;
	/* perf's queue time only goes forward */
	return t > q->ts ? t : q->ts;
}

/* When q's block takes its branch: at its time, or the estimate's. */
static uint64_t branch_due(const struct decode *d, struct queue *q)
{
	uint64_t t;

	return estimated(d, q, &t) ? t : q->item->time;
}

static void note_lead(struct queue *q, const struct vmpt_flow_item *it)
{
	uint64_t end = it->time;

	if (it->kind == VMPT_FLOW_EVENT && it->ev == VMPT_EV_CBR)
		q->cbr = it->payload;
	else if (it->kind == VMPT_FLOW_EVENT && it->ev == VMPT_EV_PSB && it->to)
		q->cbr = it->to;
	if (it->kind == VMPT_FLOW_EVENT &&
	    (it->ev == VMPT_EV_DISABLED || it->ev == VMPT_EV_ASYNC_DISABLED))
		q->off = 1;
	else if (it->kind == VMPT_FLOW_EVENT && it->ev == VMPT_EV_ENABLED)
		q->off = 0;

	/* the time of its last sample */
	if (it->kind == VMPT_FLOW_BLOCK && !branch_own_time(it) && q->lead && q->lead < end)
		end = q->lead;
	if (end > q->ts)
		q->ts = end;
	if (it->kind == VMPT_FLOW_BLOCK ||
	    (it->kind == VMPT_FLOW_EVENT && it->ev == VMPT_EV_ENABLED))
		q->lead = it->time;
}

/* Item it of q to its stream.  perf orders its queues by each one's
 * state time, which an estimate on a return to user space sets (as it
 * may set it back).
 */
static void hand_item(struct decode *d, struct queue *q)
{
	const struct vmpt_flow_item *it = q->item;
	uint64_t t;
	int est = estimated(d, q, &t);

	note_lead(q, it);
	d->ops->item(q->out, it);
	if (est)
		q->ts = t;
}

/* Hand on the instructions of q's block before its last one, which waits
 * in q->tail for its own time (another queue's samples come between).
 */
static void hand_head(struct decode *d, struct queue *q)
{
	const struct vmpt_flow_item *b = q->item;
	struct vmpt_flow_item head = *b;
	uint64_t ip = b->ip;

	for (uint32_t i = 0; i + 1 < b->ninsn; i++)
		ip += b->isize[i];
	head.ninsn = b->ninsn - 1;
	head.iclass = VMPT_IC_OTHER;
	head.taken = 0;
	head.to = ip;
	head.end_ip = ip - b->isize[b->ninsn - 2];
	head.time = q->lead;
	head.cyc = 0;
	q->tail = *b;
	q->tail.ip = ip;
	q->tail.ninsn = 1;
	q->tail.isize = b->isize + b->ninsn - 1;
	q->item = &q->tail;
	if (q->lead > q->ts)
		q->ts = q->lead;
	q->lead = 0;		/* the branch at its own time */
	d->ops->item(q->out, &head);
	session_merge_item_new(d, q);
}

/* The queue that prints next (but skip): the earliest to print; on a
 * tie the running one, else the one back on perf's heap first.
 */
static struct queue *pick(struct decode *d, const struct queue *running,
			  const struct queue *skip)
{
	struct queue *best = NULL;

	for (size_t k = 0; k < d->nq; k++) {
		struct queue *q = &d->qs[k];
		uint64_t t, bt;

		if (!q->item || q == skip)
			continue;
		if (!best) {
			best = q;
			continue;
		}
		t = print_time(d, q);
		bt = print_time(d, best);
		if (t < bt || (t == bt && best != running &&
			       (q == running || q->seq < best->seq)))
			best = q;
	}
	return best;
}

/* The running queue q goes on while it prints no later than until (the
 * next queue's time: the others do not change meanwhile), no sideband
 * record is due and no block of it is to be handed on in two: what the
 * merge would choose item by item.
 */
static int run_on(struct decode *d, struct queue *q, uint64_t until, int ret)
{
	while (ret == 0 && q->item && !session_progress_on(d)) {
		const struct vmpt_flow_item *it = q->item;
		uint64_t t = print_time(d, q);

		if (t > until || (d->next_sb < d->n_sb && it->time && d->sb_due <= it->time) ||
		    (it->kind == VMPT_FLOW_BLOCK && branch_own_time(it) && it->ninsn > 1 &&
		     t < branch_due(d, q) && until < branch_due(d, q)))
			break;
		hand_item(d, q);
		q->item = NULL;
		ret = session_queue_fill(d, q);
		if (ret == -VMPT_ERR_EOS)
			ret = 0;
	}
	return ret;
}

int session_merge(struct decode *d, FILE *f)
{
	struct queue *cur = NULL, *running = NULL;
	struct vmpt_consumer *last;
	int ret = 0;

	if (d->nq > 1 && d->ops->estimate)
		d->est_below = d->ops->estimate_below;

	for (size_t k = 0; k < d->nq && ret == 0; k++) {
		ret = session_queue_fill(d, &d->qs[k]);
		if (ret == -VMPT_ERR_EOS)
			ret = 0;
	}
	last = d->nq ? d->qs[0].out : d->ops->open(d->ops->ctx, f);
	if (!last)
		return -VMPT_ERR_NOMEM;
	/* Merge by time as perf's heap of queues does: print from the queue
	 * whose next item prints earliest; the queue printing goes on while
	 * its time is not later than any other's and no sideband record is
	 * due; on ties, the queue waiting longest (at first the first).
	 */
	for (size_t k = 0; k < d->nq; k++)
		d->qs[k].seq = k;
	d->seq = d->nq;
	while (ret == 0) {
		struct queue *best, *next, *was = running;

		/* A CBR packet of the ratio a queue had while its tracing is
		 * off is no state of perf's decoder: it moves no queue, and
		 * makes no sample.
		 */
		for (size_t k = 0; k < d->nq && ret == 0; k++) {
			struct queue *q = &d->qs[k];

			while (q->off && q->item && q->item->kind == VMPT_FLOW_EVENT &&
			       q->item->ev == VMPT_EV_CBR && q->item->payload == q->cbr &&
			       !(d->next_sb < d->n_sb && q->item->time && d->sb_due <= q->item->time)) {
				d->ops->item(q->out, q->item);
				q->item = NULL;
				if ((ret = session_queue_fill(d, q)) == -VMPT_ERR_EOS)
					ret = 0;
				if (ret < 0)
					break;
			}
		}
		if (ret < 0)
			break;
		best = pick(d, running, NULL);

		if (session_progress_on(d) && ++d->items % 16384 == 0)
			session_report_progress(d);
		if (!best)
			break;
		next = pick(d, running, best);
		if (running && running != best)
			running->seq = ++d->seq;	/* back on perf's heap */
		running = best;
		if (cur && cur != best) {
			d->ops->drain(cur->out, cur->item ? cur->item->time : 0);
			ret = d->ops->flush(cur->out);
			if (ret < 0)
				break;
		}
		cur = best;
		last = cur->out;
		/* sideband_until's test: a record due at a later TSC waits,
		 * and stops the queue (perf runs the queues up to it).
		 */
		if (d->next_sb < d->n_sb && best->item->time &&
		    d->sb_due <= best->item->time) {
			if ((ret = d->ops->flush(cur->out)) < 0)
				break;
			session_sideband_until(d, best->out, best->item->time);
			if (was == best)
				best->seq = ++d->seq;	/* stopped by the record */
			running = NULL;
			continue;
		}
		/* A branch due after another queue's samples: the block's
		 * other instructions first.
		 */
		if (next && best->item->kind == VMPT_FLOW_BLOCK && branch_own_time(best->item) &&
		    best->item->ninsn > 1 && print_time(d, best) < branch_due(d, best) &&
		    print_time(d, next) < branch_due(d, best)) {
			hand_head(d, best);
			continue;
		}
		hand_item(d, best);
		best->item = NULL;
		/* One queue: the rest of its batch straight on while the task
		 * holds and no sideband record is due (what the loop would
		 * check for each).
		 */
		if (d->nq == 1 && best->left && !session_progress_on(d) && best->task_until &&
		    !(d->next_sb < d->n_sb && best->task_tsc && d->sb_due <= best->task_tsc)) {
			size_t k = 0;

			while (k < best->left && best->batch[k].time == best->task_tsc)
				k++;
			vmpt_consumer_items(d->ops, best->out, best->batch, k);
			best->batch += k;
			best->left -= k;
		}
		ret = session_queue_fill(d, best);
		if (ret == -VMPT_ERR_EOS)
			ret = 0;
		if (d->nq > 1)
			ret = run_on(d, best, next ? print_time(d, next) : UINT64_MAX, ret);
	}
	if (ret == 0) {
		if (cur)
			d->ops->drain(cur->out, 0);
		ret = d->ops->flush(last);
		if (ret == 0) {
			session_sideband_until(d, last, UINT64_MAX);
			ret = d->ops->flush(last);
		}
	}
	if (!d->nq)
		d->ops->close(last);
	return ret;
}
