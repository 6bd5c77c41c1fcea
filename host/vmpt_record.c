/* SPDX-License-Identifier: MIT */
#include "vmpt/record.h"
#include "vmpt/aux.h"
#include "vmpt/error.h"
#include "vmpt/kcore.h"
#include "vmpt/kvm_tsc.h"
#include "vmpt/perf_clock.h"
#include "vmpt/perf_data.h"
#include "vmpt/pmu.h"
#include "vmpt/pt_config.h"
#include "vmpt/sideband.h"
#include "vmpt/vcpu.h"

#include <cpuid.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define MAX_CPUS 1024
/* tsc-offset values kept per recording: a guest writing its TSC all the
 * time is not followed further. */
#define MAX_TSC_VALUES 65536

/* One mmap: a vCPU thread (per-thread) or a CPU (per-CPU). */
struct rec_map {
	int fd, sb_fd;		/* main event, sideband dummy (or -1) */
	int cpu;		/* -1 per-thread */
	pid_t tid;		/* -1 per-CPU */
	uint64_t id, sb_id;
	void *base;
	size_t len;
	struct vmpt_data_ring ring;
	void *aux_base;
	size_t aux_len;
	struct vmpt_aux_area aux;
	int hup;
};

struct rec {
	const struct vmpt_record_opts *o;
	struct vmpt_record_stats *st;
	struct vmpt_aux_counts counts;
	char *err;
	size_t errlen;
	int pt;				/* intel_pt, else sideband only */
	struct vmpt_pmu pmu;
	struct vmpt_pt_event ptev;
	char filter[4096];
	struct perf_event_attr main_attr, sb_attr;
	struct rec_map *maps;
	size_t nr_maps;
	struct vmpt_perf_writer *w;
	int wrote_round;
	uint8_t *auxbuf;
	size_t auxbuf_len;
	pid_t target_pid, child;
	int command;			/* the command is the target */
	struct vmpt_vcpus *vcpus;
	struct vmpt_kvm_tsc_series tsc;	/* each vCPU's tsc-offset over time */
	struct vmpt_perf_time_conv tc;
	struct vmpt_perf_clock clock;
	int fifo;
	size_t page;
};

