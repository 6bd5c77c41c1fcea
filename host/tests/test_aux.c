/* SPDX-License-Identifier: MIT */
/* The AUX consumer and the data ring reader against simulated areas: a
 * "kernel" in the test writes them the way perf's ring buffer code does
 * (full-trace: never past aux_tail, AUX records with TRUNCATED when the
 * area is full; snapshot: overwriting, aux_head kept inside the area).
 */
#include "vmpt/aux.h"
#include "vmpt/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Never 0, so snapshot wrap detection sees data (PAD is 0). */
static uint8_t stream_byte(uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ULL;
	return (uint8_t)((x >> 56) | 1);
}

struct sim {
	struct perf_event_mmap_page pc;
	uint8_t *aux;
	uint64_t aux_size;
	uint8_t *data;
	uint64_t data_size;
	uint64_t produced;	/* stream bytes written into the AUX area */
	uint64_t dropped;	/* bytes the "hardware" lost: area full */
	uint64_t truncated_records;
	/* consumer side */
	uint8_t *out;
	uint64_t out_len, out_cap;
	int bad_offset;
};

static void data_put(struct sim *s, const void *rec, uint16_t size)
{
	uint64_t head = s->pc.data_head;
	assert_true(head + size - s->pc.data_tail <= s->data_size);
	for (uint16_t i = 0; i < size; i++)
		s->data[(head + i) & (s->data_size - 1)] = ((const uint8_t *)rec)[i];
	__atomic_store_n(&s->pc.data_head, head + size, __ATOMIC_RELEASE);
}

/* The kernel's side of full-trace mode: write what fits, then an AUX
 * record; TRUNCATED when some did not fit. */
static void produce(struct sim *s, uint64_t n)
{
	uint64_t head = s->pc.aux_head;
	uint64_t room = s->aux_size - (head - s->pc.aux_tail);
	uint64_t w = n < room ? n : room;
	for (uint64_t i = 0; i < w; i++)
		s->aux[(head + i) & (s->aux_size - 1)] = stream_byte(s->produced + i);
	s->produced += w;
	s->dropped += n - w;
	__atomic_store_n(&s->pc.aux_head, head + w, __ATOMIC_RELEASE);
	struct {
		struct perf_event_header h;
		uint64_t offset, size, flags;
		uint64_t sample_id;	/* a sample_id_all trailer (IDENTIFIER) */
	} rec = { { PERF_RECORD_AUX, 0, sizeof(rec) }, head, w,
		  n > w ? PERF_AUX_FLAG_TRUNCATED : 0, 42 };
	s->truncated_records += n > w;
	data_put(s, &rec, sizeof(rec));
}

static int sink(void *ctx, uint64_t offset, const void *a, size_t alen,
		const void *b, size_t blen)
{
	struct sim *s = ctx;
	if (offset != s->out_len)
		s->bad_offset = 1;
	if (s->out_len + alen + blen > s->out_cap) {
		s->out_cap = (s->out_len + alen + blen) * 2;
		s->out = realloc(s->out, s->out_cap);
	}
	memcpy(s->out + s->out_len, a, alen);
	if (blen)
		memcpy(s->out + s->out_len + alen, b, blen);
	s->out_len += alen + blen;
	return 0;
}

struct counter {
	struct vmpt_aux_counts c;
	uint64_t aux_bytes;
	uint64_t records;
};

static int count_record(void *ctx, const struct perf_event_header *h)
{
	struct counter *c = ctx;
	c->records++;
	if (h->type == PERF_RECORD_AUX)
		c->aux_bytes += ((const uint64_t *)(h + 1))[1];
	vmpt_aux_count_record(&c->c, h);
	return 0;
}

static void sim_init(struct sim *s, uint64_t aux_size, uint64_t data_size)
{
	memset(s, 0, sizeof(*s));
	s->aux = calloc(1, aux_size);
	s->aux_size = aux_size;
	s->data = calloc(1, data_size);
	s->data_size = data_size;
}

static void sim_free(struct sim *s)
{
	free(s->aux);
	free(s->data);
	free(s->out);
}

