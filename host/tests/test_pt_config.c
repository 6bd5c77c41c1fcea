/* SPDX-License-Identifier: MIT */
/* intel_pt sysfs parsing, config terms and their errors on fixture trees
 * laid out like real machines' sysfs (Broadwell/4.14, Skylake/5.4,
 * Ice Lake/6.1).
 */
#include "vmpt/error.h"
#include "vmpt/kvm_tsc.h"
#include "vmpt/pmu.h"
#include "vmpt/pt_config.h"
#include "vmpt/record.h"
#include "vmpt/vcpu.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static char fixtures[4096];

static void open_pmu(struct vmpt_pmu *pmu, const char *machine)
{
	char root[4200], err[512];
	snprintf(root, sizeof(root), "%s/sysfs-%s", fixtures, machine);
	int rc = vmpt_pmu_open(pmu, root, "intel_pt", err, sizeof(err));
	if (rc)
		fail_msg("%s: %s", machine, err);
}

static void test_formats_and_caps(void **state)
{
	(void)state;
	struct vmpt_pmu pmu;
	open_pmu(&pmu, "skylake-5.4");
	assert_int_equal(pmu.type, 8);
	assert_int_equal(pmu.nr_formats, 12);
	const struct vmpt_pmu_format *f = vmpt_pmu_format(&pmu, "psb_period");
	assert_non_null(f);
	assert_int_equal(f->field, 0);
	assert_int_equal(f->lo, 24);
	assert_int_equal(f->hi, 27);
	assert_int_equal(vmpt_pmu_format_mask(f), 0xf000000);
	assert_null(vmpt_pmu_format(&pmu, "notnt"));
	uint64_t v;
	assert_int_equal(vmpt_pmu_cap(&pmu, "mtc_periods", &v), 0);
	assert_int_equal(v, 0x249);
	assert_int_equal(vmpt_pmu_cap(&pmu, "num_address_ranges", &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(vmpt_pmu_cap(&pmu, "event_trace", &v), -VMPT_ERR_NOT_FOUND);

	open_pmu(&pmu, "icelake-6.1");
	assert_int_equal(pmu.type, 9);
	assert_int_equal(pmu.nr_formats, 14);
	f = vmpt_pmu_format(&pmu, "notnt");
	assert_non_null(f);
	assert_int_equal(f->lo, 55);
	assert_int_equal(f->hi, 55);
}

static void test_open_errors(void **state)
{
	(void)state;
	struct vmpt_pmu pmu;
	char root[4200], err[512], want[4600];
	snprintf(root, sizeof(root), "%s/sysfs-vm-no-pt", fixtures);
	assert_int_equal(vmpt_pmu_open(&pmu, root, "intel_pt", err, sizeof(err)),
			 -VMPT_ERR_NOT_FOUND);
	snprintf(want, sizeof(want), "%s/bus/event_source/devices/intel_pt/type: not found", root);
	assert_string_equal(err, want);

	snprintf(root, sizeof(root), "%s/sysfs-bad-format", fixtures);
	assert_int_equal(vmpt_pmu_open(&pmu, root, "intel_pt", err, sizeof(err)),
			 -VMPT_ERR_FORMAT);
	snprintf(want, sizeof(want), "%s/bus/event_source/devices/intel_pt/format/"
		 "psb_period: cannot parse format 'config:24-x'", root);
	assert_string_equal(err, want);

	snprintf(root, sizeof(root), "%s/sysfs-bad-type", fixtures);
	assert_int_equal(vmpt_pmu_open(&pmu, root, "intel_pt", err, sizeof(err)),
			 -VMPT_ERR_FORMAT);
	snprintf(want, sizeof(want), "%s/bus/event_source/devices/intel_pt/type: not a "
		 "PMU type number: 'intel'", root);
	assert_string_equal(err, want);
}

static void test_defaults(void **state)
{
	(void)state;
	struct vmpt_pmu pmu;
	/* perf -vv shows config=0x300e601 on Skylake: tsc, mtc, mtc_period=3,
	 * psb_period=3, pt, branch */
	open_pmu(&pmu, "skylake-5.4");
	assert_int_equal(vmpt_pt_default_config(&pmu), 0x300e601);
	open_pmu(&pmu, "icelake-6.1");
	assert_int_equal(vmpt_pt_default_config(&pmu), 0x300e601);
	/* Broadwell: no MTC, so neither mtc_period nor psb_period */
	open_pmu(&pmu, "broadwell-4.14");
	assert_int_equal(vmpt_pt_default_config(&pmu), 0x2401);

	struct vmpt_pt_event ev;
	open_pmu(&pmu, "skylake-5.4");
	assert_int_equal(vmpt_pt_event_parse(&pmu, "intel_pt//", &ev), 0);
	assert_int_equal(ev.attr.type, 8);
	assert_int_equal(ev.attr.config, 0x300e601);
	assert_int_equal(ev.attr.exclude_user, 0);
	assert_int_equal(ev.attr.exclude_kernel, 0);
	assert_int_equal(vmpt_pt_event_parse(&pmu, "intel_pt", &ev), 0);
	assert_int_equal(ev.attr.config, 0x300e601);
	assert_string_equal(ev.warning, "");
}

static void test_terms(void **state)
{
	(void)state;
	struct vmpt_pmu pmu;
	struct vmpt_pt_event ev;
	open_pmu(&pmu, "skylake-5.4");
	/* cyc on, cyc_thresh 2, no mtc, psb_period 5, noretcomp */
	assert_int_equal(vmpt_pt_event_parse(&pmu, "intel_pt/cyc,cyc_thresh=2,mtc=0,"
					     "psb_period=5,noretcomp/u", &ev), 0);
	assert_int_equal(ev.attr.config, 0x1 | 0x2 | (2ULL << 19) | (3ULL << 14) |
					 0x400 | 0x800 | 0x2000 | (5ULL << 24));
	assert_int_equal(ev.attr.exclude_kernel, 1);
	assert_int_equal(ev.attr.exclude_user, 0);
	assert_int_equal(ev.attr.exclude_hv, 1);
	assert_int_equal(vmpt_pt_event_parse(&pmu, "intel_pt/tsc=0,mtc_period=0x6/k", &ev), 0);
	assert_int_equal(ev.attr.config, 0x1 | 0x200 | 0x2000 | (6ULL << 14) | (3ULL << 24));
	assert_int_equal(ev.attr.exclude_kernel, 0);
	assert_int_equal(ev.attr.exclude_user, 1);
	assert_int_equal(vmpt_pt_event_parse(&pmu, "intel_pt//uk", &ev), 0);
	assert_int_equal(ev.attr.exclude_kernel, 0);
	assert_int_equal(ev.attr.exclude_user, 0);
	assert_int_equal(ev.attr.exclude_hv, 1);
	assert_int_equal(vmpt_pt_event_parse(&pmu, "intel_pt:u", &ev), 0);
	assert_int_equal(ev.attr.exclude_kernel, 1);

	/* perf forces pt=1 and says so */
	assert_int_equal(vmpt_pt_event_parse(&pmu, "intel_pt/pt=0/", &ev), 0);
	assert_int_equal(ev.attr.config & 1, 1);
	assert_string_equal(ev.warning, "pt=0 doesn't make sense, forcing pt=1");

	open_pmu(&pmu, "icelake-6.1");
	assert_int_equal(vmpt_pt_event_parse(&pmu, "intel_pt/ptw,fup_on_ptw,pwr_evt/", &ev), 0);
	assert_int_equal(ev.attr.config, 0x300e601 | 0x1000 | 0x20 | 0x10);
}

struct err_case {
	const char *machine, *spec, *error;
};

static const struct err_case err_cases[] = {
	{ "skylake-5.4", "intel_pt/psb_period=15/u",
	  "Invalid psb_period for intel_pt. Valid values are: 0-5" },
	{ "skylake-5.4", "intel_pt/mtc_period=15/u",
	  "Invalid mtc_period for intel_pt. Valid values are: 0,3,6,9" },
	{ "skylake-5.4", "intel_pt/cyc,cyc_thresh=15/u",
	  "Invalid cyc_thresh for intel_pt. Valid values are: 0-13" },
	{ "broadwell-4.14", "intel_pt/psb_period=1/",
	  "Invalid psb_period for intel_pt. Valid values are: 0" },
	{ "broadwell-4.14", "intel_pt/mtc_period=3/",
	  "Invalid mtc_period for intel_pt. Valid values are: 0" },
	{ "skylake-5.4", "intel_pt/psb_period=16/",
	  "psb_period=16: value too big for format, maximum is 15" },
	{ "skylake-5.4", "intel_pt/tsc=2/",
	  "tsc=2: value too big for format, maximum is 1" },
	{ "skylake-5.4", "intel_pt/psb_period=abc/",
	  "invalid value 'abc' for term 'psb_period' of pmu 'intel_pt'" },
	{ "skylake-5.4", "intel_pt/foo/",
	  "unknown term 'foo' for pmu 'intel_pt' (valid terms: branch,cyc,cyc_thresh,"
	  "fup_on_ptw,mtc,mtc_period,noretcomp,psb_period,pt,ptw,pwr_evt,tsc)" },
	{ "broadwell-4.14", "intel_pt/notnt/",
	  "unknown term 'notnt' for pmu 'intel_pt' (valid terms: branch,cyc,cyc_thresh,"
	  "fup_on_ptw,mtc,mtc_period,noretcomp,psb_period,pt,ptw,pwr_evt,tsc)" },
	{ "icelake-6.1", "intel_pt/notnt/",
	  "notnt is not supported by intel_pt on this machine (caps/tnt_disable is 0)" },
	{ "icelake-6.1", "intel_pt/event/",
	  "event is not supported by intel_pt on this machine (caps/event_trace is 0)" },
	{ "skylake-5.4", "intel_pt/ptw/",
	  "ptw is not supported by intel_pt on this machine (caps/ptwrite is 0)" },
	{ "skylake-5.4", "intel_pt/pwr_evt/",
	  "pwr_evt is not supported by intel_pt on this machine (caps/power_event_trace is 0)" },
	{ "broadwell-4.14", "intel_pt/cyc/",
	  "cyc is not supported by intel_pt on this machine (caps/psb_cyc is 0)" },
	{ "broadwell-4.14", "intel_pt/mtc/",
	  "mtc is not supported by intel_pt on this machine (caps/mtc is 0)" },
	{ "broadwell-4.14", "intel_pt/branch=0/",
	  "branch=0 is not supported by intel_pt on this machine (caps/psb_cyc is 0)" },
	{ "icelake-6.1", "intel_pt/fup_on_ptw/",
	  "fup_on_ptw needs ptw (the kernel refuses it alone)" },
	{ "skylake-5.4", "intel_pt//x",
	  "unknown modifier 'x' in 'intel_pt//x' (vmpt takes u and k)" },
	{ "skylake-5.4", "intel_pt/tsc",
	  "'intel_pt/tsc': missing the closing '/'" },
	{ "skylake-5.4", "intel_ptx//",
	  "'intel_ptx//' is not a intel_pt event (write intel_pt/TERMS/MODIFIERS)" },
};

static void test_errors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(err_cases) / sizeof(err_cases[0]); i++) {
		struct vmpt_pmu pmu;
		struct vmpt_pt_event ev;
		open_pmu(&pmu, err_cases[i].machine);
		int rc = vmpt_pt_event_parse(&pmu, err_cases[i].spec, &ev);
		if (rc != -VMPT_ERR_INVAL || strcmp(ev.error, err_cases[i].error))
			fail_msg("%s on %s: rc %d, '%s', want '%s'", err_cases[i].spec,
				 err_cases[i].machine, rc, ev.error, err_cases[i].error);
	}
}

