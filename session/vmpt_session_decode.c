/* SPDX-License-Identifier: MIT */
/* Decoding a recording as perf script does: one queue per perf mmap index
 * (a CPU, or a thread), its buffers decoded one after the other, the items
 * of all queues merged in time order (as perf's heap of queues orders
 * them) with the sideband records, each item with the task that ran it,
 * all handed to a consumer (vmpt/consumer.h).
 */
#include "vmpt/session.h"
#include "vmpt_session_int.h"
#include "vmpt/error.h"
#include "vmpt/jobs.h"
#include "vmpt/packet.h"

#include <stdlib.h>
#include <string.h>

/* One queue of buffers (a CPU, or a thread).  Its consecutive buffers
 * (all of them but in snapshot mode, where a snapshot goes on from the one
 * before only when perf finds where that one ends in it) are a run,
 * decoded as one stream by one decoder, as perf does; item is the next
 * one to hand on.
 */
struct queue {
	size_t *bufs, n, next;
	/* Snapshot mode: the bytes of each buffer the one before has, and
	 * whether it goes on from it (NULL: none, buffers continue).
	 */
	size_t *skip;
	uint8_t *cont;
	uint64_t bytes;		/* in the buffers before the run */
	/* The run: bufs[run..run + n_parts - 1], their parts and their TSC
	 * patches at stream offsets; cur: the buffer items are in, and the
	 * stream offset of the one after it.
	 */
	size_t run, cur;
	struct vmpt_pkt_part *parts;
	size_t n_parts;
	uint64_t run_size, next_start;
	struct vmpt_tsc_patch *patch_v;
	struct vmpt_tsc_patches patches;
	const struct vmpt_session_buffer *buf;
	/* The run's first buffer: its cpu and tid (the queue's), for the
	 * threads of q->jobs, which must not read buf as it moves on.
	 */
	const struct vmpt_session_buffer *run_buf;
	const struct vmpt_session *s;
	/* The run's decoder, or with -j its parallel decoding. */
	struct vmpt_flow *dec;
	struct vmpt_jobs *jobs;
	int dec_done;		/* at the run's end */
	struct vmpt_consumer *out;
	/* The next item (NULL: none), and the rest of its batch. */
	const struct vmpt_flow_item *item, *batch;
	size_t left;
	struct vmpt_task task;
	uint64_t task_from, task_until;	/* perf time the task holds for */
	uint64_t task_tsc;		/* the item time it was looked up for */
	/* The time the instructions of its next block print at before its
	 * last (the last block's or trace start's: perf walked them before
	 * the packets that decide the branch), 0: none yet; and the last
	 * instruction of a block handed on in two.
	 */
	uint64_t lead;
	uint64_t ts;		/* perf's queue time: its samples' so far */
	uint64_t cbr;		/* the last CBR handed on */
	int off;		/* tracing is off (the last was a trace end) */
	struct vmpt_flow_item tail;
	uint64_t seq;		/* when it went back on perf's heap */
	/* The stream's estimate for item (estimated()), known or not. */
	int est_known, est_yes;
	uint64_t est_t;
};

struct decode {
	struct vmpt_session *s;
	const struct vmpt_consumer_ops *ops;
	int jobs;
	uint64_t items, total;	/* handed on; trace bytes of all buffers */
	struct queue *qs;
	size_t nq;
	int snapshot;		/* buffers overlap: none continues another */
	size_t *sb;		/* sideband records in time order */
	size_t n_sb, next_sb;
	/* The TSC from which the next record is due (0: at once): items
	 * before it pass without a look at the sideband.
	 */
	uint64_t sb_due;
	uint64_t seq;		/* the queues' last seq */
	uint64_t est_below;	/* ops->estimate_below with queues to order */
};

/* The item's perf time for sideband lookups. */
static uint64_t item_time(const struct vmpt_session *s, const struct vmpt_flow_item *it)
{
	/* Timeless decoding (no TSC yet): perf names the tasks as they are
	 * at the end of the recording.
	 */
	return s->have_tc && it->time ? vmpt_perf_tsc_to_time(&s->tc, it->time) :
	       UINT64_MAX;
}

static void queue_task(struct decode *d, struct queue *q, uint64_t t)
{
	uint64_t space = q->task.space, guest_space = q->task.guest_space;

	if (q->task_until && t >= q->task_from && t < q->task_until)
		return;
	vmpt_session_task_until(d->s, q->buf, t, &q->task, &q->task_until);
	q->task_from = t;
	d->ops->set_task(q->out, &q->task);
	if (q->task.space != space && q->dec)
		vmpt_flow_set_host_space(q->dec, q->task.space);
	/* A guest context switch: the guest code after it is the next
	 * task's.
	 */
	if (q->task.guest_space != guest_space && q->dec)
		vmpt_flow_set_guest_space(q->dec, q->task.guest_space);
}