static void check_stream(const struct sim *s, uint64_t first, uint64_t len)
{
	assert_int_equal(s->out_len, len);
	for (uint64_t i = 0; i < len; i++)
		if (s->out[i] != stream_byte(first + i))
			fail_msg("byte %llu differs", (unsigned long long)i);
}

static void test_full_trace_wraparound(void **state)
{
	(void)state;
	struct sim s;
	/* 256-byte AUX area, 128-byte data ring: both wrap many times; the
	 * 40-byte AUX records straddle the data ring's end too. */
	sim_init(&s, 256, 128);
	struct vmpt_aux_area a = { .pc = &s.pc, .base = s.aux, .size = s.aux_size };
	struct vmpt_data_ring r = { .pc = &s.pc, .base = s.data, .size = s.data_size };
	struct counter c = { 0 };
	uint64_t seed = 1;
	for (int round = 0; round < 2000; round++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		produce(&s, (seed >> 33) % 200 + 1);
		if (round % 3 != 2)
			continue;	/* the consumer lags behind sometimes */
		assert_true(vmpt_data_ring_read(&r, count_record, &c) >= 0);
		assert_true(vmpt_aux_read(&a, sink, &s) >= 0);
		produce(&s, (seed >> 40) % 50 + 1);
		assert_true(vmpt_data_ring_read(&r, count_record, &c) >= 0);
		assert_true(vmpt_aux_read(&a, sink, &s) >= 0);
	}
	assert_true(vmpt_data_ring_read(&r, count_record, &c) >= 0);
	assert_true(vmpt_aux_read(&a, sink, &s) >= 0);
	/* bytes out == bytes in, in order, offsets continuous */
	check_stream(&s, 0, s.produced);
	assert_int_equal(s.bad_offset, 0);
	assert_int_equal(c.aux_bytes, s.produced);
	assert_int_equal(c.c.aux_records, c.records);
	/* every record where the area was full says TRUNCATED */
	assert_true(s.truncated_records > 0);
	assert_int_equal(c.c.truncated, s.truncated_records);
	assert_int_equal(s.pc.aux_tail, s.pc.aux_head);
	assert_int_equal(s.pc.data_tail, s.pc.data_head);
	free(r.bounce);
	sim_free(&s);
}

static void test_lost_and_bad_records(void **state)
{
	(void)state;
	struct sim s;
	sim_init(&s, 64, 64);
	struct vmpt_data_ring r = { .pc = &s.pc, .base = s.data, .size = s.data_size };
	struct counter c = { 0 };
	struct {
		struct perf_event_header h;
		uint64_t id, lost;
	} lost = { { PERF_RECORD_LOST, 0, sizeof(lost) }, 7, 123 };
	data_put(&s, &lost, sizeof(lost));
	struct {
		struct perf_event_header h;
		uint64_t offset, size, flags;
	} partial = { { PERF_RECORD_AUX, 0, sizeof(partial) }, 0, 16,
		      PERF_AUX_FLAG_PARTIAL | PERF_AUX_FLAG_COLLISION };
	data_put(&s, &partial, sizeof(partial));
	assert_int_equal(vmpt_data_ring_read(&r, count_record, &c), 2);
	assert_int_equal(c.c.lost_records, 1);
	assert_int_equal(c.c.lost_events, 123);
	assert_int_equal(c.c.partial, 1);
	assert_int_equal(c.c.collision, 1);
	assert_int_equal(c.c.truncated, 0);
	/* a header that cannot be right: size 4 */
	struct perf_event_header bad = { PERF_RECORD_MMAP, 0, 4 };
	uint64_t pad = 0;
	data_put(&s, &bad, sizeof(bad));
	data_put(&s, &pad, sizeof(pad));
	assert_int_equal(vmpt_data_ring_read(&r, count_record, &c), -VMPT_ERR_FORMAT);
	free(r.bounce);
	sim_free(&s);
}

/* Overwrite mode: the kernel keeps writing around the area and leaves
 * aux_head as a position inside it. */
static void snap_write(struct sim *s, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		s->aux[(s->produced + i) & (s->aux_size - 1)] = stream_byte(s->produced + i);
	s->produced += n;
	s->pc.aux_head = s->produced & (s->aux_size - 1);
}

