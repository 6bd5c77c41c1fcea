/* SPDX-License-Identifier: MIT */
/* The merged recording, written out of place: the host's records in their
 * order with the guest's placed among them (see vmpt_guest_merge.c), the
 * attrs, machine description, build ids and kcore directories of both.
 */
#include "vmpt_guest_merge_int.h"
#include "vmpt/error.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_timed(const struct vmpt_perf_event *ev)
{
	return ev->type < 64 && (ev->sid.present & PERF_SAMPLE_TIME) && ev->sid.time;
}

static int write_fail(struct merge *m, int ret)
{
	if (ret == -VMPT_ERR_IO)
		return gm_fail(m, VMPT_ERR_IO, "%s: %s", m->cfg->output, strerror(errno));
	return gm_fail(m, -ret, "%s: %s", m->cfg->output, vmpt_strerror(ret));
}

/* "dummy" -> "dummy:G", "cycles:u" -> "cycles:uG", as perf names a guest's
 * events (exclude_host). */
static char *guest_event_name(const struct vmpt_perf_attr *a)
{
	const char *name = a->name && a->name[0] ? a->name : "event";
	const char *colon = strrchr(name, ':');
	char *out;

	if (asprintf(&out, "%s%sG", name, colon && !strchr(colon, '/') ? "" : ":") < 0)
		return NULL;
	return out;
}

static int add_attrs(struct merge *m)
{
	uint64_t *ids = NULL;
	int ret = 0;

	for (size_t i = 0; !ret && i < m->host.nr_attrs; i++) {
		const struct vmpt_perf_attr *a = &m->host.attrs[i];

		ret = vmpt_perf_writer_add_attr(m->w, &a->attr, a->name, a->ids, a->nr_ids);
	}
	for (size_t i = 0; !ret && i < m->guest.nr_attrs; i++) {
		const struct vmpt_perf_attr *a = &m->guest.attrs[i];
		struct perf_event_attr attr = a->attr;
		char *name = guest_event_name(a);

		free(ids);
		ids = malloc((a->nr_ids + 1) * sizeof(*ids));
		if (!name || !ids) {
			free(name);
			ret = -VMPT_ERR_NOMEM;
			break;
		}
		for (size_t j = 0; j < a->nr_ids; j++)
			ids[j] = gm_lookup_id(m, a->ids[j])->host_id;
		attr.sample_type |= PERF_SAMPLE_IDENTIFIER;
		attr.exclude_host = 1;
		attr.exclude_guest = 0;
		ret = vmpt_perf_writer_add_attr(m->w, &attr, name, ids, a->nr_ids);
		free(name);
	}
	free(ids);
	return ret;
}

static int is_kernel_module(const char *name)
{
	static const char *const ext[] = { ".ko", ".ko.gz", ".ko.xz", ".ko.zst" };
	size_t n = strlen(name);

	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++)
		if (n > strlen(ext[i]) && !strcmp(name + n - strlen(ext[i]), ext[i]))
			return 1;
	return 0;
}

/* The host's machine description and build ids, then the guest's build ids
 * under the guest's machine pid (perf's guest_session__add_build_ids); the
 * command line is ours, as perf inject writes its own. */
static int set_env(struct merge *m)
{
	const struct vmpt_perf_env *h = &m->host.env, *g = &m->guest.env;
	struct vmpt_perf_env env = *h;
	int ret;

	env.cmdline = NULL;
	env.nr_cmdline = 0;
	env.nr_build_ids = h->nr_build_ids + g->nr_build_ids;
	env.build_ids = calloc(env.nr_build_ids + 1, sizeof(*env.build_ids));
	if (!env.build_ids)
		return -VMPT_ERR_NOMEM;
	if (h->nr_build_ids)
		memcpy(env.build_ids, h->build_ids, h->nr_build_ids * sizeof(*h->build_ids));
	for (size_t i = 0; i < g->nr_build_ids; i++) {
		struct vmpt_perf_build_id *b = &env.build_ids[h->nr_build_ids + i];
		unsigned mode = g->build_ids[i].misc & PERF_RECORD_MISC_CPUMODE_MASK;
		int kernel = mode == PERF_RECORD_MISC_KERNEL ||
			     mode == PERF_RECORD_MISC_GUEST_KERNEL ||
			     is_kernel_module(g->build_ids[i].filename);

		*b = g->build_ids[i];
		b->pid = (int32_t)m->cfg->machine_pid;
		b->misc = kernel ? PERF_RECORD_MISC_GUEST_KERNEL : PERF_RECORD_MISC_GUEST_USER;
	}
	m->st->guest_build_ids = (unsigned)g->nr_build_ids;
	ret = vmpt_perf_writer_set_env(m->w, &env);
	free(env.build_ids);
	return ret;
}