/* The host and guest address spaces at a TSC, for the threads of
 * q->jobs: what queue_task gives one decoder.
 */
static uint64_t queue_space(void *ctx, uint64_t tsc, uint64_t *guest_space)
{
	const struct queue *q = ctx;
	struct vmpt_flow_item it = { .time = tsc };
	struct vmpt_task task;
	uint64_t until;

	vmpt_session_task_until(q->s, q->run_buf, item_time(q->s, &it), &task, &until);
	*guest_space = task.guest_space;
	return task.space;
}

/* The TSC of the first PSB+ of a buffer (0: none): when its trace starts. */
static uint64_t first_tsc(const struct vmpt_session_buffer *b, size_t skip)
{
	struct vmpt_pkt_decoder pd;
	struct vmpt_packet pkt;

	vmpt_pkt_decoder_init(&pd, b->data + skip, b->size - skip);
	if (vmpt_pkt_sync_forward(&pd) < 0)
		return 0;
	while (vmpt_pkt_next(&pd, &pkt) > 0) {
		if (pkt.type == VMPT_PKT_TSC)
			return pkt.tsc;
		if (pkt.type == VMPT_PKT_PSBEND)
			break;
	}
	return 0;
}

/* With --time: can buffer i of the queue hold wanted samples?  Its trace
 * runs from its first TSC to the next buffer's (of what each adds, in
 * snapshot mode).
 */
static int buffer_wanted(struct decode *d, struct queue *q, size_t i)
{
	const struct vmpt_session *s = d->s;
	uint64_t from, to = UINT64_MAX;

	if (!d->ops->time_wanted || !s->have_tc)
		return 1;
	from = first_tsc(&s->bufs[q->bufs[i]], q->skip ? q->skip[i] : 0);
	if (!from)
		return 1;
	if (i + 1 < q->n) {
		uint64_t next = first_tsc(&s->bufs[q->bufs[i + 1]], q->skip ? q->skip[i + 1] : 0);

		if (next >= from)
			to = vmpt_perf_tsc_to_time(&s->tc, next);
	}
	return d->ops->time_wanted(d->ops->ctx, vmpt_perf_tsc_to_time(&s->tc, from), to);
}

/* Is the buffer inside a file mapping (whose pages the decoder may drop
 * and read back), not read into memory from a pipe?
 */
static int buffer_mapped(const struct vmpt_session *s, const struct vmpt_session_buffer *b)
{
	for (size_t i = 0; i <= s->pd.nr_parts; i++) {
		const struct vmpt_file *f = i ? &s->pd.parts[i - 1] : &s->pd.map;

		if (!f->read_in && f->data && b->data >= f->data &&
		    b->size <= f->size - (size_t)(b->data - f->data))
			return 1;
	}
	return 0;
}

/* The buffers from q->next on that continue one another (and are wanted)
 * as the run's parts, their patches at stream offsets.  0 or -VMPT_ERR_NOMEM.
 */
static int queue_run(struct decode *d, struct queue *q)
{
	const struct vmpt_session *s = d->s;
	size_t to = q->next + 1, n_patches = 0;

	while (to < q->n && (!d->snapshot || q->cont[to]) && buffer_wanted(d, q, to))
		to++;
	q->run = q->next;
	q->run_buf = &s->bufs[q->bufs[q->run]];
	q->n_parts = to - q->next;
	q->run_size = 0;
	for (size_t i = q->run; i < to; i++) {
		const struct vmpt_session_buffer *b = &s->bufs[q->bufs[i]];

		size_t skip = q->skip ? q->skip[i] : 0;

		q->parts[i - q->run] = (struct vmpt_pkt_part){ b->data + skip, b->data + b->size };
		n_patches += b->tsc_patches.n;
	}
	free(q->patch_v);
	q->patch_v = NULL;
	q->patches.n = 0;
	if (n_patches && !(q->patch_v = malloc(n_patches * sizeof(*q->patch_v))))
		return -VMPT_ERR_NOMEM;
	for (size_t i = q->run; i < to; i++) {
		const struct vmpt_tsc_patches *pl = &s->bufs[q->bufs[i]].tsc_patches;

		size_t skip = q->skip ? q->skip[i] : 0;

		for (size_t k = 0; k < pl->n; k++)
			if (pl->p[k].offset >= skip)
				q->patch_v[q->patches.n++] = (struct vmpt_tsc_patch){
					pl->p[k].offset - skip + q->run_size, pl->p[k].tsc };
		q->run_size += s->bufs[q->bufs[i]].size - skip;
	}
	q->patches.p = q->patch_v;
	q->next = to;
	return 0;
}

