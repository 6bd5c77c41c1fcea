/* SPDX-License-Identifier: MIT */
/* Is this guest set up so its sideband can be lined up with the host's
 * Intel PT trace?  Correlation needs guest perf time that is a function of
 * the guest TSC: sched_clock on a stable TSC (clocksource tsc, no kvmclock,
 * a TSC the kernel did not mark unstable), which perf's mmap page states as
 * cap_user_time_zero; and guest code that is in files (no BPF JIT).  One
 * "name: value" line per fact, each problem with its fix, then a verdict.
 *
 * `check --root DIR` reads the facts from a fixture tree instead of this
 * machine: DIR/proc/..., DIR/sys/..., and for what is no file here
 * DIR/dmesg (the kernel log), DIR/cpuid-hypervisor (the CPUID 0x40000000
 * signature; absent: no hypervisor) and DIR/perf-cap-user-time-zero.
 */
#include "agent.h"
#include "vmpt/pmu.h"

#include <cpuid.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

struct facts {
	const char *root;		/* "" for this machine */
	char cmdline[4096];
	char flags[8192];		/* the first cpuinfo "flags" line */
	char clocksource[64], available[512];
	char jit[16], paranoid[16];
	char hypervisor[16];		/* CPUID signature, "" on bare metal */
	char unstable[256];		/* the kernel's "TSC unstable" message */
	char dmesg_error[128];		/* why the log could not be read */
	int time_zero;			/* cap_user_time_zero: 1, 0 or -1 unknown */
	char time_zero_error[128];
	int jit_always_on;		/* CONFIG_BPF_JIT_ALWAYS_ON=y in its config */
};

static int read_value(const struct facts *f, const char *path, char *buf, size_t len)
{
	char full[4200];

	size_t n;

	snprintf(full, sizeof(full), "%s%s", f->root, path);
	if (vmpt_read_small_file(full, buf, len) < 0) {
		buf[0] = '\0';
		return -1;
	}
	/* available_clocksource ends in a space */
	n = strlen(buf);
	while (n && buf[n - 1] == ' ')
		buf[--n] = '\0';
	return 0;
}

/* The whole file (a NUL after it) or NULL with errno set. */
static char *read_text(const struct facts *f, const char *path)
{
	char full[4200];
	uint8_t *data;
	size_t size;
	int ret;

	snprintf(full, sizeof(full), "%s%s", f->root, path);
	ret = agent_read_file(full, &data, &size);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return (char *)data;
}

static int has_word(const char *s, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = s; (p = strstr(p, word)); p += n)
		if ((p == s || p[-1] == ' ' || p[-1] == '\t') &&
		    (p[n] == ' ' || p[n] == '\n' || !p[n]))
			return 1;
	return 0;
}

/* Copy the line of text holding p (without its newline) into out. */
static void line_of(const char *text, const char *p, char *out, size_t len)
{
	const char *start = p, *end = strchr(p, '\n');
	size_t n;

	while (start > text && start[-1] != '\n')
		start--;
	n = end ? (size_t)(end - start) : strlen(start);
	if (n >= len)
		n = len - 1;
	memcpy(out, start, n);
	out[n] = '\0';
}

static void read_cpu_flags(struct facts *f)
{
	char *info = read_text(f, "/proc/cpuinfo"), *p;

	f->flags[0] = '\0';
	for (p = info; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, "flags", 5) && (p[5] == ' ' || p[5] == '\t')) {
			line_of(info, p, f->flags, sizeof(f->flags));
			break;
		}
	free(info);
}

