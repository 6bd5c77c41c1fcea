/* SPDX-License-Identifier: MIT */
/* What vmpt record traces: the event (intel_pt with perf's defaults, or
 * the dummy for sideband only), the targets (vCPU threads, CPUs, a
 * command), and per target a perf event with its data ring, AUX area and
 * sideband dummy, as perf record sets them up.
 */
#include "vmpt_record_int.h"
#include "vmpt/error.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_CPUS 1024

int rec_events_prepare(struct rec *r)
{
	const struct vmpt_record_opts *o = r->o;
	char perr[1024];
	int rc;

	if (!strcmp(o->event, "dummy") || !strcmp(o->event, "dummy:u"))
		return 0;
	r->pt = 1;
	rc = vmpt_pmu_open(&r->pmu, o->sysfs_root, "intel_pt", perr, sizeof(perr));
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
		rec_log(r, "%s\n", r->ptev.warning);
	if (o->filter && vmpt_pt_addr_filter(&r->pmu, o->filter, r->filter,
					     sizeof(r->filter), perr, sizeof(perr)) < 0)
		return rec_fail(r, -VMPT_ERR_INVAL, "%s", perr);
	return 0;
}

void rec_events_attrs(struct rec *r)
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
	struct perf_event_attr pt;

	r->sb_attr = sb;
	if (!r->pt) {
		r->main_attr = sb;
		return;
	}
	pt = r->ptev.attr;
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

int rec_events_targets(struct rec *r)
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
		rec_log(r, "vmpt record: %zu vCPU threads of process %d (%s):", r->vcpus->nr,
			(int)r->vcpus->pid, r->vcpus->source);
		for (size_t i = 0; i < r->vcpus->nr; i++)
			rec_log(r, " %d", (int)r->vcpus->vcpu[i].tid);
		rec_log(r, "\n");
	}
	return 0;
}

static int online_cpus(const char *sysfs_root, uint8_t *set)
{
	char path[4200], buf[1024];

	snprintf(path, sizeof(path), "%s/devices/system/cpu/online", sysfs_root);
	if (vmpt_read_small_file(path, buf, sizeof(buf)) < 0)
		return -VMPT_ERR_NOT_FOUND;
	return vmpt_parse_cpu_list(buf, set, MAX_CPUS);
}

int rec_events_build(struct rec *r)
{
	const struct vmpt_record_opts *o = r->o;
	int per_cpu = o->all_cpus || o->cpu_list || r->command;
	uint8_t cpus[MAX_CPUS];
	int n;

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
	n = o->cpu_list ? vmpt_parse_cpu_list(o->cpu_list, cpus, MAX_CPUS)
			: online_cpus(o->sysfs_root, cpus);
	if (n < 0)
		return rec_fail(r, -VMPT_ERR_INVAL, o->cpu_list ? "-C %s: not a CPU list "
				"(e.g. 0-3,6)" : "%s/devices/system/cpu/online: unreadable",
				o->cpu_list ? o->cpu_list : o->sysfs_root);
	r->maps = calloc((size_t)n, sizeof(*r->maps));
	if (!r->maps)
		return -VMPT_ERR_NOMEM;
	for (int c = 0; c < MAX_CPUS; c++) {
		struct rec_map *m;

		if (!cpus[c])
			continue;
		m = &r->maps[r->nr_maps++];
		m->fd = m->sb_fd = -1;
		m->cpu = c;
		/* A command is followed onto every CPU; -a/-C is system-wide. */
		m->tid = r->command ? r->child : -1;
	}
	return 0;
}

static int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu,
			       int group, unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

int rec_open_error(struct rec *r, const char *what, pid_t tid, int cpu, uint64_t config,
		   int e)
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
				strerror(e), config);
	return rec_fail(r, -VMPT_ERR_IO, "perf_event_open(%s on %s): %s", what,
			where, strerror(e));
}

/* The AUX area behind the data ring, and the sideband dummy writing into
 * the intel_pt event's ring.
 */
