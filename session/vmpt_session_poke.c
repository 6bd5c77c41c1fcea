/* SPDX-License-Identifier: MIT */
/* TEXT_POKE records: kernel code the recording saw change (static keys,
 * ftrace, kprobes, BPF trampolines; perf record --kcore asks for them).
 * perf (machine__process_text_poke) writes the new bytes into its copy of
 * the kernel when the record's time comes; here the image is built once,
 * so the pokes from before the trace are applied and later ones counted.
 */
#include "vmpt_session_int.h"
#include "vmpt/error.h"

#include <inttypes.h>
#include <stdlib.h>

int session_pokes_see(struct session_pokes *p, const struct vmpt_perf_event *ev)
{
	uint64_t time = ev->sid.time;

	if (ev->type == PERF_RECORD_TEXT_POKE) {
		struct vmpt_perf_event *a;

		if (p->n == p->cap) {
			size_t cap = p->cap ? p->cap * 2 : 8;

			a = realloc(p->ev, cap * sizeof(*a));
			if (!a)
				return -VMPT_ERR_NOMEM;
			p->ev = a;
			p->cap = cap;
		}
		p->ev[p->n++] = *ev;
		return 0;
	}
	/* Tracing starts with ITRACE_START (its first data: AUX). */
	if ((ev->type == PERF_RECORD_ITRACE_START || ev->type == PERF_RECORD_AUX) &&
	    (ev->sid.present & PERF_SAMPLE_TIME) && (!p->have_start || time < p->start)) {
		p->start = time;
		p->have_start = 1;
	}
	return 0;
}

int session_pokes_apply(struct vmpt_session *s, struct session_pokes *p)
{
	/* Code every host process sees: the kernel's sections, keyed by no
	 * process (a CR3 never has bit 0 set, a pid key has bit 63).
	 */
	struct vmpt_asid kernel = { VMPT_MACHINE_HOST, 1 };
	const struct vmpt_perf_event *late = NULL;
	size_t n_late = 0;
	int ret = 0;

	for (size_t i = 0; i < p->n && ret == 0; i++) {
		const struct vmpt_perf_event *ev = &p->ev[i];
		int timed = ev->sid.present & PERF_SAMPLE_TIME;

		/* perf: nothing to write, or not the host kernel (a guest's,
		 * merged by perf inject, is GUEST_KERNEL): ignored.
		 */
		if (!ev->text_poke.new_len ||
		    (ev->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_KERNEL)
			continue;
		if (timed && p->have_start && ev->sid.time > p->start) {
			if (!n_late++)
				late = ev;
			continue;
		}
		ret = vmpt_image_patch(s->image, &kernel, ev->text_poke.addr,
				       ev->text_poke.new_bytes, ev->text_poke.new_len);
		/* Outside the kernel's code: perf ignores it too. */
		if (ret == -VMPT_ERR_NO_IMAGE)
			ret = 0;
		if (ret < 0)
			snprintf(s->errmsg, sizeof(s->errmsg),
				 "%.400s: offset %#" PRIx64 ": TEXT_POKE at %#" PRIx64 ": %s",
				 s->pd.path, ev->offset, ev->text_poke.addr, vmpt_strerror(ret));
	}
	if (ret == 0 && n_late && s->opts.warn)
		fprintf(s->opts.warn, "vmpt: warning: %zu TEXT_POKE record%s during the trace "
			"not applied (the first at %#" PRIx64 ", time %" PRIu64 ".%09" PRIu64
			"): the kernel code is decoded as it was when tracing started\n",
			n_late, n_late == 1 ? "" : "s", late->text_poke.addr,
			late->sid.time / 1000000000u, late->sid.time % 1000000000u);
	free(p->ev);
	p->ev = NULL;
	p->n = p->cap = 0;
	return ret;
}
