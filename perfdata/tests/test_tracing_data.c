/* SPDX-License-Identifier: MIT */
/* perf's tracing data (vmpt/tracing_data.h): made from parts and cut into
 * the same parts again, perf's order kept (ftrace's own formats first, the
 * others by system); every cut short of the whole is an error naming
 * where, never a read past the end.
 */
#include "vmpt/error.h"
#include "vmpt/tracing_data.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define BLOB(s) { (const uint8_t *)(s), sizeof(s) - 1 }

static const struct vmpt_tracing_format formats[] = {
	{ "sched", BLOB("name: sched_switch\nID: 372\n") },
	{ "kvm", BLOB("name: kvm_exit\nID: 80\n") },
	{ "ftrace", BLOB("name: function\nID: 1\n") },
	{ "sched", BLOB("name: sched_wakeup\nID: 374\n") },
};

static void made(struct vmpt_tracing_data *td, const char *version)
{
	memset(td, 0, sizeof(*td));
	td->version = version;
	td->long_size = 8;
	td->page_size = 4096;
	td->header_page = (struct vmpt_tracing_blob)BLOB("\tfield: u64 timestamp;\n");
	td->header_event = (struct vmpt_tracing_blob)BLOB("# compressed entry header\n");
	td->formats = (struct vmpt_tracing_format *)formats;
	td->n_formats = 4;
	td->printk = (struct vmpt_tracing_blob)BLOB("0xffffffff8281a98f : \"thaw\"\n");
	td->cmdlines = (struct vmpt_tracing_blob)BLOB("1 systemd\n");
}

static void same_blob(const struct vmpt_tracing_blob *a, const struct vmpt_tracing_blob *b)
{
	assert_int_equal(a->size, b->size);
	assert_memory_equal(a->data, b->data, (size_t)a->size);
}

static void test_round_trip(void **state)
{
	/* perf's order: ftrace's own, then sched's two, then kvm's */
	static const size_t order[] = { 2, 0, 3, 1 };
	struct vmpt_tracing_data td, back;
	const char *what = NULL;
	uint64_t off = 0;
	uint8_t *data;
	size_t size;

	(void)state;
	made(&td, "0.6");
	assert_int_equal(vmpt_tracing_data_build(&td, &data, &size), 0);
	assert_memory_equal(data, "\027\010Dtracing0.6", 14);
	assert_int_equal(vmpt_tracing_data_parse(data, size, &back, &off, &what), 0);
	assert_string_equal(back.version, "0.6");
	assert_int_equal(back.long_size, 8);
	assert_int_equal(back.page_size, 4096);
	same_blob(&back.header_page, &td.header_page);
	same_blob(&back.header_event, &td.header_event);
	assert_int_equal(back.n_formats, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_string_equal(back.formats[i].system, formats[order[i]].system);
		same_blob(&back.formats[i].text, &formats[order[i]].text);
	}
	assert_int_equal(back.kallsyms.size, 0);
	same_blob(&back.printk, &td.printk);
	same_blob(&back.cmdlines, &td.cmdlines);
	vmpt_tracing_data_free(&back);

	/* Every cut is an error at or before where it cut. */
	for (size_t n = 0; n < size; n++) {
		assert_int_equal(vmpt_tracing_data_parse(data, n, &back, &off, &what),
				 -VMPT_ERR_FORMAT);
		assert_true(off <= n);
		assert_non_null(what);
	}
	free(data);

	/* Before 0.6 there are no saved command lines. */
	made(&td, "0.5");
	assert_int_equal(vmpt_tracing_data_build(&td, &data, &size), 0);
	assert_int_equal(vmpt_tracing_data_parse(data, size, &back, &off, &what), 0);
	assert_int_equal(back.cmdlines.size, 0);
	vmpt_tracing_data_free(&back);
	free(data);
}

static void test_errors(void **state)
{
	struct vmpt_tracing_data td, back;
	const char *what = NULL;
	uint64_t off = 0;
	uint8_t *data;
	size_t size, at;

	(void)state;
	made(&td, "0.6");
	assert_int_equal(vmpt_tracing_data_build(&td, &data, &size), 0);
	/* header_event's name misspelt: its name's offset */
	at = 10 + 4 + 2 + 4 + 12 + 8 + td.header_page.size;
	data[at] = 'H';
	assert_int_equal(vmpt_tracing_data_parse(data, size, &back, &off, &what),
			 -VMPT_ERR_FORMAT);
	assert_int_equal(off, at);
	assert_string_equal(what, "header_event");
	data[at] = 'h';
	/* a count of ftrace's formats past what the data can hold */
	at += 13 + 8 + td.header_event.size;
	memcpy(data + at, "\xff\xff\xff\x7f", 4);
	assert_int_equal(vmpt_tracing_data_parse(data, size, &back, &off, &what),
			 -VMPT_ERR_FORMAT);
	assert_int_equal(off, at);
	assert_string_equal(what, "the count of a system's formats");
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