static int rec_fail(struct rec *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int rec_fail(struct rec *r, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return code;
}

static void logf_(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct rec *r, const char *fmt, ...)
{
	if (!r->o->log)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(r->o->log, fmt, ap);
	va_end(ap);
}

static int online_cpus(const char *sysfs_root, uint8_t *set)
{
	char path[4200], buf[1024];
	snprintf(path, sizeof(path), "%s/devices/system/cpu/online", sysfs_root);
	if (vmpt_read_small_file(path, buf, sizeof(buf)) < 0)
		return -VMPT_ERR_NOT_FOUND;
	return vmpt_parse_cpu_list(buf, set, MAX_CPUS);
}

static void setup_attrs(struct rec *r)
{
	const uint64_t sample = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	int command = r->command;
	struct perf_event_attr sb = {
		.size = sizeof(sb),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.sample_period = 1,
		.sample_type = sample,
		.sample_id_all = 1,
		.mmap = 1,
		.mmap2 = 1,
		.comm = 1,
		.comm_exec = 1,
		.task = 1,
		.context_switch = 1,
		.disabled = 1,
		.inherit = command,
		.enable_on_exec = command,
	};
	r->sb_attr = sb;
	if (!r->pt) {
		r->main_attr = sb;
		return;
	}
	struct perf_event_attr pt = r->ptev.attr;
	pt.size = sizeof(pt);
	pt.sample_period = 1;
	pt.sample_type = sample;
	pt.sample_id_all = 1;
	pt.disabled = 1;
	pt.inherit = command;
	pt.enable_on_exec = command;
	/* Tracing guests is the point: never exclude them. */
	pt.exclude_guest = 0;
	r->main_attr = pt;
	/* The sideband follows the PT event's privilege level, as perf's. */
	r->sb_attr.exclude_kernel = pt.exclude_kernel;
	r->sb_attr.exclude_user = pt.exclude_user;
}

static int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu,
			       int group, unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

static int open_error(struct rec *r, const char *what, pid_t tid, int cpu, int e)
{
	char where[64];
	if (tid > 0)
		snprintf(where, sizeof(where), "thread %d", (int)tid);
	else
		snprintf(where, sizeof(where), "CPU %d", cpu);
	if (e == EACCES || e == EPERM) {
		char p[32] = "?", path[4200];
		snprintf(path, sizeof(path), "%s/sys/kernel/perf_event_paranoid",
			 r->o->procfs_root);
		vmpt_read_small_file(path, p, sizeof(p));
		return rec_fail(r, -VMPT_ERR_PERM, "perf_event_open(%s on %s): %s; "
				"perf_event_paranoid is %s: run as root or lower it "
				"(see 'vmpt doctor')", what, where, strerror(e), p);
	}
	if (e == ESRCH)
		return rec_fail(r, -VMPT_ERR_NOT_FOUND, "perf_event_open(%s on %s): "
				"the thread is gone", what, where);
	if (e == EOPNOTSUPP || e == EINVAL)
		return rec_fail(r, -VMPT_ERR_UNSUPPORTED, "perf_event_open(%s on %s): "
				"%s: the kernel refused this configuration (config "
				"0x%" PRIx64 "); see 'vmpt doctor'", what, where,
				strerror(e), (uint64_t)r->main_attr.config);
	return rec_fail(r, -VMPT_ERR_IO, "perf_event_open(%s on %s): %s", what,
			where, strerror(e));
}

static int map_open(struct rec *r, struct rec_map *m)
{
	m->sb_fd = -1;
	m->fd = sys_perf_event_open(&r->main_attr, m->tid, m->cpu, -1,
				    PERF_FLAG_FD_CLOEXEC);
	if (m->fd < 0)
		return open_error(r, r->pt ? r->o->event : "dummy", m->tid, m->cpu, errno);
	if (ioctl(m->fd, PERF_EVENT_IOC_ID, &m->id))
		return rec_fail(r, -VMPT_ERR_IO, "PERF_EVENT_IOC_ID: %s", strerror(errno));
	if (r->pt && r->filter[0] && ioctl(m->fd, PERF_EVENT_IOC_SET_FILTER, r->filter))
		return rec_fail(r, -VMPT_ERR_INVAL, "address filter '%s': the kernel "
				"refused it: %s (a file must be mapped by the target "
				"and the range inside it)", r->filter, strerror(errno));

	unsigned data_pages = r->o->data_pages;
	m->len = (1 + data_pages) * r->page;
	m->base = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
	if (m->base == MAP_FAILED) {
		m->base = NULL;
		return rec_fail(r, -VMPT_ERR_NOMEM, "mmap of %u data pages: %s (the "
				"locked-memory limit: ulimit -l, "
				"/proc/sys/kernel/perf_event_mlock_kb; try a smaller -m)",
				data_pages, strerror(errno));
	}
	m->ring.pc = m->base;
	m->ring.base = (uint8_t *)m->base + r->page;
	m->ring.size = data_pages * r->page;

	if (r->pt) {
		struct perf_event_mmap_page *pc = m->base;
		m->aux_len = r->o->aux_pages * r->page;
		pc->aux_offset = m->len;
		pc->aux_size = m->aux_len;
		/* Read-only AUX means overwrite (snapshot) mode to the kernel. */
		int prot = r->o->snapshot ? PROT_READ : PROT_READ | PROT_WRITE;
		m->aux_base = mmap(NULL, m->aux_len, prot, MAP_SHARED, m->fd,
				   (off_t)m->len);
		if (m->aux_base == MAP_FAILED) {
			m->aux_base = NULL;
			return rec_fail(r, -VMPT_ERR_NOMEM, "mmap of %u AUX pages: %s "
					"(the locked-memory limit: ulimit -l, "
					"/proc/sys/kernel/perf_event_mlock_kb; try a "
					"smaller -m ,AUXPAGES)", r->o->aux_pages,
					strerror(errno));
		}
		m->aux.pc = pc;
		m->aux.base = m->aux_base;
		m->aux.size = m->aux_len;

		m->sb_fd = sys_perf_event_open(&r->sb_attr, m->tid, m->cpu, -1,
					       PERF_FLAG_FD_CLOEXEC);
		if (m->sb_fd < 0)
			return open_error(r, "dummy sideband", m->tid, m->cpu, errno);
		if (ioctl(m->sb_fd, PERF_EVENT_IOC_ID, &m->sb_id) ||
		    ioctl(m->sb_fd, PERF_EVENT_IOC_SET_OUTPUT, m->fd))
			return rec_fail(r, -VMPT_ERR_IO, "sideband event setup: %s",
					strerror(errno));
	}
	return 0;
}

static void map_close(struct rec_map *m)
{
	if (m->aux_base)
		munmap(m->aux_base, m->aux_len);
	if (m->base)
		munmap(m->base, m->len);
	if (m->sb_fd >= 0)
		close(m->sb_fd);
	if (m->fd >= 0)
		close(m->fd);
	free(m->ring.bounce);
}

static void note_write_error(struct rec *r)
{
	if (!r->st->write_error) {
		r->st->write_error = errno ? errno : EIO;
		logf_(r, "vmpt record: writing %s: %s; stopping\n", r->o->output,
		      strerror(r->st->write_error));
	}
}

static int write_record(struct rec *r, const void *rec)
{
	if (r->st->write_error) {
		r->st->dropped_records++;
		return 0;
	}
	errno = 0;
	if (vmpt_perf_write_event(r->w, rec)) {
		note_write_error(r);
		r->st->dropped_records++;
		return 0;
	}
	r->st->records++;
	r->wrote_round = 1;
	return 0;
}

static int on_record(void *ctx, const struct perf_event_header *h)
{
	struct rec *r = ctx;
	const uint64_t *u = (const uint64_t *)(h + 1);
	struct vmpt_aux_counts before = r->counts;
	uint64_t flags = vmpt_aux_count_record(&r->counts, h);
	if ((flags & PERF_AUX_FLAG_TRUNCATED) && !before.truncated)
		logf_(r, "vmpt record: AUX data truncated at offset 0x%" PRIx64 ": the "
		      "AUX area filled up before it was read (use a bigger "
		      "-m ,AUXPAGES or snapshot mode)\n", u[0]);
	if ((flags & PERF_AUX_FLAG_PARTIAL) && !before.partial)
		logf_(r, "vmpt record: partial AUX record at offset 0x%" PRIx64
		      " (the hardware stopped mid-buffer)\n", u[0]);
	if (r->counts.lost_records > before.lost_records && !before.lost_records)
		logf_(r, "vmpt record: the kernel lost %" PRIu64 " sideband records (the "
		      "data ring was full: use a bigger -m PAGES)\n", u[1]);
	r->st->aux_records = r->counts.aux_records;
	r->st->aux_truncated = r->counts.truncated;
	r->st->aux_partial = r->counts.partial;
	r->st->aux_collision = r->counts.collision;
	r->st->lost_records = r->counts.lost_records;
	r->st->lost_events = r->counts.lost_events;
	return write_record(r, h);
}

struct aux_ctx {
	struct rec *r;
	struct rec_map *m;
	size_t idx;
};

static int on_aux(void *ctx, uint64_t offset, const void *a, size_t alen,
		  const void *b, size_t blen)
{
	struct aux_ctx *c = ctx;
	struct rec *r = c->r;
	size_t len = alen + blen;
	if (r->st->write_error) {
		r->st->dropped_aux_bytes += len;
		return 0;
	}
	const void *data = a;
	if (blen) {
		if (len > r->auxbuf_len) {
			uint8_t *nb = realloc(r->auxbuf, len);
			if (!nb)
				return -1;
			r->auxbuf = nb;
			r->auxbuf_len = len;
		}
		memcpy(r->auxbuf, a, alen);
		memcpy(r->auxbuf + alen, b, blen);
		data = r->auxbuf;
	}
	errno = 0;
	if (vmpt_perf_write_auxtrace(r->w, data, len, offset, __rdtsc(), (uint32_t)c->idx,
				     (uint32_t)c->m->tid, (uint32_t)c->m->cpu)) {
		note_write_error(r);
		r->st->dropped_aux_bytes += len;
		return 0;
	}
	r->st->aux_bytes += len;
	r->wrote_round = 1;
	return 0;
}

static int drain(struct rec *r)
{
	for (size_t i = 0; i < r->nr_maps; i++) {
		struct rec_map *m = &r->maps[i];
		int64_t n = vmpt_data_ring_read(&m->ring, on_record, r);
		if (n < 0 && n != -VMPT_ERR_IO)
			return rec_fail(r, (int)n, "reading the data ring of %s %d: %s",
					m->tid > 0 ? "thread" : "CPU",
					m->tid > 0 ? (int)m->tid : m->cpu, vmpt_strerror((int)n));
		if (r->pt && !r->o->snapshot) {
			struct aux_ctx c = { r, m, i };
			int64_t a = vmpt_aux_read(&m->aux, on_aux, &c);
			if (a < 0 && a != -VMPT_ERR_IO)
				return rec_fail(r, (int)a, "reading the AUX area: %s",
						vmpt_strerror((int)a));
		}
	}
	if (r->wrote_round && !r->st->write_error) {
		if (vmpt_perf_write_finished_round(r->w))
			note_write_error(r);
		r->wrote_round = 0;
	}
	return 0;
}

static void enable_all(struct rec *r, int on)
{
	unsigned long req = on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE;
	for (size_t i = 0; i < r->nr_maps; i++) {
		if (r->maps[i].hup)
			continue;
		ioctl(r->maps[i].fd, req, 0);
		if (r->maps[i].sb_fd >= 0)
			ioctl(r->maps[i].sb_fd, req, 0);
	}
}

static void take_snapshot(struct rec *r)
{
	if (!r->pt) {
		logf_(r, "vmpt record: snapshot requested, but the %s event has no "
		      "AUX area: nothing to take\n", r->o->event);
		return;
	}
	for (size_t i = 0; i < r->nr_maps; i++)
		if (!r->maps[i].hup)
			ioctl(r->maps[i].fd, PERF_EVENT_IOC_DISABLE, 0);
	for (size_t i = 0; i < r->nr_maps; i++) {
		struct aux_ctx c = { r, &r->maps[i], i };
		vmpt_aux_snapshot(&r->maps[i].aux, on_aux, &c);
	}
	for (size_t i = 0; i < r->nr_maps; i++)
		if (!r->maps[i].hup)
			ioctl(r->maps[i].fd, PERF_EVENT_IOC_ENABLE, 0);
	r->st->snapshots++;
	logf_(r, "vmpt record: snapshot %" PRIu64 " taken\n", r->st->snapshots);
}

static int clock_now(void *ctx, uint64_t *ns)
{
	return vmpt_perf_clock_now(ctx, ns);
}

/* Keep each vCPU's tsc-offset and scaling as it changes, with the time it
 * was first seen: the value holds from then (a change shows at the next
 * read, every 50 ms).
 */
static void poll_tsc(struct rec *r)
{
	if (vmpt_kvm_tsc_series_poll(&r->tsc, r->o->debugfs_root, r->target_pid,
				     clock_now, &r->clock))
		logf_(r, "vmpt record: more than %zu tsc-offset values or %d vCPUs: "
		      "later changes are not kept\n", r->tsc.max, VMPT_KVM_TSC_MAX_VCPUS);
}

/* What became of the tsc-offset, once the recording is over. */
static void save_tsc(struct rec *r)
{
	const struct vmpt_record_opts *o = r->o;
	char path[4200], vm[4200];

	const struct vmpt_kvm_tsc_series *t = &r->tsc;

	if (t->nr > 0) {
		vmpt_record_path(o->output, o->kcore, "kvm-tsc", path, sizeof(path));
		if (vmpt_kvm_tsc_write(path, t->v, t->nr))
			logf_(r, "vmpt record: cannot write %s: %s\n", path, strerror(errno));
		else
			logf_(r, "vmpt record: tsc-offset of %zu vCPUs saved in %s (%zu "
			      "value%s)\n", t->nr_vcpus, path, t->nr, t->nr == 1 ? "" : "s");
	} else if (t->state == -VMPT_ERR_PERM || t->state == -VMPT_ERR_NOT_FOUND) {
		logf_(r, "vmpt record: tsc-offset not saved: %s/kvm %s (mount debugfs: "
		      "mount -t debugfs none /sys/kernel/debug)\n", o->debugfs_root,
		      t->state == -VMPT_ERR_PERM ? "is not readable" : "does not exist");
	} else if (t->state == 1 &&
		   vmpt_kvm_tsc_vm_dir(o->debugfs_root, r->target_pid, vm, sizeof(vm))) {
		logf_(r, "vmpt record: tsc-offset not saved: %s/kvm has no VM of process "
		      "%d: its vCPUs do not run on KVM (QEMU emulating them: -accel tcg)\n",
		      o->debugfs_root, (int)r->target_pid);
	} else if (t->state == 1) {
		logf_(r, "vmpt record: tsc-offset not saved: %s has no vcpuN/tsc-offset "
		      "files\n", vm);
	}
}

/* The vCPU map, kept with the recording. */
static int save_vcpus(struct rec *r)
{
	const struct vmpt_record_opts *o = r->o;
	char path[4200];

	if (!r->vcpus->nr)
		return 0;
	vmpt_record_path(o->output, o->kcore, "vcpus", path, sizeof(path));
	errno = 0;
	if (vmpt_vcpus_write(path, r->vcpus))
		return rec_fail(r, -VMPT_ERR_IO, "writing %s: %s", path,
				strerror(errno ? errno : EIO));
	return 0;
}

/* Sideband records synthesized from /proc, laid out by the sideband
 * attr: the one that carries such records. */
static int write_synth(void *ctx, struct vmpt_perf_event *ev)
{
	struct rec *r = ctx;
	if (r->st->write_error) {
		r->st->dropped_records++;
		return 0;
	}
	ev->sid.id = r->pt ? r->maps[0].sb_id : r->maps[0].id;
	ev->sid.present = r->sb_attr.sample_type;
	errno = 0;
	if (vmpt_perf_write_record(r->w, ev)) {
		note_write_error(r);
		r->st->dropped_records++;
	} else {
		r->st->records++;
	}
	return 0;
}

static int write_header_records(struct rec *r)
{
	size_t n = r->nr_maps;
	uint64_t *ids = calloc(n, sizeof(*ids)), *sb_ids = calloc(n, sizeof(*sb_ids));
	struct vmpt_perf_id_entry *idx = calloc(2 * n, sizeof(*idx));
	int rc = -VMPT_ERR_NOMEM;
	if (!ids || !sb_ids || !idx)
		goto out;
	for (size_t i = 0; i < n; i++) {
		ids[i] = r->maps[i].id;
		sb_ids[i] = r->maps[i].sb_id;
		struct vmpt_perf_id_entry e = {
			.id = r->maps[i].id, .idx = i,
			.cpu = (uint64_t)(int64_t)r->maps[i].cpu,
			.tid = (uint64_t)(int64_t)r->maps[i].tid,
			.machine_pid = -1, .vcpu = -1,
		};
		idx[2 * i] = e;
		e.id = r->maps[i].sb_id;
		idx[2 * i + 1] = e;
	}
	errno = 0;
	rc = vmpt_perf_writer_add_attr(r->w, &r->main_attr, r->pt ? r->o->event : "dummy",
				       ids, n);
	if (!rc && r->pt)
		rc = vmpt_perf_writer_add_attr(r->w, &r->sb_attr,
					       r->sb_attr.exclude_kernel ? "dummy:u" : "dummy",
					       sb_ids, n);
	struct perf_event_mmap_page *pc = r->maps[0].base;
	struct vmpt_perf_time_conv tc = {
		.time_shift = pc->time_shift, .time_mult = pc->time_mult,
		.time_zero = pc->time_zero, .time_cycles = pc->time_cycles,
		.time_mask = pc->time_mask,
		.cap_user_time_zero = (uint8_t)pc->cap_user_time_zero,
		.cap_user_time_short = (uint8_t)pc->cap_user_time_short,
		.extended = 1,
	};
	r->tc = tc;
	if (!rc)
		rc = vmpt_perf_write_time_conv(r->w, &tc);
	if (!rc && r->pt) {
		struct vmpt_perf_intel_pt_info info;
		unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
		uint32_t ctc_n = 0, ctc_d = 0, nonturbo = 0;
		if (__get_cpuid_count(0x15, 0, &eax, &ebx, &ecx, &edx) && eax && ebx) {
			ctc_n = ebx;
			ctc_d = eax;
		}
		char path[4200], buf[32];
		snprintf(path, sizeof(path), "%s/max_nonturbo_ratio", r->pmu.dir);
		if (vmpt_read_small_file(path, buf, sizeof(buf)) > 0)
			nonturbo = (uint32_t)strtoul(buf, NULL, 10);
		int per_cpu = r->maps[0].cpu >= 0;
		vmpt_perf_intel_pt_info_init(&info, r->pmu.type, &tc, ctc_n, ctc_d,
					     nonturbo, per_cpu);
		/* perf: 2 = context_switch per thread, 3 = CPU-wide */
		info.priv[VMPT_INTEL_PT_HAVE_SCHED_SWITCH] = per_cpu ? 3 : 2;
		info.priv[VMPT_INTEL_PT_SNAPSHOT_MODE] = r->o->snapshot != 0;
		info.filter = r->filter[0] ? r->filter : NULL;
		rc = vmpt_perf_write_intel_pt_info(r->w, &info);
		if (!rc)
			rc = vmpt_perf_write_id_index(r->w, idx, 2 * n);
	}
	if (rc == -VMPT_ERR_IO) {
		/* reported with the totals, like any write error */
		note_write_error(r);
		rc = 0;
	}
out:
	free(ids);
	free(sb_ids);
	free(idx);
	return rc;
}

static void handle_fifo(struct rec *r, int *stop)
{
	char buf[256];
	ssize_t n = read(r->fifo, buf, sizeof(buf) - 1);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *save = NULL, *cmd = strtok_r(buf, "\n", &save); cmd;
	     cmd = strtok_r(NULL, "\n", &save)) {
		if (!strcmp(cmd, "snapshot"))
			take_snapshot(r);
		else if (!strcmp(cmd, "stop"))
			*stop = 1;
		else if (!strcmp(cmd, "enable"))
			enable_all(r, 1);
		else if (!strcmp(cmd, "disable"))
			enable_all(r, 0);
		else
			logf_(r, "vmpt record: control: unknown command '%s' (snapshot, "
			      "stop, enable, disable)\n", cmd);
	}
}

