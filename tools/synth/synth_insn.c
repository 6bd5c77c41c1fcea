/* SPDX-License-Identifier: MIT */
/* What each instruction does to control flow, from Zydis, decoded once per
 * address: a walk revisits the same code millions of times.  The
 * synthesizer is the decoder's oracle, so it must not share vmpt's own
 * instruction decoder (decoder/flow/vmpt_insn.c): Zydis is a second,
 * independent one that knows every extension (AVX-512, AMX, CET).
 */
#include "synth.h"

#include <Zydis/Zydis.h>
#include <stdlib.h>
#include <string.h>

struct synth_insn_cache {
	ZydisDecoder zydis;
	struct synth_insn *slots;	/* open addressing, key ip (valid=1) */
	size_t mask, used;
};

struct synth_insn_cache *synth_insn_cache_new(void)
{
	struct synth_insn_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&c->zydis, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64))) {
		free(c);
		return NULL;
	}
	c->mask = 4095;
	c->slots = calloc(c->mask + 1, sizeof(*c->slots));
	if (!c->slots) {
		synth_insn_cache_free(c);
		return NULL;
	}
	return c;
}

void synth_insn_cache_free(struct synth_insn_cache *c)
{
	if (!c)
		return;
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

/* mov [rsp], REG64: how a retpoline (the kernel's __x86_indirect_thunk_*)
 * turns its RET into an indirect jump to the register's target.
 */
static int retslot_store(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *op)
{
	return in->mnemonic == ZYDIS_MNEMONIC_MOV && in->operand_count_visible == 2 &&
	       op[0].type == ZYDIS_OPERAND_TYPE_MEMORY && op[0].size == 64 &&
	       op[0].mem.base == ZYDIS_REGISTER_RSP &&
	       op[0].mem.index == ZYDIS_REGISTER_NONE &&
	       (!op[0].mem.disp.has_displacement || op[0].mem.disp.value == 0) &&
	       !(in->attributes & ZYDIS_ATTRIB_HAS_SEGMENT) &&
	       op[1].type == ZYDIS_OPERAND_TYPE_REGISTER;
}

/* The data an instruction reads or writes through an explicit memory
 * operand (an EPT violation's access), or none.
 */
static unsigned mem_access(const ZydisDecodedInstruction *in,
			   const ZydisDecodedOperand *op)
{
	unsigned mem = SM_NONE;

	if (in->mnemonic == ZYDIS_MNEMONIC_NOP || in->mnemonic == ZYDIS_MNEMONIC_LEA ||
	    in->meta.category == ZYDIS_CATEGORY_PREFETCH)
		return SM_NONE;
	for (unsigned i = 0; i < in->operand_count_visible; i++) {
		if (op[i].type != ZYDIS_OPERAND_TYPE_MEMORY ||
		    op[i].mem.type != ZYDIS_MEMOP_TYPE_MEM)
			continue;
		if (op[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE)
			return SM_WRITE;
		if (op[i].actions & ZYDIS_OPERAND_ACTION_MASK_READ)
			mem = SM_READ;
	}
	return mem;
}

/* Port I/O: the exit qualification's low bits (SDM Vol. 3C, "Exit
 * Qualification for I/O Instructions"): size - 1, IN (bit 3), string
 * (4), REP (5), immediate port (6), the port in bits 31:16 when immediate.
 */
static uint32_t io_qual(const ZydisDecodedInstruction *in,
			const ZydisDecodedOperand *op)
{
	uint32_t q = 0, size = 1;

	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_INSW: case ZYDIS_MNEMONIC_OUTSW: size = 2; break;
	case ZYDIS_MNEMONIC_INSD: case ZYDIS_MNEMONIC_OUTSD: size = 4; break;
	case ZYDIS_MNEMONIC_INSB: case ZYDIS_MNEMONIC_OUTSB: break;
	default: {
		/* in AL/AX/EAX, port / out port, AL/AX/EAX */
		const ZydisDecodedOperand *data =
			&op[in->mnemonic == ZYDIS_MNEMONIC_IN ? 0 : 1];
		const ZydisDecodedOperand *port =
			&op[in->mnemonic == ZYDIS_MNEMONIC_IN ? 1 : 0];

		size = data->size / 8;
		if (port->type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
			q |= 1u << 6 | (uint32_t)(port->imm.value.u & 0xff) << 16;
		break;
	}
	}
	if (in->mnemonic == ZYDIS_MNEMONIC_IN || in->mnemonic == ZYDIS_MNEMONIC_INSB ||
	    in->mnemonic == ZYDIS_MNEMONIC_INSW || in->mnemonic == ZYDIS_MNEMONIC_INSD)
		q |= 1u << 3;
	if (in->mnemonic != ZYDIS_MNEMONIC_IN && in->mnemonic != ZYDIS_MNEMONIC_OUT) {
		q |= 1u << 4;
		if (in->attributes & ZYDIS_ATTRIB_HAS_REP)
			q |= 1u << 5;
	}
	return q | (size - 1);
}

static void classify(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *op,
		     uint64_t ip, struct synth_insn *out)
{
	/* Direct branches: a relative immediate, the target after it. */
	int direct = in->raw.imm[0].is_relative;
	uint64_t t = ip + in->length + (uint64_t)in->raw.imm[0].value.s;
	int far = in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;

	out->kind = retslot_store(in, op) ? SK_RETSLOT : SK_OTHER;
	out->mem = (uint8_t)mem_access(in, op);
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_JMP:
		out->kind = far ? SK_STOP : direct ? SK_JMP : SK_JMP_IND;
		out->target = direct ? t : 0;
		return;
	case ZYDIS_MNEMONIC_CALL:
		out->kind = far ? SK_STOP : direct ? SK_CALL : SK_CALL_IND;
		out->target = direct ? t : 0;
		return;
	case ZYDIS_MNEMONIC_RET:
		out->kind = far ? SK_STOP : SK_RET;
		return;
	case ZYDIS_MNEMONIC_SYSCALL:
		out->kind = SK_SYSCALL;
		return;
	case ZYDIS_MNEMONIC_SYSRET:
		out->kind = SK_SYSRET;
		return;
	case ZYDIS_MNEMONIC_IRET:
	case ZYDIS_MNEMONIC_IRETD:
	case ZYDIS_MNEMONIC_IRETQ:
		out->kind = SK_IRET;
		return;
	case ZYDIS_MNEMONIC_VMLAUNCH:
	case ZYDIS_MNEMONIC_VMRESUME:
		out->kind = SK_VMENTRY;
		out->vmlaunch = in->mnemonic == ZYDIS_MNEMONIC_VMLAUNCH;
		out->vmx = 1;
		return;
	case ZYDIS_MNEMONIC_VMPTRLD:
		out->kind = SK_VMPTRLD;
		out->vmx = 1;
		return;
	case ZYDIS_MNEMONIC_VMCALL:
		/* exits in a guest, VMfail in VMX root operation */
		out->kind = SK_EXITING;
		out->exit_reason = SYNTH_EXIT_VMCALL;
		out->vmx = 1;
		return;
	case ZYDIS_MNEMONIC_CPUID:
		out->kind = SK_EXITING;
		out->exit_reason = SYNTH_EXIT_CPUID;
		return;
	case ZYDIS_MNEMONIC_HLT:
		out->kind = SK_EXITING;
		out->exit_reason = SYNTH_EXIT_HLT;
		return;
	case ZYDIS_MNEMONIC_RDMSR:
		out->kind = SK_EXITING;
		out->exit_reason = SYNTH_EXIT_MSR_READ;
		return;
	case ZYDIS_MNEMONIC_WRMSR:
		out->kind = SK_EXITING;
		out->exit_reason = SYNTH_EXIT_MSR_WRITE;
		return;
	case ZYDIS_MNEMONIC_IN:
	case ZYDIS_MNEMONIC_OUT:
	case ZYDIS_MNEMONIC_INSB: case ZYDIS_MNEMONIC_INSW: case ZYDIS_MNEMONIC_INSD:
	case ZYDIS_MNEMONIC_OUTSB: case ZYDIS_MNEMONIC_OUTSW: case ZYDIS_MNEMONIC_OUTSD:
		out->kind = SK_EXITING;
		out->exit_reason = SYNTH_EXIT_IO;
		out->io_qual = io_qual(in, op);
		out->mem = SM_NONE;	/* the exit comes before any access */
		return;
	case ZYDIS_MNEMONIC_PTWRITE:
		out->kind = SK_PTWRITE;
		out->opsize = (uint8_t)(op[0].size / 8);
		return;
	case ZYDIS_MNEMONIC_MWAIT:
		out->kind = SK_MWAIT;
		return;
	case ZYDIS_MNEMONIC_INT:
	case ZYDIS_MNEMONIC_INT1:
	case ZYDIS_MNEMONIC_INT3:
	case ZYDIS_MNEMONIC_INTO:
	case ZYDIS_MNEMONIC_UD0:
	case ZYDIS_MNEMONIC_UD1:
	case ZYDIS_MNEMONIC_UD2:
	case ZYDIS_MNEMONIC_SYSENTER:
	case ZYDIS_MNEMONIC_SYSEXIT:
	case ZYDIS_MNEMONIC_XBEGIN:
	case ZYDIS_MNEMONIC_XABORT:
	case ZYDIS_MNEMONIC_XEND:
	/* AMD SVM (Xen's hypercall page has VMMCALL): #UD on Intel */
	case ZYDIS_MNEMONIC_VMMCALL:
	case ZYDIS_MNEMONIC_VMRUN:
	case ZYDIS_MNEMONIC_VMLOAD:
	case ZYDIS_MNEMONIC_VMSAVE:
	case ZYDIS_MNEMONIC_CLGI:
	case ZYDIS_MNEMONIC_STGI:
	case ZYDIS_MNEMONIC_SKINIT:
	case ZYDIS_MNEMONIC_INVLPGA:
		out->kind = SK_STOP;
		return;
	default:
		break;
	}
	switch (in->meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
		/* jcc, loop*, j*cxz */
		out->kind = direct ? SK_JCC : SK_STOP;
		out->target = t;
		return;
	case ZYDIS_CATEGORY_UNCOND_BR:
	case ZYDIS_CATEGORY_CALL:
	case ZYDIS_CATEGORY_RET:
	case ZYDIS_CATEGORY_INTERRUPT:
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_SYSRET:
		out->kind = SK_STOP;	/* any other transfer (uiret, ...) */
		return;
	default:
		break;
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
	ZydisDecodedInstruction in;
	ZydisDecodedOperand op[ZYDIS_MAX_OPERAND_COUNT];

	if (ZYAN_SUCCESS(ZydisDecoderDecodeFull(&c->zydis, code, avail > 15 ? 15 : avail,
						&in, op))) {
		s->size = in.length;
		classify(&in, op, ip, s);
	} else {
		s->size = 1;
		s->kind = SK_STOP;
	}
	return s;
}
