/* SPDX-License-Identifier: MIT */
/* A VM recording's guest side for decoding (what vmpt record --guest
 * saved in guest/, docs/guest.md): the guest kernel from guest/kcore_dir,
 * and, with the guest's sideband, its tasks on the host's time line
 * (vmpt/guest_tasks.h): each guest process's user code from guest/root as
 * code of that process's address space, and at every moment of a vCPU
 * thread's trace the guest task that runs there, for the decoder (its
 * address space) and the output (its pid, tid, comm).
 *
 * The guest's paths are untrusted (a guest wrote them): they are opened
 * only inside guest/root, as regular files (vmpt/path.h).
 */
#include "vmpt/session.h"
#include "vmpt_session_int.h"
#include "vmpt/correlate.h"
#include "vmpt/error.h"
#include "vmpt/guest_tasks.h"
#include "vmpt/path.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void warn(const struct vmpt_session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void warn(const struct vmpt_session *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->opts.warn)
		return;
	va_start(ap, fmt);
	fputs("vmpt: warning: ", s->opts.warn);
	vfprintf(s->opts.warn, fmt, ap);
	fputc('\n', s->opts.warn);
	va_end(ap);
}

/* One guest mapping's code, under its process's address space, opened
 * inside guest/root (vmpt/path.h).
 */
static void add_guest_map(struct vmpt_session *s, const char *dir, const char *guest,
			  const struct vmpt_guest_map *m, unsigned *refused)
{
	struct vmpt_asid asid = { VMPT_MACHINE_GUEST, m->space };
	char root[4096];
	const char *path = m->name;
	int fd;

	if (!strcmp(m->name, "[vdso]")) {
		snprintf(root, sizeof(root), "%s", dir);
		path = "vdso";
	} else if (m->name[0] == '/') {
		snprintf(root, sizeof(root), "%s/root", dir);
	} else {
		return;
	}
	fd = vmpt_path_open(root, path);
	if (fd < 0) {
		/* A file the guest did not give is missing code; a path
		 * that would leave root is said once each.
		 */
		if (errno != ENOENT && errno != ENOTDIR && (*refused)++ < 8)
			warn(s, "%s: offset %#llx: mapping of guest pid %d names '%s': not looked up (%s; a guest's paths are read inside %s only)",
			     guest, (unsigned long long)m->offset, m->pid, m->name,
			     errno == EXDEV ? "a '..' component" :
			     errno == ELOOP ? "a symlink on the way" :
			     errno == EINVAL ? "not a regular file" : strerror(errno),
			     root);
		return;
	}
	close(fd);
	if (vmpt_image_add_elf_map_in(s->image, root, path, m->name, m->start, m->pgoff,
				      &asid) == -VMPT_ERR_FORMAT)
		vmpt_image_add_raw_in(s->image, root, path, m->pgoff, m->len, m->start, &asid);
}

/* Each vCPU's TSC offset (and multiplier): the correlator's, found per
 * VMCS, given to the vCPU whose thread ran it.
 */
static size_t vcpu_scales(const struct vmpt_session *s, const struct vmpt_guest_tasks *gt,
			  struct vmpt_tsc_scale *tsc, size_t max)
{
	const struct vmpt_tsc_segment *seg;
	size_t n_seg, nr = 0;
	uint8_t have[256] = { 0 };

	if (!s->corr)
		return 0;
	seg = vmpt_corr_segments(s->corr, &n_seg);
	for (size_t i = 0; i < n_seg; i++) {
		int v = seg[i].vcpu;

		for (int k = 0; v < 0 && k < seg[i].n_tids; k++)
			v = vmpt_guest_tasks_vcpu_of_tid(gt, seg[i].tids[k]);
		if (v < 0 || (size_t)v >= max || have[v] ||
		    seg[i].source == VMPT_TSC_UNKNOWN)
			continue;
		have[v] = 1;
		tsc[v] = seg[i].scale;
		if ((size_t)v + 1 > nr)
			nr = (size_t)v + 1;
	}
	/* A vCPU whose guest TSC the trace never sampled: KVM gives the
	 * vCPUs of a VM one offset, so another vCPU's.
	 */
	for (size_t v = 0; v < nr; v++)
		for (size_t k = 0; !have[v] && k < nr; k++)
			if (have[k]) {
				tsc[v] = tsc[k];
				have[v] = 1;
			}
	if (nr < vmpt_guest_tasks_nr_vcpus(gt) && nr && nr < max) {
		for (size_t v = nr; v < vmpt_guest_tasks_nr_vcpus(gt) && v < max; v++)
			tsc[v] = tsc[0];
		nr = vmpt_guest_tasks_nr_vcpus(gt) < max ? vmpt_guest_tasks_nr_vcpus(gt) : max;
	}
	return nr;
}