/* Feature sections that describe the host machine or its events, kept as
 * they are (perf inject's keep_feat, and the event descriptions it
 * rebuilds unchanged for the host's events). */
static int copy_features(struct merge *m)
{
	static const unsigned keep[] = {
		VMPT_PERF_FEAT_TRACING_DATA, VMPT_PERF_FEAT_CPU_TOPOLOGY,
		VMPT_PERF_FEAT_NUMA_TOPOLOGY, VMPT_PERF_FEAT_BRANCH_STACK,
		VMPT_PERF_FEAT_GROUP_DESC, VMPT_PERF_FEAT_STAT, VMPT_PERF_FEAT_CACHE,
		VMPT_PERF_FEAT_MEM_TOPOLOGY, VMPT_PERF_FEAT_CLOCKID,
		VMPT_PERF_FEAT_BPF_PROG_INFO, VMPT_PERF_FEAT_BPF_BTF,
		VMPT_PERF_FEAT_CPU_PMU_CAPS, VMPT_PERF_FEAT_CLOCK_DATA,
		VMPT_PERF_FEAT_HYBRID_TOPOLOGY, VMPT_PERF_FEAT_PMU_CAPS,
	};
	int ret = 0;

	for (size_t i = 0; !ret && i < sizeof(keep) / sizeof(keep[0]); i++) {
		const uint8_t *data;
		uint64_t size;

		/* A pipe's tracing data comes as a record: the file keeps it
		 * as the feature.
		 */
		if ((keep[i] == VMPT_PERF_FEAT_TRACING_DATA ?
		     vmpt_perf_tracing_data(&m->host, &data, &size) :
		     vmpt_perf_feature_data(&m->host, keep[i], &data, &size)) == 0)
			ret = vmpt_perf_writer_copy_feature(m->w, keep[i], data, size);
	}
	return ret;
}

static int write_guest(struct merge *m, const struct merge_rec *r)
{
	struct vmpt_perf_event at = { .offset = r->offset, .compressed = r->compressed,
				      .zpos = r->zpos };
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_sample_id sid;
	struct vmpt_perf_event ev;
	uint16_t misc, body;
	int ret = vmpt_perf_cursor_at(&m->guest, &cur, &at);

	if (ret == 0)
		ret = vmpt_perf_next(&m->guest, &cur, &ev);
	if (ret <= 0)
		return ret < 0 ? gm_pd_fail(m, &m->guest, ret) :
				 gm_fail(m, VMPT_ERR_INTERNAL, "%s: offset %#llx: record gone",
					 m->cfg->guest, (unsigned long long)r->offset);
	body = (uint16_t)(ev.size - vmpt_perf_sample_id_size(&ev.attr->attr));
	if (body % 8)
		return gm_fail(m, VMPT_ERR_FORMAT,
			       "%s: offset %#llx: %s record size %u is not a multiple of 8",
			       m->cfg->guest, (unsigned long long)ev.offset,
			       vmpt_perf_record_name(ev.type), ev.size);
	/* perf inject: user (and hypervisor) mode is guest user, the rest
	 * guest kernel. */
	misc = (uint16_t)(ev.misc & ~PERF_RECORD_MISC_CPUMODE_MASK);
	misc |= (ev.misc & PERF_RECORD_MISC_USER) ? PERF_RECORD_MISC_GUEST_USER :
						    PERF_RECORD_MISC_GUEST_KERNEL;
	memcpy(m->rec, ev.raw, body);
	memcpy(m->rec + 4, &misc, 2);
	memcpy(m->rec + 6, &body, 2);
	sid = ev.sid;
	sid.time = r->host_time;
	sid.id = sid.stream_id = r->host_id;
	if ((ev.sid.present & PERF_SAMPLE_CPU) && ev.sid.cpu != (uint32_t)-1) {
		/* The vCPU the record says it ran on, at the host CPU its
		 * thread ran on then. */
		if (!gm_has_vcpu(m, ev.sid.cpu))
			return gm_no_vcpu(m, ev.offset, ev.sid.cpu);
		sid.cpu = m->host_has_cpu ?
			  vmpt_guest_vcpus_host_cpu(&m->vcpus, ev.sid.cpu, r->host_time) :
			  (uint32_t)-1;
	}
	ret = vmpt_perf_write_event_sid(m->w, m->rec, &sid);
	if (ret < 0)
		return write_fail(m, ret);
	m->st->guest_out++;
	m->st->guest_by_type[ev.type % VMPT_GUEST_MERGE_TYPES]++;
	return 0;
}

