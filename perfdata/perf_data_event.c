/* SPDX-License-Identifier: MIT */
/* perf.data records: walking the data section and parsing each record,
 * the sample_id trailer laid out by the record's attr (a SAMPLE's fields:
 * perf_data_sample.c).
 */
#include "perf_data_priv.h"
#include "vmpt/error.h"

#include <inttypes.h>
#include <stdio.h>

#define AUXTRACE_RECORD_SIZE 48
#define TRACING_DATA_RECORD_SIZE 16

void vmpt_perf_cursor_init(const struct vmpt_perf_data *pd,
			   struct vmpt_perf_cursor *cur)
{
	memset(cur, 0, sizeof(*cur));
	cur->pos = pd->data_offset;
	cur->end = pd->data_offset + pd->data_size;
}

int vmpt_perf_cursor_at(struct vmpt_perf_data *pd, struct vmpt_perf_cursor *cur,
			const struct vmpt_perf_event *ev)
{
	const struct vmpt_file *f = ev->part ? &pd->parts[ev->part - 1] : &pd->map;
	uint64_t start;
	int ret;

	vmpt_perf_cursor_init(pd, cur);
	if (ev->part) {
		cur->part = ev->part;
		cur->end = f->size;
	}
	cur->pos = ev->offset;
	if (!ev->compressed)
		return 0;
	if (ev->offset + 8 > f->size)
		return -VMPT_ERR_INVAL;
	ret = pd_zstd_chunk(pd, ev->part, ev->offset, &cur->zstream, &cur->zlen, &start,
			    &cur->zend);
	if (ret < 0)
		return ret;
	cur->zpos = ev->zpos;
	cur->zrecord = ev->offset;
	cur->pos = ev->offset + pd_u16(f->data + ev->offset + 6);
	return 0;
}

static const struct vmpt_file *cursor_file(const struct vmpt_perf_data *pd,
					   const struct vmpt_perf_cursor *cur)
{
	return cur->part ? &pd->parts[cur->part - 1] : &pd->map;
}

int pd_step(struct vmpt_perf_data *pd, struct vmpt_perf_cursor *cur)
{
	const uint8_t *d;
	uint64_t pos, left, payload = 0;
	uint32_t type;
	uint16_t size;

	/* At the end of a file, on to the next data.N (records from 0). */
	while (cur->pos >= cur->end && cur->part < pd->nr_parts) {
		cur->part++;
		cur->pos = 0;
		cur->end = pd->parts[cur->part - 1].size;
	}
	pd->cur_file = cursor_file(pd, cur);
	d = pd->cur_file->data;
	pos = cur->pos;
	if (pos >= cur->end)
		return 0;
	left = cur->end - pos;
	/* The file cut in its data: a cut record ends the walk; of a cut
	 * AUXTRACE the trace that is there is read (its size clamped).
	 */
	if ((pd->truncated || (pd->pipe && pd->read_cut)) && !cur->part) {
		if (left < 8 || pd_u16(d + pos + 6) > left) {
			pd_warn(pd, pos, "the file ends in a record: read up to the one before");
			cur->pos = cur->end;
			return 0;
		}
		if (pd_u32(d + pos) == VMPT_PERF_RECORD_AUXTRACE &&
		    pd_u16(d + pos + 6) >= AUXTRACE_RECORD_SIZE &&
		    pd_u64(d + pos + 8) > left - pd_u16(d + pos + 6)) {
			pd_warn(pd, pos, "the file ends in AUXTRACE data: %llu of its %llu bytes "
				"read", (unsigned long long)(left - pd_u16(d + pos + 6)),
				(unsigned long long)pd_u64(d + pos + 8));
			cur->pos = cur->end;
			return 1;
		}
	}
	if (left < 8)
		return pd_error(pd, pos, VMPT_ERR_FORMAT,
				"record header truncated (%llu bytes left)",
				(unsigned long long)left);
	type = pd_u32(d + pos);
	size = pd_u16(d + pos + 6);
	if (size < 8)
		return pd_error(pd, pos, VMPT_ERR_FORMAT,
				"record size %u too small (type %u)", size, type);
	if (size > left)
		return pd_error(pd, pos, VMPT_ERR_FORMAT,
				"record truncated (type %u, size %u, %llu bytes left)",
				type, size, (unsigned long long)left);
	if (type == VMPT_PERF_RECORD_AUXTRACE) {
		if (size < AUXTRACE_RECORD_SIZE)
			return pd_error(pd, pos, VMPT_ERR_FORMAT,
					"AUXTRACE record size %u too small", size);
		payload = pd_u64(d + pos + 8);
	} else if (type == VMPT_PERF_RECORD_HEADER_TRACING_DATA) {
		if (size < TRACING_DATA_RECORD_SIZE)
			return pd_error(pd, pos, VMPT_ERR_FORMAT,
					"TRACING_DATA record size %u too small", size);
		payload = pd_u32(d + pos + 8);
	}
	if (payload > left - size)
		return pd_error(pd, pos, VMPT_ERR_FORMAT,
				"%s data truncated (size %llu, %llu bytes left)",
				vmpt_perf_record_name(type), (unsigned long long)payload,
				(unsigned long long)(left - size));
	cur->pos = pos + size + payload;
	return 1;
}

