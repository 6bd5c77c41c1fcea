/* SPDX-License-Identifier: MIT */
/* The guest's sideband merged into the host's recording: see
 * include/vmpt/guest_merge.h and docs/guest-merge.md.
 *
 * What perf 6.1's `perf inject --guest-data` writes (builtin-inject.c,
 * guest_session__*), record for record: the host's records as they are;
 * each guest attr again with exclude_host and PERF_SAMPLE_IDENTIFIER under
 * new ids above the host's; an ID_INDEX giving each new id the vCPU's
 * thread, machine_pid and vcpu; the guest's MMAP, MMAP2, COMM, FORK, EXIT,
 * LOST, context switch, out-of-line KSYMBOL and TEXT_POKE records with a
 * guest cpumode, a host time, the new id and the host CPU the vCPU ran on;
 * the guest's build ids under the guest's machine pid.
 *
 * Placement: the host's records keep their order.  A guest record goes
 * before the first host record in file order whose time is at or after
 * its own (the running maximum of host times passes it): perf sorts
 * records between FINISHED_ROUNDs, and no round can have flushed past a
 * time no earlier record reached, so perf reads the guest record in host
 * time order, ahead of host records of the same time as perf inject puts
 * it.  Records with time 0 (perf record's synthesized ones) go where the
 * host's end: before FINISHED_INIT.
 */
#include "vmpt/guest_merge.h"
#include "vmpt/error.h"
#include "vmpt/vcpu.h"
#include "vmpt_guest_vcpus.h"
#include "vmpt_merge_output.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>

#define RECORD_TEXT_POKE 20	/* perf_event.h of Linux 5.9+ */
#define KSYMBOL_TYPE_OOL 2	/* PERF_RECORD_KSYMBOL_TYPE_OOL */

/* A guest event id and the host id it becomes. */
struct merge_id {
	uint64_t id, host_id;
	uint32_t vcpu;		/* the guest CPU the id was opened on */
};

/* A guest record to merge, found in the first pass. */
struct merge_rec {
	uint64_t host_time, guest_time;
	uint64_t offset;	/* of the record in the guest file */
	uint64_t seq;		/* its place in the guest file */
	uint32_t vcpu;
	uint64_t host_id;
};

struct merge {
	const struct vmpt_guest_merge_config *cfg;
	struct vmpt_guest_merge_stats *st;
	char *err;
	size_t errlen;
	struct vmpt_perf_data host, guest;
	struct vmpt_guest_vcpus vcpus;
	struct vmpt_guest_clock clock;
	uint64_t host_tc_offset, guest_tc_offset;	/* 0: none found */
	int host_has_cpu, host_has_init;
	char *vcpu_map;		/* the map file read, or NULL: thread names */
	uint64_t guest_id_index_offset;			/* 0: no ID_INDEX */
	struct merge_id *ids;
	size_t nr_ids;
	uint64_t dflt_id;	/* what records with id 0 stand for (perf's) */
	struct merge_rec *recs;
	size_t nr_recs, cap_recs, next;
	struct vmpt_perf_writer *w;
	struct vmpt_merge_output out;
	char guest_kcore[32];	/* kcore_dir__PID */
	uint8_t rec[0x10000];
};

static int fail(struct merge *m, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct merge *m, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->err, m->errlen, fmt, ap);
	va_end(ap);
	return -err;
}

/* The reader's message (it names the file and offset). */
static int pd_fail(struct merge *m, const struct vmpt_perf_data *pd, int ret)
{
	snprintf(m->err, m->errlen, "%s", pd->errmsg[0] ? pd->errmsg : vmpt_strerror(ret));
	return ret;
}

static const char *attr_name(const struct vmpt_perf_attr *a)
{
	return a->name && a->name[0] ? a->name : "(unnamed)";
}

static int is_timed(const struct vmpt_perf_event *ev)
{
	return ev->type < 64 && (ev->sid.present & PERF_SAMPLE_TIME) && ev->sid.time;
}

/* The guest record types perf inject merges (guest_session__start). */
static int merged_type(const struct vmpt_perf_event *ev)
{
	switch (ev->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_LOST:
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
	case RECORD_TEXT_POKE:
		return 1;
	case PERF_RECORD_KSYMBOL:
		/* addr, len, ksym_type: BPF programs' code cannot be had */
		return ev->size >= 8 + 14 &&
		       (ev->raw[8 + 12] | ev->raw[8 + 13] << 8) == KSYMBOL_TYPE_OOL;
	default:
		return 0;
	}
}