/* The guest records up to host time limit. */
static int emit_guest(struct merge *m, uint64_t limit)
{
	int ret = 0;

	while (!ret && m->next < m->nr_recs && m->recs[m->next].host_time <= limit)
		ret = write_guest(m, &m->recs[m->next++]);
	return ret;
}

/* Where the host's synthesized records end: the guest's ids, then its own
 * synthesized records (perf inject's host__finished_init). */
static int init_guest(struct merge *m)
{
	struct vmpt_perf_id_entry *e = calloc(m->nr_ids + 1, sizeof(*e));
	size_t n = 0;
	int ret;

	if (!e)
		return gm_fail(m, VMPT_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < m->guest.nr_attrs; i++)
		for (size_t j = 0; j < m->guest.attrs[i].nr_ids; j++) {
			const struct merge_id *id = gm_lookup_id(m, m->guest.attrs[i].ids[j]);

			e[n++] = (struct vmpt_perf_id_entry){
				.id = id->host_id, .idx = 0, .cpu = (uint64_t)-1,
				.tid = m->vcpus.v[id->vcpu].tid,
				.machine_pid = m->cfg->machine_pid, .vcpu = id->vcpu,
			};
		}
	ret = vmpt_perf_write_id_index(m->w, e, n);
	free(e);
	if (ret < 0)
		return write_fail(m, ret);
	return emit_guest(m, 0);
}

static int is_pipe_header(uint32_t type)
{
	return type == VMPT_PERF_RECORD_HEADER_ATTR ||
	       type == VMPT_PERF_RECORD_HEADER_EVENT_TYPE ||
	       type == VMPT_PERF_RECORD_HEADER_BUILD_ID ||
	       type == VMPT_PERF_RECORD_HEADER_FEATURE;
}

static int copy_host(struct merge *m, const struct vmpt_perf_event *ev)
{
	int ret;

	if (ev->type == VMPT_PERF_RECORD_AUXTRACE)
		ret = vmpt_perf_write_auxtrace(m->w, ev->auxtrace.data, ev->auxtrace.size,
					       ev->auxtrace.offset, ev->auxtrace.reference,
					       ev->auxtrace.idx, ev->auxtrace.tid,
					       ev->auxtrace.cpu);
	else if (ev->type == VMPT_PERF_RECORD_HEADER_TRACING_DATA)
		return 0;	/* the TRACING_DATA feature (copy_features) */
	else
		ret = vmpt_perf_write_event(m->w, ev->raw);
	if (ret < 0)
		return write_fail(m, ret);
	m->st->host_records++;
	return 0;
}