/* Bytes of the sample_id trailer an attr puts on non-sample records. */
static unsigned sample_id_size(uint64_t st)
{
	unsigned n = 0;

	n += !!(st & PERF_SAMPLE_TID);
	n += !!(st & PERF_SAMPLE_TIME);
	n += !!(st & PERF_SAMPLE_ID);
	n += !!(st & PERF_SAMPLE_STREAM_ID);
	n += !!(st & PERF_SAMPLE_CPU);
	n += !!(st & PERF_SAMPLE_IDENTIFIER);
	return n * 8;
}

unsigned vmpt_perf_sample_id_size(const struct perf_event_attr *attr)
{
	return attr->sample_id_all ? sample_id_size(attr->sample_type) : 0;
}

/* Where the id sits, in u64 words from the start of a sample's body (pos)
 * or from the end of a non-sample record (is_pos), as perf computes them
 * from the first attr.  -1 when there is none.
 */
static int sample_id_pos(uint64_t st)
{
	int n = 0;

	if (st & PERF_SAMPLE_IDENTIFIER)
		return 0;
	if (!(st & PERF_SAMPLE_ID))
		return -1;
	n += !!(st & PERF_SAMPLE_IP);
	n += !!(st & PERF_SAMPLE_TID);
	n += !!(st & PERF_SAMPLE_TIME);
	n += !!(st & PERF_SAMPLE_ADDR);
	return n;
}

static int trailer_id_pos(uint64_t st)
{
	int n = 1;

	if (st & PERF_SAMPLE_IDENTIFIER)
		return 1;
	if (!(st & PERF_SAMPLE_ID))
		return -1;
	n += !!(st & PERF_SAMPLE_CPU);
	n += !!(st & PERF_SAMPLE_STREAM_ID);
	return n;
}

/* The attr of a record: by id when several attrs exist, as perf does. */
static const struct vmpt_perf_attr *record_attr(const struct vmpt_perf_data *pd,
						const uint8_t *r, uint16_t size,
						int is_sample)
{
	const struct vmpt_perf_attr *first, *a;
	uint64_t id;
	int pos;

	if (!pd->nr_attrs)
		return NULL;
	first = &pd->attrs[0];
	if (pd->nr_attrs == 1)
		return first;
	if (is_sample) {
		pos = sample_id_pos(first->attr.sample_type);
		if (pos < 0 || 8u + 8u * (unsigned)(pos + 1) > size)
			return first;
		id = pd_u64(r + 8 + 8 * pos);
	} else {
		if (!first->attr.sample_id_all)
			return first;
		pos = trailer_id_pos(first->attr.sample_type);
		if (pos < 0 || 8u + 8u * (unsigned)pos > size)
			return first;
		id = pd_u64(r + size - 8 * pos);
	}
	/* perf synthesizes records with id 0: they belong to the first attr.
	 * An unknown id (perf would refuse the record) is read the same way. */
	a = id ? vmpt_perf_attr_by_id(pd, id) : NULL;
	return a ? a : first;
}

