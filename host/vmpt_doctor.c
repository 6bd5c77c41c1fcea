/* SPDX-License-Identifier: MIT */
#include "vmpt/doctor.h"
#include "vmpt/error.h"
#include "vmpt/pmu.h"
#include "vmpt_vcpu_libvirt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

struct doc {
	const struct vmpt_doctor_opts *o;
	vmpt_doctor_report report;
	void *ctx;
	int problems;
	char cpuinfo[1 << 16];
};

static void say(struct doc *d, enum vmpt_doctor_status s, const char *check,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void say(struct doc *d, enum vmpt_doctor_status s, const char *check,
		const char *fmt, ...)
{
	char text[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	d->problems += s == VMPT_DOCTOR_PROBLEM;
	d->report(d->ctx, s, check, text);
}

static int readf(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int readf(char *buf, size_t len, const char *fmt, ...)
{
	char path[4200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return vmpt_read_small_file(path, buf, len);
}

/* The first /proc/cpuinfo line starting with key, or "". */
static const char *cpuinfo_line(struct doc *d, const char *key, char *out, size_t len)
{
	out[0] = '\0';
	for (const char *p = d->cpuinfo; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, key, strlen(key)) && (p[strlen(key)] == ' ' ||
						      p[strlen(key)] == '\t')) {
			size_t n = strcspn(p, "\n");
			if (n >= len)
				n = len - 1;
			memcpy(out, p, n);
			out[n] = '\0';
			break;
		}
	}
	return out;
}

static int has_word(const char *line, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = strstr(line, word); p; p = strstr(p + 1, word))
		if ((p == line || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return 1;
	return 0;
}

static void check_pt(struct doc *d)
{
	struct vmpt_pmu pmu;
	char err[1024], flags[8192];
	cpuinfo_line(d, "flags", flags, sizeof(flags));
	int rc = vmpt_pmu_open(&pmu, d->o->sysfs_root, "intel_pt", err, sizeof(err));
	if (rc == -VMPT_ERR_NOT_FOUND) {
		say(d, VMPT_DOCTOR_PROBLEM, "intel_pt PMU", "absent (%s/bus/event_source/"
		    "devices/intel_pt): %s; vmpt record cannot trace (--event dummy "
		    "records the sideband only)", d->o->sysfs_root,
		    has_word(flags, "intel_pt")
			    ? "the CPU has it (cpuinfo flag intel_pt): the kernel lacks "
			      "CONFIG_PERF_EVENTS_INTEL_PT or the driver failed"
			    : has_word(flags, "hypervisor")
				      ? "this is a VM and the hypervisor does not pass Intel "
					"PT through"
				      : "this CPU has no Intel PT");
		return;
	}
	if (rc) {
		say(d, VMPT_DOCTOR_PROBLEM, "intel_pt PMU", "%s", err);
		return;
	}
	static const char *const caps[] = {
		"psb_cyc", "ip_filtering", "mtc", "ptwrite", "power_event_trace",
		"topa_output", "topa_multiple_entries", "single_range_output",
		"payloads_lip", "num_address_ranges", "psb_periods", "mtc_periods",
		"cycle_thresholds", "event_trace", "tnt_disable",
	};
	char list[1024] = "";
	size_t p = 0;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		uint64_t v;
		if (!vmpt_pmu_cap(&pmu, caps[i], &v) && p < sizeof(list))
			p += (size_t)snprintf(list + p, sizeof(list) - p, " %s=%" PRIx64,
					      caps[i], v);
	}
	say(d, VMPT_DOCTOR_OK, "intel_pt PMU", "type %u, %zu config terms; caps:%s",
	    pmu.type, pmu.nr_formats, p ? list : " (no caps directory: old kernel)");
	uint64_t topa;
	if (!vmpt_pmu_cap(&pmu, "topa_multiple_entries", &topa) && !topa)
		say(d, VMPT_DOCTOR_INFO, "intel_pt output", "single ToPA entry only: the "
		    "AUX area must be one contiguous block; keep -m ,AUXPAGES small");
}

static int have_module(struct doc *d, const char *name)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/module/%s", d->o->sysfs_root, name);
	return !access(path, F_OK);
}

/* Ask /dev/kvm itself whether it makes VMs.  1 yes, 0 no, -1 it cannot
 * be asked (a fixture, no permission); why says what happened.
 */
static int kvm_makes_vms(const char *dev, char *why, size_t len)
{
	struct stat st;
	int fd, vm;

	if (stat(dev, &st) || !S_ISCHR(st.st_mode)) {
		snprintf(why, len, "%.200s is not a device: not asked", dev);
		return -1;
	}
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "%.200s: %s", dev, strerror(errno));
		return -1;
	}
	vm = ioctl(fd, KVM_CREATE_VM, 0);
	if (vm < 0)
		snprintf(why, len, "KVM_CREATE_VM: %s", strerror(errno));
	else
		snprintf(why, len, "KVM_CREATE_VM works");
	if (vm >= 0)
		close(vm);
	close(fd);
	return vm >= 0;
}