/* ---- the inputs ---- */

static int open_input(struct merge *m, struct vmpt_perf_data *pd, const char *path,
		      const char *what)
{
	int ret = vmpt_perf_open(pd, path);

	if (ret < 0)
		return pd_fail(m, pd, ret);
	if (pd->nr_parts)
		return fail(m, VMPT_ERR_UNSUPPORTED,
			    "%s: the %s recording was made with perf record --threads (data.N files): not supported",
			    path, what);
	if (!pd->nr_attrs)
		return fail(m, VMPT_ERR_FORMAT, "%s: no events (attrs) in the %s recording",
			    path, what);
	return 0;
}

/* perf tells records apart by the id at the same place in every attr:
 * the guest's attrs get PERF_SAMPLE_IDENTIFIER, so the host's need it. */
static int check_host_attrs(struct merge *m)
{
	for (size_t i = 0; i < m->host.nr_attrs; i++) {
		const struct vmpt_perf_attr *a = &m->host.attrs[i];

		if (!(a->attr.sample_type & PERF_SAMPLE_IDENTIFIER))
			return fail(m, VMPT_ERR_FORMAT,
				    "%s: event %s has no PERF_SAMPLE_IDENTIFIER: record the host with perf record --sample-identifier, so host and guest records can be told apart",
				    m->cfg->host, attr_name(a));
		if (!a->attr.sample_id_all || !(a->attr.sample_type & PERF_SAMPLE_TIME))
			return fail(m, VMPT_ERR_FORMAT,
				    "%s: event %s gives its records no time (sample_id_all, PERF_SAMPLE_TIME)",
				    m->cfg->host, attr_name(a));
		m->host_has_cpu |= !!(a->attr.sample_type & PERF_SAMPLE_CPU);
	}
	return 0;
}

static int check_guest_attrs(struct merge *m)
{
	for (size_t i = 0; i < m->guest.nr_attrs; i++) {
		const struct vmpt_perf_attr *a = &m->guest.attrs[i];

		if (!(a->attr.sample_type & (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ID)))
			return fail(m, VMPT_ERR_FORMAT,
				    "%s: event %s has no sample ids, which tell the guest CPU of each record: record the guest with perf record -a --sample-identifier",
				    m->cfg->guest, attr_name(a));
		if (!m->dflt_id && a->nr_ids)
			m->dflt_id = a->ids[0];
	}
	if (!m->dflt_id)
		return fail(m, VMPT_ERR_FORMAT, "%s: the guest recording has no event ids",
			    m->cfg->guest);
	return 0;
}

/* After the ID_INDEX: a per-thread recording is the better thing to say. */
static int check_guest_times(struct merge *m)
{
	for (size_t i = 0; i < m->guest.nr_attrs; i++) {
		const struct vmpt_perf_attr *a = &m->guest.attrs[i];

		if (!a->attr.sample_id_all || !(a->attr.sample_type & PERF_SAMPLE_TIME))
			return fail(m, VMPT_ERR_FORMAT,
				    "%s: event %s gives its records no time (sample_id_all, PERF_SAMPLE_TIME)",
				    m->cfg->guest, attr_name(a));
	}
	return 0;
}

static int scan_host(struct merge *m)
{
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	uint64_t seq = 0;
	int ret;

	vmpt_perf_cursor_init(&m->host, &cur);
	while ((ret = vmpt_perf_next(&m->host, &cur, &ev)) > 0) {
		seq++;
		if (ev.type == VMPT_PERF_RECORD_TIME_CONV && !m->host_tc_offset) {
			m->clock.host = ev.time_conv;
			m->host_tc_offset = ev.offset;
		} else if (ev.type == VMPT_PERF_RECORD_FINISHED_INIT) {
			m->host_has_init = 1;
		} else if (ev.type == PERF_RECORD_COMM && !m->vcpu_map) {
			ret = vmpt_guest_vcpus_comm(&m->vcpus, &ev, m->cfg->host, m->err,
						    m->errlen);
		} else {
			ret = vmpt_guest_vcpus_switch(&m->vcpus, &ev, seq);
		}
		if (ret < 0)
			return ret == -VMPT_ERR_NOMEM ? fail(m, VMPT_ERR_NOMEM, "out of memory") : ret;
	}
	return ret < 0 ? pd_fail(m, &m->host, ret) : 0;
}

