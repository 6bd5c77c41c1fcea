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
#include "vmpt_guest_merge_int.h"
#include "vmpt/error.h"
#include "vmpt/vcpu.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RECORD_TEXT_POKE 20	/* perf_event.h of Linux 5.9+ */
#define KSYMBOL_TYPE_OOL 2	/* PERF_RECORD_KSYMBOL_TYPE_OOL */

int gm_fail(struct merge *m, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->err, m->errlen, fmt, ap);
	va_end(ap);
	return -err;
}

/* The reader's message (it names the file and offset). */
int gm_pd_fail(struct merge *m, const struct vmpt_perf_data *pd, int ret)
{
	snprintf(m->err, m->errlen, "%s", pd->errmsg[0] ? pd->errmsg : vmpt_strerror(ret));
	return ret;
}

static const char *attr_name(const struct vmpt_perf_attr *a)
{
	return a->name && a->name[0] ? a->name : "(unnamed)";
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
		return gm_pd_fail(m, pd, ret);
	if (pd->nr_parts)
		return gm_fail(m, VMPT_ERR_UNSUPPORTED,
			       "%s: the %s recording was made with perf record --threads (data.N files): not supported",
			       path, what);
	if (!pd->nr_attrs)
		return gm_fail(m, VMPT_ERR_FORMAT, "%s: no events (attrs) in the %s recording",
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
			return gm_fail(m, VMPT_ERR_FORMAT,
				       "%s: event %s has no PERF_SAMPLE_IDENTIFIER: record the host with perf record --sample-identifier, so host and guest records can be told apart",
				       m->cfg->host, attr_name(a));
		if (!a->attr.sample_id_all || !(a->attr.sample_type & PERF_SAMPLE_TIME))
			return gm_fail(m, VMPT_ERR_FORMAT,
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
			return gm_fail(m, VMPT_ERR_FORMAT,
				       "%s: event %s has no sample ids, which tell the guest CPU of each record: record the guest with perf record -a --sample-identifier",
				       m->cfg->guest, attr_name(a));
		if (!m->dflt_id && a->nr_ids)
			m->dflt_id = a->ids[0];
	}
	if (!m->dflt_id)
		return gm_fail(m, VMPT_ERR_FORMAT, "%s: the guest recording has no event ids",
			       m->cfg->guest);
	return 0;
}

/* After the ID_INDEX: a per-thread recording is the better thing to say. */
static int check_guest_times(struct merge *m)
{
	for (size_t i = 0; i < m->guest.nr_attrs; i++) {
		const struct vmpt_perf_attr *a = &m->guest.attrs[i];

		if (!a->attr.sample_id_all || !(a->attr.sample_type & PERF_SAMPLE_TIME))
			return gm_fail(m, VMPT_ERR_FORMAT,
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
			return ret == -VMPT_ERR_NOMEM ? gm_fail(m, VMPT_ERR_NOMEM, "out of memory") : ret;
	}
	return ret < 0 ? gm_pd_fail(m, &m->host, ret) : 0;
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
		return m->vcpu_map ? 0 : gm_fail(m, VMPT_ERR_NOMEM, "out of memory");
	}
	if (stat(host, &st) < 0)
		return 0;
	if (asprintf(&path, S_ISDIR(st.st_mode) ? "%s/vcpus" : "%s.vcpus", host) < 0)
		return gm_fail(m, VMPT_ERR_NOMEM, "out of memory");
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		m->vcpu_map = path;
	else
		free(path);
	return 0;
}

static int find_vcpus(struct merge *m)
{
	char other[96] = "";
	int ret = 0;

	if (m->vcpu_map)
		ret = vmpt_guest_vcpus_read_map(&m->vcpus, m->vcpu_map, m->err, m->errlen);
	if (ret || m->vcpus.nr_threads)
		return ret;
	if (m->vcpu_map)
		return gm_fail(m, VMPT_ERR_NOT_FOUND, "%s: no vCPU threads in the vCPU map",
			       m->vcpu_map);
	if (m->vcpus.other_pid)
		snprintf(other, sizeof(other), " (pid %u has threads named so: is it the VM?)",
			 m->vcpus.other_pid);
	return gm_fail(m, VMPT_ERR_NOT_FOUND,
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
			return gm_fail(m, VMPT_ERR_FORMAT,
				       "%s: offset %#llx: ID_INDEX: id %llu counts thread %lld %s, not whole CPUs: the guest was recorded per-thread (perf record -p/-t/--per-thread); record it cpu-wide: perf record -a",
				       m->cfg->guest, (unsigned long long)ev->offset,
				       (unsigned long long)e.id, (long long)e.tid, on);
		}
		if (e.cpu >= VMPT_MAX_VCPUS)
			return gm_fail(m, VMPT_ERR_FORMAT,
				       "%s: offset %#llx: ID_INDEX: id %llu on CPU %llu: more CPUs than a VM has vCPUs",
				       m->cfg->guest, (unsigned long long)ev->offset,
				       (unsigned long long)e.id, (unsigned long long)e.cpu);
		if ((id = find_id(m, e.id))) {
			id->vcpu = (uint32_t)e.cpu;
			continue;
		}
		id = realloc(m->ids, (m->nr_ids + 1) * sizeof(*id));
		if (!id)
			return gm_fail(m, VMPT_ERR_NOMEM, "out of memory");
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
			return gm_fail(m, VMPT_ERR_NOMEM, "out of memory");
		m->recs = r;
		m->cap_recs = cap;
	}
	m->recs[m->nr_recs++] = (struct merge_rec){
		.guest_time = ev->sid.time, .offset = ev->offset, .seq = seq,
		.compressed = ev->compressed, .zpos = ev->zpos,
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
	return ret < 0 ? gm_pd_fail(m, &m->guest, ret) : 0;
}

static int check_clocks(struct merge *m)
{
	const char *why;

	if (!m->guest_tc_offset)
		return gm_fail(m, VMPT_ERR_FORMAT,
			       "%s: no TIME_CONV record: guest perf time cannot be turned into guest TSC (the guest's perf clock is not the TSC, as with kvm-clock): boot the guest with no-kvmclock",
			       m->cfg->guest);
	if ((why = vmpt_guest_clock_unusable(&m->clock.guest)))
		return gm_fail(m, VMPT_ERR_FORMAT,
			       "%s: offset %#llx: TIME_CONV: %s (kvm-clock?): boot the guest with no-kvmclock",
			       m->cfg->guest, (unsigned long long)m->guest_tc_offset, why);
	if (!m->host_tc_offset)
		return gm_fail(m, VMPT_ERR_FORMAT,
			       "%s: no TIME_CONV record: host perf time cannot be related to the TSC (perf record writes one when the kernel's perf clock is the TSC)",
			       m->cfg->host);
	if ((why = vmpt_guest_clock_unusable(&m->clock.host)))
		return gm_fail(m, VMPT_ERR_FORMAT, "%s: offset %#llx: TIME_CONV: %s",
			       m->cfg->host, (unsigned long long)m->host_tc_offset, why);
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	const struct merge_id *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

struct merge_id *gm_lookup_id(struct merge *m, uint64_t id)
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

int gm_no_vcpu(struct merge *m, uint64_t offset, uint32_t cpu)
{
	char found[256];

	list_vcpus(m, found, sizeof(found));
	return gm_fail(m, VMPT_ERR_FORMAT,
		       "%s: offset %#llx: the guest recording has CPU %u, but pid %u has %u vCPU thread%s (%s): a recording of another VM, or of a guest with more CPUs?",
		       m->cfg->guest, (unsigned long long)offset, cpu, m->cfg->machine_pid,
		       m->vcpus.nr_threads, m->vcpus.nr_threads == 1 ? "" : "s", found);
}

int gm_has_vcpu(const struct merge *m, uint32_t cpu)
{
	return cpu < m->vcpus.nr && m->vcpus.v[cpu].tid;
}

/* New ids above the host's, in perf's order (attrs, then their ids), for
 * guest ids on CPUs that have a vCPU thread. */
static int map_ids(struct merge *m)
{
	uint64_t next = 1;

	if (!m->guest_id_index_offset)
		return gm_fail(m, VMPT_ERR_FORMAT,
			       "%s: no ID_INDEX record: the guest CPU of each event id is unknown; record the guest cpu-wide with perf record -a",
			       m->cfg->guest);
	if (m->clock.nr_tsc > 1 && m->clock.nr_tsc < m->vcpus.nr)
		return gm_fail(m, VMPT_ERR_INVAL, "%zu TSC offsets given for %u vCPUs",
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
				return gm_fail(m, VMPT_ERR_FORMAT,
					       "%s: offset %#llx: ID_INDEX: no entry for id %llu of event %s: its guest CPU is unknown",
					       m->cfg->guest,
					       (unsigned long long)m->guest_id_index_offset,
					       (unsigned long long)a->ids[j], attr_name(a));
			if (!gm_has_vcpu(m, id->vcpu))
				return gm_no_vcpu(m, m->guest_id_index_offset, id->vcpu);
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
		const struct merge_id *id = gm_lookup_id(m, r->host_id);

		if (!id || !id->host_id)
			return gm_fail(m, VMPT_ERR_FORMAT,
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
		ret = gm_write_output(m);
	if (ret == -VMPT_ERR_NOMEM && !err[0])
		snprintf(err, errlen, "out of memory");
	if (!ret && st->guest_in != st->guest_out)
		ret = gm_fail(m, VMPT_ERR_INTERNAL, "%llu guest records read, %llu written",
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
