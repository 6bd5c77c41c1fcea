/* SPDX-License-Identifier: MIT */
/* Decoding a recording as perf script does: one queue per perf mmap index
 * (a CPU, or a thread), its buffers decoded one after the other, each item
 * with the task that ran it, the sideband records in time order, all
 * handed to a consumer (vmpt/consumer.h); vmpt_session_merge.c merges
 * the queues.
 */
#include "vmpt/session.h"
#include "vmpt_session_int.h"
#include "vmpt_session_queue.h"
#include "vmpt/error.h"
#include "vmpt/jobs.h"
#include "vmpt/packet.h"

#include <stdlib.h>
#include <string.h>

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

/* Make q->item the queue's next item, from the decoder's batch; 0, or
 * -VMPT_ERR_EOS when done.
 */
int session_queue_fill(struct decode *d, struct queue *q)
{
	struct vmpt_session *s = d->s;

	while (!q->item) {
		int ret;

		if (q->left) {
			q->item = q->batch++;
			session_merge_item_new(d, q);
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
void session_sideband_until(struct decode *d, struct vmpt_consumer *c, uint64_t tsc)
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

int session_progress_on(const struct decode *d)
{
	return d->s->opts.progress.fn != NULL;
}

/* Trace bytes done: the buffers behind each queue and its place in the
 * current one.
 */
void session_report_progress(struct decode *d)
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
		ret = session_merge(&d, f);
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
