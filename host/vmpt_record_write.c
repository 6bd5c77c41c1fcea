/* SPDX-License-Identifier: MIT */
/* What vmpt record writes: the perf.data's header records (attrs,
 * TIME_CONV, AUXTRACE_INFO, ID_INDEX), the records and AUX data read from
 * the rings, and the companions (REC.vcpus, REC.kvm-tsc).
 *
 * Faults: the first write error (a full disk) stops the recording; what
 * is read after it is counted as dropped, and at the end the file is cut
 * after its last whole record so perf reads everything before the error.
 * Every REC_SYNC_INTERVAL_NS the data is written out and the header's data
 * size set to it (perf reads a file whose data size is 0 as not properly
 * terminated), so a SIGKILL, which nothing can handle, leaves a file perf
 * reads up to the last sync.
 */
#include "vmpt_record_int.h"
#include "vmpt/error.h"
#include "vmpt/sideband.h"

#include <cpuid.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <x86intrin.h>

static void note_write_error(struct rec *r)
{
	if (!r->st->write_error) {
		r->st->write_error = errno ? errno : EIO;
		rec_log(r, "vmpt record: writing %s: %s; stopping\n", r->o->output,
			strerror(r->st->write_error));
	}
}

/* The vCPU map, kept with the recording. */
static int write_vcpus(struct rec *r)
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

/* Make the output, keeping a previous recording as .old. */
int rec_write_open(struct rec *r)
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
	return write_vcpus(r);
}

static int write_intel_pt_info(struct rec *r, const struct vmpt_perf_time_conv *tc)
{
	struct vmpt_perf_intel_pt_info info;
	unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
	uint32_t ctc_n = 0, ctc_d = 0, nonturbo = 0;
	char path[4200], buf[32];
	int per_cpu = r->maps[0].cpu >= 0;

	if (__get_cpuid_count(0x15, 0, &eax, &ebx, &ecx, &edx) && eax && ebx) {
		ctc_n = ebx;
		ctc_d = eax;
	}
	snprintf(path, sizeof(path), "%s/max_nonturbo_ratio", r->pmu.dir);
	if (vmpt_read_small_file(path, buf, sizeof(buf)) > 0)
		nonturbo = (uint32_t)strtoul(buf, NULL, 10);
	vmpt_perf_intel_pt_info_init(&info, r->pmu.type, tc, ctc_n, ctc_d, nonturbo,
				     per_cpu);
	/* perf: 2 = context_switch per thread, 3 = CPU-wide */
	info.priv[VMPT_INTEL_PT_HAVE_SCHED_SWITCH] = per_cpu ? 3 : 2;
	info.priv[VMPT_INTEL_PT_SNAPSHOT_MODE] = r->o->snapshot != 0;
	info.filter = r->filter[0] ? r->filter : NULL;
	return vmpt_perf_write_intel_pt_info(r->w, &info);
}

int rec_write_header(struct rec *r)
{
	size_t n = r->nr_maps, per_map = 2 + r->nr_tps, n_idx = 0;
	uint64_t *ids = calloc(n, sizeof(*ids)), *sb_ids = calloc(n, sizeof(*sb_ids));
	struct vmpt_perf_id_entry *idx = calloc(per_map * n, sizeof(*idx));
	struct perf_event_mmap_page *pc = r->maps[0].base;
	int rc = -VMPT_ERR_NOMEM;

	if (!ids || !sb_ids || !idx)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct vmpt_perf_id_entry e = {
			.id = r->maps[i].id, .idx = i,
			.cpu = (uint64_t)(int64_t)r->maps[i].cpu,
			.tid = (uint64_t)(int64_t)r->maps[i].tid,
			.machine_pid = -1, .vcpu = -1,
		};

		ids[i] = r->maps[i].id;
		sb_ids[i] = r->maps[i].sb_id;
		idx[n_idx++] = e;
		e.id = r->maps[i].sb_id;
		idx[n_idx++] = e;
		for (size_t t = 0; t < r->nr_tps; t++) {
			e.id = r->maps[i].tp_id[t];
			idx[n_idx++] = e;
		}
	}
	errno = 0;
	rc = vmpt_perf_writer_add_attr(r->w, &r->main_attr, r->pt ? r->o->event : "dummy",
				       ids, n);
	if (!rc && r->pt)
		rc = vmpt_perf_writer_add_attr(r->w, &r->sb_attr,
					       r->sb_attr.exclude_kernel ? "dummy:u" : "dummy",
					       sb_ids, n);
	for (size_t t = 0; !rc && t < r->nr_tps; t++) {
		struct perf_event_attr a;

		rec_tp_attr(r, t, &a);
		for (size_t i = 0; i < n; i++)
			ids[i] = r->maps[i].tp_id[t];
		rc = vmpt_perf_writer_add_attr(r->w, &a, r->tps[t].label, ids, n);
	}
	if (!rc)
		rc = rec_tp_write_tracing_data(r);
	r->tc = (struct vmpt_perf_time_conv){
		.time_shift = pc->time_shift, .time_mult = pc->time_mult,
		.time_zero = pc->time_zero, .time_cycles = pc->time_cycles,
		.time_mask = pc->time_mask,
		.cap_user_time_zero = (uint8_t)pc->cap_user_time_zero,
		.cap_user_time_short = (uint8_t)pc->cap_user_time_short,
		.extended = 1,
	};
	if (!rc)
		rc = vmpt_perf_write_time_conv(r->w, &r->tc);
	if (!rc && r->pt)
		rc = write_intel_pt_info(r, &r->tc);
	if (!rc && r->pt)
		rc = vmpt_perf_write_id_index(r->w, idx, n_idx);
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