/* The vCPU map to read: the one given, else HOST.vcpus beside a file or
 * HOST/vcpus in a directory when there is one. */
static int vcpu_map_path(struct merge *m)
{
	const char *host = m->cfg->host;
	struct stat st;
	char *path;

	if (m->cfg->vcpu_map) {
		m->vcpu_map = strdup(m->cfg->vcpu_map);
		return m->vcpu_map ? 0 : fail(m, VMPT_ERR_NOMEM, "out of memory");
	}
	if (stat(host, &st) < 0)
		return 0;
	if (asprintf(&path, S_ISDIR(st.st_mode) ? "%s/vcpus" : "%s.vcpus", host) < 0)
		return fail(m, VMPT_ERR_NOMEM, "out of memory");
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		m->vcpu_map = path;
	else
		free(path);
	return 0;
}

static int find_vcpus(struct merge *m)
{
	int ret = 0;

	if (m->vcpu_map)
		ret = vmpt_guest_vcpus_read_map(&m->vcpus, m->vcpu_map, m->err, m->errlen);
	if (ret || m->vcpus.nr_threads)
		return ret;
	if (m->vcpu_map)
		return fail(m, VMPT_ERR_NOT_FOUND, "%s: no vCPU threads in the vCPU map",
			    m->vcpu_map);
	char other[96] = "";

	if (m->vcpus.other_pid)
		snprintf(other, sizeof(other), " (pid %u has threads named so: is it the VM?)",
			 m->vcpus.other_pid);
	return fail(m, VMPT_ERR_NOT_FOUND,
		    "%s: no vCPU threads found for pid %u: no COMM record names a thread of it 'CPU n/KVM'%s; QEMU names its vCPU threads so when started with -name NAME,debug-threads=on",
		    m->cfg->host, m->cfg->machine_pid, other);
}

static struct merge_id *find_id(struct merge *m, uint64_t id)
{
	for (size_t i = 0; i < m->nr_ids; i++)
		if (m->ids[i].id == id)
			return &m->ids[i];
	return NULL;
}

/* ID_INDEX: which guest CPU each id counts on. */
static int guest_id_index(struct merge *m, const struct vmpt_perf_event *ev)
{
	if (!m->guest_id_index_offset)
		m->guest_id_index_offset = ev->offset;
	for (uint64_t i = 0; i < ev->id_index.nr; i++) {
		struct vmpt_perf_id_entry e;
		struct merge_id *id;

		vmpt_perf_id_index_entry(ev, i, &e);
		if (!vmpt_perf_attr_by_id(&m->guest, e.id))
			continue;
		if ((int64_t)e.cpu < 0 || (int64_t)e.tid >= 0) {
			char on[32] = "on any CPU";

			if ((int64_t)e.cpu >= 0)
				snprintf(on, sizeof(on), "on CPU %lld", (long long)e.cpu);
			return fail(m, VMPT_ERR_FORMAT,
				    "%s: offset %#llx: ID_INDEX: id %llu counts thread %lld %s, not whole CPUs: the guest was recorded per-thread (perf record -p/-t/--per-thread); record it cpu-wide: perf record -a",
				    m->cfg->guest, (unsigned long long)ev->offset,
				    (unsigned long long)e.id, (long long)e.tid, on);
		}
		if (e.cpu >= VMPT_MAX_VCPUS)
			return fail(m, VMPT_ERR_FORMAT, "%s: offset %#llx: ID_INDEX: cpu %llu",
				    m->cfg->guest, (unsigned long long)ev->offset,
				    (unsigned long long)e.cpu);
		if ((id = find_id(m, e.id))) {
			id->vcpu = (uint32_t)e.cpu;
			continue;
		}
		id = realloc(m->ids, (m->nr_ids + 1) * sizeof(*id));
		if (!id)
			return fail(m, VMPT_ERR_NOMEM, "out of memory");
		m->ids = id;
		m->ids[m->nr_ids++] = (struct merge_id){ e.id, 0, (uint32_t)e.cpu };
	}
	return 0;
}