static char *read_kernel_log(struct facts *f)
{
	char *buf;
	int size, n;

	if (f->root[0]) {
		buf = read_text(f, "/dmesg");
		if (!buf)
			snprintf(f->dmesg_error, sizeof(f->dmesg_error), "%s/dmesg: %s",
				 f->root, strerror(errno));
		return buf;
	}
	size = klogctl(10, NULL, 0);	/* SYSLOG_ACTION_SIZE_BUFFER */
	if (size <= 0)
		size = 1 << 20;
	buf = malloc((size_t)size + 1);
	if (!buf)
		return NULL;
	n = klogctl(3, buf, size);	/* SYSLOG_ACTION_READ_ALL */
	if (n < 0) {
		snprintf(f->dmesg_error, sizeof(f->dmesg_error), "%s%s", strerror(errno),
			 errno == EPERM ? " (kernel.dmesg_restrict: run as root)" : "");
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

/* The kernel's words when it stops trusting the TSC (arch/x86/kernel/tsc.c,
 * kernel/time/clocksource.c).
 */
static void find_unstable(struct facts *f)
{
	static const char *const marks[] = {
		"Marking TSC unstable", "Marking clocksource 'tsc' as unstable",
		"TSC found unstable",
	};
	char *log = read_kernel_log(f);

	const char *first = NULL;

	/* the first message says why */
	for (size_t i = 0; log && i < sizeof(marks) / sizeof(marks[0]); i++) {
		const char *p = strstr(log, marks[i]);

		if (p && (!first || p < first))
			first = p;
	}
	f->unstable[0] = '\0';
	if (first) {
		char *line = f->unstable;
		size_t n;

		line_of(log, first, line, sizeof(f->unstable));
		/* klogctl's lines start with the level, "<6>", as dmesg's do not */
		n = line[0] == '<' ? strspn(line + 1, "0123456789") : 0;
		if (n && line[n + 1] == '>')
			memmove(line, line + n + 2, strlen(line + n + 2) + 1);
	}
	free(log);
}

static void read_hypervisor(struct facts *f)
{
	unsigned a, b, c, d;

	f->hypervisor[0] = '\0';
	if (f->root[0]) {
		read_value(f, "/cpuid-hypervisor", f->hypervisor, sizeof(f->hypervisor));
		return;
	}
	__cpuid(1, a, b, c, d);
	if (!(c & (1U << 31)))
		return;
	__cpuid(0x40000000, a, b, c, d);
	memcpy(f->hypervisor, &b, 4);
	memcpy(f->hypervisor + 4, &c, 4);
	memcpy(f->hypervisor + 8, &d, 4);
	f->hypervisor[12] = '\0';
}

/* cap_user_time_zero of a perf event's mmap page, as the agent's own
 * TIME_CONV would have it.
 */
static void read_time_zero(struct facts *f)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.exclude_kernel = 1,
	};
	struct perf_event_mmap_page *pg;
	long page = sysconf(_SC_PAGESIZE);
	char buf[16];
	int fd;

	f->time_zero = -1;
	if (f->root[0]) {
		if (!read_value(f, "/perf-cap-user-time-zero", buf, sizeof(buf)))
			f->time_zero = atoi(buf);
		else
			snprintf(f->time_zero_error, sizeof(f->time_zero_error),
				 "no %s/perf-cap-user-time-zero", f->root);
		return;
	}
	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		snprintf(f->time_zero_error, sizeof(f->time_zero_error),
			 "perf_event_open: %s", strerror(errno));
		return;
	}
	pg = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, 0);
	if (pg == MAP_FAILED) {
		snprintf(f->time_zero_error, sizeof(f->time_zero_error), "mmap: %s",
			 strerror(errno));
	} else {
		f->time_zero = pg->cap_user_time_zero;
		munmap(pg, (size_t)page);
	}
	close(fd);
}

/* A kernel built with CONFIG_BPF_JIT_ALWAYS_ON refuses bpf_jit_enable=0. */
static void read_jit_config(struct facts *f)
{
	char release[128], path[256], *config;
	struct utsname u;

	if (f->root[0]) {
		read_value(f, "/proc/sys/kernel/osrelease", release, sizeof(release));
	} else {
		uname(&u);
		snprintf(release, sizeof(release), "%s", u.release);
	}
	snprintf(path, sizeof(path), "/boot/config-%s", release);
	config = read_text(f, path);
	f->jit_always_on = config && strstr(config, "\nCONFIG_BPF_JIT_ALWAYS_ON=y");
	free(config);
}