/* Sideband records synthesized from /proc, laid out by the sideband
 * attr: the one that carries such records. */
int rec_write_synth(void *ctx, struct vmpt_perf_event *ev)
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

void rec_write_event(struct rec *r, const void *record)
{
	if (r->st->write_error) {
		r->st->dropped_records++;
		return;
	}
	errno = 0;
	if (vmpt_perf_write_event(r->w, record)) {
		note_write_error(r);
		r->st->dropped_records++;
		return;
	}
	r->st->records++;
	r->wrote_round = 1;
}

static int on_record(void *ctx, const struct perf_event_header *h)
{
	struct rec *r = ctx;
	const uint64_t *u = (const uint64_t *)(h + 1);
	struct vmpt_aux_counts before = r->counts;
	uint64_t flags = vmpt_aux_count_record(&r->counts, h);

	if ((flags & PERF_AUX_FLAG_TRUNCATED) && !before.truncated)
		rec_log(r, "vmpt record: AUX data truncated at offset 0x%" PRIx64 ": the "
			"AUX area filled up before it was read (use a bigger "
			"-m ,AUXPAGES or snapshot mode)\n", u[0]);
	if ((flags & PERF_AUX_FLAG_PARTIAL) && !before.partial)
		rec_log(r, "vmpt record: partial AUX record at offset 0x%" PRIx64
			" (the hardware stopped mid-buffer)\n", u[0]);
	if (r->counts.lost_records > before.lost_records && !before.lost_records)
		rec_log(r, "vmpt record: the kernel lost %" PRIu64 " sideband records (the "
			"data ring was full: use a bigger -m PAGES)\n", u[1]);
	r->st->aux_records = r->counts.aux_records;
	r->st->aux_truncated = r->counts.truncated;
	r->st->aux_partial = r->counts.partial;
	r->st->aux_collision = r->counts.collision;
	r->st->lost_records = r->counts.lost_records;
	r->st->lost_events = r->counts.lost_events;
	rec_write_event(r, h);
	return 0;
}

struct aux_ctx {
	struct rec *r;
	struct rec_map *m;
	size_t idx;
};

/* An AUX chunk, in two pieces when it wraps around the end of the area. */
static int on_aux(void *ctx, uint64_t offset, const void *a, size_t alen,
		  const void *b, size_t blen)
{
	struct aux_ctx *c = ctx;
	struct rec *r = c->r;
	struct iovec iov[2] = { { (void *)a, alen }, { (void *)b, blen } };
	size_t len = alen + blen;

	if (r->st->write_error) {
		r->st->dropped_aux_bytes += len;
		return 0;
	}
	errno = 0;
	if (vmpt_perf_write_auxtrace_iov(r->w, iov, blen ? 2 : 1, offset, __rdtsc(),
					 (uint32_t)c->idx, (uint32_t)c->m->tid,
					 (uint32_t)c->m->cpu)) {
		note_write_error(r);
		r->st->dropped_aux_bytes += len;
		return 0;
	}
	r->st->aux_bytes += len;
	r->wrote_round = 1;
	return 0;
}

int rec_write_drain(struct rec *r)
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
		errno = 0;
		if (vmpt_perf_write_finished_round(r->w))
			note_write_error(r);
		r->wrote_round = 0;
	}
	return 0;
}

