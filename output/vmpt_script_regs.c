/* SPDX-License-Identifier: MIT */
/* A recorded sample's registers as perf script 6.1 prints -F iregs
 * (perf record -I) and uregs (--user-regs, --call-graph dwarf): " ABI:N "
 * then "%5s:0x%lx " for each bit of the attr's mask, by x86's names
 * (perf's __perf_reg_name_x86); nothing when the sample has none (ABI 0).
 */
#include "vmpt_script_int.h"

#include <asm/perf_regs.h>
#include <inttypes.h>

static const char *reg_name(unsigned r)
{
	static const char *const names[PERF_REG_X86_64_MAX] = {
		"AX", "BX", "CX", "DX", "SI", "DI", "BP", "SP", "IP", "FLAGS", "CS", "SS",
		"DS", "ES", "FS", "GS", "R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15",
	};
	static const char *const xmm[16] = {
		"XMM0", "XMM1", "XMM2", "XMM3", "XMM4", "XMM5", "XMM6", "XMM7",
		"XMM8", "XMM9", "XMM10", "XMM11", "XMM12", "XMM13", "XMM14", "XMM15",
	};

	if (r < PERF_REG_X86_64_MAX)
		return names[r];
	/* Each XMM register is two bits of the mask, both named by it. */
	if (r >= PERF_REG_X86_XMM0 && r < PERF_REG_X86_XMM_MAX)
		return xmm[(r - PERF_REG_X86_XMM0) / 2];
	return "unknown";
}

static void print_regs(struct vmpt_consumer *c, uint64_t abi, const uint8_t *regs,
		       uint64_t mask)
{
	unsigned i = 0;

	if (!regs)
		return;
	script_outf(c, " ABI:%" PRIu64 " ", abi);
	for (unsigned r = 0; r < 64; r++) {
		uint64_t v;

		if (!(mask >> r & 1))
			continue;
		memcpy(&v, regs + 8 * i++, sizeof(v));
		script_outf(c, "%5s:0x%" PRIx64 " ", reg_name(r), v);
	}
}

void script_print_regs(struct vmpt_consumer *c, uint64_t f, const struct vmpt_perf_event *ev)
{
	if (!ev)
		return;		/* perf's Intel PT samples have no registers */
	if (f & VMPT_F_IREGS)
		print_regs(c, ev->sample.regs_intr_abi, ev->sample.regs_intr,
			   ev->attr->attr.sample_regs_intr);
	if (f & VMPT_F_UREGS)
		print_regs(c, ev->sample.regs_user_abi, ev->sample.regs_user,
			   ev->attr->attr.sample_regs_user);
}
