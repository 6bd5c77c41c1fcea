/* SPDX-License-Identifier: MIT */
/* perf.data writer, laid out as perf record does it:
 *   header | ids | attrs | data (records) | feature section table | features
 * The header is written last (at close), when data size and feature
 * offsets are known; records stream out through a buffer as they come.
 */
#include "perf_data_priv.h"
#include "vmpt/error.h"
#include "perf_data_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>

int pw_flush(struct vmpt_perf_writer *w)
{
	size_t done = 0;

	while (done < w->wlen) {
		ssize_t n = write(w->fd, w->wbuf + done, w->wlen - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			w->err = -VMPT_ERR_IO;
			return w->err;
		}
		done += (size_t)n;
	}
	w->wlen = 0;
	return 0;
}

int pw_write(struct vmpt_perf_writer *w, const void *buf, size_t size)
{
	const uint8_t *p = buf;

	if (w->err)
		return w->err;
	while (size) {
		size_t n = WBUF_SIZE - w->wlen;

		if (!n && pw_flush(w) < 0)
			return w->err;
		n = WBUF_SIZE - w->wlen;
		if (n > size)
			n = size;
		memcpy(w->wbuf + w->wlen, p, n);
		w->wlen += n;
		w->pos += n;
		p += n;
		size -= n;
	}
	return 0;
}