/* Parse the sample_id trailer; returns the body size left before it. */
static int parse_trailer(struct vmpt_perf_data *pd, struct vmpt_perf_event *ev,
			 unsigned body_min)
{
	const struct vmpt_perf_attr *a = ev->attr;
	uint64_t st;
	unsigned tsize, body = ev->size - 8u;
	const uint8_t *p;

	/* Without a sample_id the fields still must fit (fuzz-perf-data:
	 * a 9-byte MMAP was read 32 bytes deep).
	 */
	if ((!a || !a->attr.sample_id_all) && body < body_min)
		return pd_error(pd, ev->offset, VMPT_ERR_FORMAT,
				"%s record size %u too small for its fields (%u bytes)",
				vmpt_perf_record_name(ev->type), ev->size, 8 + body_min);
	if (!a || !a->attr.sample_id_all)
		return (int)body;
	st = a->attr.sample_type;
	tsize = sample_id_size(st);
	if (body < tsize || body - tsize < body_min)
		return pd_error(pd, ev->offset, VMPT_ERR_FORMAT,
				"%s record size %u too small for its fields and sample_id (%u bytes)",
				vmpt_perf_record_name(ev->type), ev->size,
				8 + body_min + tsize);
	p = ev->raw + ev->size - tsize;
	ev->sid.present = st & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
				PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
				PERF_SAMPLE_IDENTIFIER);
	if (st & PERF_SAMPLE_TID) {
		ev->sid.pid = pd_u32(p);
		ev->sid.tid = pd_u32(p + 4);
		p += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		ev->sid.time = pd_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_ID) {
		ev->sid.id = pd_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_STREAM_ID) {
		ev->sid.stream_id = pd_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_CPU) {
		ev->sid.cpu = pd_u32(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_IDENTIFIER)
		ev->sid.id = pd_u64(p);
	return (int)(body - tsize);
}

/* A NUL-terminated string at body offset off, within len body bytes. */
static int body_string(struct vmpt_perf_data *pd, struct vmpt_perf_event *ev,
		       unsigned off, unsigned len, const char **out)
{
	const char *s = (const char *)ev->raw + 8 + off;

	if (off >= len || !memchr(s, 0, len - off))
		return pd_error(pd, ev->offset, VMPT_ERR_FORMAT,
				"%s record: string not terminated within the record",
				vmpt_perf_record_name(ev->type));
	*out = s;
	return 0;
}

static int too_small(struct vmpt_perf_data *pd, const struct vmpt_perf_event *ev,
		     unsigned need)
{
	return pd_error(pd, ev->offset, VMPT_ERR_FORMAT,
			"%s record size %u too small (need %u)",
			vmpt_perf_record_name(ev->type), ev->size, need);
}

/* intel_pt's AUXTRACE_INFO words that decoding shifts or divides by,
 * within what hardware gives (a crafted file's would be undefined
 * shifts): TIME_SHIFT < 64, the MTC period field 4 bits (SDM:
 * IA32_RTIT_CTL.MTCFreq), the CTC ratio 32 bits, the max non-turbo
 * ratio a byte (MSR_PLATFORM_INFO[15:8]).
 */
