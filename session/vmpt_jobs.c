/* SPDX-License-Identifier: MIT */
/* Parallel decoding of one trace: cut at PSBs into pieces of about
 * 128 KiB (at least 4 per thread), decoded N at a time, one decoder and
 * one consumer stream per thread kept from piece to piece, each piece's
 * output in memory until it is its turn, printed in trace order.  Each
 * piece ends where the next starts (decoding.md, "Parallel decoding"), so
 * the output is the one thread's.  See include/vmpt/jobs.h.
 */
#include "vmpt/jobs.h"
#include "vmpt/error.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A decoding thread keeps its decoder (and so its block cache) and its
 * stream from one piece to the next; each piece's output goes to memory.
 */
struct worker {
	const struct vmpt_consumer_ops *ops;
	struct vmpt_flow *dec;
	struct vmpt_consumer *out;
	struct vmpt_buffer_ref ref;
	uint64_t start, stop;
	/* The piece's output: one stream, rewound for each piece, so its
	 * buffer (100 MB for a MiB of trace, every instruction) grows once.
	 */
	FILE *mem;
	char *buf;
	size_t len;
	int ret;
};

static int decode(const struct vmpt_consumer_ops *ops, struct vmpt_flow *dec,
		  uint64_t start, uint64_t stop, struct vmpt_consumer *out)
{
	const struct vmpt_flow_item *it;
	size_t n;
	int ret;

	vmpt_flow_sync_at(dec, start, stop);
	while ((ret = vmpt_flow_next_items(dec, &it, &n)) == 0) {
		for (size_t i = 0; i < n; i++)
			ops->item(out, &it[i]);
	}
	ops->drain(out, 0);
	if (ops->flush(out) < 0)
		return -VMPT_ERR_IO;
	return ret == -VMPT_ERR_EOS ? 0 : ret;
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;

	if (!w->mem)
		w->mem = open_memstream(&w->buf, &w->len);
	else
		fseek(w->mem, 0, SEEK_SET);
	if (!w->mem) {
		w->ret = -VMPT_ERR_NOMEM;
		return NULL;
	}
	w->ops->set_file(w->out, w->mem);
	w->ops->begin_buffer(w->out, &w->ref);
	w->ret = decode(w->ops, w->dec, w->start, w->stop, w->out);
	if (fflush(w->mem))
		w->ret = -VMPT_ERR_NOMEM;
	return NULL;
}

static struct vmpt_flow *new_decoder(const struct vmpt_flow_config *base,
				     uint64_t host_space)
{
	struct vmpt_flow *dec = vmpt_flow_new(base);

	if (dec && host_space)
		vmpt_flow_set_host_space(dec, host_space);
	return dec;
}

static int one_thread(const struct vmpt_flow_config *base,
		      const struct vmpt_consumer_ops *ops, const struct vmpt_task *task,
		      uint64_t host_space, const struct vmpt_buffer_ref *ref, FILE *f)
{
	struct vmpt_flow *dec = new_decoder(base, host_space);
	struct vmpt_consumer *out = ops->open(ops->ctx, f);
	int ret = -VMPT_ERR_NOMEM;

	if (dec && out) {
		ops->set_task(out, task);
		ops->begin_buffer(out, ref);
		ret = decode(ops, dec, 0, 0, out);
	}
	if (out) {
		ops->close(out);
		if (ret == 0 && ops->flush == NULL)
			ret = 0;
	}
	vmpt_flow_free(dec);
	return ret;
}

int vmpt_jobs_decode(const struct vmpt_flow_config *base,
		     const struct vmpt_consumer_ops *ops, const struct vmpt_task *task,
		     uint64_t host_space, const struct vmpt_buffer_ref *ref, int jobs,
		     FILE *f)
{
	size_t n_psbs = 0, pieces, size = (size_t)(base->end - base->begin);
	struct vmpt_flow_config shared = *base;
	struct worker *w = NULL;
	uint64_t *psbs = NULL;
	int ret = 0;

	if (ops->serial)
		jobs = 1;
	if (jobs > 1 && vmpt_flow_psb_offsets(base->begin, base->end, &psbs, &n_psbs) < 0)
		return -VMPT_ERR_NOMEM;
	if (jobs <= 1 || n_psbs < 2) {
		free(psbs);
		return one_thread(base, ops, task, host_space, ref, f);
	}
	if ((size_t)jobs > n_psbs)
		jobs = (int)n_psbs;
	/* Pieces of about 128 KiB, at least 4 per thread, cut at PSBs: a
	 * piece's output waits in memory (every instruction of 128 KiB of
	 * trace can be 10 MB of text).
	 */
	pieces = size >> 17 > (size_t)jobs * 4 ? size >> 17 : (size_t)jobs * 4;
	if (pieces > n_psbs)
		pieces = n_psbs;
	/* One block cache for all workers: no code is disassembled twice. */
	if (!shared.cache)
		shared.cache = vmpt_bcache_new();
	w = calloc((size_t)jobs, sizeof(*w));
	if (!w || !shared.cache) {
		free(w);
		free(psbs);
		if (shared.cache != base->cache)
			vmpt_bcache_free(shared.cache);
		return -VMPT_ERR_NOMEM;
	}
	for (int k = 0; k < jobs; k++) {
		w[k].ops = ops;
		w[k].dec = new_decoder(&shared, host_space);
		w[k].out = ops->open(ops->ctx, NULL);
		if (!w[k].dec || !w[k].out) {
			ret = -VMPT_ERR_NOMEM;
			jobs = k + 1;
			goto out;
		}
		ops->set_task(w[k].out, task);
	}
	for (size_t done = 0; done < pieces && ret == 0; done += (size_t)jobs) {
		size_t n = pieces - done < (size_t)jobs ? pieces - done : (size_t)jobs;
		pthread_t th[n];

		for (size_t k = 0; k < n; k++) {
			size_t i = done + k;

			w[k].start = i ? psbs[i * n_psbs / pieces] : 0;
			w[k].stop = i + 1 < pieces ? psbs[(i + 1) * n_psbs / pieces] : 0;
			w[k].ref = *ref;
			w[k].ref.piece = i > 0;
			if (pthread_create(&th[k], NULL, worker_run, &w[k]) != 0) {
				worker_run(&w[k]);	/* no thread: do it here */
				th[k] = 0;
			}
		}
		for (size_t k = 0; k < n; k++) {
			if (th[k])
				pthread_join(th[k], NULL);
			if (ret == 0 && w[k].len && fwrite(w[k].buf, 1, w[k].len, f) != w[k].len)
				ret = -VMPT_ERR_IO;
			if (w[k].ret < 0 && !ret)
				ret = w[k].ret;
		}
	}
out:
	for (int k = 0; k < jobs; k++) {
		if (w[k].out) {
			ops->set_file(w[k].out, NULL);
			ops->close(w[k].out);
		}
		vmpt_flow_free(w[k].dec);
		if (w[k].mem)
			fclose(w[k].mem);
		free(w[k].buf);
	}
	free(w);
	free(psbs);
	if (shared.cache != base->cache)
		vmpt_bcache_free(shared.cache);
	return ret;
}