static int add_rec(struct merge *m, const struct vmpt_perf_event *ev, uint64_t seq)
{
	if (m->nr_recs == m->cap_recs) {
		size_t cap = m->cap_recs ? 2 * m->cap_recs : 1024;
		struct merge_rec *r = realloc(m->recs, cap * sizeof(*r));

		if (!r)
			return fail(m, VMPT_ERR_NOMEM, "out of memory");
		m->recs = r;
		m->cap_recs = cap;
	}
	m->recs[m->nr_recs++] = (struct merge_rec){
		.guest_time = ev->sid.time, .offset = ev->offset, .seq = seq,
		/* id 0 (perf record's synthesized records) is the first id */
		.host_id = ev->sid.id ? ev->sid.id : m->dflt_id,
	};
	return 0;
}

static int scan_guest(struct merge *m)
{
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	uint64_t seq = 0;
	int ret;

	vmpt_perf_cursor_init(&m->guest, &cur);
	while ((ret = vmpt_perf_next(&m->guest, &cur, &ev)) > 0) {
		seq++;
		if (ev.type == VMPT_PERF_RECORD_TIME_CONV && !m->guest_tc_offset) {
			m->clock.guest = ev.time_conv;
			m->guest_tc_offset = ev.offset;
		} else if (ev.type == VMPT_PERF_RECORD_ID_INDEX) {
			ret = guest_id_index(m, &ev);
		} else if (merged_type(&ev)) {
			ret = add_rec(m, &ev, seq);
			m->st->guest_in++;
		} else if (ev.type < 64) {
			m->st->guest_skipped++;
		}
		if (ret < 0)
			return ret;
	}
	return ret < 0 ? pd_fail(m, &m->guest, ret) : 0;
}

static int check_clocks(struct merge *m)
{
	const char *why;

	if (!m->guest_tc_offset)
		return fail(m, VMPT_ERR_FORMAT,
			    "%s: no TIME_CONV record: guest perf time cannot be turned into guest TSC (the guest's perf clock is not the TSC, as with kvm-clock): boot the guest with no-kvmclock",
			    m->cfg->guest);
	if ((why = vmpt_guest_clock_unusable(&m->clock.guest)))
		return fail(m, VMPT_ERR_FORMAT,
			    "%s: offset %#llx: TIME_CONV: %s (kvm-clock?): boot the guest with no-kvmclock",
			    m->cfg->guest, (unsigned long long)m->guest_tc_offset, why);
	if (!m->host_tc_offset)
		return fail(m, VMPT_ERR_FORMAT,
			    "%s: no TIME_CONV record: host perf time cannot be related to the TSC (perf record writes one when the kernel's perf clock is the TSC)",
			    m->cfg->host);
	if ((why = vmpt_guest_clock_unusable(&m->clock.host)))
		return fail(m, VMPT_ERR_FORMAT, "%s: offset %#llx: TIME_CONV: %s",
			    m->cfg->host, (unsigned long long)m->host_tc_offset, why);
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	const struct merge_id *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static struct merge_id *lookup_id(struct merge *m, uint64_t id)
{
	struct merge_id key = { .id = id };

	return bsearch(&key, m->ids, m->nr_ids, sizeof(*m->ids), cmp_id);
}

static void list_vcpus(const struct merge *m, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < m->vcpus.nr && used < len; i++)
		if (m->vcpus.v[i].tid)
			used += (size_t)snprintf(buf + used, len - used, "%sCPU %u: tid %u",
						 used ? ", " : "", i, m->vcpus.v[i].tid);
}

static int no_vcpu(struct merge *m, uint64_t offset, uint32_t cpu)
{
	char found[256];

	list_vcpus(m, found, sizeof(found));
	return fail(m, VMPT_ERR_FORMAT,
		    "%s: offset %#llx: the guest recording has CPU %u, but pid %u has %u vCPU thread%s (%s): a recording of another VM, or of a guest with more CPUs?",
		    m->cfg->guest, (unsigned long long)offset, cpu, m->cfg->machine_pid,
		    m->vcpus.nr_threads, m->vcpus.nr_threads == 1 ? "" : "s", found);
}

static int has_vcpu(const struct merge *m, uint32_t cpu)
{
	return cpu < m->vcpus.nr && m->vcpus.v[cpu].tid;
}

/* New ids above the host's, in perf's order (attrs, then their ids), for
 * guest ids on CPUs that have a vCPU thread. */