void rec_write_snapshot(struct rec *r)
{
	if (!r->pt) {
		rec_log(r, "vmpt record: snapshot requested, but the %s event has no "
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
	rec_log(r, "vmpt record: snapshot %" PRIu64 " taken\n", r->st->snapshots);
}

/* Between records only: the data size then ends at a whole record. */
void rec_write_sync(struct rec *r, int now)
{
	uint64_t t = rec_now_ns();

	if (r->st->write_error || (!now && t - r->last_sync_ns < REC_SYNC_INTERVAL_NS))
		return;
	r->last_sync_ns = t;
	errno = 0;
	if (vmpt_perf_writer_sync(r->w))
		note_write_error(r);
}

/* What became of the tsc-offset, once the recording is over. */
void rec_write_tsc(struct rec *r)
{
	const struct vmpt_record_opts *o = r->o;
	const struct vmpt_kvm_tsc_series *t = &r->tsc;
	char path[4200], vm[4200];

	if (t->nr > 0) {
		vmpt_record_path(o->output, o->kcore, "kvm-tsc", path, sizeof(path));
		if (vmpt_kvm_tsc_write(path, t->v, t->nr))
			rec_log(r, "vmpt record: cannot write %s: %s\n", path, strerror(errno));
		else
			rec_log(r, "vmpt record: tsc-offset of %zu vCPUs saved in %s (%zu "
				"value%s)\n", t->nr_vcpus, path, t->nr, t->nr == 1 ? "" : "s");
	} else if (t->state == -VMPT_ERR_PERM || t->state == -VMPT_ERR_NOT_FOUND) {
		rec_log(r, "vmpt record: tsc-offset not saved: %s/kvm %s (mount debugfs: "
			"mount -t debugfs none /sys/kernel/debug)\n", o->debugfs_root,
			t->state == -VMPT_ERR_PERM ? "is not readable" : "does not exist");
	} else if (t->state == 1 &&
		   vmpt_kvm_tsc_vm_dir(o->debugfs_root, r->target_pid, vm, sizeof(vm))) {
		rec_log(r, "vmpt record: tsc-offset not saved: %s/kvm has no VM of process "
			"%d: its vCPUs do not run on KVM (QEMU emulating them: -accel tcg)\n",
			o->debugfs_root, (int)r->target_pid);
	} else if (t->state == 1) {
		rec_log(r, "vmpt record: tsc-offset not saved: %s has no vcpuN/tsc-offset "
			"files\n", vm);
	}
}

/* After a write error: cut the file after its last whole record and say
 * what it keeps and what was lost.
 */
static int write_error(struct rec *r, uint64_t handed_records, uint64_t handed_bytes)
{
	const struct vmpt_record_opts *o = r->o;
	const struct vmpt_record_stats *st = r->st;
	uint64_t kept = 0;
	int64_t kept_records = vmpt_perf_salvage(o->output, &kept);
	char what[512];

	if (kept_records >= 0)
		snprintf(what, sizeof(what), "%s keeps the first %" PRId64 " records (%"
			 PRIu64 " bytes of data), perf reads them; lost: the %" PRIu64
			 " records (%" PRIu64 " bytes) after them, which did not fit",
			 o->output, kept_records, kept,
			 handed_records - (uint64_t)kept_records, handed_bytes - kept);
	else
		snprintf(what, sizeof(what), "%s could not be repaired: nothing in it "
			 "is usable; lost: all %" PRIu64 " records (%" PRIu64 " bytes)",
			 o->output, handed_records, handed_bytes);
	return rec_fail(r, -VMPT_ERR_IO, "writing %s: %s; %s, and %" PRIu64 " records "
			"and %" PRIu64 " AUX bytes read after the error", o->output,
			strerror(st->write_error), what, st->dropped_records,
			st->dropped_aux_bytes);
}

int rec_write_close(struct rec *r, int rc)
{
	uint64_t records, bytes;
	int crc;

	if (!r->w)
		return rc;
	records = vmpt_perf_writer_records(r->w);
	bytes = vmpt_perf_writer_data_size(r->w);
	r->st->bytes_written = bytes;
	errno = 0;
	crc = vmpt_perf_writer_close(r->w);
	r->w = NULL;
	if (crc && !r->st->write_error)
		r->st->write_error = errno ? errno : EIO;
	if (r->st->write_error && !rc)
		rc = write_error(r, records, bytes);
	return rc;
}
