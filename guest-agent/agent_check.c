/* SPDX-License-Identifier: MIT */
/* Is this guest set up so its sideband can be lined up with the host's
 * Intel PT trace?  One "name: value" line per fact, then a verdict.
 */
#include "agent.h"
#include "vmpt/pmu.h"

#include <stdlib.h>
#include <string.h>

/* A small /proc or /sys value (its one line), or NULL. */
static const char *value(const char *path, char *buf, size_t len)
{
	return vmpt_read_small_file(path, buf, len) < 0 ? NULL : buf;
}

static int has_word(const char *s, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = s; (p = strstr(p, word)); p += n)
		if ((p == s || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return 1;
	return 0;
}

static void show(const char *name, const char *value)
{
	printf("%s: %s\n", name, value ? value : "unknown");
}

int agent_check(int argc, char **argv)
{
	char cmdline_buf[4096], cs_buf[64], jit_buf[16], paranoid_buf[16];
	const char *cmdline = value("/proc/cmdline", cmdline_buf, sizeof(cmdline_buf));
	const char *cs = value("/sys/devices/system/clocksource/clocksource0/current_clocksource",
			       cs_buf, sizeof(cs_buf));
	const char *jit = value("/proc/sys/net/core/bpf_jit_enable", jit_buf, sizeof(jit_buf));
	const char *paranoid = value("/proc/sys/kernel/perf_event_paranoid",
				     paranoid_buf, sizeof(paranoid_buf));
	int no_kvmclock = cmdline && has_word(cmdline, "no-kvmclock");
	int problems = 0;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: vmpt-agent check\n");
		return 2;
	}
	show("cmdline no-kvmclock", cmdline ? (no_kvmclock ? "yes" : "no") : NULL);
	show("clocksource", cs);
	show("bpf_jit_enable", jit);
	show("perf_event_paranoid", paranoid);
	/* Guest perf time comes from sched_clock; with kvmclock that is
	 * not a function of the guest TSC, so it cannot be lined up with
	 * the TSC packets of the host's trace.
	 */
	if (!no_kvmclock) {
		printf("problem: no-kvmclock is not on the kernel command line: "
		       "guest perf time cannot be turned into guest TSC\n");
		problems++;
	}
	if (!cs || !strcmp(cs, "kvm-clock")) {
		printf("problem: the clocksource is %s, not tsc\n",
		       cs ? cs : "unknown");
		problems++;
	}
	/* JIT code is not in any file: its trace cannot be decoded. */
	if (jit && strcmp(jit, "0"))
		printf("note: the BPF JIT is on: BPF programs run as JIT code that "
		       "vmpt cannot decode (sysctl net.core.bpf_jit_enable=0 to avoid)\n");
	if (paranoid && atoi(paranoid) > -1)
		printf("note: perf_event_paranoid is %s: the agent needs root "
		       "(or sudo -n) for cpu-wide events\n", paranoid);
	printf("verdict: %s\n", problems ? "not ready" : "ready");
	return problems ? 1 : 0;
}
