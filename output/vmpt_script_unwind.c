/* SPDX-License-Identifier: MIT */
/* The user stacks of `perf record --call-graph dwarf` unwound for perf
 * script's callchain lines (vmpt/unwind.h): the sample's registers in
 * DWARF's order, the process's binaries from the image, its other
 * mappings (read as zeros) from the recording.
 */
#include "vmpt_script_int.h"
#include "vmpt/file.h"
#include "vmpt/image.h"
#include "vmpt/unwind.h"

#include <string.h>

/* perf's x86_64 register numbers (asm/perf_regs.h) of DWARF's 0-16. */
static const unsigned perf_reg_of[VMPT_UNWIND_NREGS] = {
	0 /* ax */, 3 /* dx */, 2 /* cx */, 1 /* bx */, 4 /* si */, 5 /* di */,
	6 /* bp */, 7 /* sp */, 16, 17, 18, 19, 20, 21, 22, 23 /* r8-r15 */, 8 /* ip */,
};

static int map_at(void *ctx, uint64_t addr, struct vmpt_unwind_map *m)
{
	struct vmpt_consumer *c = ctx;
	const struct vmpt_section *sec;
	const struct vmpt_file *f;
	struct vmpt_map_ref ref;

	if (script_unmapped_in_mode(c, addr, PERF_RECORD_MISC_USER, &sec) || !sec ||
	    !(f = vmpt_image_section_file(c->o->image, sec))) {
		/* Recorded, not here (a stack, a heap, a missing binary). */
		if (!c->o->map_of ||
		    c->o->map_of(c->o->map_ctx, c->task.pid, c->task.space, addr, &ref) < 0)
			return -1;
		memset(m, 0, sizeof(*m));
		m->start = ref.start;
		m->end = addr + 8;
		m->pgoff = ref.pgoff;
		return 0;
	}
	m->start = sec->vaddr;
	m->end = sec->vaddr + sec->size;
	m->pgoff = sec->file_offset;
	m->path = f->path;
	m->data = f->data;
	m->size = f->size;
	return 0;
}

size_t script_unwind(struct vmpt_consumer *c, const struct vmpt_perf_event *ev, uint64_t *ips,
		     size_t max)
{
	uint64_t mask = ev->attr->attr.sample_regs_user, regs[VMPT_UNWIND_NREGS];

	/* perf unwinds nothing without the stack or the registers. */
	if (!ev->sample.regs_user || !ev->sample.stack_user_size)
		return 0;
	for (unsigned i = 0; i < VMPT_UNWIND_NREGS; i++) {
		unsigned r = perf_reg_of[i];
		const uint8_t *p = ev->sample.regs_user +
				   8 * __builtin_popcountll(mask & ((1ull << r) - 1));

		regs[i] = 0;
		if (mask >> r & 1)
			memcpy(&regs[i], p, 8);
	}
	if (!(mask >> perf_reg_of[VMPT_UNWIND_IP] & 1) || !(mask >> perf_reg_of[VMPT_UNWIND_SP] & 1))
		return 0;
	if (!c->unwinder && !(c->unwinder = vmpt_unwinder_new()))
		return 0;
	return vmpt_unwind(c->unwinder, c->task.pid, regs, ev->sample.stack_user,
			   (size_t)ev->sample.stack_user_size, map_at, c, ips, max);
}
