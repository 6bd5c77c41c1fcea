/* SPDX-License-Identifier: MIT */
/* perf.data SAMPLE records: the fields their attr's sample_type lays out,
 * in the kernel's order (perf_output_sample), and the READ values and
 * callchain entries read from them.
 */
#include "perf_data_priv.h"
#include "vmpt/error.h"

#include <stddef.h>

/* Bytes of the registers of a REGS_USER or REGS_INTR mask: one u64 each. */
static ptrdiff_t regs_size(uint64_t mask)
{
	return (ptrdiff_t)__builtin_popcountll(mask) * 8;
}

int pd_parse_sample(struct vmpt_perf_data *pd, struct vmpt_perf_event *ev)
{
	const uint8_t *p = ev->raw + 8, *end = ev->raw + ev->size;
	uint64_t st;

	if (!ev->attr)
		return 0;
	st = ev->attr->attr.sample_type;
#define TAKE(n)                                                                \
	do {                                                                   \
		if (end - p < (n))                                             \
			return pd_error(pd, ev->offset, VMPT_ERR_FORMAT,      \
					"SAMPLE record size %u too small for its sample_type %#llx", \
					ev->size, (unsigned long long)st);     \
	} while (0)
	/* A u64 field: taken into dst, or stepped over. */
#define WORD(bit, dst)                                                         \
	do {                                                                   \
		if (st & (bit)) {                                              \
			TAKE(8);                                               \
			(dst) = pd_u64(p);                                     \
			p += 8;                                                \
		}                                                              \
	} while (0)
#define SKIP(bit)                                                              \
	do {                                                                   \
		if (st & (bit)) {                                              \
			TAKE(8);                                               \
			p += 8;                                                \
		}                                                              \
	} while (0)
	ev->sid.present = st & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
				PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
				PERF_SAMPLE_IDENTIFIER);
	if (st & PERF_SAMPLE_IDENTIFIER) {
		TAKE(8);
		ev->sid.id = pd_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_IP) {
		TAKE(8);
		ev->sample.ip = pd_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_TID) {
		TAKE(8);
		ev->sid.pid = pd_u32(p);
		ev->sid.tid = pd_u32(p + 4);
		p += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		TAKE(8);
		ev->sid.time = pd_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_ADDR) {
		TAKE(8);
		ev->sample.addr = pd_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_ID) {
		TAKE(8);
		ev->sid.id = pd_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_STREAM_ID) {
		TAKE(8);
		ev->sid.stream_id = pd_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_CPU) {
		TAKE(8);
		ev->sid.cpu = pd_u32(p);
		p += 8;
	}
	/* Without PERIOD in the sample the attr's fixed period applies. */
	ev->sample.period = ev->attr->attr.freq ? 0 : ev->attr->attr.sample_period;
	if (st & PERF_SAMPLE_PERIOD) {
		TAKE(8);
		ev->sample.period = pd_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_READ) {
		uint64_t rf = ev->attr->attr.read_format, one = 8, n = 1, head = 0;

		one += rf & PERF_FORMAT_ID ? 8 : 0;
		one += rf & PERF_FORMAT_LOST ? 8 : 0;
		head += rf & PERF_FORMAT_TOTAL_TIME_ENABLED ? 8 : 0;
		head += rf & PERF_FORMAT_TOTAL_TIME_RUNNING ? 8 : 0;
		if (rf & PERF_FORMAT_GROUP) {
			TAKE(8);
			n = pd_u64(p);
			head += 8;
			if (n > (uint64_t)(end - p) / one)
				TAKE((ptrdiff_t)(end - p) + 1);
		}
		TAKE((ptrdiff_t)(head + n * one));
		ev->sample.nr_read = n;
		ev->sample.read = rf & PERF_FORMAT_GROUP ? p + head : p;
		p += head + n * one;
	}
	if (st & PERF_SAMPLE_CALLCHAIN) {
		TAKE(8);
		ev->sample.nr_chain = pd_u64(p);
		p += 8;
		if (ev->sample.nr_chain > (uint64_t)(end - p) / 8)
			TAKE((ptrdiff_t)(end - p) + 1);
		ev->sample.chain = p;
		p += ev->sample.nr_chain * 8;
	}
	if (st & PERF_SAMPLE_RAW) {
		TAKE(4);
		ev->sample.raw_size = pd_u32(p);
		p += 4;
		TAKE((ptrdiff_t)ev->sample.raw_size);
		ev->sample.raw_data = p;
		p += ev->sample.raw_size;
	}
	if (st & PERF_SAMPLE_BRANCH_STACK) {
		uint64_t nr;

		TAKE(8);
		nr = pd_u64(p);
		p += 8;
		if (ev->attr->attr.branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX) {
			TAKE(8);
			p += 8;
		}
		if (nr > (uint64_t)(end - p) / 24)
			TAKE((ptrdiff_t)(end - p) + 1);
		p += nr * 24;
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		TAKE(8);
		ev->sample.regs_user_abi = pd_u64(p);
		p += 8;
		if (ev->sample.regs_user_abi) {
			TAKE(regs_size(ev->attr->attr.sample_regs_user));
			ev->sample.regs_user = p;
			p += regs_size(ev->attr->attr.sample_regs_user);
		}
	}
	if (st & PERF_SAMPLE_STACK_USER) {
		uint64_t size;

		TAKE(8);
		size = pd_u64(p);
		p += 8;
		if (size) {
			if (size > (uint64_t)(end - p))
				TAKE((ptrdiff_t)(end - p) + 1);
			ev->sample.stack_user = p;
			p += size;
			TAKE(8);
			/* The part the kernel filled; never past the copy. */
			ev->sample.stack_user_size = pd_u64(p) < size ? pd_u64(p) : size;
			p += 8;
		}
	}
	WORD(PERF_SAMPLE_WEIGHT_TYPE, ev->sample.weight);
	WORD(PERF_SAMPLE_DATA_SRC, ev->sample.data_src);
	SKIP(PERF_SAMPLE_TRANSACTION);
	if (st & PERF_SAMPLE_REGS_INTR) {
		TAKE(8);
		ev->sample.regs_intr_abi = pd_u64(p);
		p += 8;
		if (ev->sample.regs_intr_abi) {
			TAKE(regs_size(ev->attr->attr.sample_regs_intr));
			ev->sample.regs_intr = p;
			p += regs_size(ev->attr->attr.sample_regs_intr);
		}
	}
	WORD(PERF_SAMPLE_PHYS_ADDR, ev->sample.phys_addr);
	SKIP(PERF_SAMPLE_CGROUP);	/* perf 6.1 script prints no cgroup */
	WORD(PERF_SAMPLE_DATA_PAGE_SIZE, ev->sample.data_page_size);
	WORD(PERF_SAMPLE_CODE_PAGE_SIZE, ev->sample.code_page_size);