/* Intel PT sees VM entries only where guests run in VMX non-root: KVM
 * driven by kvm_intel on a CPU with VMX.  A paravirtual KVM (kvm_pvm runs
 * guests without hardware virtualization) or AMD's makes none.
 */
static void check_kvm_vmx(struct doc *d, const char *dev)
{
	char why[256], flags[8192];
	int made = kvm_makes_vms(dev, why, sizeof(why));

	cpuinfo_line(d, "flags", flags, sizeof(flags));
	if (have_module(d, "kvm_amd"))
		say(d, VMPT_DOCTOR_PROBLEM, "KVM VMX guests", "%s runs SVM guests "
		    "(kvm_amd; %s): Intel PT and VMX are Intel's", dev, why);
	else if (!has_word(flags, "vmx"))
		say(d, VMPT_DOCTOR_PROBLEM, "KVM VMX guests", "%s cannot run VMX guests: "
		    "this CPU has no VMX (cpuinfo flags lack vmx)%s (%s); Intel PT sees "
		    "no VM entries or exits there: trace on a host where kvm_intel runs "
		    "the guests", dev, have_module(d, "kvm_pvm") ? ", and kvm_pvm "
		    "(paravirtual KVM) runs its VMs without hardware virtualization" : "",
		    why);
	else if (!have_module(d, "kvm_intel"))
		say(d, VMPT_DOCTOR_PROBLEM, "KVM VMX guests", "%s is not kvm_intel's "
		    "(%s): its guests do not run in VMX non-root; modprobe kvm_intel",
		    dev, why);
	else if (!made)
		say(d, VMPT_DOCTOR_PROBLEM, "KVM VMX guests", "kvm_intel is loaded but "
		    "%s makes no VM: %s", dev, why);
	else
		say(d, VMPT_DOCTOR_OK, "KVM VMX guests", "kvm_intel runs guests in VMX "
		    "non-root (%s)", why);
}

static void check_kvm(struct doc *d)
{
	char path[4200], mods[256] = "";
	size_t p = 0;
	static const char *const names[] = { "kvm", "kvm_intel", "kvm_amd", "kvm_pvm" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/module/%s", d->o->sysfs_root, names[i]);
		if (!access(path, F_OK))
			p += (size_t)snprintf(mods + p, sizeof(mods) - p, "%s%s",
					      p ? ", " : "", names[i]);
	}
	snprintf(path, sizeof(path), "%s/kvm", d->o->dev_root);
	int dev = !access(path, F_OK);
	if (!dev)
		say(d, VMPT_DOCTOR_PROBLEM, "KVM", "%s absent%s%s: no VMs to trace "
		    "(modprobe kvm_intel)", path, p ? "; modules: " : "", mods);
	else
		say(d, VMPT_DOCTOR_OK, "KVM", "%s present; modules: %s", path,
		    p ? mods : "none listed (built in)");
	if (dev)
		check_kvm_vmx(d, path);

	char buf[64];
	snprintf(path, sizeof(path), "%s/module/kvm_intel", d->o->sysfs_root);
	if (access(path, F_OK)) {
		say(d, VMPT_DOCTOR_PROBLEM, "kvm_intel pt_mode", "kvm_intel is not loaded"
		    " (KVM modules here: %s): host Intel PT of guests needs VMX guests "
		    "run by kvm_intel", p ? mods : "none");
		return;
	}
	if (readf(buf, sizeof(buf), "%s/parameters/pt_mode", path) < 0) {
		say(d, VMPT_DOCTOR_INFO, "kvm_intel pt_mode", "no pt_mode parameter "
		    "(kernel before 5.0): the host traces guests");
		return;
	}
	if (!strcmp(buf, "0"))
		say(d, VMPT_DOCTOR_OK, "kvm_intel pt_mode", "0 (system mode): the host's "
		    "trace includes guest code");
	else
		say(d, VMPT_DOCTOR_PROBLEM, "kvm_intel pt_mode", "%s (host-guest mode): "
		    "guests own Intel PT and the host sees none of their code; reload "
		    "with: modprobe -r kvm_intel && modprobe kvm_intel pt_mode=0", buf);
}