static int check_intel_pt_info(struct vmpt_perf_data *pd, const struct vmpt_perf_event *ev)
{
	static const struct { unsigned word; uint64_t max; const char *name; } limits[] = {
		{ VMPT_INTEL_PT_TIME_SHIFT, 63, "TIME_SHIFT" },
		{ VMPT_INTEL_PT_TSC_CTC_N, UINT32_MAX, "TSC_CTC_N" },
		{ VMPT_INTEL_PT_TSC_CTC_D, UINT32_MAX, "TSC_CTC_D" },
		{ VMPT_INTEL_PT_MAX_NONTURBO_RATIO, 255, "MAX_NONTURBO_RATIO" },
	};
	const uint64_t *priv = ev->auxtrace_info.priv;
	uint32_t nr = ev->auxtrace_info.nr_priv;
	uint64_t mtc;

	if (ev->auxtrace_info.type != VMPT_PERF_AUXTRACE_INTEL_PT)
		return 0;
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
		if (limits[i].word < nr && priv[limits[i].word] > limits[i].max)
			return pd_error(pd, ev->offset, VMPT_ERR_FORMAT,
					"AUXTRACE_INFO intel_pt %s %" PRIu64 " (at most %" PRIu64 ")",
					limits[i].name, priv[limits[i].word], limits[i].max);
	mtc = VMPT_INTEL_PT_MTC_FREQ_BITS < nr ? priv[VMPT_INTEL_PT_MTC_FREQ_BITS] : 0;
	if (mtc && mtc >> __builtin_ctzll(mtc) > 0xf)
		return pd_error(pd, ev->offset, VMPT_ERR_FORMAT,
				"AUXTRACE_INFO intel_pt MTC_FREQ_BITS %#" PRIx64
				" (a field of at most 4 bits)", mtc);
	return 0;
}

