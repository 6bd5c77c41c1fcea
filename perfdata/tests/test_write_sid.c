/* SPDX-License-Identifier: MIT */
/* The writer's pieces for moving records between files (the guest merge):
 * a record's sample_id trailer rewritten for the attr of another id
 * (vmpt_perf_write_event_sid, read back field by field through a second
 * attr with another layout), feature sections kept as raw bytes
 * (vmpt_perf_writer_copy_feature <-> vmpt_perf_feature_data), and the
 * refusals of both.
 */
#include "vmpt/error.h"
#include "vmpt/perf_data.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char path[] = "/tmp/vmpt-write-sid-XXXXXX";

/* Host-like attr: IDENTIFIER last in the trailer; guest-like: TID, TIME,
 * ID, STREAM_ID, CPU and IDENTIFIER all present. */
static void attrs(struct perf_event_attr *host, struct perf_event_attr *guest)
{
	memset(host, 0, sizeof(*host));
	host->type = PERF_TYPE_SOFTWARE;
	host->config = PERF_COUNT_SW_DUMMY;
	host->sample_id_all = 1;
	host->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			    PERF_SAMPLE_IDENTIFIER;
	*guest = *host;
	guest->exclude_host = 1;
	guest->sample_type |= PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID;
}

static const uint8_t topology[] = "raw CPU_TOPOLOGY bytes, kept as they are";

static void test_event_sid(void **state)
{
	struct perf_event_attr host, guest;
	struct vmpt_perf_writer *w;
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	const uint8_t *data;
	uint64_t size, host_id = 7, guest_id = 9;
	/* COMM body: pid, tid, "guest-task" padded to 16 */
	uint8_t rec[8 + 8 + 16] = { PERF_RECORD_COMM, 0, 0, 0, 5, 0, sizeof(rec), 0,
				    11, 0, 0, 0, 12, 0, 0, 0,
				    'g', 'u', 'e', 's', 't', '-', 't', 'a', 's', 'k' };
	struct vmpt_perf_sample_id sid = {
		.pid = 11, .tid = 12, .time = 123456789, .id = guest_id,
		.stream_id = guest_id, .cpu = 3,
	};

	(void)state;
	attrs(&host, &guest);
	assert_int_equal(vmpt_perf_sample_id_size(&host), 32);
	assert_int_equal(vmpt_perf_sample_id_size(&guest), 48);
	guest.sample_id_all = 0;
	assert_int_equal(vmpt_perf_sample_id_size(&guest), 0);
	guest.sample_id_all = 1;

	assert_int_equal(vmpt_perf_writer_open(&w, path, NULL), 0);
	assert_int_equal(vmpt_perf_writer_add_attr(w, &host, "dummy", &host_id, 1), 0);
	assert_int_equal(vmpt_perf_writer_add_attr(w, &guest, "dummy:G", &guest_id, 1), 0);
	assert_int_equal(vmpt_perf_writer_copy_feature(w, VMPT_PERF_FEAT_CPU_TOPOLOGY,
						       topology, sizeof(topology)), 0);
	assert_int_equal(vmpt_perf_writer_copy_feature(w, VMPT_PERF_FEAT_CPU_TOPOLOGY,
						       topology, 1), -VMPT_ERR_INVAL);
	assert_int_equal(vmpt_perf_writer_copy_feature(w, VMPT_PERF_FEAT_BUILD_ID,
						       topology, 1), -VMPT_ERR_INVAL);
	assert_int_equal(vmpt_perf_writer_copy_feature(w, VMPT_PERF_FEAT_HOSTNAME,
						       topology, 1), -VMPT_ERR_INVAL);
	assert_int_equal(vmpt_perf_write_event_sid(w, rec, &sid), 0);
	sid.id = host_id;
	sid.time = 5;
	assert_int_equal(vmpt_perf_write_event_sid(w, rec, &sid), 0);
	sid.id = 1234;
	assert_int_equal(vmpt_perf_write_event_sid(w, rec, &sid), -VMPT_ERR_INVAL);
	rec[6] = 12;	/* not a multiple of 8 */
	sid.id = host_id;
	assert_int_equal(vmpt_perf_write_event_sid(w, rec, &sid), -VMPT_ERR_INVAL);
	assert_int_equal(vmpt_perf_writer_close(w), 0);

	assert_int_equal(vmpt_perf_open(&pd, path), 0);
	assert_int_equal(pd.nr_attrs, 2);
	assert_int_equal(vmpt_perf_feature_data(&pd, VMPT_PERF_FEAT_CPU_TOPOLOGY,
						&data, &size), 0);
	assert_int_equal(size, sizeof(topology));
	assert_memory_equal(data, topology, sizeof(topology));
	assert_int_equal(vmpt_perf_feature_data(&pd, VMPT_PERF_FEAT_CACHE, &data, &size),
			 -VMPT_ERR_NOT_FOUND);
	/* The features the writer builds are still there around the raw one. */
	assert_true(vmpt_perf_has_feature(&pd, VMPT_PERF_FEAT_HOSTNAME));
	assert_true(vmpt_perf_has_feature(&pd, VMPT_PERF_FEAT_EVENT_DESC));
	assert_string_equal(pd.attrs[1].name, "dummy:G");

	vmpt_perf_cursor_init(&pd, &cur);
	assert_int_equal(vmpt_perf_next(&pd, &cur, &ev), 1);
	assert_int_equal(ev.type, PERF_RECORD_COMM);
	assert_int_equal(ev.misc, 5);
	assert_int_equal(ev.size, sizeof(rec) + 48);
	assert_ptr_equal(ev.attr, &pd.attrs[1]);
	assert_string_equal(ev.comm.comm, "guest-task");
	assert_int_equal(ev.sid.pid, 11);
	assert_int_equal(ev.sid.tid, 12);
	assert_int_equal(ev.sid.time, 123456789);
	assert_int_equal(ev.sid.id, guest_id);
	assert_int_equal(ev.sid.stream_id, guest_id);
	assert_int_equal(ev.sid.cpu, 3);

	assert_int_equal(vmpt_perf_next(&pd, &cur, &ev), 1);
	assert_int_equal(ev.size, sizeof(rec) + 32);
	assert_ptr_equal(ev.attr, &pd.attrs[0]);
	assert_int_equal(ev.sid.time, 5);
	assert_int_equal(ev.sid.id, host_id);
	assert_int_equal(ev.sid.cpu, 3);
	assert_int_equal(vmpt_perf_next(&pd, &cur, &ev), 0);
	vmpt_perf_close(&pd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_sid),
	};
	int fd = mkstemp(path), ret;

	if (fd < 0)
		return 1;
	close(fd);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(path);
	return ret;
}