static void check_vmx_misc(struct doc *d)
{
	char flags[8192], path[4200];
	cpuinfo_line(d, "flags", flags, sizeof(flags));
	if (!has_word(flags, "vmx")) {
		say(d, VMPT_DOCTOR_PROBLEM, "VMX_MISC bit 14", "no VMX on this CPU "
		    "(cpuinfo flags lack vmx): PT across VMX operation cannot apply, and "
		    "KVM guests here are not VMX guests");
		return;
	}
	snprintf(path, sizeof(path), "%s/cpu/0/msr", d->o->dev_root);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		say(d, VMPT_DOCTOR_INFO, "VMX_MISC bit 14", "cannot check: %s: %s%s", path,
		    strerror(errno), errno == ENOENT ? " (modprobe msr)" : " (needs root)");
		return;
	}
	uint64_t misc;
	ssize_t n = pread(fd, &misc, sizeof(misc), 0x485);
	close(fd);
	if (n != sizeof(misc))
		say(d, VMPT_DOCTOR_PROBLEM, "VMX_MISC bit 14", "IA32_VMX_MISC (0x485) "
		    "unreadable through %s", path);
	else if (misc & (1ULL << 14))
		say(d, VMPT_DOCTOR_OK, "VMX_MISC bit 14", "set: Intel PT keeps tracing in "
		    "VMX operation (IA32_VMX_MISC 0x%" PRIx64 ")", misc);
	else
		say(d, VMPT_DOCTOR_PROBLEM, "VMX_MISC bit 14", "clear (IA32_VMX_MISC "
		    "0x%" PRIx64 "): this CPU cannot use Intel PT in VMX operation; the "
		    "host trace stops at VMXON", misc);
}

static void check_perf_limits(struct doc *d)
{
	char buf[64];
	if (readf(buf, sizeof(buf), "%s/sys/kernel/perf_event_paranoid",
		  d->o->procfs_root) < 0) {
		say(d, VMPT_DOCTOR_PROBLEM, "perf_event_paranoid", "%s/sys/kernel/"
		    "perf_event_paranoid missing: no perf events in this kernel",
		    d->o->procfs_root);
		return;
	}
	int paranoid = atoi(buf);
	if (d->o->as_root || paranoid <= 0)
		say(d, VMPT_DOCTOR_OK, "perf_event_paranoid", "%d%s", paranoid,
		    d->o->as_root ? " (running as root: no limit applies)" : "");
	else
		say(d, VMPT_DOCTOR_PROBLEM, "perf_event_paranoid", "%d: as non-root, "
		    "tracing other users' QEMU and kernel code needs root, CAP_PERFMON "
		    "or: sysctl kernel.perf_event_paranoid=0", paranoid);

	char kb[64] = "?";
	readf(kb, sizeof(kb), "%s/sys/kernel/perf_event_mlock_kb", d->o->procfs_root);
	struct rlimit rl;
	getrlimit(RLIMIT_MEMLOCK, &rl);
	char lim[64];
	if (rl.rlim_cur == RLIM_INFINITY)
		snprintf(lim, sizeof(lim), "unlimited");
	else
		snprintf(lim, sizeof(lim), "%llu KiB", (unsigned long long)rl.rlim_cur / 1024);
	if (d->o->as_root)
		say(d, VMPT_DOCTOR_OK, "mlock limit", "perf_event_mlock_kb %s, ulimit -l "
		    "%s; root may lock more (CAP_IPC_LOCK)", kb, lim);
	else
		say(d, VMPT_DOCTOR_INFO, "mlock limit", "perf_event_mlock_kb %s KiB per "
		    "CPU plus ulimit -l %s: AUX areas beyond that fail with ENOMEM/EPERM "
		    "(raise them or run as root)", kb, lim);
}