static void gather(struct facts *f)
{
	const char *cs = "/sys/devices/system/clocksource/clocksource0/";
	char path[128];

	read_value(f, "/proc/cmdline", f->cmdline, sizeof(f->cmdline));
	read_cpu_flags(f);
	snprintf(path, sizeof(path), "%scurrent_clocksource", cs);
	read_value(f, path, f->clocksource, sizeof(f->clocksource));
	snprintf(path, sizeof(path), "%savailable_clocksource", cs);
	read_value(f, path, f->available, sizeof(f->available));
	read_value(f, "/proc/sys/net/core/bpf_jit_enable", f->jit, sizeof(f->jit));
	read_value(f, "/proc/sys/kernel/perf_event_paranoid", f->paranoid, sizeof(f->paranoid));
	read_hypervisor(f);
	find_unstable(f);
	read_time_zero(f);
	read_jit_config(f);
}

static const char *or_unknown(const char *s)
{
	return s[0] ? s : "unknown";
}

static const char *hypervisor_name(const struct facts *f)
{
	if (!f->hypervisor[0])
		return "none";
	if (!strcmp(f->hypervisor, "KVMKVMKVM"))
		return "KVM";
	if (!strcmp(f->hypervisor, "TCGTCGTCGTCG"))
		return "QEMU TCG";
	return "other";
}

static void show_facts(const struct facts *f, int kvmclock)
{
	int constant = has_word(f->flags, "constant_tsc");
	int nonstop = has_word(f->flags, "nonstop_tsc");

	printf("cmdline no-kvmclock: %s\n", has_word(f->cmdline, "no-kvmclock") ? "yes" : "no");
	printf("cmdline tsc=reliable: %s\n", has_word(f->cmdline, "tsc=reliable") ? "yes" : "no");
	printf("hypervisor: %s%s%s%s\n", hypervisor_name(f), f->hypervisor[0] ? " (CPUID '" : "",
	       f->hypervisor, f->hypervisor[0] ? "')" : "");
	printf("kvmclock: %s\n", kvmclock ? "yes" : "no");
	printf("clocksource: %s\n", or_unknown(f->clocksource));
	printf("available clocksources: %s\n", or_unknown(f->available));
	printf("invariant TSC: %s\n", constant && nonstop ? "yes (constant_tsc nonstop_tsc)" :
	       constant ? "no (constant_tsc only)" : nonstop ? "no (nonstop_tsc only)" :
	       "no (cpuinfo lacks constant_tsc nonstop_tsc)");
	if (f->dmesg_error[0])
		printf("kernel log: unreadable: %s\n", f->dmesg_error);
	else
		printf("kernel log: %s%s%s\n", f->unstable[0] ? "TSC marked unstable: '" :
		       "the TSC was not marked unstable", f->unstable, f->unstable[0] ? "'" : "");
	if (f->time_zero < 0)
		printf("perf cap_user_time_zero: unknown (%s)\n", f->time_zero_error);
	else
		printf("perf cap_user_time_zero: %d\n", f->time_zero);
	printf("bpf_jit_enable: %s\n", or_unknown(f->jit));
	printf("perf_event_paranoid: %s\n", or_unknown(f->paranoid));
}