static int map_open_aux(struct rec *r, struct rec_map *m)
{
	struct perf_event_mmap_page *pc = m->base;
	/* Read-only AUX means overwrite (snapshot) mode to the kernel. */
	int prot = r->o->snapshot ? PROT_READ : PROT_READ | PROT_WRITE;

	m->aux_len = r->o->aux_pages * r->page;
	pc->aux_offset = m->len;
	pc->aux_size = m->aux_len;
	m->aux_base = mmap(NULL, m->aux_len, prot, MAP_SHARED, m->fd, (off_t)m->len);
	if (m->aux_base == MAP_FAILED) {
		m->aux_base = NULL;
		return rec_fail(r, -VMPT_ERR_NOMEM, "mmap of %u AUX pages: %s (the "
				"locked-memory limit: ulimit -l, "
				"/proc/sys/kernel/perf_event_mlock_kb; try a smaller -m "
				",AUXPAGES)", r->o->aux_pages, strerror(errno));
	}
	m->aux.pc = pc;
	m->aux.base = m->aux_base;
	m->aux.size = m->aux_len;
	m->aux.slice = m->aux_len / 8;

	m->sb_fd = sys_perf_event_open(&r->sb_attr, m->tid, m->cpu, -1,
				       PERF_FLAG_FD_CLOEXEC);
	if (m->sb_fd < 0)
		return rec_open_error(r, "dummy sideband", m->tid, m->cpu, r->sb_attr.config,
				      errno);
	if (ioctl(m->sb_fd, PERF_EVENT_IOC_ID, &m->sb_id) ||
	    ioctl(m->sb_fd, PERF_EVENT_IOC_SET_OUTPUT, m->fd))
		return rec_fail(r, -VMPT_ERR_IO, "sideband event setup: %s",
				strerror(errno));
	return 0;
}

static int map_open(struct rec *r, struct rec_map *m)
{
	unsigned data_pages = r->o->data_pages;
	int rc;

	m->sb_fd = -1;
	m->fd = sys_perf_event_open(&r->main_attr, m->tid, m->cpu, -1,
				    PERF_FLAG_FD_CLOEXEC);
	if (m->fd < 0)
		return rec_open_error(r, r->pt ? r->o->event : "dummy", m->tid, m->cpu,
				      r->main_attr.config, errno);
	if (ioctl(m->fd, PERF_EVENT_IOC_ID, &m->id))
		return rec_fail(r, -VMPT_ERR_IO, "PERF_EVENT_IOC_ID: %s", strerror(errno));
	if (r->pt && r->filter[0] && ioctl(m->fd, PERF_EVENT_IOC_SET_FILTER, r->filter))
		return rec_fail(r, -VMPT_ERR_INVAL, "address filter '%s': the kernel "
				"refused it: %s (a file must be mapped by the target "
				"and the range inside it)", r->filter, strerror(errno));

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
	if (r->pt && (rc = map_open_aux(r, m)))
		return rc;
	return rec_tp_open(r, m);
}

int rec_events_open(struct rec *r)
{
	int rc;

	for (size_t i = 0; i < r->nr_maps; i++)
		if ((rc = map_open(r, &r->maps[i])))
			return rc;
	r->st->nr_events = r->nr_maps * ((r->pt ? 2 : 1) + r->nr_tps);
	return 0;
}

void rec_events_enable(struct rec *r, int on)
{
	unsigned long req = on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE;

	for (size_t i = 0; i < r->nr_maps; i++) {
		if (r->maps[i].hup)
			continue;
		ioctl(r->maps[i].fd, req, 0);
		if (r->maps[i].sb_fd >= 0)
			ioctl(r->maps[i].sb_fd, req, 0);
		rec_tp_enable(r, &r->maps[i], req);
	}
}

void rec_events_close(struct rec *r)
{
	for (size_t i = 0; i < r->nr_maps; i++) {
		struct rec_map *m = &r->maps[i];

		rec_tp_close(r, m);
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
	free(r->maps);
	r->maps = NULL;
	r->nr_maps = 0;
}