static int start_child(struct rec *r, int *go_fd)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC))
		return rec_fail(r, -VMPT_ERR_IO, "pipe: %s", strerror(errno));
	pid_t child = fork();
	if (child < 0)
		return rec_fail(r, -VMPT_ERR_IO, "fork: %s", strerror(errno));
	if (!child) {
		char c;
		close(pfd[1]);
		/* Wait for the events, then exec: enable_on_exec starts them. */
		if (read(pfd[0], &c, 1) != 1)
			_exit(127);
		execvp(r->o->argv[0], r->o->argv);
		fprintf(stderr, "vmpt record: cannot run %s: %s\n", r->o->argv[0],
			strerror(errno));
		_exit(127);
	}
	close(pfd[0]);
	r->child = child;
	r->target_pid = child;
	*go_fd = pfd[1];
	return 0;
}

static int find_targets(struct rec *r)
{
	const struct vmpt_record_opts *o = r->o;
	char err[1024];
	int rc = 0;
	if (o->domain) {
		rc = vmpt_vcpus_from_libvirt(o->uri ? o->uri : "qemu:///system", o->domain,
					     r->vcpus, err, sizeof(err));
	} else if (o->pid > 0) {
		rc = vmpt_vcpus_for_pid(o->procfs_root, o->pid, o->qmp, r->vcpus, err,
					sizeof(err));
	}
	if (rc)
		return rec_fail(r, rc, "%s", err);
	if (o->domain || o->pid > 0) {
		r->target_pid = r->vcpus->pid;
		r->st->nr_vcpus = r->vcpus->nr;
		logf_(r, "vmpt record: %zu vCPU threads of process %d (%s):", r->vcpus->nr,
		      (int)r->vcpus->pid, r->vcpus->source);
		for (size_t i = 0; i < r->vcpus->nr; i++)
			logf_(r, " %d", (int)r->vcpus->vcpu[i].tid);
		logf_(r, "\n");
	}
	return 0;
}

