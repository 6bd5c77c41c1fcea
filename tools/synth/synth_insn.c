/* SPDX-License-Identifier: MIT */
/* What each instruction does to control flow, from libcapstone, decoded
 * once per address: a walk revisits the same code millions of times.
 */
#include "synth.h"

#include <capstone/capstone.h>
#include <stdlib.h>
#include <string.h>

struct synth_insn_cache {
	csh cs;
	cs_insn *scratch;
	struct synth_insn *slots;	/* open addressing, key ip (valid=1) */
	size_t mask, used;
};

struct synth_insn_cache *synth_insn_cache_new(void)
{
	struct synth_insn_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &c->cs) != CS_ERR_OK) {
		free(c);
		return NULL;
	}
	cs_option(c->cs, CS_OPT_DETAIL, CS_OPT_ON);
	c->scratch = cs_malloc(c->cs);
	c->mask = 4095;
	c->slots = calloc(c->mask + 1, sizeof(*c->slots));
	if (!c->scratch || !c->slots) {
		synth_insn_cache_free(c);
		return NULL;
	}
	return c;
}

void synth_insn_cache_free(struct synth_insn_cache *c)
{
	if (!c)
		return;
	if (c->scratch)
		cs_free(c->scratch, 1);
	cs_close(&c->cs);
	free(c->slots);
	free(c);
}

static size_t slot_of(uint64_t ip, size_t mask)
{
	return (size_t)((ip * 0x9e3779b97f4a7c15ull) >> 20) & mask;
}

static int grow(struct synth_insn_cache *c)
{
	size_t nmask = c->mask * 2 + 1;
	struct synth_insn *n = calloc(nmask + 1, sizeof(*n));

	if (!n)
		return -1;
	for (size_t i = 0; i <= c->mask; i++) {
		size_t j;

		if (!c->slots[i].valid)
			continue;
		for (j = slot_of(c->slots[i].ip, nmask); n[j].valid;
		     j = (j + 1) & nmask)
			;
		n[j] = c->slots[i];
	}
	free(c->slots);
	c->slots = n;
	c->mask = nmask;
	return 0;
}

/* Direct branches have one immediate operand: the target (which may be
 * any value, 0 included).
 */
static int direct(const cs_insn *in, uint64_t *target)
{
	const cs_x86 *x = &in->detail->x86;

	if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
		*target = (uint64_t)x->operands[0].imm;
		return 1;
	}
	return 0;
}

/* mov REG64, [rsp]: how a retpoline (the kernel's __x86_indirect_thunk_*)
 * turns its RET into an indirect jump to the register's target.
 */
static int retslot_store(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	return in->id == X86_INS_MOV && x->op_count == 2 &&
	       x->operands[0].type == X86_OP_MEM && x->operands[0].size == 8 &&
	       x->operands[0].mem.base == X86_REG_RSP &&
	       x->operands[0].mem.index == X86_REG_INVALID &&
	       x->operands[0].mem.disp == 0 &&
	       x->operands[0].mem.segment == X86_REG_INVALID &&
	       x->operands[1].type == X86_OP_REG;
}

static void classify(const cs_insn *in, struct synth_insn *out)
{
	uint64_t t = 0;
	int d = direct(in, &t);

	out->kind = retslot_store(in) ? SK_RETSLOT : SK_OTHER;
	switch (in->id) {
	case X86_INS_JMP:
		out->kind = d ? SK_JMP : SK_JMP_IND;
		out->target = t;
		return;
	case X86_INS_CALL:
		out->kind = d ? SK_CALL : SK_CALL_IND;
		out->target = t;
		return;
	case X86_INS_RET:
		out->kind = SK_RET;
		return;
	case X86_INS_SYSCALL:
		out->kind = SK_SYSCALL;
		return;
	case X86_INS_SYSRET:
		out->kind = SK_SYSRET;
		return;
	case X86_INS_IRET:
	case X86_INS_IRETD:
	case X86_INS_IRETQ:
		out->kind = SK_IRET;
		return;
	case X86_INS_VMLAUNCH:
	case X86_INS_VMRESUME:
		out->kind = SK_VMENTRY;
		out->vmlaunch = in->id == X86_INS_VMLAUNCH;
		out->vmx = 1;
		return;
	case X86_INS_VMPTRLD:
		out->kind = SK_VMPTRLD;
		out->vmx = 1;
		return;
	case X86_INS_VMCALL:
		/* exits in a guest, VMfail in VMX root operation */
		out->kind = SK_EXITING;
		out->vmx = 1;
		return;
	case X86_INS_CPUID:
	case X86_INS_HLT:
	case X86_INS_IN:
	case X86_INS_OUT:
	case X86_INS_RDMSR:
	case X86_INS_WRMSR:
		out->kind = SK_EXITING;
		return;
	case X86_INS_LJMP:
	case X86_INS_LCALL:
	case X86_INS_RETF:
	case X86_INS_RETFQ:
	case X86_INS_INT:
	case X86_INS_INT1:
	case X86_INS_INT3:
	case X86_INS_INTO:
	case X86_INS_UD2:
	case X86_INS_UD0:
	case X86_INS_SYSENTER:
	case X86_INS_SYSEXIT:
	case X86_INS_XBEGIN:
	case X86_INS_XABORT:
	case X86_INS_XEND:
	/* AMD SVM (Xen's hypercall page has VMMCALL): #UD on Intel */
	case X86_INS_VMMCALL:
	case X86_INS_VMRUN:
	case X86_INS_VMLOAD:
	case X86_INS_VMSAVE:
	case X86_INS_CLGI:
	case X86_INS_STGI:
	case X86_INS_SKINIT:
	case X86_INS_INVLPGA:
		out->kind = SK_STOP;
		return;
	default:
		break;
	}
	for (unsigned i = 0; i < in->detail->groups_count; i++) {
		if (in->detail->groups[i] == X86_GRP_JUMP) {
			/* Every other jump is conditional: jcc, loop*, j*cxz. */
			out->kind = d ? SK_JCC : SK_STOP;
			out->target = t;
			return;
		}
		if (in->detail->groups[i] == X86_GRP_INT ||
		    in->detail->groups[i] == X86_GRP_IRET ||
		    in->detail->groups[i] == X86_GRP_CALL ||
		    in->detail->groups[i] == X86_GRP_RET) {
			out->kind = SK_STOP;
			return;
		}
	}
}

const struct synth_insn *synth_insn_get(struct synth_insn_cache *c,
					const struct synth_image *img,
					uint64_t ip)
{
	const uint8_t *code;
	size_t avail, i;
	struct synth_insn *s;

	for (i = slot_of(ip, c->mask); c->slots[i].valid; i = (i + 1) & c->mask)
		if (c->slots[i].ip == ip)
			return &c->slots[i];
	code = synth_image_code(img, ip, &avail);
	if (!code)
		return NULL;
	if ((c->used + 1) * 2 > c->mask) {
		if (grow(c))
			return NULL;
		for (i = slot_of(ip, c->mask); c->slots[i].valid;
		     i = (i + 1) & c->mask)
			;
	}
	s = &c->slots[i];
	memset(s, 0, sizeof(*s));
	s->ip = ip;
	s->valid = 1;
	c->used++;
	uint64_t addr = ip;
	const uint8_t *p = code;
	size_t n = avail > 16 ? 16 : avail;
	if (cs_disasm_iter(c->cs, &p, &n, &addr, c->scratch)) {
		s->size = (uint8_t)c->scratch->size;
		classify(c->scratch, s);
	} else {
		s->size = 1;
		s->kind = SK_STOP;
	}
	return s;
}