/* The consumer goes on with buffer q->bufs[i] of the run, which starts
 * at stream offset start.
 */
static void queue_buffer(struct decode *d, struct queue *q, size_t i, uint64_t start)
{
	struct vmpt_buffer_ref ref;

	size_t skip = q->skip ? q->skip[i] : 0;

	q->cur = i;
	q->buf = &d->s->bufs[q->bufs[i]];
	q->next_start = start + q->buf->size - skip;
	ref = (struct vmpt_buffer_ref){ .file_offset = q->buf->data_offset + skip,
					.queue_offset = q->bytes + start,
					.stream_offset = start,
					.cpu = q->buf->cpu,
					.consecutive = i != q->run };
	d->ops->begin_buffer(q->out, &ref);
}

static void est_reset(const struct decode *d, struct queue *q);

/* Make q->item the queue's next item, from the decoder's batch; 0, or
 * -VMPT_ERR_EOS when done.
 */
static int queue_fill(struct decode *d, struct queue *q)
{
	struct vmpt_session *s = d->s;

	while (!q->item) {
		int ret;

		if (q->left) {
			q->item = q->batch++;
			est_reset(d, q);
			q->left--;
			/* Into the run's next buffer (its file offsets). */
			while (q->item->offset >= q->next_start &&
			       q->cur + 1 < q->run + q->n_parts)
				queue_buffer(d, q, q->cur + 1, q->next_start);
			/* Items of one time have one task. */
			if (q->item->time != q->task_tsc || !q->task_until) {
				queue_task(d, q, item_time(s, q->item));
				q->task_tsc = q->item->time;
			}
			return 0;
		}
		if ((!q->dec && !q->jobs) || q->dec_done) {
			struct vmpt_flow_config cfg = s->cfg;
			struct vmpt_flow *dec = NULL;

			q->bytes += q->run_size;
			q->run_size = 0;
			while (q->next < q->n && !buffer_wanted(d, q, q->next)) {
				q->bytes += s->bufs[q->bufs[q->next]].size -
					    (q->skip ? q->skip[q->next] : 0);
				q->next++;
			}
			if (q->next == q->n)
				return -VMPT_ERR_EOS;
			ret = queue_run(d, q);
			if (ret < 0)
				return ret;
			cfg.parts = q->parts;
			cfg.n_parts = q->n_parts;
			/* Bounded memory for traces of any size (one buffer: one
			 * contiguous mapping).
			 */
			cfg.release = q->n_parts == 1 && buffer_mapped(s, q->run_buf);
			/* A VM recording's guest TSCs, as host TSCs. */
			if (q->patches.n)
				cfg.tsc_patches = &q->patches;
			vmpt_jobs_free(q->jobs);
			q->jobs = NULL;
			/* Cycle counts (IPC) go on over the buffers: one decoder. */
			if (!d->ops->serial && vmpt_jobs_worth(&cfg, d->jobs)) {
				/* One queue: what it prints nothing for comes
				 * folded (with more, the merge orders by items).
				 */
				q->jobs = vmpt_jobs_new(&cfg, d->jobs, queue_space, q,
							d->nq == 1 ? d->ops->fold : NULL, q->out);
				if (!q->jobs)
					return -VMPT_ERR_NOMEM;
			} else {
				dec = vmpt_flow_new(&cfg);
				if (!dec)
					return -VMPT_ERR_NOMEM;
				/* perf decodes a run anew (after a snapshot or
				 * a gap), but counts cycles on.
				 */
				if (q->dec)
					vmpt_flow_count_on(dec, q->dec);
			}
			vmpt_flow_free(q->dec);
			q->dec = dec;
			q->dec_done = 0;
			q->task_until = 0;
			q->task.space = 0;
			q->task.guest_space = 0;
			queue_buffer(d, q, q->run, 0);
		}
		ret = q->jobs ? vmpt_jobs_next_items(q->jobs, &q->batch, &q->left) :
				vmpt_flow_next_items(q->dec, &q->batch, &q->left);
		if (ret < 0) {
			d->ops->drain(q->out, 0);
			q->dec_done = 1;
			if (ret != -VMPT_ERR_EOS)
				return ret;
		}
	}
	return 0;
}