static int map_ids(struct merge *m)
{
	uint64_t next = 1;

	if (!m->guest_id_index_offset)
		return fail(m, VMPT_ERR_FORMAT,
			    "%s: no ID_INDEX record: the guest CPU of each event id is unknown; record the guest cpu-wide with perf record -a",
			    m->cfg->guest);
	if (m->clock.nr_tsc > 1 && m->clock.nr_tsc < m->vcpus.nr)
		return fail(m, VMPT_ERR_INVAL, "%zu TSC offsets given for %u vCPUs",
			    m->clock.nr_tsc, m->vcpus.nr);
	for (size_t i = 0; i < m->host.nr_attrs; i++)
		for (size_t j = 0; j < m->host.attrs[i].nr_ids; j++)
			if (m->host.attrs[i].ids[j] > next)
				next = m->host.attrs[i].ids[j];
	for (size_t i = 0; i < m->guest.nr_attrs; i++) {
		const struct vmpt_perf_attr *a = &m->guest.attrs[i];

		for (size_t j = 0; j < a->nr_ids; j++) {
			struct merge_id *id = find_id(m, a->ids[j]);

			if (!id)
				return fail(m, VMPT_ERR_FORMAT,
					    "%s: offset %#llx: ID_INDEX: no entry for id %llu of event %s: its guest CPU is unknown",
					    m->cfg->guest,
					    (unsigned long long)m->guest_id_index_offset,
					    (unsigned long long)a->ids[j], attr_name(a));
			if (!has_vcpu(m, id->vcpu))
				return no_vcpu(m, m->guest_id_index_offset, id->vcpu);
			id->host_id = ++next;
		}
	}
	qsort(m->ids, m->nr_ids, sizeof(*m->ids), cmp_id);
	return 0;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct merge_rec *x = a, *y = b;

	if (x->host_time != y->host_time)
		return x->host_time < y->host_time ? -1 : 1;
	if (x->guest_time != y->guest_time)
		return x->guest_time < y->guest_time ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Each record's vCPU, host id and host time; then host time order (and
 * guest time order within, as perf's guest session sorts). */
static int place_records(struct merge *m)
{
	for (size_t i = 0; i < m->nr_recs; i++) {
		struct merge_rec *r = &m->recs[i];
		const struct merge_id *id = lookup_id(m, r->host_id);

		if (!id || !id->host_id)
			return fail(m, VMPT_ERR_FORMAT,
				    "%s: offset %#llx: a record of id %llu, which no event of the guest has",
				    m->cfg->guest, (unsigned long long)r->offset,
				    (unsigned long long)r->host_id);
		r->vcpu = id->vcpu;
		r->host_id = id->host_id;
		r->host_time = vmpt_guest_clock_host_time(&m->clock, r->vcpu, r->guest_time);
	}
	qsort(m->recs, m->nr_recs, sizeof(*m->recs), cmp_rec);
	return 0;
}

/* ---- the output ---- */

static int write_fail(struct merge *m, int ret)
{
	if (ret == -VMPT_ERR_IO)
		return fail(m, VMPT_ERR_IO, "%s: %s", m->cfg->output, strerror(errno));
	return fail(m, -ret, "%s: %s", m->cfg->output, vmpt_strerror(ret));
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
			ids[j] = lookup_id(m, a->ids[j])->host_id;
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

		if (vmpt_perf_feature_data(&m->host, keep[i], &data, &size) == 0)
			ret = vmpt_perf_writer_copy_feature(m->w, keep[i], data, size);
	}
	return ret;
}