/* Each problem once, with its fix; returns how many. */
static int judge(const struct facts *f, int kvmclock)
{
	int reliable = has_word(f->cmdline, "tsc=reliable");
	int invariant = has_word(f->flags, "constant_tsc") && has_word(f->flags, "nonstop_tsc");
	int problems = 0;

	if (kvmclock) {
		printf("problem: kvmclock is on (kvm-clock is a clocksource here): guest perf "
		       "time follows kvmclock, not the guest TSC; add no-kvmclock to the "
		       "kernel command line and reboot\n");
		problems++;
	}
	if (f->unstable[0]) {
		printf("problem: the kernel marked the TSC unstable ('%s'): guest perf time "
		       "no longer follows the TSC; boot with tsc=reliable (the hypervisor "
		       "keeps the guest TSC constant: KVM on a host with constant_tsc, or "
		       "QEMU's TCG)\n", f->unstable);
		problems++;
	} else if (!invariant && !reliable) {
		printf("problem: the guest CPU has no invariant TSC (cpuinfo lacks "
		       "constant_tsc nonstop_tsc) and tsc=reliable is not on the kernel "
		       "command line: the kernel may mark the TSC unstable at any time; give "
		       "the guest an invariant TSC (QEMU -cpu host,+invtsc) or boot with "
		       "tsc=reliable\n");
		problems++;
	}
	if (strcmp(f->clocksource, "tsc")) {
		printf("problem: the clocksource is %s, not tsc: ", or_unknown(f->clocksource));
		if (!strcmp(f->clocksource, "kvm-clock"))
			printf("boot with no-kvmclock (above)\n");
		else if (has_word(f->available, "tsc"))
			printf("echo tsc > /sys/devices/system/clocksource/clocksource0/"
			       "current_clocksource (or boot with clocksource=tsc)\n");
		else if (f->unstable[0])
			printf("tsc is no longer offered since it was marked unstable: boot "
			       "with tsc=reliable (above)\n");
		else
			printf("boot with clocksource=tsc tsc=reliable\n");
		problems++;
	}
	if (f->time_zero == 0) {
		printf("problem: perf's mmap page has cap_user_time_zero 0: this kernel "
		       "cannot turn perf time into TSC (sched_clock is not a stable TSC), so "
		       "guest sideband cannot be put on the host's time line; %s\n",
		       problems ? "it follows from the problems above" :
		       "boot with no-kvmclock tsc=reliable");
		problems++;
	} else if (f->time_zero < 0) {
		printf("note: cannot read perf's mmap page (%s): whether perf time converts "
		       "to TSC is unknown\n", f->time_zero_error);
	}
	if (f->jit[0] && strcmp(f->jit, "0")) {
		if (f->jit_always_on) {
			printf("note: the BPF JIT is on and this kernel forces it "
			       "(CONFIG_BPF_JIT_ALWAYS_ON): code of BPF programs cannot be "
			       "decoded\n");
		} else {
			printf("problem: the BPF JIT is on: JIT-compiled BPF programs are "
			       "code in no file, their trace cannot be decoded; sysctl -w "
			       "net.core.bpf_jit_enable=0 (at boot: "
			       "sysctl.net.core.bpf_jit_enable=0)\n");
			problems++;
		}
	}
	if (!strcmp(f->hypervisor, "TCGTCGTCGTCG"))
		printf("note: QEMU emulates this guest (TCG): its code never runs in VMX "
		       "non-root, so the host's Intel PT sees QEMU's translator and no VM "
		       "entries; run it with -accel kvm to trace it\n");
	if (f->paranoid[0] && atoi(f->paranoid) > -1)
		printf("note: perf_event_paranoid is %s: the agent needs root (or sudo -n) "
		       "for cpu-wide events\n", f->paranoid);
	return problems;
}

int agent_check(int argc, char **argv)
{
	static struct facts f;
	int kvmclock, problems;

	f.root = "";
	if (argc == 3 && !strcmp(argv[1], "--root")) {
		f.root = argv[2];
	} else if (argc != 1) {
		fprintf(stderr, "usage: vmpt-agent check [--root DIR]\n");
		return 2;
	}
	gather(&f);
	kvmclock = has_word(f.available, "kvm-clock") || !strcmp(f.clocksource, "kvm-clock");
	show_facts(&f, kvmclock);
	problems = judge(&f, kvmclock);
	printf("verdict: %s\n", problems ? "not ready" : "ready");
	return problems ? 1 : 0;
}