int session_guest_open(struct vmpt_session *s, const char *dir)
{
	struct vmpt_guest_tasks_config cfg = { .host = s->pd.path, .host_pd = &s->pd };
	struct vmpt_tsc_scale tsc[256];
	struct vmpt_guest_tasks_stats st;
	const struct vmpt_guest_map *maps;
	char guest[4096 + 16];
	unsigned refused = 0;
	size_t n, nr_tsc;
	struct stat sb;
	int ret;

	snprintf(guest, sizeof(guest), "%s/perf.data", dir);
	cfg.guest = guest;
	memset(tsc, 0, sizeof(tsc));
	ret = vmpt_guest_tasks_open(&s->guest, &cfg, s->errmsg, sizeof(s->errmsg));
	if (ret < 0)
		return ret;
	if (!s->have_tc) {
		snprintf(s->errmsg, sizeof(s->errmsg),
			 "%.400s: no TIME_CONV record: host perf time cannot be related to the TSC, so the guest's sideband cannot be placed (--no-guest-tasks decodes without it)",
			 s->pd.path);
		return -VMPT_ERR_FORMAT;
	}
	nr_tsc = vcpu_scales(s, s->guest, tsc, sizeof(tsc) / sizeof(tsc[0]));
	ret = vmpt_guest_tasks_place(s->guest, tsc, nr_tsc, &s->tc);
	if (ret < 0) {
		snprintf(s->errmsg, sizeof(s->errmsg), "%s", vmpt_strerror(ret));
		return ret;
	}
	snprintf(guest, sizeof(guest), "%s/root", dir);
	if (stat(guest, &sb) < 0 || !S_ISDIR(sb.st_mode))
		warn(s, "%s: %s: the guest's binaries are not in the recording: its user code cannot be decoded (vmpt record --guest and vmpt guest collect fetch them)",
		     guest, stat(guest, &sb) < 0 ? strerror(errno) : "not a directory");
	snprintf(guest, sizeof(guest), "%s/perf.data", dir);
	maps = vmpt_guest_tasks_maps(s->guest, &n);
	for (size_t i = 0; i < n; i++)
		add_guest_map(s, dir, guest, &maps[i], &refused);
	if (refused > 8)
		warn(s, "%s: %u more guest paths not looked up", guest, refused - 8);
	vmpt_guest_tasks_stats(s->guest, &st);
	if (st.bpf_ksymbols)
		warn(s, "%s: the guest JIT-compiled %llu BPF programs: their code is in no file and cannot be decoded (boot the guest with sysctl.net.core.bpf_jit_enable=0)",
		     guest, (unsigned long long)st.bpf_ksymbols);
	return 0;
}

void session_guest_task(const struct vmpt_session *s, struct vmpt_task *t, uint64_t time,
			uint64_t *until)
{
	struct vmpt_guest_task g;
	uint64_t u;
	int vcpu;

	t->machine_pid = t->vcpu = -1;
	t->guest_pid = t->guest_tid = -1;
	t->guest_comm = NULL;
	t->guest_space = 0;
	if (!s->guest || (vcpu = vmpt_guest_tasks_vcpu_of_tid(s->guest, t->tid)) < 0)
		return;
	t->machine_pid = vmpt_guest_tasks_machine_pid(s->guest);
	t->vcpu = vcpu;
	vmpt_guest_tasks_at(s->guest, (unsigned)vcpu, time, &g, &u);
	if (u < *until)
		*until = u;
	t->guest_pid = g.pid;
	t->guest_tid = g.tid;
	t->guest_comm = g.comm;
	t->guest_space = g.space;
}