static int build_maps(struct rec *r)
{
	const struct vmpt_record_opts *o = r->o;
	int per_cpu = o->all_cpus || o->cpu_list || r->command;
	if (!per_cpu) {
		r->maps = calloc(r->vcpus->nr, sizeof(*r->maps));
		if (!r->maps)
			return -VMPT_ERR_NOMEM;
		for (size_t i = 0; i < r->vcpus->nr; i++) {
			r->maps[i].fd = r->maps[i].sb_fd = -1;
			r->maps[i].cpu = -1;
			r->maps[i].tid = r->vcpus->vcpu[i].tid;
			r->nr_maps++;
		}
		return 0;
	}
	uint8_t cpus[MAX_CPUS];
	int n = o->cpu_list ? vmpt_parse_cpu_list(o->cpu_list, cpus, MAX_CPUS)
			    : online_cpus(o->sysfs_root, cpus);
	if (n < 0)
		return rec_fail(r, -VMPT_ERR_INVAL, o->cpu_list ? "-C %s: not a CPU list "
				"(e.g. 0-3,6)" : "%s/devices/system/cpu/online: unreadable",
				o->cpu_list ? o->cpu_list : o->sysfs_root);
	r->maps = calloc((size_t)n, sizeof(*r->maps));
	if (!r->maps)
		return -VMPT_ERR_NOMEM;
	for (int c = 0; c < MAX_CPUS; c++) {
		if (!cpus[c])
			continue;
		struct rec_map *m = &r->maps[r->nr_maps++];
		m->fd = m->sb_fd = -1;
		m->cpu = c;
		/* A command is followed onto every CPU; -a/-C is system-wide. */
		m->tid = r->command ? r->child : -1;
	}
	return 0;
}