/* When the next sideband record is due: sideband_until's test, once. */
static void sideband_due(struct decode *d)
{
	const struct vmpt_session *s = d->s;
	const struct vmpt_perf_event *ev;
	uint64_t t;

	d->sb_due = UINT64_MAX;
	if (d->next_sb >= d->n_sb)
		return;
	ev = &s->sb[d->sb[d->next_sb]];
	t = ev->sid.present & PERF_SAMPLE_TIME ? ev->sid.time : 0;
	d->sb_due = s->have_tc && t ? vmpt_perf_time_to_tsc(&s->tc, t) : 0;
}

/* The sideband records before time tsc (all: UINT64_MAX) on stream c. */
static void sideband_until(struct decode *d, struct vmpt_consumer *c, uint64_t tsc)
{
	const struct vmpt_session *s = d->s;

	while (d->next_sb < d->n_sb) {
		const struct vmpt_perf_event *ev = &s->sb[d->sb[d->next_sb]];
		struct vmpt_task task = { .cpu = -1, .pid = -1, .tid = -1 };
		uint64_t t = ev->sid.present & PERF_SAMPLE_TIME ? ev->sid.time : 0;
		int thread;

		/* perf decodes the queues up to a record's time first: the
		 * samples before it come before it.
		 */
		if (tsc != UINT64_MAX && s->have_tc && t &&
		    vmpt_perf_time_to_tsc(&s->tc, t) > tsc)
			break;
		d->next_sb++;
		if (ev->sid.present & PERF_SAMPLE_CPU)
			task.cpu = (int)ev->sid.cpu;
		if (ev->sid.present & PERF_SAMPLE_TID) {
			task.pid = (int)ev->sid.pid;
			task.tid = (int)ev->sid.tid;
		}
		switch (ev->type) {
		case PERF_RECORD_COMM: thread = (int)ev->comm.tid; break;
		case PERF_RECORD_FORK:
		case PERF_RECORD_EXIT: thread = (int)ev->fork.tid; break;
		case PERF_RECORD_MMAP:
		case PERF_RECORD_MMAP2: thread = (int)ev->mmap.tid; break;
		default: thread = task.tid; break;
		}
		task.comm = thread != -1 ? vmpt_session_comm(s, thread, t) : NULL;
		/* A sample's code is its process's at its time. */
		task.space = task.pid > 0 ? vmpt_session_space(s, task.pid, t) : 0;
		d->ops->sideband(c, ev, &task);
	}
	sideband_due(d);
}

static int cmp_sb(const void *a, const void *b, void *arg)
{
	const struct vmpt_session *s = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct vmpt_perf_event *x = &s->sb[i], *y = &s->sb[j];
	uint64_t tx = x->sid.present & PERF_SAMPLE_TIME ? x->sid.time : 0;
	uint64_t ty = y->sid.present & PERF_SAMPLE_TIME ? y->sid.time : 0;

	if (tx != ty)
		return tx < ty ? -1 : 1;
	return i < j ? -1 : i > j;
}

static int s_progress(const struct decode *d)
{
	return d->s->opts.progress.fn != NULL;
}

/* Trace bytes done: the buffers behind each queue and its place in the
 * current one.
 */
static void report_progress(struct decode *d)
{
	uint64_t done = 0;

	for (size_t k = 0; k < d->nq; k++) {
		const struct queue *q = &d->qs[k];

		done += q->bytes;
		if (q->buf)
			done += q->item ? q->item->offset : q->run_size;
	}
	d->s->opts.progress.fn(d->s->opts.progress.ctx, done, d->total);
}

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
static void est_reset(const struct decode *d, struct queue *q)
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
	est_reset(d, q);
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
	while (ret == 0 && q->item && !s_progress(d)) {
		const struct vmpt_flow_item *it = q->item;
		uint64_t t = print_time(d, q);

		if (t > until || (d->next_sb < d->n_sb && it->time && d->sb_due <= it->time) ||
		    (it->kind == VMPT_FLOW_BLOCK && branch_own_time(it) && it->ninsn > 1 &&
		     t < branch_due(d, q) && until < branch_due(d, q)))
			break;
		hand_item(d, q);
		q->item = NULL;
		ret = queue_fill(d, q);
		if (ret == -VMPT_ERR_EOS)
			ret = 0;
	}
	return ret;
}

