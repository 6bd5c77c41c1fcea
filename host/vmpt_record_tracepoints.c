/* SPDX-License-Identifier: MIT */
/* Tracepoints beside the trace (vmpt record -e kvm:kvm_exit): each one
 * opened per target as perf record opens it (a sample of its raw fields at
 * every hit, into the target's data ring), and the tracing data perf
 * keeps of them (the TRACING_DATA feature, vmpt/tracing_data.h) from
 * tracefs: the header files, each event's format, the printk formats and
 * saved command lines.
 */
#include "vmpt_record_int.h"
#include "vmpt/error.h"
#include "vmpt/tracing_data.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* tracefs: where the kernel mounts it, else under debugfs. */
static int find_tracefs(struct rec *r)
{
	const struct vmpt_record_opts *o = r->o;
	char path[4300];

	snprintf(r->tracefs, sizeof(r->tracefs), "%s/kernel/tracing", o->sysfs_root);
	snprintf(path, sizeof(path), "%s/events/header_page", r->tracefs);
	if (access(path, R_OK) == 0)
		return 0;
	snprintf(r->tracefs, sizeof(r->tracefs), "%s/tracing", o->debugfs_root);
	snprintf(path, sizeof(path), "%s/events/header_page", r->tracefs);
	if (access(path, R_OK) == 0)
		return 0;
	return rec_fail(r, -VMPT_ERR_NOT_FOUND, "tracepoints: no tracefs readable at "
			"%s/kernel/tracing or %s/tracing (mount -t tracefs nodev "
			"/sys/kernel/tracing; root may read it)", o->sysfs_root, o->debugfs_root);
}

static int add_tp(struct rec *r, const char *sys, const char *name)
{
	char path[4800], id[32];
	struct rec_tp *t;
	char *end;
	int rc;

	for (size_t i = 0; i < r->nr_tps; i++)
		if (!strcmp(r->tps[i].sys, sys) && !strcmp(r->tps[i].name, name))
			return 0;
	t = realloc(r->tps, (r->nr_tps + 1) * sizeof(*t));
	if (!t)
		return -VMPT_ERR_NOMEM;
	r->tps = t;
	t = &r->tps[r->nr_tps];
	memset(t, 0, sizeof(*t));
	snprintf(path, sizeof(path), "%s/events/%s/%s/id", r->tracefs, sys, name);
	if (vmpt_read_small_file(path, id, sizeof(id)) < 0)
		return rec_fail(r, -VMPT_ERR_IO, "tracepoint %s:%s: %s: %s", sys, name, path,
				strerror(errno));
	t->id = strtoull(id, &end, 10);
	if (end == id || *end)
		return rec_fail(r, -VMPT_ERR_FORMAT, "tracepoint %s:%s: %s holds '%s', no id",
				sys, name, path, id);
	snprintf(path, sizeof(path), "%s/events/%s/%s/format", r->tracefs, sys, name);
	if ((rc = vmpt_file_map(&t->format, path)) < 0)
		return rc == -VMPT_ERR_NOMEM ? rc : rec_fail(r, rc, "tracepoint %s:%s: %s: %s",
							   sys, name, path, strerror(errno));
	t->sys = strdup(sys);
	t->name = strdup(name);
	t->label = malloc(strlen(sys) + strlen(name) + 2);
	if (!t->sys || !t->name || !t->label) {
		vmpt_file_unmap(&t->format);
		free(t->sys);
		free(t->name);
		free(t->label);
		return -VMPT_ERR_NOMEM;
	}
	sprintf(t->label, "%s:%s", sys, name);
	r->nr_tps++;
	return 0;
}

/* The tracepoints SYS:NAME matches (perf's globs: kvm:*). */
static int add_spec(struct rec *r, const char *spec)
{
	char sys_pat[256], path[4500];
	const char *colon = strchr(spec, ':');
	size_t before = r->nr_tps;
	struct dirent *s;
	DIR *events;
	int rc = 0;

	if (!colon || colon == spec || !colon[1] || (size_t)(colon - spec) >= sizeof(sys_pat))
		return rec_fail(r, -VMPT_ERR_INVAL, "tracepoint '%s': not SYSTEM:NAME (as "
				"kvm:kvm_exit)", spec);
	memcpy(sys_pat, spec, (size_t)(colon - spec));
	sys_pat[colon - spec] = 0;
	snprintf(path, sizeof(path), "%s/events", r->tracefs);
	if (!(events = opendir(path)))
		return rec_fail(r, -VMPT_ERR_IO, "%s: %s", path, strerror(errno));
	while (!rc && (s = readdir(events))) {
		struct dirent *e;
		DIR *sys;

		if (s->d_name[0] == '.' || fnmatch(sys_pat, s->d_name, 0))
			continue;
		snprintf(path, sizeof(path), "%s/events/%s", r->tracefs, s->d_name);
		if (!(sys = opendir(path)))
			continue;	/* header_page and the other files */
		while (!rc && (e = readdir(sys))) {
			char id[4800];

			if (e->d_name[0] == '.' || fnmatch(colon + 1, e->d_name, 0))
				continue;
			snprintf(id, sizeof(id), "%s/%s/id", path, e->d_name);
			if (access(id, F_OK) == 0)
				rc = add_tp(r, s->d_name, e->d_name);
		}
		closedir(sys);
	}
	closedir(events);
	if (!rc && r->nr_tps == before)
		rc = rec_fail(r, -VMPT_ERR_NOT_FOUND, "tracepoint '%s': none such in %s/events "
			      "(%s/available_events lists them)", spec, r->tracefs, r->tracefs);
	return rc;
}