static int write_guest(struct merge *m, const struct merge_rec *r)
{
	struct vmpt_perf_cursor cur = {
		.pos = r->offset, .end = m->guest.data_offset + m->guest.data_size,
	};
	struct vmpt_perf_sample_id sid;
	struct vmpt_perf_event ev;
	uint16_t misc, body;
	int ret = vmpt_perf_next(&m->guest, &cur, &ev);

	if (ret <= 0)
		return ret < 0 ? pd_fail(m, &m->guest, ret) :
				 fail(m, VMPT_ERR_INTERNAL, "%s: offset %#llx: record gone",
				      m->cfg->guest, (unsigned long long)r->offset);
	body = (uint16_t)(ev.size - vmpt_perf_sample_id_size(&ev.attr->attr));
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
		if (!has_vcpu(m, ev.sid.cpu))
			return no_vcpu(m, ev.offset, ev.sid.cpu);
		sid.cpu = m->host_has_cpu ?
			  vmpt_guest_vcpus_host_cpu(&m->vcpus, ev.sid.cpu, r->host_time) :
			  (uint32_t)-1;
	}
	ret = vmpt_perf_write_event_sid(m->w, m->rec, &sid);
	if (ret < 0)
		return write_fail(m, ret);
	m->st->guest_out++;
	m->st->guest_by_type[ev.type]++;
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
		return fail(m, VMPT_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < m->guest.nr_attrs; i++)
		for (size_t j = 0; j < m->guest.attrs[i].nr_ids; j++) {
			const struct merge_id *id = lookup_id(m, m->guest.attrs[i].ids[j]);

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
		return fail(m, VMPT_ERR_UNSUPPORTED,
			    "%s: offset %#llx: tracepoint data in a pipe-mode recording: not supported",
			    m->cfg->host, (unsigned long long)ev->offset);
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
		return pd_fail(m, &m->host, ret);
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
		if (!strcmp(de->d_name + 9, m->guest_kcore + 9) && m->guest.kcore_dir) {
			ret = fail(m, VMPT_ERR_INVAL,
				   "%s: holds %s already: a guest of pid %u was merged into it before",
				   m->cfg->host, de->d_name, m->cfg->machine_pid);
			break;
		}
		if (!copy)
			continue;
		if (asprintf(&src, "%s/%s", m->cfg->host, de->d_name) < 0) {
			ret = fail(m, VMPT_ERR_NOMEM, "out of memory");
			break;
		}
		ret = vmpt_merge_output_copy_dir(&m->out, src, de->d_name, m->err, m->errlen);
		free(src);
	}
	closedir(d);
	return ret < 0 ? ret : found;
}

static int write_output(struct merge *m)
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
		return fail(m, -ret, "%s: %s", m->out.tmp,
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

int vmpt_guest_merge(const struct vmpt_guest_merge_config *cfg,
		     struct vmpt_guest_merge_stats *st, char *err, size_t errlen)
{
	struct merge *m;
	int ret;

	memset(st, 0, sizeof(*st));
	if (!cfg->machine_pid) {
		snprintf(err, errlen, "the guest's machine pid (QEMU's) must not be 0");
		return -VMPT_ERR_INVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return -VMPT_ERR_NOMEM;
	}
	m->cfg = cfg;
	m->st = st;
	m->err = err;
	m->errlen = errlen;
	m->clock.tsc = cfg->tsc;
	m->clock.nr_tsc = cfg->nr_tsc;
	vmpt_guest_vcpus_init(&m->vcpus, cfg->machine_pid);
	if (!(ret = open_input(m, &m->host, cfg->host, "host")) &&
	    !(ret = open_input(m, &m->guest, cfg->guest, "guest")) &&
	    !(ret = check_host_attrs(m)) && !(ret = check_guest_attrs(m)) &&
	    !(ret = vcpu_map_path(m)) && !(ret = scan_host(m)) &&
	    !(ret = find_vcpus(m)) && !(ret = vmpt_guest_vcpus_sort(&m->vcpus)) &&
	    !(ret = scan_guest(m)) && !(ret = check_guest_times(m)) &&
	    !(ret = check_clocks(m)) && !(ret = map_ids(m)) &&
	    !(ret = place_records(m)))
		ret = write_output(m);
	if (ret == -VMPT_ERR_NOMEM && !err[0])
		snprintf(err, errlen, "out of memory");
	if (!ret && st->guest_in != st->guest_out)
		ret = fail(m, VMPT_ERR_INTERNAL, "%llu guest records read, %llu written",
			   (unsigned long long)st->guest_in, (unsigned long long)st->guest_out);
	st->nr_vcpus = m->vcpus.nr_threads;
	snprintf(st->vcpu_source, sizeof(st->vcpu_source), "%s", m->vcpus.source);
	if (m->w)
		vmpt_perf_writer_close(m->w);
	if (m->out.tmp)
		vmpt_merge_output_abort(&m->out);
	vmpt_guest_vcpus_free(&m->vcpus);
	vmpt_perf_close(&m->host);
	vmpt_perf_close(&m->guest);
	free(m->vcpu_map);
	free(m->ids);
	free(m->recs);
	free(m);
	return ret;
}