#undef SKIP
#undef WORD
#undef TAKE
	return 0;
}

void vmpt_perf_sample_read(const struct vmpt_perf_event *ev, uint64_t i, uint64_t *id,
			   uint64_t *value)
{
	uint64_t rf = ev->attr->attr.read_format;
	const uint8_t *v;

	if (rf & PERF_FORMAT_GROUP) {
		/* nr, [enabled], [running], then { value, [id], [lost] } each */
		v = ev->sample.read + i * (8 + (rf & PERF_FORMAT_ID ? 8 : 0) +
					   (rf & PERF_FORMAT_LOST ? 8 : 0));
		*value = pd_u64(v);
		*id = rf & PERF_FORMAT_ID ? pd_u64(v + 8) : 0;
		return;
	}
	/* value, [enabled], [running], [id], [lost] */
	v = ev->sample.read;
	*value = pd_u64(v);
	v += 8 + (rf & PERF_FORMAT_TOTAL_TIME_ENABLED ? 8 : 0) +
	     (rf & PERF_FORMAT_TOTAL_TIME_RUNNING ? 8 : 0);
	*id = rf & PERF_FORMAT_ID ? pd_u64(v) : 0;
}

uint64_t vmpt_perf_sample_chain(const struct vmpt_perf_event *ev, uint64_t i)
{
	return pd_u64(ev->sample.chain + i * 8);
}