static void test_snapshot(void **state)
{
	(void)state;
	struct sim s;
	sim_init(&s, 64, 64);
	struct vmpt_aux_area a = { .pc = &s.pc, .base = s.aux, .size = s.aux_size };

	snap_write(&s, 40);	/* not wrapped: [0, 40) */
	assert_int_equal(vmpt_aux_snapshot(&a, sink, &s), 40);
	check_stream(&s, 0, 40);

	s.out_len = 0;
	snap_write(&s, 50);	/* wrapped: head 26, the last 64 bytes */
	assert_int_equal(vmpt_aux_snapshot(&a, sink, &s), 64);
	check_stream(&s, 90 - 64, 64);

	s.out_len = 0;
	snap_write(&s, 10);	/* head moved forward; still wrapped */
	assert_int_equal(vmpt_aux_snapshot(&a, sink, &s), 64);
	check_stream(&s, 100 - 64, 64);
	assert_int_equal(a.snap_offset, 40 + 64 + 64);

	s.out_len = 0;
	snap_write(&s, 64);	/* exactly one lap: head back where it was */
	assert_int_equal(vmpt_aux_snapshot(&a, sink, &s), 64);
	check_stream(&s, 164 - 64, 64);
	sim_free(&s);

	/* Nothing written yet: nothing taken. */
	sim_init(&s, 64, 64);
	struct vmpt_aux_area b = { .pc = &s.pc, .base = s.aux, .size = s.aux_size };
	assert_int_equal(vmpt_aux_snapshot(&b, sink, &s), 0);
	assert_int_equal(s.out_len, 0);
	sim_free(&s);
}

static int failing_sink(void *ctx, uint64_t offset, const void *a, size_t alen,
			const void *b, size_t blen)
{
	(void)ctx, (void)offset, (void)a, (void)alen, (void)b, (void)blen;
	return -1;
}

static void test_sink_failure_keeps_data(void **state)
{
	(void)state;
	struct sim s;
	sim_init(&s, 64, 256);
	struct vmpt_aux_area a = { .pc = &s.pc, .base = s.aux, .size = s.aux_size };
	produce(&s, 30);
	/* a failed write must not free the area: the data stays for a retry */
	assert_int_equal(vmpt_aux_read(&a, failing_sink, NULL), -VMPT_ERR_IO);
	assert_int_equal(s.pc.aux_tail, 0);
	assert_int_equal(vmpt_aux_read(&a, sink, &s), 30);
	check_stream(&s, 0, 30);
	sim_free(&s);
}

/* Fails on its second call, after checking the first slice was released
 * before it was asked for. */
static int second_call_fails(void *ctx, uint64_t offset, const void *a, size_t alen,
			     const void *b, size_t blen)
{
	struct sim *s = ctx;

	if (offset == 0)
		return sink(ctx, offset, a, alen, b, blen);
	assert_int_equal(s->pc.aux_tail, offset);
	return -1;
}

static void test_slices(void **state)
{
	(void)state;
	struct sim s;
	sim_init(&s, 64, 256);
	struct vmpt_aux_area a = { .pc = &s.pc, .base = s.aux, .size = s.aux_size,
				   .slice = 16 };
	produce(&s, 40);
	/* 40 bytes in slices of 16: the second fails, the first is freed */
	assert_int_equal(vmpt_aux_read(&a, second_call_fails, &s), -VMPT_ERR_IO);
	assert_int_equal(s.pc.aux_tail, 16);
	produce(&s, 30);
	/* 54 bytes, wrapping at 64: 16 + 16 (8 + 8 across the end) + 16 + 6 */
	assert_int_equal(vmpt_aux_read(&a, sink, &s), 54);
	assert_int_equal(s.pc.aux_tail, 70);
	check_stream(&s, 0, 70);
	assert_int_equal(s.bad_offset, 0);
	sim_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_trace_wraparound),
		cmocka_unit_test(test_lost_and_bad_records),
		cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_sink_failure_keeps_data),
		cmocka_unit_test(test_slices),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