static int decode_one_thread(struct decode *d, FILE *f)
{
	struct queue *cur = NULL, *running = NULL;
	struct vmpt_consumer *last;
	int ret = 0;

	if (d->nq > 1 && d->ops->estimate)
		d->est_below = d->ops->estimate_below;

	for (size_t k = 0; k < d->nq && ret == 0; k++) {
		ret = queue_fill(d, &d->qs[k]);
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
				if ((ret = queue_fill(d, q)) == -VMPT_ERR_EOS)
					ret = 0;
				if (ret < 0)
					break;
			}
		}
		if (ret < 0)
			break;
		best = pick(d, running, NULL);

		if (s_progress(d) && ++d->items % 16384 == 0)
			report_progress(d);
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
			sideband_until(d, best->out, best->item->time);
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
		if (d->nq == 1 && best->left && !s_progress(d) && best->task_until &&
		    !(d->next_sb < d->n_sb && best->task_tsc && d->sb_due <= best->task_tsc)) {
			size_t k = 0;

			while (k < best->left && best->batch[k].time == best->task_tsc)
				k++;
			vmpt_consumer_items(d->ops, best->out, best->batch, k);
			best->batch += k;
			best->left -= k;
		}
		ret = queue_fill(d, best);
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
			sideband_until(d, last, UINT64_MAX);
			ret = d->ops->flush(last);
		}
	}
	if (!d->nq)
		d->ops->close(last);
	return ret;
}

int vmpt_session_decode(struct vmpt_session *s, const struct vmpt_consumer_ops *ops,
			int jobs, FILE *f)
{
	struct decode d = { .s = s, .ops = ops, .jobs = jobs };
	int ret = 0;

	d.snapshot = s->have_info && s->info.priv[VMPT_INTEL_PT_SNAPSHOT_MODE];
	/* Queues by perf's mmap index, buffers in file order. */
	for (size_t i = 0; i < s->n_bufs && ret == 0; i++) {
		size_t k;

		d.total += s->bufs[i].size;
		for (k = 0; k < d.nq; k++)
			if (s->bufs[d.qs[k].bufs[0]].idx == s->bufs[i].idx)
				break;
		if (k == d.nq) {
			struct queue *qs = realloc(d.qs, (d.nq + 1) * sizeof(*qs));

			if (!qs) {
				ret = -VMPT_ERR_NOMEM;
				break;
			}
			d.qs = qs;
			memset(&qs[k], 0, sizeof(qs[k]));
			qs[k].s = s;
			d.nq++;
			qs[k].out = ops->open(ops->ctx, f);
			if (!qs[k].out)
				ret = -VMPT_ERR_NOMEM;
		}
		if (ret == 0) {
			size_t *b = realloc(d.qs[k].bufs, (d.qs[k].n + 1) * sizeof(*b));

			struct vmpt_pkt_part *parts = b ? realloc(d.qs[k].parts,
				(d.qs[k].n + 1) * sizeof(*parts)) : NULL;

			if (b)
				d.qs[k].bufs = b;
			if (parts)
				d.qs[k].parts = parts;
			if (!b || !parts)
				ret = -VMPT_ERR_NOMEM;
			else
				d.qs[k].bufs[d.qs[k].n++] = i;
		}
	}
	for (size_t k = 0; ret == 0 && d.snapshot && k < d.nq; k++)
		ret = session_snapshot_plan(s, d.qs[k].bufs, &d.qs[k].n, &d.qs[k].skip,
					    &d.qs[k].cont);
	if (ret == 0 && s->n_sb) {
		d.sb = malloc(s->n_sb * sizeof(*d.sb));
		if (!d.sb)
			ret = -VMPT_ERR_NOMEM;
		for (size_t i = 0; d.sb && i < s->n_sb; i++)
			d.sb[i] = i;
		if (d.sb)
			qsort_r(d.sb, s->n_sb, sizeof(*d.sb), cmp_sb, s);
		d.n_sb = s->n_sb;
		sideband_due(&d);
	}
	if (ret == 0)
		ret = decode_one_thread(&d, f);
	if (ret < 0)
		snprintf(s->errmsg, sizeof(s->errmsg), "%.500s: %s", s->pd.path,
			 ret == -VMPT_ERR_IO ? "writing output" : vmpt_strerror(ret));
	for (size_t k = 0; k < d.nq; k++) {
		ops->close(d.qs[k].out);
		vmpt_jobs_free(d.qs[k].jobs);
		vmpt_flow_free(d.qs[k].dec);
		free(d.qs[k].bufs);
		free(d.qs[k].skip);
		free(d.qs[k].cont);
		free(d.qs[k].parts);
		free(d.qs[k].patch_v);
	}
	free(d.qs);
	free(d.sb);
	return ret;
}
