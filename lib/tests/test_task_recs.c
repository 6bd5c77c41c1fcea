/* SPDX-License-Identifier: MIT */
/* vmpt_task_recs: the last record of a CPU or thread at a time, until when
 * it holds, and names inherited over forks (a chain of them, a fork before
 * its parent's name, a caller's bigger element).
 */
#include "vmpt/task_recs.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

struct big {
	struct vmpt_task_rec r;
	uint64_t extra;
};

static void test_at(void **state)
{
	struct vmpt_task_rec sw[] = {
		{ .time = 30, .seq = 3, .cpu = 1, .tid = 7 },
		{ .time = 10, .seq = 1, .cpu = 0, .tid = 5 },
		{ .time = 20, .seq = 2, .cpu = 1, .tid = 6 },
		{ .time = 20, .seq = 4, .cpu = 1, .tid = 8 },	/* same time, later */
	};
	const struct vmpt_task_rec *r;
	uint64_t until;

	(void)state;
	vmpt_task_recs_sort(sw, 4, sizeof(*sw), VMPT_TASK_BY_CPU);
	r = vmpt_task_recs_at(sw, 4, sizeof(*sw), VMPT_TASK_BY_CPU, 1, 19, &until);
	assert_null(r);
	assert_int_equal(until, 20);
	r = vmpt_task_recs_at(sw, 4, sizeof(*sw), VMPT_TASK_BY_CPU, 1, 25, &until);
	assert_int_equal(r->tid, 8);
	assert_int_equal(until, 30);
	r = vmpt_task_recs_at(sw, 4, sizeof(*sw), VMPT_TASK_BY_CPU, 1, 99, &until);
	assert_int_equal(r->tid, 7);
	assert_int_equal(until, UINT64_MAX);
	r = vmpt_task_recs_at(sw, 4, sizeof(*sw), VMPT_TASK_BY_CPU, 0, 10, &until);
	assert_int_equal(r->tid, 5);
	assert_null(vmpt_task_recs_at(sw, 4, sizeof(*sw), VMPT_TASK_BY_CPU, 2, 99, &until));
	assert_null(vmpt_task_recs_at(sw, 0, sizeof(*sw), VMPT_TASK_BY_CPU, 0, 99, &until));
}

static void test_inherit(void **state)
{
	struct big *comms = calloc(2, sizeof(*comms));
	struct big forks[] = {
		{ { .time = 5, .tid = 11, .ptid = 10 }, 1 },	/* before 10 is named */
		{ { .time = 20, .tid = 12, .ptid = 10 }, 2 },
		{ { .time = 30, .tid = 13, .ptid = 12 }, 3 },	/* 12's inherited name */
		{ { .time = 40, .tid = 14, .ptid = 12 }, 4 },	/* after 12's own */
	};
	size_t n = 2;
	const struct vmpt_task_rec *r;
	uint64_t until;

	(void)state;
	comms[0].r = (struct vmpt_task_rec){ .time = 10, .tid = 10, .comm = "sh" };
	comms[1].r = (struct vmpt_task_rec){ .time = 35, .tid = 12, .comm = "md5sum" };
	assert_int_equal(vmpt_task_recs_inherit_comms((void **)&comms, &n, sizeof(*comms),
						      forks, 4), 0);
	assert_int_equal(n, 5);
	for (size_t i = 1; i < n; i++)
		assert_true(comms[i - 1].r.tid < comms[i].r.tid ||
			    (comms[i - 1].r.tid == comms[i].r.tid &&
			     comms[i - 1].r.time <= comms[i].r.time));
	assert_null(vmpt_task_recs_at(comms, n, sizeof(*comms), VMPT_TASK_BY_TID, 11, 99,
				      &until));
	r = vmpt_task_recs_at(comms, n, sizeof(*comms), VMPT_TASK_BY_TID, 12, 30, &until);
	assert_string_equal(r->comm, "sh");
	assert_int_equal(until, 35);
	assert_int_equal(((const struct big *)r)->extra, 2);
	r = vmpt_task_recs_at(comms, n, sizeof(*comms), VMPT_TASK_BY_TID, 13, 30, &until);
	assert_string_equal(r->comm, "sh");
	r = vmpt_task_recs_at(comms, n, sizeof(*comms), VMPT_TASK_BY_TID, 14, 40, &until);
	assert_string_equal(r->comm, "md5sum");
	free(comms);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_at),
		cmocka_unit_test(test_inherit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