/* Make the output, keeping a previous recording as .old. */
static int open_output(struct rec *r)
{
	const struct vmpt_record_opts *o = r->o;
	struct vmpt_perf_writer_opts wo = { .dir = o->kcore != 0, .build_ids = 1 };
	int rc;

	if ((rc = vmpt_record_output_backup(o->output, r->err, r->errlen)) ||
	    (rc = vmpt_record_output_create(o->output, o->kcore, r->err, r->errlen)))
		return rc;
	errno = 0;
	if ((rc = vmpt_perf_writer_open(&r->w, o->output, &wo)))
		return rec_fail(r, rc, "%s: %s", o->output, errno ? strerror(errno)
								  : vmpt_strerror(rc));
	r->st->output_created = 1;
	return save_vcpus(r);
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run(struct rec *r)
{
	const struct vmpt_record_opts *o = r->o;
	int go_fd = -1, rc;
	if (o->argv && (rc = start_child(r, &go_fd)))
		return rc;
	if (r->command)
		r->target_pid = r->child;
	if ((rc = find_targets(r)) || (rc = build_maps(r)))
		goto kill_child;
	for (size_t i = 0; i < r->nr_maps; i++)
		if ((rc = map_open(r, &r->maps[i])))
			goto kill_child;
	r->st->nr_events = r->nr_maps * (r->pt ? 2 : 1);
	if ((rc = open_output(r)))
		goto kill_child;
	if (o->kcore) {
		struct vmpt_kcore_stats ks;
		char kerr[1024];
		const char *dir = vmpt_perf_writer_kcore_dir(r->w);
		rc = dir ? vmpt_kcore_copy(o->procfs_root, dir, &ks, kerr, sizeof(kerr))
			 : -VMPT_ERR_INTERNAL;
		if (rc) {
			rc = rec_fail(r, rc, "--kcore: %s", dir ? kerr : "no kcore_dir");
			goto kill_child;
		}
		logf_(r, "vmpt record: kcore_dir: %u segments, %" PRIu64 " bytes of "
		      "kernel%s text\n", ks.nr_segments, ks.bytes,
		      ks.modules_end ? " and module" : "");
	}
	if ((rc = write_header_records(r)) || r->st->write_error)
		goto kill_child;
	vmpt_sideband_kernel(o->procfs_root, write_synth, r);
	if (r->target_pid > 0 && !r->command)
		vmpt_sideband_process(o->procfs_root, r->target_pid, write_synth, r);
	/* perf: what was made up from /proc ends here (perf inject
	 * --guest-data starts injecting the guest's records at it). */
	struct perf_event_header init = { .type = VMPT_PERF_RECORD_FINISHED_INIT,
					  .size = sizeof(init) };
	write_record(r, &init);
	if (vmpt_perf_clock_open(&r->clock, &r->tc))
		logf_(r, "vmpt record: perf's clock is not readable here (%s): "
		      "tsc-offset changes are saved without their time\n", strerror(errno));
	poll_tsc(r);

	/* The command starts its events itself (enable_on_exec); a command
	 * that only times the recording starts once they are on. */
	if (!r->command)
		enable_all(r, 1);
	if (o->argv) {
		if (write(go_fd, "g", 1) != 1) {
			rc = rec_fail(r, -VMPT_ERR_IO, "cannot start %s", o->argv[0]);
			goto kill_child;
		}
		close(go_fd);
		go_fd = -1;
	}
	double deadline = o->duration > 0 ? now_sec() + o->duration : 0;

	struct pollfd *pfd = calloc(r->nr_maps + 1, sizeof(*pfd));
	if (!pfd) {
		rc = -VMPT_ERR_NOMEM;
		goto kill_child;
	}
	int stop = 0, child_done = 0;
	while (!stop) {
		size_t np = 0;
		for (size_t i = 0; i < r->nr_maps; i++) {
			pfd[np].fd = r->maps[i].hup ? -1 : r->maps[i].fd;
			pfd[np++].events = POLLIN;
		}
		if (r->fifo >= 0) {
			pfd[np].fd = r->fifo;
			pfd[np++].events = POLLIN;
		}
		poll(pfd, np, 50);
		size_t live = 0;
		for (size_t i = 0; i < r->nr_maps; i++) {
			if (pfd[i].revents & (POLLHUP | POLLERR))
				r->maps[i].hup = 1;
			live += !r->maps[i].hup;
		}
		if (r->fifo >= 0 && (pfd[r->nr_maps].revents & POLLIN))
			handle_fifo(r, &stop);
		if (o->snapshot_request && *o->snapshot_request) {
			*o->snapshot_request = 0;
			take_snapshot(r);
		}
		poll_tsc(r);
		if ((rc = drain(r)))
			break;
		if (o->stop && *o->stop)
			stop = 1;
		if (r->child > 0 &&
		    waitpid(r->child, &r->st->child_status, WNOHANG) == r->child) {
			child_done = 1;
			stop = 1;
		}
		if (!r->command && !live) {
			logf_(r, "vmpt record: all traced threads have exited\n");
			stop = 1;
		}
		if (!r->command && (o->all_cpus || o->cpu_list) && r->target_pid > 0 &&
		    kill(r->target_pid, 0) && errno == ESRCH)
			stop = 1;
		if (deadline && now_sec() >= deadline)
			stop = 1;
		if (r->st->write_error)
			stop = 1;
	}
	free(pfd);
	enable_all(r, 0);
	if (!rc && o->snapshot)
		take_snapshot(r);	/* what the AUX areas hold at the end */
	if (!rc)
		rc = drain(r);
	if (r->child > 0 && !child_done) {
		kill(r->child, SIGTERM);
		waitpid(r->child, NULL, 0);
	}
	r->child = -1;
	save_tsc(r);
	return rc;

kill_child:
	if (go_fd >= 0)
		close(go_fd);
	if (r->child > 0) {
		kill(r->child, SIGKILL);
		waitpid(r->child, NULL, 0);
		r->child = -1;
	}
	return rc;
}

static int prepare_event(struct rec *r)
{
	const struct vmpt_record_opts *o = r->o;
	if (!strcmp(o->event, "dummy") || !strcmp(o->event, "dummy:u"))
		return 0;
	r->pt = 1;
	char perr[1024];
	int rc = vmpt_pmu_open(&r->pmu, o->sysfs_root, "intel_pt", perr, sizeof(perr));
	if (rc == -VMPT_ERR_NOT_FOUND)
		return rec_fail(r, -VMPT_ERR_NO_PT, "no intel_pt PMU (%s/bus/event_source/"
				"devices/intel_pt does not exist): this CPU has no Intel PT, "
				"the kernel lacks CONFIG_PERF_EVENTS_INTEL_PT, or this is a "
				"VM without PT passthrough. Run 'vmpt doctor' for what this "
				"machine has; '--event dummy' records the sideband only.",
				o->sysfs_root);
	if (rc)
		return rec_fail(r, rc, "intel_pt PMU: %s", perr);
	if (vmpt_pt_event_parse(&r->pmu, o->event, &r->ptev))
		return rec_fail(r, -VMPT_ERR_INVAL, "%s", r->ptev.error);
	if (r->ptev.warning[0])
		logf_(r, "%s\n", r->ptev.warning);
	if (o->filter && vmpt_pt_addr_filter(&r->pmu, o->filter, r->filter,
					     sizeof(r->filter), perr, sizeof(perr)) < 0)
		return rec_fail(r, -VMPT_ERR_INVAL, "%s", perr);
	return 0;
}

int vmpt_record(const struct vmpt_record_opts *opts, struct vmpt_record_stats *stats,
		char *err, size_t errlen)
{
	struct vmpt_record_opts o = *opts;
	struct rec r = { .o = &o, .st = stats, .err = err, .errlen = errlen,
			 .fifo = -1, .child = -1 };
	memset(stats, 0, sizeof(*stats));
	stats->child_status = -1;
	err[0] = '\0';
	r.page = (size_t)sysconf(_SC_PAGESIZE);
	if (!o.output)
		o.output = "perf.data";
	if (!o.event)
		o.event = "intel_pt//";
	if (!o.sysfs_root)
		o.sysfs_root = "/sys";
	if (!o.procfs_root)
		o.procfs_root = "/proc";
	if (!o.debugfs_root)
		o.debugfs_root = "/sys/kernel/debug";
	int targets = (o.pid > 0) + (o.domain != NULL);
	if (targets > 1 || (!targets && !o.argv && !o.all_cpus && !o.cpu_list))
		return rec_fail(&r, -VMPT_ERR_INVAL, "give one target: --pid PID, "
				"--domain NAME or -- COMMAND (or -a / -C for CPUs)");
	r.command = o.argv && !targets && !o.all_cpus && !o.cpu_list;
	if (o.duration < 0)
		return rec_fail(&r, -VMPT_ERR_INVAL, "--duration %g: not a time in "
				"seconds", o.duration);
	int root = geteuid() == 0;
	if (!o.data_pages)
		o.data_pages = root ? 64 : 16;
	if (!o.aux_pages)
		o.aux_pages = o.snapshot_size ? 0 : root ? 1024 : 32;
	if (o.snapshot_size) {
		/* perf: the AUX area is the snapshot size, a power of two */
		uint64_t pages = (o.snapshot_size + r.page - 1) / r.page, p2 = 1;
		while (p2 < pages)
			p2 <<= 1;
		o.aux_pages = (unsigned)p2;
	}
	if (o.data_pages & (o.data_pages - 1) || o.aux_pages & (o.aux_pages - 1))
		return rec_fail(&r, -VMPT_ERR_INVAL, "-m: %u,%u pages: both counts must "
				"be powers of two", o.data_pages, o.aux_pages);
	uint64_t avail;
	int rc = vmpt_record_output_check(o.output, o.kcore, &avail, err, errlen);
	if (rc)
		return rc;
	uint64_t one_ring = ((uint64_t)o.data_pages + o.aux_pages) * r.page;
	if (avail < one_ring)
		logf_(&r, "vmpt record: %" PRIu64 " KiB free for %s: the recording stops "
		      "when it is full\n", avail / 1024, o.output);
	struct vmpt_vcpus *vcpus = calloc(1, sizeof(*vcpus));
	if (!vcpus || vmpt_kvm_tsc_series_init(&r.tsc, MAX_TSC_VALUES)) {
		free(vcpus);
		vmpt_kvm_tsc_series_free(&r.tsc);
		return -VMPT_ERR_NOMEM;
	}
	r.vcpus = vcpus;
	r.clock.fd = -1;
	rc = prepare_event(&r);
	if (!rc && o.control_fifo) {
		r.fifo = open(o.control_fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (r.fifo < 0)
			rc = rec_fail(&r, -VMPT_ERR_IO, "control FIFO %s: %s (create it "
				      "with mkfifo)", o.control_fifo, strerror(errno));
	}
	if (!rc) {
		setup_attrs(&r);
		rc = run(&r);
	}
	if (r.w) {
		stats->bytes_written = vmpt_perf_writer_data_size(r.w);
		errno = 0;
		int crc = vmpt_perf_writer_close(r.w);
		if (crc && !stats->write_error)
			stats->write_error = errno ? errno : EIO;
	}
	if (stats->write_error && !rc) {
		uint64_t kept = 0;
		int64_t kept_records = r.w ? vmpt_perf_salvage(o.output, &kept) : -1;
		char what[256];
		if (kept_records >= 0)
			snprintf(what, sizeof(what), "%s keeps the first %" PRId64 " records "
				 "(%" PRIu64 " bytes of data), perf reads them", o.output,
				 kept_records, kept);
		else
			snprintf(what, sizeof(what), "%s could not be repaired: nothing "
				 "in it is usable", o.output);
		rc = rec_fail(&r, -VMPT_ERR_IO, "writing %s: %s; %s. Read: %" PRIu64
			      " records and %" PRIu64 " AUX bytes (%" PRIu64 " bytes); "
			      "dropped after the error: %" PRIu64 " records and %" PRIu64
			      " AUX bytes", o.output, strerror(stats->write_error), what,
			      stats->records + stats->dropped_records,
			      stats->aux_bytes + stats->dropped_aux_bytes,
			      stats->bytes_written, stats->dropped_records,
			      stats->dropped_aux_bytes);
	}
	for (size_t i = 0; i < r.nr_maps; i++)
		map_close(&r.maps[i]);
	free(r.maps);
	free(r.auxbuf);
	free(vcpus);
	vmpt_kvm_tsc_series_free(&r.tsc);
	vmpt_perf_clock_close(&r.clock);
	if (r.fifo >= 0)
		close(r.fifo);
	return rc;
}