void pw_put(struct pw_buf *b, const void *p, size_t n)
{
	if (b->nomem || !n)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *grown;

		while (cap < b->len + n)
			cap *= 2;
		grown = realloc(b->p, cap);
		if (!grown) {
			b->nomem = 1;
			return;
		}
		b->p = grown;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

int pw_zero(struct vmpt_perf_writer *w, size_t size)
{
	static const uint8_t zero[64];

	while (size) {
		size_t n = size < sizeof(zero) ? size : sizeof(zero);
		int err = pw_write(w, zero, n);

		if (err < 0)
			return err;
		size -= n;
	}
	return 0;
}

int vmpt_perf_writer_open(struct vmpt_perf_writer **wp, const char *path,
			  const struct vmpt_perf_writer_opts *opts)
{
	struct vmpt_perf_writer *w;

	*wp = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -VMPT_ERR_NOMEM;
	w->fd = -1;
	w->env.clockid = -1;
	w->want_build_ids = opts && opts->build_ids;
	if (opts && opts->dir) {
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			goto io_err;
		if (asprintf(&w->path, "%s/data", path) < 0 ||
		    asprintf(&w->kcore_dir, "%s/kcore_dir", path) < 0)
			goto nomem;
	} else {
		w->path = strdup(path);
		if (!w->path)
			goto nomem;
	}
	w->fd = open(w->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0)
		goto io_err;
	*wp = w;
	return 0;
nomem:
	free(w->path);
	free(w->kcore_dir);
	free(w);
	return -VMPT_ERR_NOMEM;
io_err: {
	int saved = errno;

	free(w->path);
	free(w->kcore_dir);
	free(w);
	errno = saved;
	return -VMPT_ERR_IO;
}
}

const char *vmpt_perf_writer_kcore_dir(struct vmpt_perf_writer *w)
{
	if (!w->kcore_dir)
		return NULL;
	if (mkdir(w->kcore_dir, 0755) < 0 && errno != EEXIST)
		return NULL;
	return w->kcore_dir;
}

uint64_t vmpt_perf_writer_data_size(const struct vmpt_perf_writer *w)
{
	return w->started ? w->pos - w->data_offset : 0;
}

uint64_t vmpt_perf_writer_records(const struct vmpt_perf_writer *w)
{
	return w->nr_records;
}

int vmpt_perf_writer_sync(struct vmpt_perf_writer *w)
{
	int err;

	if (w->err || !w->started)
		return w->err;
	if ((err = pw_flush(w)) < 0)
		return err;
	/* perf takes a data size of 0 for a file whose writer did not end
	 * ("Was the 'perf record' command properly terminated?"): give it the
	 * data written so far.  The feature sections come at close. */
	if ((err = pd_write_header(w, w->pos - w->data_offset, NULL)) < 0)
		w->err = err;
	return err;
}

int vmpt_perf_writer_add_attr(struct vmpt_perf_writer *w,
			      const struct perf_event_attr *attr,
			      const char *name, const uint64_t *ids, size_t nr_ids)
{
	struct pw_attr *a;

	/* The attrs sit before the data: they are fixed once data flows. */
	if (w->started)
		return -VMPT_ERR_INVAL;
	a = realloc(w->attrs, (w->nr_attrs + 1) * sizeof(*a));
	if (!a)
		return -VMPT_ERR_NOMEM;
	w->attrs = a;
	a = &a[w->nr_attrs];
	memset(a, 0, sizeof(*a));
	a->attr = *attr;
	a->attr.size = sizeof(a->attr);
	a->name = strdup(name ? name : "");
	a->ids = malloc((nr_ids ? nr_ids : 1) * sizeof(uint64_t));
	if (!a->name || !a->ids) {
		free(a->name);
		free(a->ids);
		return -VMPT_ERR_NOMEM;
	}
	memcpy(a->ids, ids, nr_ids * sizeof(uint64_t));
	a->nr_ids = nr_ids;
	w->nr_attrs++;
	return 0;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

int vmpt_perf_writer_set_env(struct vmpt_perf_writer *w,
			     const struct vmpt_perf_env *env)
{
	struct vmpt_perf_env *e = &w->env;

	e->hostname = dup_or_null(env->hostname);
	e->os_release = dup_or_null(env->os_release);
	e->version = dup_or_null(env->version);
	e->arch = dup_or_null(env->arch);
	e->cpudesc = dup_or_null(env->cpudesc);
	e->cpuid = dup_or_null(env->cpuid);
	e->pmu_mappings = dup_or_null(env->pmu_mappings);
	e->nr_cpus_online = env->nr_cpus_online;
	e->nr_cpus_avail = env->nr_cpus_avail;
	e->total_mem_kb = env->total_mem_kb;
	e->clockid = env->clockid;
	if (env->nr_cmdline) {
		e->cmdline = calloc(env->nr_cmdline, sizeof(char *));
		if (!e->cmdline)
			return -VMPT_ERR_NOMEM;
		for (uint32_t i = 0; i < env->nr_cmdline; i++)
			if (!(e->cmdline[e->nr_cmdline++] = strdup(env->cmdline[i])))
				return -VMPT_ERR_NOMEM;
	}
	if (env->nr_build_ids) {
		e->build_ids = calloc(env->nr_build_ids, sizeof(*e->build_ids));
		if (!e->build_ids)
			return -VMPT_ERR_NOMEM;
		for (size_t i = 0; i < env->nr_build_ids; i++) {
			e->build_ids[i] = env->build_ids[i];
			e->build_ids[i].filename = strdup(env->build_ids[i].filename);
			e->nr_build_ids++;
			if (!e->build_ids[i].filename)
				return -VMPT_ERR_NOMEM;
		}
	}
	return 0;
}

int pd_write_header(struct vmpt_perf_writer *w, uint64_t data_size,
		    const uint64_t *features)
{
	uint8_t hdr[PERF_FILE_HEADER_SIZE] = { 0 };
	uint64_t magic = PERF_MAGIC2, hsize = PERF_FILE_HEADER_SIZE;
	uint64_t attr_size = sizeof(struct perf_event_attr) + 16;
	uint64_t attrs_size = w->nr_attrs * attr_size;
	uint64_t attrs_off = w->data_offset - attrs_size;
	const uint8_t *p = hdr;
	size_t left = sizeof(hdr);
	off_t off = 0;

	memcpy(hdr, &magic, 8);
	memcpy(hdr + 8, &hsize, 8);
	memcpy(hdr + 16, &attr_size, 8);
	memcpy(hdr + 24, &attrs_off, 8);
	memcpy(hdr + 32, &attrs_size, 8);
	memcpy(hdr + 40, &w->data_offset, 8);
	memcpy(hdr + 48, &data_size, 8);
	/* event_types (56..71) stays zero, as perf leaves it. */
	if (features)
		memcpy(hdr + 72, features, VMPT_PERF_FEAT_BITS / 8);
	while (left) {
		ssize_t n = pwrite(w->fd, p, left, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -VMPT_ERR_IO;
		}
		p += n;
		off += n;
		left -= (size_t)n;
	}
	return 0;
}

/* header placeholder | ids | attrs: perf_session__write_header's layout. */
int pw_start(struct vmpt_perf_writer *w)
{
	uint64_t id_offset = PERF_FILE_HEADER_SIZE;
	int err;

	if (w->started)
		return w->err;
	w->started = 1;
	if ((err = pw_zero(w, PERF_FILE_HEADER_SIZE)) < 0)
		return err;
	for (size_t i = 0; i < w->nr_attrs; i++)
		if ((err = pw_write(w, w->attrs[i].ids, w->attrs[i].nr_ids * 8)) < 0)
			return err;
	for (size_t i = 0; i < w->nr_attrs; i++) {
		uint64_t sec[2] = { id_offset, w->attrs[i].nr_ids * 8 };

		if ((err = pw_write(w, &w->attrs[i].attr, sizeof(w->attrs[i].attr))) < 0 ||
		    (err = pw_write(w, sec, sizeof(sec))) < 0)
			return err;
		id_offset += sec[1];
	}
	w->data_offset = w->pos;
	/* A provisional header (data size 0, as perf record leaves it until
	 * the end) so that a recording cut short is still recognizable. */
	if ((err = pw_flush(w)) < 0)
		return err;
	return pd_write_header(w, 0, NULL);
}

int vmpt_perf_write_event(struct vmpt_perf_writer *w, const void *record)
{
	const uint8_t *r = record;
	uint32_t type = pd_u32(r);
	uint16_t size = pd_u16(r + 6);
	int err;

	if (size < 8 || size % 8 || type == VMPT_PERF_RECORD_AUXTRACE ||
	    type == VMPT_PERF_RECORD_HEADER_TRACING_DATA)
		return -VMPT_ERR_INVAL;
	if ((err = pw_start(w)) < 0)
		return err;
	if (w->want_build_ids)
		pw_note_mapping(w, r, size);
	if ((err = pw_write(w, record, size)) < 0)
		return err;
	w->nr_records++;
	return 0;
}

/* ---- records from struct vmpt_perf_event ---- */

struct rec {
	uint8_t b[MAX_RECORD + 1];
	size_t len;
	int overflow;
};

static void put(struct rec *r, const void *p, size_t n)
{
	if (r->len + n > MAX_RECORD) {
		r->overflow = 1;
		return;
	}
	memcpy(r->b + r->len, p, n);
	r->len += n;
}

static void put64(struct rec *r, uint64_t v) { put(r, &v, 8); }

static void put32x2(struct rec *r, uint32_t a, uint32_t b)
{
	put(r, &a, 4);
	put(r, &b, 4);
}

/* A string NUL-terminated and zero-padded to 8 bytes, as the kernel does. */
static void put_string(struct rec *r, const char *s)
{
	static const uint8_t zero[8];
	size_t n = strlen(s ? s : "") + 1;

	put(r, s ? s : "", n - 1);
	put(r, zero, 8 - (n - 1) % 8);
}

static const struct pw_attr *attr_with_id(const struct vmpt_perf_writer *w,
					  uint64_t id)
{
	for (size_t i = 0; i < w->nr_attrs; i++)
		for (size_t j = 0; j < w->attrs[i].nr_ids; j++)
			if (w->attrs[i].ids[j] == id)
				return &w->attrs[i];
	return NULL;
}

static const struct pw_attr *attr_for(const struct vmpt_perf_writer *w, uint64_t id)
{
	const struct pw_attr *a = attr_with_id(w, id);

	return a ? a : w->nr_attrs ? &w->attrs[0] : NULL;
}

static void put_trailer(struct rec *r, const struct pw_attr *a,
			const struct vmpt_perf_sample_id *sid)
{
	uint64_t st;

	if (!a || !a->attr.sample_id_all)
		return;
	st = a->attr.sample_type;
	if (st & PERF_SAMPLE_TID)
		put32x2(r, sid->pid, sid->tid);
	if (st & PERF_SAMPLE_TIME)
		put64(r, sid->time);
	if (st & PERF_SAMPLE_ID)
		put64(r, sid->id);
	if (st & PERF_SAMPLE_STREAM_ID)
		put64(r, sid->stream_id);
	if (st & PERF_SAMPLE_CPU)
		put32x2(r, sid->cpu, 0);
	if (st & PERF_SAMPLE_IDENTIFIER)
		put64(r, sid->id);
}

static int put_sample(struct rec *r, const struct pw_attr *a,
		      const struct vmpt_perf_event *ev)
{
	const uint64_t known = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
			       PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
			       PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
			       PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	uint64_t st;

	if (!a)
		return -VMPT_ERR_INVAL;
	st = a->attr.sample_type;
	if (st & ~known)
		return -VMPT_ERR_UNSUPPORTED;
	if (st & PERF_SAMPLE_IDENTIFIER)
		put64(r, ev->sid.id);
	if (st & PERF_SAMPLE_IP)
		put64(r, ev->sample.ip);
	if (st & PERF_SAMPLE_TID)
		put32x2(r, ev->sid.pid, ev->sid.tid);
	if (st & PERF_SAMPLE_TIME)
		put64(r, ev->sid.time);
	if (st & PERF_SAMPLE_ADDR)
		put64(r, ev->sample.addr);
	if (st & PERF_SAMPLE_ID)
		put64(r, ev->sid.id);
	if (st & PERF_SAMPLE_STREAM_ID)
		put64(r, ev->sid.stream_id);
	if (st & PERF_SAMPLE_CPU)
		put32x2(r, ev->sid.cpu, 0);
	if (st & PERF_SAMPLE_PERIOD)
		put64(r, ev->sample.period);
	return 0;
}

static void put_time_conv(struct rec *r, const struct vmpt_perf_time_conv *tc)
{
	put64(r, tc->time_shift);
	put64(r, tc->time_mult);
	put64(r, tc->time_zero);
	if (tc->extended) {
		uint8_t flags[8] = { tc->cap_user_time_zero, tc->cap_user_time_short };

		put64(r, tc->time_cycles);
		put64(r, tc->time_mask);
		put(r, flags, sizeof(flags));
	}
}

static int pw_emit(struct vmpt_perf_writer *w, struct rec *r, uint32_t type,
		   uint16_t misc)
{
	if (r->overflow)
		return -VMPT_ERR_INVAL;
	memcpy(r->b, &type, 4);
	memcpy(r->b + 4, &misc, 2);
	uint16_t size = (uint16_t)r->len;
	memcpy(r->b + 6, &size, 2);
	return vmpt_perf_write_event(w, r->b);
}

int vmpt_perf_write_event_sid(struct vmpt_perf_writer *w, const void *record,
			      const struct vmpt_perf_sample_id *sid)
{
	const struct pw_attr *a = attr_with_id(w, sid->id);
	uint16_t size = pd_u16((const uint8_t *)record + 6);
	struct rec *r;
	int err;

	if (!a || size < 8 || size % 8)
		return -VMPT_ERR_INVAL;
	r = malloc(sizeof(*r));
	if (!r)
		return -VMPT_ERR_NOMEM;
	r->len = 0;
	r->overflow = 0;
	put(r, record, size);
	put_trailer(r, a, sid);
	err = pw_emit(w, r, pd_u32(r->b), pd_u16(r->b + 4));
	free(r);
	return err;
}

int vmpt_perf_write_record(struct vmpt_perf_writer *w,
			   const struct vmpt_perf_event *ev)
{
	const struct pw_attr *a = attr_for(w, ev->sid.id);
	uint16_t misc = ev->misc;
	struct rec *r;
	int err = 0;

	r = malloc(sizeof(*r));
	if (!r)
		return -VMPT_ERR_NOMEM;
	r->len = 8;
	r->overflow = 0;
	switch (ev->type) {
	case PERF_RECORD_MMAP:
		put32x2(r, ev->mmap.pid, ev->mmap.tid);
		put64(r, ev->mmap.start);
		put64(r, ev->mmap.len);
		put64(r, ev->mmap.pgoff);
		put_string(r, ev->mmap.filename);
		break;
	case PERF_RECORD_MMAP2:
		put32x2(r, ev->mmap.pid, ev->mmap.tid);
		put64(r, ev->mmap.start);
		put64(r, ev->mmap.len);
		put64(r, ev->mmap.pgoff);
		if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			uint8_t hdr[4] = { ev->mmap.build_id_size };

			put(r, hdr, 4);
			put(r, ev->mmap.build_id, 20);
		} else {
			put32x2(r, ev->mmap.maj, ev->mmap.min);
			put64(r, ev->mmap.ino);
			put64(r, ev->mmap.ino_generation);
		}
		put32x2(r, ev->mmap.prot, ev->mmap.flags);
		put_string(r, ev->mmap.filename);
		break;
	case PERF_RECORD_COMM:
		put32x2(r, ev->comm.pid, ev->comm.tid);
		put_string(r, ev->comm.comm);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		put32x2(r, ev->fork.pid, ev->fork.ppid);
		put32x2(r, ev->fork.tid, ev->fork.ptid);
		put64(r, ev->fork.time);
		break;
	case PERF_RECORD_LOST:
		put64(r, ev->lost.id);
		put64(r, ev->lost.lost);
		break;
	case PERF_RECORD_LOST_SAMPLES:
		put64(r, ev->lost_samples.lost);
		break;
	case PERF_RECORD_ITRACE_START:
		put32x2(r, ev->itrace_start.pid, ev->itrace_start.tid);
		break;
	case PERF_RECORD_AUX:
		put64(r, ev->aux.aux_offset);
		put64(r, ev->aux.aux_size);
		put64(r, ev->aux.flags);
		break;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (ev->sw.out)
			misc |= PERF_RECORD_MISC_SWITCH_OUT;
		if (ev->sw.preempt)
			misc |= PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
		if (ev->type == PERF_RECORD_SWITCH_CPU_WIDE)
			put32x2(r, ev->sw.next_prev_pid, ev->sw.next_prev_tid);
		break;
	case PERF_RECORD_SAMPLE:
		err = put_sample(r, a, ev);
		break;
	case VMPT_PERF_RECORD_AUXTRACE_INFO:
		put32x2(r, ev->auxtrace_info.type, 0);
		put(r, ev->auxtrace_info.priv,
		    (ev->auxtrace_info.nr_priv > VMPT_PERF_AUXTRACE_PRIV_MAX ?
		     VMPT_PERF_AUXTRACE_PRIV_MAX : ev->auxtrace_info.nr_priv) * 8u);
		break;
	case VMPT_PERF_RECORD_TIME_CONV:
		put_time_conv(r, &ev->time_conv);
		break;
	case VMPT_PERF_RECORD_FINISHED_ROUND:
		break;
	default:
		err = -VMPT_ERR_UNSUPPORTED;
	}
	if (!err && ev->type < 64 && ev->type != PERF_RECORD_SAMPLE)
		put_trailer(r, a, &ev->sid);
	if (!err)
		err = pw_emit(w, r, ev->type, misc);
	free(r);
	return err;
}

int vmpt_perf_write_auxtrace(struct vmpt_perf_writer *w, const void *data,
			     uint64_t size, uint64_t offset, uint64_t reference,
			     uint32_t idx, uint32_t tid, uint32_t cpu)
{
	struct iovec iov = { (void *)data, size };

	return vmpt_perf_write_auxtrace_iov(w, &iov, 1, offset, reference, idx,
					    tid, cpu);
}

int vmpt_perf_write_auxtrace_iov(struct vmpt_perf_writer *w,
				 const struct iovec *iov, int iovcnt,
				 uint64_t offset, uint64_t reference,
				 uint32_t idx, uint32_t tid, uint32_t cpu)
{
	uint64_t size = 0, padded;
	uint8_t rec[48];
	uint32_t type = VMPT_PERF_RECORD_AUXTRACE, zero = 0;
	uint16_t misc = 0, rsize = sizeof(rec);
	int err;

	for (int i = 0; i < iovcnt; i++)
		size += iov[i].iov_len;
	/* perf pads the data to 8 bytes and counts the padding in size. */
	padded = (size + 7) & ~7ULL;
	if ((err = pw_start(w)) < 0)
		return err;
	memcpy(rec, &type, 4);
	memcpy(rec + 4, &misc, 2);
	memcpy(rec + 6, &rsize, 2);
	memcpy(rec + 8, &padded, 8);
	memcpy(rec + 16, &offset, 8);
	memcpy(rec + 24, &reference, 8);
	memcpy(rec + 32, &idx, 4);
	memcpy(rec + 36, &tid, 4);
	memcpy(rec + 40, &cpu, 4);
	memcpy(rec + 44, &zero, 4);
	if (w->nr_index == w->cap_index) {
		size_t cap = w->cap_index ? 2 * w->cap_index : 64;
		void *p = realloc(w->index, cap * sizeof(*w->index));

		if (!p)
			return -VMPT_ERR_NOMEM;
		w->index = p;
		w->cap_index = cap;
	}
	/* The index entry covers the record header, as perf's does. */
	w->index[w->nr_index].file_offset = w->pos;
	w->index[w->nr_index].size = sizeof(rec);
	w->nr_index++;
	if ((err = pw_write(w, rec, sizeof(rec))) < 0)
		return err;
	for (int i = 0; i < iovcnt; i++)
		if ((err = pw_write(w, iov[i].iov_base, iov[i].iov_len)) < 0)
			return err;
	if ((err = pw_zero(w, padded - size)) < 0)
		return err;
	w->nr_records++;
	return 0;
}

int vmpt_perf_write_intel_pt_info(struct vmpt_perf_writer *w,
				  const struct vmpt_perf_intel_pt_info *info)
{
	struct rec *r = malloc(sizeof(*r));
	size_t flen = info->filter ? strlen(info->filter) : 0;
	uint64_t priv[VMPT_INTEL_PT_PRIV_MAX];
	int err;

	if (!r)
		return -VMPT_ERR_NOMEM;
	r->len = 8;
	r->overflow = 0;
	memcpy(priv, info->priv, sizeof(priv));
	priv[VMPT_INTEL_PT_FILTER_STR_LEN] = flen;
	put32x2(r, VMPT_PERF_AUXTRACE_INTEL_PT, 0);
	put(r, priv, sizeof(priv));
	if (flen)
		put_string(r, info->filter);
	err = pw_emit(w, r, VMPT_PERF_RECORD_AUXTRACE_INFO, 0);
	free(r);
	return err;
}

int vmpt_perf_write_time_conv(struct vmpt_perf_writer *w,
			      const struct vmpt_perf_time_conv *tc)
{
	struct vmpt_perf_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = VMPT_PERF_RECORD_TIME_CONV;
	ev.time_conv = *tc;
	return vmpt_perf_write_record(w, &ev);
}

int vmpt_perf_write_finished_round(struct vmpt_perf_writer *w)
{
	uint8_t rec[8] = { VMPT_PERF_RECORD_FINISHED_ROUND, 0, 0, 0, 0, 0, 8, 0 };

	return vmpt_perf_write_event(w, rec);
}

int vmpt_perf_write_id_index(struct vmpt_perf_writer *w,
			     const struct vmpt_perf_id_entry *entries, size_t nr)
{
	struct rec *r;
	int guest = 0, err = 0;
	/* perf splits long indexes over several records; so do we. */
	const size_t per_record = (MAX_RECORD - 16) / 48;

	for (size_t i = 0; i < nr; i++)
		if (entries[i].machine_pid >= 0 || entries[i].vcpu >= 0)
			guest = 1;
	r = malloc(sizeof(*r));
	if (!r)
		return -VMPT_ERR_NOMEM;
	for (size_t start = 0; !err && (start < nr || (!nr && !start)); start += per_record) {
		size_t n = nr - start < per_record ? nr - start : per_record;

		r->len = 8;
		r->overflow = 0;
		put64(r, n);
		for (size_t i = start; i < start + n; i++) {
			put64(r, entries[i].id);
			put64(r, entries[i].idx);
			put64(r, entries[i].cpu);
			put64(r, entries[i].tid);
		}
		for (size_t i = start; guest && i < start + n; i++) {
			put64(r, entries[i].machine_pid < 0 ? 0 : (uint64_t)entries[i].machine_pid);
			put64(r, (uint64_t)entries[i].vcpu);
		}
		err = pw_emit(w, r, VMPT_PERF_RECORD_ID_INDEX, 0);
		if (!nr)
			break;
	}
	free(r);
	return err;
}