static void check_kernel_symbols(struct doc *d)
{
	char buf[64], path[4200];
	if (readf(buf, sizeof(buf), "%s/sys/kernel/kptr_restrict", d->o->procfs_root) >= 0) {
		snprintf(path, sizeof(path), "%s/kallsyms", d->o->procfs_root);
		FILE *f = fopen(path, "r");
		char line[256] = "";
		uint64_t addr = 0;
		if (f) {
			if (fgets(line, sizeof(line), f))
				addr = strtoull(line, NULL, 16);
			fclose(f);
		}
		if (addr)
			say(d, VMPT_DOCTOR_OK, "kptr_restrict", "%s: kallsyms shows "
			    "addresses", buf);
		else
			say(d, VMPT_DOCTOR_PROBLEM, "kptr_restrict", "%s: kallsyms shows no "
			    "addresses to this user: run as root or sysctl "
			    "kernel.kptr_restrict=0", buf);
	}
	snprintf(path, sizeof(path), "%s/kcore", d->o->procfs_root);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		say(d, VMPT_DOCTOR_OK, "/proc/kcore", "readable: --kcore can copy the "
		    "kernel text");
	} else if (errno == ENOENT) {
		say(d, VMPT_DOCTOR_PROBLEM, "/proc/kcore", "absent (kernel built without "
		    "CONFIG_PROC_KCORE): --kcore cannot work; decode kernel code from "
		    "the matching vmlinux");
	} else {
		say(d, VMPT_DOCTOR_PROBLEM, "/proc/kcore", "%s: run as root for --kcore",
		    strerror(errno));
	}
}

static void check_debugfs(struct doc *d)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/mounts", d->o->procfs_root);
	FILE *f = fopen(path, "r");
	char line[1024], mnt[512] = "";
	while (f && fgets(line, sizeof(line), f)) {
		char dev[256], dir[512], type[64];
		if (sscanf(line, "%255s %511s %63s", dev, dir, type) == 3 &&
		    !strcmp(type, "debugfs")) {
			snprintf(mnt, sizeof(mnt), "%s", dir);
			break;
		}
	}
	if (f)
		fclose(f);
	if (!mnt[0]) {
		say(d, VMPT_DOCTOR_PROBLEM, "debugfs", "not mounted: vmpt record cannot "
		    "save each vCPU's tsc-offset; mount -t debugfs none /sys/kernel/debug");
		return;
	}
	/* a mount under /sys is looked up in the sysfs root (fixtures) */
	if (!strncmp(mnt, "/sys/", 5))
		snprintf(path, sizeof(path), "%s/%s/kvm", d->o->sysfs_root, mnt + 5);
	else
		snprintf(path, sizeof(path), "%s/kvm", mnt);
	if (access(path, R_OK))
		say(d, VMPT_DOCTOR_PROBLEM, "debugfs", "mounted at %s, but %s is %s",
		    mnt, path, errno == ENOENT ? "absent (KVM not loaded?)"
					       : "not readable (run as root)");
	else
		say(d, VMPT_DOCTOR_OK, "debugfs", "%s readable: vCPU tsc-offset and "
		    "tsc-scaling-ratio are saved with each recording", path);
}

static void check_tsc_scaling(struct doc *d)
{
	char vmx[8192];
	cpuinfo_line(d, "vmx flags", vmx, sizeof(vmx));
	if (!vmx[0])
		say(d, VMPT_DOCTOR_INFO, "TSC scaling", "no VMX features listed: guest "
		    "TSC = host TSC + tsc-offset when guests run under VMX");
	else if (has_word(vmx, "tsc_scaling"))
		say(d, VMPT_DOCTOR_INFO, "TSC scaling", "available: a guest with another "
		    "TSC frequency sees host TSC * ratio + offset; vmpt keeps the ratio "
		    "from debugfs");
	else
		say(d, VMPT_DOCTOR_OK, "TSC scaling", "not available: guest TSC = host "
		    "TSC + tsc-offset");
}