int rec_tp_prepare(struct rec *r)
{
	int rc;

	if (!r->o->nr_tracepoints)
		return 0;
	if ((rc = find_tracefs(r)))
		return rc;
	for (size_t i = 0; i < r->o->nr_tracepoints; i++)
		if ((rc = add_spec(r, r->o->tracepoints[i])))
			return rc;
	return 0;
}

void rec_tp_free(struct rec *r)
{
	for (size_t i = 0; i < r->nr_tps; i++) {
		free(r->tps[i].sys);
		free(r->tps[i].name);
		free(r->tps[i].label);
		vmpt_file_unmap(&r->tps[i].format);
	}
	free(r->tps);
	r->tps = NULL;
	r->nr_tps = 0;
}

/* perf record's attr of a tracepoint: a sample of its raw fields at every
 * hit, the sideband's sample fields (IDENTIFIER first: the file's attrs
 * differ) and period.
 */
void rec_tp_attr(const struct rec *r, size_t i, struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_TRACEPOINT;
	a->config = r->tps[i].id;
	a->sample_period = 1;
	a->sample_type = r->sb_attr.sample_type | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW;
	a->sample_id_all = 1;
	a->disabled = 1;
	a->inherit = r->sb_attr.inherit;
	a->enable_on_exec = r->sb_attr.enable_on_exec;
}

int rec_tp_open(struct rec *r, struct rec_map *m)
{
	if (!r->nr_tps)
		return 0;
	m->tp_fd = malloc(r->nr_tps * sizeof(*m->tp_fd));
	m->tp_id = calloc(r->nr_tps, sizeof(*m->tp_id));
	if (!m->tp_fd || !m->tp_id)
		return -VMPT_ERR_NOMEM;
	for (size_t i = 0; i < r->nr_tps; i++)
		m->tp_fd[i] = -1;
	for (size_t i = 0; i < r->nr_tps; i++) {
		struct perf_event_attr a;

		rec_tp_attr(r, i, &a);
		m->tp_fd[i] = (int)syscall(SYS_perf_event_open, &a, m->tid, m->cpu, -1,
					   PERF_FLAG_FD_CLOEXEC);
		if (m->tp_fd[i] < 0)
			return rec_open_error(r, r->tps[i].label, m->tid, m->cpu, a.config,
					      errno);
		if (ioctl(m->tp_fd[i], PERF_EVENT_IOC_ID, &m->tp_id[i]) ||
		    ioctl(m->tp_fd[i], PERF_EVENT_IOC_SET_OUTPUT, m->fd))
			return rec_fail(r, -VMPT_ERR_IO, "tracepoint %s setup: %s",
					r->tps[i].label, strerror(errno));
	}
	return 0;
}

void rec_tp_enable(struct rec *r, struct rec_map *m, unsigned long req)
{
	for (size_t i = 0; m->tp_fd && i < r->nr_tps; i++)
		if (m->tp_fd[i] >= 0)
			ioctl(m->tp_fd[i], req, 0);
}

void rec_tp_close(struct rec *r, struct rec_map *m)
{
	for (size_t i = 0; m->tp_fd && i < r->nr_tps; i++)
		if (m->tp_fd[i] >= 0)
			close(m->tp_fd[i]);
	free(m->tp_fd);
	free(m->tp_id);
	m->tp_fd = NULL;
	m->tp_id = NULL;
}

/* A tracefs file as a part of the tracing data (kept mapped in *keep),
 * none when the kernel does not have it (printk formats).
 */
static int tracefs_part(struct rec *r, const char *name, struct vmpt_tracing_blob *b,
			struct vmpt_file *keep)
{
	char path[4300];
	int rc;

	snprintf(path, sizeof(path), "%s/%s", r->tracefs, name);
	rc = vmpt_file_map(keep, path);
	if (rc == -VMPT_ERR_IO && errno == ENOENT)
		return 0;
	if (rc < 0)
		return rc == -VMPT_ERR_NOMEM ? rc : rec_fail(r, rc, "tracepoints: %s: %s", path,
							   strerror(errno));
	b->data = keep->data;
	b->size = keep->size;
	return 0;
}

int rec_tp_write_tracing_data(struct rec *r)
{
	/* perf 6.1's: no kallsyms (its record_proc_kallsyms writes none). */
	struct vmpt_tracing_data td = {
		.version = "0.6", .big_endian = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__,
		.long_size = sizeof(long), .page_size = (uint32_t)r->page,
	};
	struct vmpt_file part[4] = { { 0 } };
	uint8_t *data = NULL;
	size_t size;
	int rc;

	if (!r->nr_tps)
		return 0;
	td.formats = calloc(r->nr_tps, sizeof(*td.formats));
	if (!td.formats)
		return -VMPT_ERR_NOMEM;
	for (size_t i = 0; i < r->nr_tps; i++)
		td.formats[i] = (struct vmpt_tracing_format){
			r->tps[i].sys, { r->tps[i].format.data, r->tps[i].format.size }
		};
	td.n_formats = r->nr_tps;
	if (!(rc = tracefs_part(r, "events/header_page", &td.header_page, &part[0])) &&
	    !(rc = tracefs_part(r, "events/header_event", &td.header_event, &part[1])) &&
	    !(rc = tracefs_part(r, "printk_formats", &td.printk, &part[2])) &&
	    !(rc = tracefs_part(r, "saved_cmdlines", &td.cmdlines, &part[3])) &&
	    !(rc = vmpt_tracing_data_build(&td, &data, &size)))
		rc = vmpt_perf_writer_copy_feature(r->w, VMPT_PERF_FEAT_TRACING_DATA, data, size);
	for (size_t i = 0; i < 4; i++)
		vmpt_file_unmap(&part[i]);
	free(td.formats);
	free(data);
	return rc;
}