static void test_valid_str(void **state)
{
	(void)state;
	static const struct {
		uint64_t bits;
		const char *text;
	} cases[] = {
		{ 0x3f, "0-5" }, { 0x249, "0,3,6,9" }, { 0x1fff, "0-12" }, { 0x1, "0" },
		{ 0x3, "0,1" }, { 0xb, "0,1,3" }, { 0x3d, "0,2-5" }, { 0x8000000000000001ULL, "0,63" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[256];
		vmpt_pt_valid_str(cases[i].bits, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].text);
	}
}

static void test_addr_filters(void **state)
{
	(void)state;
	struct vmpt_pmu pmu;
	char k[1024], err[512];
	open_pmu(&pmu, "skylake-5.4");
	assert_int_equal(vmpt_pt_addr_filter(&pmu, "filter 0x401000/0x200@/usr/bin/x",
					     k, sizeof(k), err, sizeof(err)), 1);
	assert_string_equal(k, "filter 0x401000/0x200@/usr/bin/x");
	assert_int_equal(vmpt_pt_addr_filter(&pmu, " start 4096 @ /bin/a , tracestop 0x2000/16@/bin/a",
					     k, sizeof(k), err, sizeof(err)), 2);
	assert_string_equal(k, "start 0x1000@/bin/a,stop 0x2000/0x10@/bin/a");
	assert_int_equal(vmpt_pt_addr_filter(&pmu, "filter 0xffffffff81000000/0x1000",
					     k, sizeof(k), err, sizeof(err)), 1);
	assert_string_equal(k, "filter 0xffffffff81000000/0x1000");

	static const struct {
		const char *machine, *spec, *error;
	} bad[] = {
		{ "skylake-5.4", "filter 0x1000/0x10, filter 0x2000/0x10, stop 0x3000",
		  "Too many address filters: 3 given, intel_pt has 2 (caps/num_address_ranges)" },
		{ "broadwell-4.14", "filter 0x1000/0x10",
		  "intel_pt on this machine has no address filters (caps/num_address_ranges is 0)" },
		{ "skylake-5.4", "filter main@/bin/x",
		  "address filter: 'main' is not an address (symbols are not looked up: give "
		  "the address, e.g. from nm)" },
		{ "skylake-5.4", "filter 0x1000",
		  "address filter: filter 0x1000 needs a size (ADDR/SIZE)" },
		{ "skylake-5.4", "start 0x1000/0x10",
		  "address filter: start takes a single address, not a range" },
		{ "skylake-5.4", "bogus 0x1000", "address filter: unknown action 'bogus' "
		  "(filter, start, stop or tracestop)" },
		{ "skylake-5.4", "filter 0x1000/0", "address filter: bad size '0'" },
		{ "skylake-5.4", "filter 0x1000/0x10@", "address filter 'filter 0x1000/0x10': "
		  "empty file name after '@'" },
		{ "skylake-5.4", " , ", "empty address filter" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		open_pmu(&pmu, bad[i].machine);
		int rc = vmpt_pt_addr_filter(&pmu, bad[i].spec, k, sizeof(k), err, sizeof(err));
		if (rc != -VMPT_ERR_INVAL || strcmp(err, bad[i].error))
			fail_msg("'%s': rc %d, '%s', want '%s'", bad[i].spec, rc, err,
				 bad[i].error);
	}
}

static void test_cpu_list(void **state)
{
	(void)state;
	uint8_t set[16];
	assert_int_equal(vmpt_parse_cpu_list("0-3,6", set, 16), 5);
	assert_int_equal(set[0] + set[1] + set[2] + set[3] + set[6], 5);
	assert_int_equal(set[4] + set[5] + set[7], 0);
	assert_int_equal(vmpt_parse_cpu_list("2,2", set, 16), 1);
	assert_int_equal(vmpt_parse_cpu_list("3-1", set, 16), -VMPT_ERR_INVAL);
	assert_int_equal(vmpt_parse_cpu_list("16", set, 16), -VMPT_ERR_INVAL);
	assert_int_equal(vmpt_parse_cpu_list("a", set, 16), -VMPT_ERR_INVAL);
	assert_int_equal(vmpt_parse_cpu_list("", set, 16), -VMPT_ERR_INVAL);
}

static void test_kvm_tsc(void **state)
{
	(void)state;
	char root[4200];
	struct vmpt_kvm_tsc t[8];
	snprintf(root, sizeof(root), "%s/sysfs-icelake-6.1/kernel/debug", fixtures);
	int n = vmpt_kvm_tsc_read(root, 4242, t, 8);
	assert_int_equal(n, 2);
	int v0 = t[0].vcpu == 0 ? 0 : 1;
	assert_int_equal(t[v0].vcpu, 0);
	assert_int_equal(t[!v0].vcpu, 1);
	assert_string_equal(t[0].vm, "4242-11");
	assert_int_equal(t[0].offset, -2271560481LL);
	assert_int_equal(t[0].has_ratio, 1);
	assert_int_equal(t[0].ratio, 281474976710656ULL);
	assert_int_equal(t[0].frac_bits, 48);
	n = vmpt_kvm_tsc_read(root, 4300, t, 8);
	assert_int_equal(n, 1);
	assert_int_equal(t[0].offset, 12345);
	assert_int_equal(t[0].has_ratio, 0);
	assert_int_equal(vmpt_kvm_tsc_read(root, 1, t, 8), 0);
	snprintf(root, sizeof(root), "%s/sysfs-skylake-5.4/kernel/debug", fixtures);
	assert_int_equal(vmpt_kvm_tsc_read(root, 4242, t, 8), -VMPT_ERR_NOT_FOUND);
}

static void test_qmp_parse(void **state)
{
	(void)state;
	static struct vmpt_vcpus v;
	/* QEMU 7.2's reply for -smp 2 (props has a thread-id of its own) */
	const char *reply =
		"{\"return\": [{\"thread-id\": 27544, \"props\": {\"core-id\": 0, "
		"\"thread-id\": 0, \"node-id\": 0, \"socket-id\": 1}, \"qom-path\": "
		"\"/machine/unattached/device[2]\", \"cpu-index\": 1, \"target\": "
		"\"x86_64\"}, {\"thread-id\": 27543, \"props\": {\"core-id\": 0, "
		"\"thread-id\": 0, \"node-id\": 0, \"socket-id\": 0}, \"qom-path\": "
		"\"/machine/unattached/device[0]\", \"cpu-index\": 0, \"target\": "
		"\"x86_64\"}]}";
	assert_int_equal(vmpt_vcpus_parse_qmp(reply, &v), 2);
	assert_int_equal(v.vcpu[0].index, 0);
	assert_int_equal(v.vcpu[0].tid, 27543);
	assert_int_equal(v.vcpu[1].index, 1);
	assert_int_equal(v.vcpu[1].tid, 27544);
	assert_int_equal(vmpt_vcpus_parse_qmp("{\"return\": []}", &v), 0);
	assert_int_equal(vmpt_vcpus_parse_qmp("{\"error\": {\"class\": \"CommandNotFound\"}}", &v),
			 -VMPT_ERR_FORMAT);
	assert_int_equal(vmpt_vcpus_parse_qmp("{\"return\": [{\"cpu-index\": 0}]}", &v),
			 -VMPT_ERR_FORMAT);
	assert_int_equal(vmpt_vcpus_parse_qmp("{\"return\": [{\"thread-id\": 5", &v),
			 -VMPT_ERR_FORMAT);
}

static void test_proc_vcpus(void **state)
{
	(void)state;
	static struct vmpt_vcpus v;
	char root[4200], err[512], path[256];
	snprintf(root, sizeof(root), "%s/procfs-icelake-host", fixtures);
	assert_int_equal(vmpt_vcpus_from_proc(root, 4242, &v, err, sizeof(err)), 0);
	assert_int_equal(v.nr, 2);
	assert_int_equal(v.vcpu[0].tid, 4243);
	assert_int_equal(v.vcpu[1].tid, 4244);
	assert_string_equal(v.source, "/proc thread names");
	assert_int_equal(vmpt_qemu_qmp_socket(root, 4242, path, sizeof(path)),
			 -VMPT_ERR_NOT_FOUND);
	snprintf(root, sizeof(root), "%s/procfs-broadwell-host", fixtures);
	assert_int_equal(vmpt_vcpus_from_proc(root, 4300, &v, err, sizeof(err)),
			 -VMPT_ERR_NOT_FOUND);
	assert_string_equal(err, "no thread of process 4300 is named 'CPU N/KVM' (start "
			    "QEMU with -name ...,debug-threads=on)");
	assert_int_equal(vmpt_vcpus_for_pid(root, 4300, NULL, &v, err, sizeof(err)),
			 -VMPT_ERR_NOT_FOUND);
	assert_string_equal(err, "cannot find the vCPU threads of process 4300: no QMP "
			    "socket on the command line of process 4300; no thread of "
			    "process 4300 is named 'CPU N/KVM' (start QEMU with -name "
			    "...,debug-threads=on)");
}

int main(void)
{
	const char *src = getenv("SRCDIR");
	snprintf(fixtures, sizeof(fixtures), "%s/host/tests/fixtures", src ? src : ".");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formats_and_caps),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_terms),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_valid_str),
		cmocka_unit_test(test_addr_filters),
		cmocka_unit_test(test_cpu_list),
		cmocka_unit_test(test_kvm_tsc),
		cmocka_unit_test(test_qmp_parse),
		cmocka_unit_test(test_proc_vcpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