static void check_libvirt(struct doc *d)
{
	unsigned long ver;
	char why[600];
	int n, rc;

	if (!d->o->libvirt_uri)
		return;
	rc = vmpt_vcpu_libvirt_probe(d->o->libvirt_uri, &n, &ver, why, sizeof(why));
	if (rc == -VMPT_ERR_NO_LIBRARY)
		say(d, VMPT_DOCTOR_PROBLEM, "libvirt", "%s", why);
	else if (rc < 0)
		say(d, VMPT_DOCTOR_PROBLEM, "libvirt", "%s (start libvirtd, or use "
		    "--pid/-- COMMAND)", why);
	else
		say(d, VMPT_DOCTOR_OK, "libvirt", "%s reachable (libvirt %lu.%lu.%lu), %d "
		    "running domains", d->o->libvirt_uri, ver / 1000000, ver / 1000 % 1000,
		    ver % 1000, n);
}

static void check_qemu(struct doc *d)
{
	DIR *pd = opendir(d->o->procfs_root);
	int found = 0;
	struct dirent *de;
	while (pd && (de = readdir(pd))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		char comm[64];
		if (readf(comm, sizeof(comm), "%s/%s/comm", d->o->procfs_root,
			  de->d_name) < 0 || strncmp(comm, "qemu-system", 11))
			continue;
		found++;
		char tdir[4200];
		snprintf(tdir, sizeof(tdir), "%s/%s/task", d->o->procfs_root, de->d_name);
		DIR *td = opendir(tdir);
		int vcpus = 0, tcg = 0;
		struct dirent *te;
		while (td && (te = readdir(td))) {
			char tcomm[64], accel[16];
			int idx;
			if (te->d_name[0] != '.' &&
			    readf(tcomm, sizeof(tcomm), "%s/%s/comm", tdir, te->d_name) >= 0 &&
			    sscanf(tcomm, "CPU %d/%15s", &idx, accel) >= 1) {
				vcpus++;
				tcg += !strcmp(accel, "TCG");
			}
		}
		if (td)
			closedir(td);
		if (tcg)
			say(d, VMPT_DOCTOR_PROBLEM, "QEMU vCPUs", "process %s: %d vCPU "
			    "threads named 'CPU n/TCG': QEMU emulates this guest, so its code "
			    "never runs in VMX non-root and Intel PT sees QEMU translating, "
			    "no VM entries; start it with -accel kvm (libvirt: <domain "
			    "type='kvm'>)", de->d_name, tcg);
		else if (vcpus)
			say(d, VMPT_DOCTOR_OK, "QEMU debug-threads", "process %s: %d vCPU "
			    "threads named 'CPU n/...'", de->d_name, vcpus);
		else
			say(d, VMPT_DOCTOR_PROBLEM, "QEMU debug-threads", "process %s: no "
			    "thread named 'CPU n/KVM': start QEMU with -name NAME,debug-"
			    "threads=on (libvirt does), or give vmpt its QMP socket (--qmp)",
			    de->d_name);
	}
	if (pd)
		closedir(pd);
	if (!found)
		say(d, VMPT_DOCTOR_INFO, "QEMU debug-threads", "no QEMU process running");
}

int vmpt_doctor_run(const struct vmpt_doctor_opts *opts, vmpt_doctor_report report,
		    void *ctx)
{
	struct doc *d = calloc(1, sizeof(*d));
	if (!d)
		return -VMPT_ERR_NOMEM;
	d->o = opts;
	d->report = report;
	d->ctx = ctx;
	char path[4200];
	snprintf(path, sizeof(path), "%s/cpuinfo", opts->procfs_root);
	FILE *f = fopen(path, "r");
	if (f) {
		size_t n = fread(d->cpuinfo, 1, sizeof(d->cpuinfo) - 1, f);
		d->cpuinfo[n] = '\0';
		fclose(f);
	}
	check_pt(d);
	check_kvm(d);
	check_vmx_misc(d);
	check_perf_limits(d);
	check_kernel_symbols(d);
	check_debugfs(d);
	check_tsc_scaling(d);
	check_libvirt(d);
	check_qemu(d);
	int problems = d->problems;
	free(d);
	return problems;
}
