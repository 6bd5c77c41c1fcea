/* SPDX-License-Identifier: MIT */
/* What a user can get wrong recording a guest for vmpt script, each said
 * in one line naming the file (and offset) and the fix, in the guest
 * merge's words (docs/guest-merge.md): a guest clock that is not the TSC
 * (kvm-clock), a guest recorded per-thread, no vCPU threads (QEMU without
 * debug-threads), a guest recording of another VM.
 */
#include "vmpt_guest_tasks_int.h"
#include "vmpt/error.h"
#include "vmpt/guest_merge.h"
#include "vmpt/vcpu.h"

#include <stdio.h>

static const char *attr_name(const struct vmpt_perf_attr *a)
{
	return a->name && a->name[0] ? a->name : "(unnamed)";
}

static const char per_thread_fix[] =
	"the guest was recorded per-thread (perf record -p/-t/--per-thread); record it cpu-wide: perf record -a";

int gt_check_attrs(struct vmpt_guest_tasks *gt)
{
	const char *path = gt->cfg->guest;

	if (!gt->guest.nr_attrs)
		return gt_fail(gt, VMPT_ERR_FORMAT, "%s: no events (attrs) in the guest recording",
			       path);
	for (size_t i = 0; i < gt->guest.nr_attrs; i++) {
		const struct vmpt_perf_attr *a = &gt->guest.attrs[i];

		if (!a->attr.sample_id_all || !(a->attr.sample_type & PERF_SAMPLE_TIME))
			return gt_fail(gt, VMPT_ERR_FORMAT,
				       "%s: event %s gives its records no time (sample_id_all, PERF_SAMPLE_TIME)",
				       path, attr_name(a));
		if (!(a->attr.sample_type &
		      (PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ID)))
			return gt_fail(gt, VMPT_ERR_FORMAT,
				       "%s: event %s gives its records neither a CPU nor an id, which tell the vCPU of each: record the guest with perf record -a --sample-identifier",
				       path, attr_name(a));
	}
	return 0;
}

int gt_check_id_index(struct vmpt_guest_tasks *gt, const struct vmpt_perf_event *ev)
{
	if (!gt->id_index_offset)
		gt->id_index_offset = ev->offset;
	for (uint64_t i = 0; i < ev->id_index.nr; i++) {
		struct vmpt_perf_id_entry e;
		char on[32] = "on any CPU";

		vmpt_perf_id_index_entry(ev, i, &e);
		if ((int64_t)e.cpu >= 0 && (int64_t)e.tid < 0) {
			if (e.cpu >= VMPT_MAX_VCPUS)
				return gt_fail(gt, VMPT_ERR_FORMAT,
					       "%s: offset %#llx: ID_INDEX: id %llu on CPU %llu: more CPUs than a VM has vCPUs",
					       gt->cfg->guest, (unsigned long long)ev->offset,
					       (unsigned long long)e.id, (unsigned long long)e.cpu);
			continue;
		}
		if ((int64_t)e.cpu >= 0)
			snprintf(on, sizeof(on), "on CPU %lld", (long long)e.cpu);
		return gt_fail(gt, VMPT_ERR_FORMAT,
			       "%s: offset %#llx: ID_INDEX: id %llu counts thread %lld %s, not whole CPUs: %s",
			       gt->cfg->guest, (unsigned long long)ev->offset,
			       (unsigned long long)e.id, (long long)e.tid, on, per_thread_fix);
	}
	return 0;
}

int gt_check_records(struct vmpt_guest_tasks *gt)
{
	const char *path = gt->cfg->guest, *why;

	if (!gt->guest_tc_offset)
		return gt_fail(gt, VMPT_ERR_FORMAT,
			       "%s: no TIME_CONV record: guest perf time cannot be turned into guest TSC (the guest's perf clock is not the TSC, as with kvm-clock): boot the guest with no-kvmclock",
			       path);
	if ((why = vmpt_guest_clock_unusable(&gt->guest_tc)))
		return gt_fail(gt, VMPT_ERR_FORMAT,
			       "%s: offset %#llx: TIME_CONV: %s (kvm-clock?): boot the guest with no-kvmclock",
			       path, (unsigned long long)gt->guest_tc_offset, why);
	if (!gt->n_switches && gt->per_thread_switch)
		return gt_fail(gt, VMPT_ERR_FORMAT,
			       "%s: offset %#llx: PERF_RECORD_SWITCH: the context switches of single threads, not of whole CPUs: %s",
			       path, (unsigned long long)gt->per_thread_switch, per_thread_fix);
	if (!gt->n_switches)
		return gt_fail(gt, VMPT_ERR_FORMAT,
			       "%s: no context switches: which guest task runs when is unknown; record the guest with perf record -a --switch-events (vmpt guest does)",
			       path);
	if (!gt->guest_cpus)
		return gt_fail(gt, VMPT_ERR_FORMAT,
			       "%s: no record says its CPU (no PERF_SAMPLE_CPU, no ID_INDEX): %s",
			       path, per_thread_fix);
	return 0;
}

int gt_check_vcpus(struct vmpt_guest_tasks *gt)
{
	const struct vmpt_guest_vcpus *vc = &gt->vcpus;
	char found[256] = "";
	size_t used = 0;

	if (!vc->nr_threads)
		return gt_fail(gt, VMPT_ERR_NOT_FOUND,
			       "%s: no vCPU threads found: no COMM record names a thread 'CPU n/KVM' and there is no vCPU map beside it; QEMU names its vCPU threads so when started with -name NAME,debug-threads=on (vmpt record saves the map from QMP or libvirt)",
			       gt->cfg->host_pd->path);
	for (unsigned i = 0; i < vc->nr && used < sizeof(found); i++)
		if (vc->v[i].tid)
			used += (size_t)snprintf(found + used, sizeof(found) - used,
						 "%sCPU %u: tid %u", used ? ", " : "", i,
						 vc->v[i].tid);
	for (unsigned cpu = 0; cpu < gt->guest_cpus; cpu++) {
		int seen = 0;

		for (size_t i = 0; !seen && i < gt->n_switches; i++)
			seen = gt->switches[i].r.cpu == (int)cpu;
		if (!seen || (cpu < vc->nr && vc->v[cpu].tid))
			continue;
		return gt_fail(gt, VMPT_ERR_FORMAT,
			       "%s: offset %#llx: the guest recording has CPU %u, but pid %d has %u vCPU thread%s (%s): a recording of another VM, or of a guest with more CPUs?",
			       gt->cfg->guest, (unsigned long long)gt->cpu_offset, cpu,
			       gt->machine_pid, vc->nr_threads, vc->nr_threads == 1 ? "" : "s",
			       found);
	}
	return 0;
}