static int write_records(struct merge *m)
{
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	uint64_t max_time = 0;
	int ret, ready = 0;

	vmpt_perf_cursor_init(&m->host, &cur);
	while ((ret = vmpt_perf_next(&m->host, &cur, &ev)) > 0) {
		if (m->host.pipe && is_pipe_header(ev.type))
			continue;
		/* A host without FINISHED_INIT (vmpt record before 0.2) gets
		 * the guest's start before its first timed record. */
		if (!ready && (ev.type == VMPT_PERF_RECORD_FINISHED_INIT ||
			       (!m->host_has_init && (is_timed(&ev) ||
						      ev.type == VMPT_PERF_RECORD_FINISHED_ROUND)))) {
			if ((ret = init_guest(m)) < 0)
				return ret;
			ready = 1;
		}
		if (ready && is_timed(&ev)) {
			if (ev.sid.time > max_time)
				max_time = ev.sid.time;
			if ((ret = emit_guest(m, max_time)) < 0)
				return ret;
		}
		if ((ret = copy_host(m, &ev)) < 0)
			return ret;
	}
	if (ret < 0)
		return gm_pd_fail(m, &m->host, ret);
	if (!ready && (ret = init_guest(m)) < 0)
		return ret;
	return emit_guest(m, UINT64_MAX);
}

/* The host's kcore_dir and kcore_dir__PID of guests merged before. */
static int host_kcore_dirs(struct merge *m, int copy)
{
	struct dirent *de;
	int ret = 0, found = 0;
	DIR *d;

	d = opendir(m->cfg->host);
	if (!d)
		return 0;	/* a file: no kcore dirs */
	while (!ret && (de = readdir(d))) {
		char *src;

		if (strcmp(de->d_name, "kcore_dir") && strncmp(de->d_name, "kcore_dir__", 11))
			continue;
		found = 1;
		if (!strcmp(de->d_name, m->guest_kcore) && m->guest.kcore_dir) {
			ret = gm_fail(m, VMPT_ERR_INVAL,
				      "%s: holds %s already: a guest of pid %u was merged into it before",
				      m->cfg->host, de->d_name, m->cfg->machine_pid);
			break;
		}
		if (!copy)
			continue;
		if (asprintf(&src, "%s/%s", m->cfg->host, de->d_name) < 0) {
			ret = gm_fail(m, VMPT_ERR_NOMEM, "out of memory");
			break;
		}
		ret = vmpt_merge_output_copy_dir(&m->out, src, de->d_name, m->err, m->errlen);
		free(src);
	}
	closedir(d);
	return ret < 0 ? ret : found;
}

int gm_write_output(struct merge *m)
{
	const char *inputs[] = { m->cfg->host, m->cfg->guest, NULL };
	struct vmpt_perf_writer_opts opts = { 0 };
	int ret;

	snprintf(m->guest_kcore, sizeof(m->guest_kcore), "kcore_dir__%u",
		 m->cfg->machine_pid);
	if ((ret = host_kcore_dirs(m, 0)) < 0)
		return ret;
	opts.dir = m->guest.kcore_dir || ret > 0;
	m->st->dir = opts.dir;
	ret = vmpt_merge_output_begin(&m->out, m->cfg->output, opts.dir, inputs, m->err,
				      m->errlen);
	if (ret < 0)
		return ret;
	ret = vmpt_perf_writer_open(&m->w, m->out.tmp, &opts);
	if (ret < 0)
		return gm_fail(m, -ret, "%s: %s", m->cfg->output,
			       ret == -VMPT_ERR_IO ? strerror(errno) : vmpt_strerror(ret));
	if ((ret = add_attrs(m)) < 0 || (ret = set_env(m)) < 0 ||
	    (ret = copy_features(m)) < 0)
		return write_fail(m, ret);
	if ((ret = write_records(m)) < 0)
		return ret;
	ret = vmpt_perf_writer_close(m->w);
	m->w = NULL;
	if (ret < 0)
		return write_fail(m, ret);
	if (opts.dir && (ret = host_kcore_dirs(m, 1)) < 0)
		return ret;
	if (m->guest.kcore_dir) {
		ret = vmpt_merge_output_copy_dir(&m->out, m->guest.kcore_dir, m->guest_kcore,
						 m->err, m->errlen);
		if (ret < 0)
			return ret;
	}
	return vmpt_merge_output_commit(&m->out, m->err, m->errlen);
}