static int parse_kernel_record(struct vmpt_perf_data *pd, struct vmpt_perf_event *ev)
{
	const uint8_t *b = ev->raw + 8;
	int len;

	switch (ev->type) {
	case PERF_RECORD_MMAP:
		if ((len = parse_trailer(pd, ev, 32 + 1)) < 0)
			return len;
		ev->mmap.pid = pd_u32(b);
		ev->mmap.tid = pd_u32(b + 4);
		ev->mmap.start = pd_u64(b + 8);
		ev->mmap.len = pd_u64(b + 16);
		ev->mmap.pgoff = pd_u64(b + 24);
		return body_string(pd, ev, 32, (unsigned)len, &ev->mmap.filename);
	case PERF_RECORD_MMAP2:
		if ((len = parse_trailer(pd, ev, 64 + 1)) < 0)
			return len;
		ev->mmap.pid = pd_u32(b);
		ev->mmap.tid = pd_u32(b + 4);
		ev->mmap.start = pd_u64(b + 8);
		ev->mmap.len = pd_u64(b + 16);
		ev->mmap.pgoff = pd_u64(b + 24);
		if (ev->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			ev->mmap.build_id_size = b[32] > 20 ? 20 : b[32];
			memcpy(ev->mmap.build_id, b + 36, 20);
		} else {
			ev->mmap.maj = pd_u32(b + 32);
			ev->mmap.min = pd_u32(b + 36);
			ev->mmap.ino = pd_u64(b + 40);
			ev->mmap.ino_generation = pd_u64(b + 48);
		}
		ev->mmap.prot = pd_u32(b + 56);
		ev->mmap.flags = pd_u32(b + 60);
		return body_string(pd, ev, 64, (unsigned)len, &ev->mmap.filename);
	case PERF_RECORD_COMM:
		if ((len = parse_trailer(pd, ev, 8 + 1)) < 0)
			return len;
		ev->comm.pid = pd_u32(b);
		ev->comm.tid = pd_u32(b + 4);
		return body_string(pd, ev, 8, (unsigned)len, &ev->comm.comm);
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if ((len = parse_trailer(pd, ev, 24)) < 0)
			return len;
		ev->fork.pid = pd_u32(b);
		ev->fork.ppid = pd_u32(b + 4);
		ev->fork.tid = pd_u32(b + 8);
		ev->fork.ptid = pd_u32(b + 12);
		ev->fork.time = pd_u64(b + 16);
		return 0;
	case PERF_RECORD_LOST:
		if ((len = parse_trailer(pd, ev, 16)) < 0)
			return len;
		ev->lost.id = pd_u64(b);
		ev->lost.lost = pd_u64(b + 8);
		return 0;
	case PERF_RECORD_LOST_SAMPLES:
		if ((len = parse_trailer(pd, ev, 8)) < 0)
			return len;
		ev->lost_samples.lost = pd_u64(b);
		return 0;
	case PERF_RECORD_ITRACE_START:
		if ((len = parse_trailer(pd, ev, 8)) < 0)
			return len;
		ev->itrace_start.pid = pd_u32(b);
		ev->itrace_start.tid = pd_u32(b + 4);
		return 0;
	case PERF_RECORD_AUX:
		if ((len = parse_trailer(pd, ev, 24)) < 0)
			return len;
		ev->aux.aux_offset = pd_u64(b);
		ev->aux.aux_size = pd_u64(b + 8);
		ev->aux.flags = pd_u64(b + 16);
		return 0;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		len = parse_trailer(pd, ev, ev->type == PERF_RECORD_SWITCH ? 0 : 8);
		if (len < 0)
			return len;
		ev->sw.out = !!(ev->misc & PERF_RECORD_MISC_SWITCH_OUT);
		ev->sw.preempt = !!(ev->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
		if (ev->type == PERF_RECORD_SWITCH_CPU_WIDE) {
			ev->sw.next_prev_pid = pd_u32(b);
			ev->sw.next_prev_tid = pd_u32(b + 4);
		}
		return 0;
	case PERF_RECORD_TEXT_POKE:
		if ((len = parse_trailer(pd, ev, 12)) < 0)
			return len;
		ev->text_poke.addr = pd_u64(b);
		ev->text_poke.old_len = pd_u16(b + 8);
		ev->text_poke.new_len = pd_u16(b + 10);
		if ((unsigned)len - 12 < (unsigned)ev->text_poke.old_len + ev->text_poke.new_len)
			return pd_error(pd, ev->offset, VMPT_ERR_FORMAT,
					"TEXT_POKE record size %u too small for its %u old and %u new bytes",
					ev->size, ev->text_poke.old_len, ev->text_poke.new_len);
		ev->text_poke.old_bytes = b + 12;
		ev->text_poke.new_bytes = b + 12 + ev->text_poke.old_len;
		return 0;
	default:
		len = parse_trailer(pd, ev, 0);
		return len < 0 ? len : 0;
	}
}

static int parse_user_record(struct vmpt_perf_data *pd, struct vmpt_perf_cursor *cur,
			     struct vmpt_perf_event *ev)
{
	const uint8_t *b = ev->raw + 8;
	unsigned body = ev->size - 8u;

	switch (ev->type) {
	case VMPT_PERF_RECORD_AUXTRACE:
		ev->auxtrace.size = pd_u64(b);
		/* Cut off with the file (pd_step let it through). */
		if (ev->auxtrace.size > cur->end - ev->offset - ev->size)
			ev->auxtrace.size = cur->end - ev->offset - ev->size;
		ev->auxtrace.offset = pd_u64(b + 8);
		ev->auxtrace.reference = pd_u64(b + 16);
		ev->auxtrace.idx = pd_u32(b + 24);
		ev->auxtrace.tid = pd_u32(b + 28);
		ev->auxtrace.cpu = pd_u32(b + 32);
		ev->auxtrace.data_offset = ev->offset + ev->size;
		ev->auxtrace.data = ev->raw + ev->size;
		return 0;
	case VMPT_PERF_RECORD_AUXTRACE_INFO:
		if (body < 8)
			return too_small(pd, ev, 16);
		ev->auxtrace_info.type = pd_u32(b);
		ev->auxtrace_info.nr_priv = (body - 8) / 8;
		if (ev->auxtrace_info.nr_priv > VMPT_PERF_AUXTRACE_PRIV_MAX)
			ev->auxtrace_info.nr_priv = VMPT_PERF_AUXTRACE_PRIV_MAX;
		memcpy(ev->auxtrace_info.priv, b + 8, ev->auxtrace_info.nr_priv * 8u);
		return check_intel_pt_info(pd, ev);
	case VMPT_PERF_RECORD_TIME_CONV:
		if (body < 24)
			return too_small(pd, ev, 32);
		ev->time_conv.time_shift = pd_u64(b);
		ev->time_conv.time_mult = pd_u64(b + 8);
		ev->time_conv.time_zero = pd_u64(b + 16);
		if (ev->time_conv.time_shift > 63)
			return pd_error(pd, ev->offset, VMPT_ERR_FORMAT,
					"TIME_CONV time_shift %" PRIu64 " (at most 63)",
					ev->time_conv.time_shift);
		/* Newer perf (5.10+) adds cycles, mask and two flags; like
		 * perf, take what the record contains. */
		if (body >= 32) {
			ev->time_conv.extended = 1;
			ev->time_conv.time_cycles = pd_u64(b + 24);
		}
		if (body >= 40)
			ev->time_conv.time_mask = pd_u64(b + 32);
		if (body >= 42) {
			ev->time_conv.cap_user_time_zero = b[40];
			ev->time_conv.cap_user_time_short = b[41];
		}
		return 0;
	case VMPT_PERF_RECORD_ID_INDEX: {
		uint64_t nr;

		if (body < 8)
			return too_small(pd, ev, 16);
		nr = pd_u64(b);
		if (nr > (body - 8) / 32)
			return pd_error(pd, ev->offset, VMPT_ERR_FORMAT,
					"ID_INDEX: %llu entries do not fit in record size %u",
					(unsigned long long)nr, ev->size);
		ev->id_index.nr = nr;
		ev->id_index.has_guest = nr && (body - 8) / 48 >= nr;
		return 0;
	}
	case VMPT_PERF_RECORD_HEADER_ATTR:
		/* Collected at open (pipe mode); the n-th one is attr n. */
		if (cur->attrs_seen >= pd->nr_attrs)
			return pd_error(pd, ev->offset, VMPT_ERR_FORMAT,
					"HEADER_ATTR record that could not be read");
		ev->header_attr.attr_index = cur->attrs_seen++;
		return 0;
	case VMPT_PERF_RECORD_HEADER_FEATURE:
		if (body < 8)
			return too_small(pd, ev, 16);
		ev->feature.feat_id = pd_u64(b);
		ev->feature.data = b + 8;
		ev->feature.size = body - 8;
		return 0;
	default:
		return 0;
	}
}

/* The next record of the COMPRESSED record the cursor is in: 1, 0 when
 * it has no more, or an error.
 */
struct raw_rec {
	const uint8_t *raw;
	uint64_t offset, zpos;
	int compressed;
};

static int next_compressed(struct vmpt_perf_data *pd, struct vmpt_perf_cursor *cur,
			   struct raw_rec *ev)
{
	uint64_t left = cur->zlen - cur->zpos;
	const uint8_t *rec = cur->zstream + cur->zpos;
	uint16_t size;

	if (cur->zpos >= cur->zend) {
		cur->zend = 0;
		return 0;
	}
	if (left < 8 || (size = pd_u16(rec + 6)) < 8 || size > left)
		return pd_zstd_failure(pd, cur->part) ? pd_zstd_failure(pd, cur->part) :
		       pd_error(pd, cur->zrecord, VMPT_ERR_FORMAT,
				"COMPRESSED record: a record cut in the decompressed data "
				"(%llu bytes in)", (unsigned long long)(cur->zpos));
	if (pd_u32(rec) == VMPT_PERF_RECORD_AUXTRACE ||
	    pd_u32(rec) == VMPT_PERF_RECORD_COMPRESSED ||
	    pd_u32(rec) == VMPT_PERF_RECORD_COMPRESSED2)
		return pd_error(pd, cur->zrecord, VMPT_ERR_FORMAT,
				"COMPRESSED record: a %s record inside (%llu bytes in)",
				vmpt_perf_record_name(pd_u32(rec)),
				(unsigned long long)(cur->zpos));
	ev->raw = rec;
	ev->offset = cur->zrecord;
	ev->compressed = 1;
	ev->zpos = cur->zpos;
	cur->zpos += size;
	return 1;
}

/* Step to the next record: a file's, or one a COMPRESSED record holds. */
static int next_raw(struct vmpt_perf_data *pd, struct vmpt_perf_cursor *cur,
		    struct raw_rec *ev)
{
	for (;;) {
		struct vmpt_perf_cursor before = *cur;
		uint64_t pos, start;
		uint32_t type;
		int ret;

		if (cur->zend) {
			ret = next_compressed(pd, cur, ev);
			if (ret != 0)
				return ret;
		}
		ret = pd_step(pd, cur);
		if (ret <= 0)
			return ret;
		/* pd_step may have moved on to the next data.N file first. */
		pos = cur->part == before.part ? before.pos : 0;
		type = pd_u32(pd->cur_file->data + pos);
		if (type != VMPT_PERF_RECORD_COMPRESSED && type != VMPT_PERF_RECORD_COMPRESSED2) {
			ev->raw = pd->cur_file->data + pos;
			ev->offset = pos;
			return 1;
		}
		ret = pd_zstd_chunk(pd, cur->part, pos, &cur->zstream, &cur->zlen, &start,
				    &cur->zend);
		if (ret < 0) {
			*cur = before;	/* stay on the bad record */
			return ret == -VMPT_ERR_NOT_FOUND ?
			       pd_error(pd, pos, VMPT_ERR_FORMAT, "COMPRESSED record not read") :
			       ret;
		}
		cur->zpos = start;
		cur->zrecord = pos;
	}
}

int vmpt_perf_next(struct vmpt_perf_data *pd, struct vmpt_perf_cursor *cur,
		   struct vmpt_perf_event *ev)
{
	struct vmpt_perf_cursor before = *cur;
	struct raw_rec rec = { 0 };
	int ret = next_raw(pd, cur, &rec);

	if (ret <= 0)
		return ret;
	memset(ev, 0, sizeof(*ev));
	ev->raw = rec.raw;
	ev->offset = rec.offset;
	ev->zpos = rec.zpos;
	ev->compressed = rec.compressed;
	ev->part = cur->part;
	ev->type = pd_u32(ev->raw);
	ev->misc = pd_u16(ev->raw + 4);
	ev->size = pd_u16(ev->raw + 6);
	if (ev->type >= 64)
		ret = parse_user_record(pd, cur, ev);
	else if (ev->type == PERF_RECORD_SAMPLE) {
		ev->attr = record_attr(pd, ev->raw, ev->size, 1);
		ret = pd_parse_sample(pd, ev);
	} else {
		ev->attr = record_attr(pd, ev->raw, ev->size, 0);
		ret = parse_kernel_record(pd, ev);
	}
	if (ret < 0) {
		*cur = before;	/* stay on the bad record */
		return ret;
	}
	return 1;
}

int vmpt_perf_id_index_entry(const struct vmpt_perf_event *ev, uint64_t i,
			     struct vmpt_perf_id_entry *entry)
{
	const uint8_t *e;

	if (ev->type != VMPT_PERF_RECORD_ID_INDEX || i >= ev->id_index.nr)
		return -VMPT_ERR_INVAL;
	e = ev->raw + 16 + i * 32;
	entry->id = pd_u64(e);
	entry->idx = pd_u64(e + 8);
	entry->cpu = pd_u64(e + 16);
	entry->tid = pd_u64(e + 24);
	entry->machine_pid = -1;
	entry->vcpu = -1;
	if (ev->id_index.has_guest) {
		/* The guest fields follow all the entries, 16 bytes each. */
		e = ev->raw + 16 + ev->id_index.nr * 32 + i * 16;
		entry->machine_pid = (int64_t)pd_u64(e);
		entry->vcpu = (int64_t)pd_u64(e + 8);
	}
	return 0;
}

const char *vmpt_perf_record_name(uint32_t type)
{
	static const char *const kernel[] = {
		[PERF_RECORD_MMAP] = "MMAP",
		[PERF_RECORD_LOST] = "LOST",
		[PERF_RECORD_COMM] = "COMM",
		[PERF_RECORD_EXIT] = "EXIT",
		[PERF_RECORD_THROTTLE] = "THROTTLE",
		[PERF_RECORD_UNTHROTTLE] = "UNTHROTTLE",
		[PERF_RECORD_FORK] = "FORK",
		[PERF_RECORD_READ] = "READ",
		[PERF_RECORD_SAMPLE] = "SAMPLE",
		[PERF_RECORD_MMAP2] = "MMAP2",
		[PERF_RECORD_AUX] = "AUX",
		[PERF_RECORD_ITRACE_START] = "ITRACE_START",
		[PERF_RECORD_LOST_SAMPLES] = "LOST_SAMPLES",
		[PERF_RECORD_SWITCH] = "SWITCH",
		[PERF_RECORD_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE",
		[PERF_RECORD_NAMESPACES] = "NAMESPACES",
		[PERF_RECORD_KSYMBOL] = "KSYMBOL",
		[PERF_RECORD_BPF_EVENT] = "BPF_EVENT",
		[PERF_RECORD_CGROUP] = "CGROUP",
		[20] = "TEXT_POKE",
		[21] = "AUX_OUTPUT_HW_ID",
	};
	/* As perf script -D names them (ATTR, FEATURE: not HEADER_*). */
	static const char *const user[] = {
		"ATTR", "EVENT_TYPE", "TRACING_DATA", "BUILD_ID",
		"FINISHED_ROUND", "ID_INDEX", "AUXTRACE_INFO", "AUXTRACE",
		"AUXTRACE_ERROR", "THREAD_MAP", "CPU_MAP", "STAT_CONFIG",
		"STAT", "STAT_ROUND", "EVENT_UPDATE", "TIME_CONV", "FEATURE",
		"COMPRESSED", "FINISHED_INIT", "COMPRESSED2",
	};

	if (type < sizeof(kernel) / sizeof(kernel[0]) && kernel[type])
		return kernel[type];
	if (type >= 64 && type - 64 < sizeof(user) / sizeof(user[0]))
		return user[type - 64];
	return "UNKNOWN";
}

int vmpt_perf_intel_pt_info(const struct vmpt_perf_event *ev,
			    struct vmpt_perf_intel_pt_info *info)
{
	uint32_t nr = ev->auxtrace_info.nr_priv;
	uint64_t len;

	memset(info, 0, sizeof(*info));
	if (ev->type != VMPT_PERF_RECORD_AUXTRACE_INFO ||
	    ev->auxtrace_info.type != VMPT_PERF_AUXTRACE_INTEL_PT ||
	    nr <= VMPT_INTEL_PT_PER_CPU_MMAPS)
		return -VMPT_ERR_FORMAT;
	/* Older perf wrote fewer words: the rest stay 0, as perf reads them. */
	memcpy(info->priv, ev->auxtrace_info.priv,
	       (nr < VMPT_INTEL_PT_PRIV_MAX ? nr : VMPT_INTEL_PT_PRIV_MAX) * 8u);
	if (nr <= VMPT_INTEL_PT_FILTER_STR_LEN)
		return 0;
	len = info->priv[VMPT_INTEL_PT_FILTER_STR_LEN];
	if (len) {
		const char *s = (const char *)ev->raw + 16 + VMPT_INTEL_PT_PRIV_MAX * 8;
		uint64_t room = ev->size - 16u - VMPT_INTEL_PT_PRIV_MAX * 8u;

		if (ev->size < 16u + VMPT_INTEL_PT_PRIV_MAX * 8u || len >= room ||
		    s[len] != 0)
			return -VMPT_ERR_FORMAT;
		info->filter = s;
	}
	return 0;
}
