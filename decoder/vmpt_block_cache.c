/* SPDX-License-Identifier: MIT */
/* The block cache: each block is disassembled by capstone once. */
#include "vmpt_block_cache.h"
#include "vmpt/error.h"

#include <capstone/capstone.h>
#include <stdlib.h>
#include <string.h>

/* Long straight runs are cut so a block stays cheap to split at a FUP. */
#define MAX_BLOCK_INSNS 1024
#define ARENA_CHUNK (1u << 20)

struct arena {
	struct arena *prev;
	size_t used;
	uint8_t mem[];
};

struct vmpt_bcache {
	struct vmpt_block **tab;
	size_t mask, n;
	csh cs[3];		/* per enum vmpt_exec_mode */
	cs_insn *insn[3];
	struct arena *arena;
	uint8_t sizes[MAX_BLOCK_INSNS];	/* of the block being decoded */
};

static void *arena_alloc(struct vmpt_bcache *bc, size_t size)
{
	struct arena *a = bc->arena;

	size = (size + 15) & ~(size_t)15;
	if (!a || a->used + size > ARENA_CHUNK) {
		size_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;

		a = malloc(sizeof(*a) + cap);
		if (!a)
			return NULL;
		a->prev = bc->arena;
		a->used = 0;
		bc->arena = a;
	}
	a->used += size;
	return a->mem + a->used - size;
}

struct vmpt_bcache *vmpt_bcache_new(void)
{
	static const cs_mode modes[3] = { CS_MODE_64, CS_MODE_32, CS_MODE_16 };
	struct vmpt_bcache *bc = calloc(1, sizeof(*bc));

	if (!bc)
		return NULL;
	bc->mask = 4095;
	bc->tab = calloc(bc->mask + 1, sizeof(*bc->tab));
	if (!bc->tab)
		goto fail;
	for (int m = 0; m < 3; m++) {
		if (cs_open(CS_ARCH_X86, modes[m], &bc->cs[m]) != CS_ERR_OK)
			goto fail;
		bc->insn[m] = cs_malloc(bc->cs[m]);
		if (!bc->insn[m])
			goto fail;
	}
	return bc;
fail:
	vmpt_bcache_free(bc);
	return NULL;
}

void vmpt_bcache_free(struct vmpt_bcache *bc)
{
	if (!bc)
		return;
	for (int m = 0; m < 3; m++) {
		if (bc->insn[m])
			cs_free(bc->insn[m], 1);
		if (bc->cs[m])
			cs_close(&bc->cs[m]);
	}
	while (bc->arena) {
		struct arena *p = bc->arena->prev;

		free(bc->arena);
		bc->arena = p;
	}
	free(bc->tab);
	free(bc);
}

static size_t hash(uint64_t ip, unsigned mode, unsigned sec)
{
	uint64_t h = (ip ^ ((uint64_t)mode << 62) ^ ((uint64_t)sec << 40)) *
		     0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32);
}

static int grow(struct vmpt_bcache *bc)
{
	size_t mask = bc->mask * 2 + 1;
	struct vmpt_block **tab = calloc(mask + 1, sizeof(*tab));

	if (!tab)
		return -VMPT_ERR_NOMEM;
	for (size_t i = 0; i <= bc->mask; i++) {
		struct vmpt_block *b = bc->tab[i], *next;

		for (; b; b = next) {
			size_t h = hash(b->ip, b->mode, b->sec->id) & mask;

			next = b->hnext;
			b->hnext = tab[h];
			tab[h] = b;
		}
	}
	free(bc->tab);
	bc->tab = tab;
	bc->mask = mask;
	return 0;
}

static int is_jcc(unsigned id)
{
	switch (id) {
	case X86_INS_JAE: case X86_INS_JA: case X86_INS_JBE: case X86_INS_JB:
	case X86_INS_JCXZ: case X86_INS_JECXZ: case X86_INS_JRCXZ:
	case X86_INS_JE: case X86_INS_JGE: case X86_INS_JG: case X86_INS_JLE:
	case X86_INS_JL: case X86_INS_JNE: case X86_INS_JNO: case X86_INS_JNP:
	case X86_INS_JNS: case X86_INS_JO: case X86_INS_JP: case X86_INS_JS:
	case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
		return 1;
	default:
		return 0;
	}
}

/* Class of one instruction; *target for direct branches.  Capstone runs
 * without operand details (several times faster): a direct branch prints
 * its absolute target as the only operand ("0x401020").
 */
static enum vmpt_iclass classify(const cs_insn *in, uint64_t *target)
{
	int imm = in->op_str[0] == '0' && in->op_str[1] == 'x';

	if (imm)
		*target = strtoull(in->op_str, NULL, 16);
	if (is_jcc(in->id))
		return VMPT_IC_JCC;
	switch (in->id) {
	case X86_INS_JMP:
		return imm ? VMPT_IC_JMP : VMPT_IC_JMP_IND;
	case X86_INS_CALL:
		return imm ? VMPT_IC_CALL : VMPT_IC_CALL_IND;
	case X86_INS_RET:
		return VMPT_IC_RET;
	case X86_INS_LJMP:
		return VMPT_IC_FAR_JMP;
	case X86_INS_LCALL:
	case X86_INS_INT: case X86_INS_INT1: case X86_INS_INT3: case X86_INS_INTO:
	case X86_INS_SYSCALL: case X86_INS_SYSENTER:
	case X86_INS_VMCALL: case X86_INS_VMLAUNCH: case X86_INS_VMRESUME:
	case X86_INS_VMMCALL:
		return VMPT_IC_FAR_CALL;
	case X86_INS_RETF: case X86_INS_RETFQ:
	case X86_INS_IRET: case X86_INS_IRETD: case X86_INS_IRETQ:
	case X86_INS_SYSEXIT: case X86_INS_SYSRET:
		return VMPT_IC_FAR_RET;
	default:
		return VMPT_IC_OTHER;
	}
}

static uint64_t mode_mask(unsigned mode)
{
	return mode == VMPT_MODE_64 ? ~0ull :
	       mode == VMPT_MODE_32 ? 0xffffffffull : 0xffffull;
}

static int decode_block(struct vmpt_bcache *bc, const struct vmpt_image *img,
			const struct vmpt_section *sec,
			const struct vmpt_asid *asid, uint64_t ip,
			unsigned mode, struct vmpt_block *b)
{
	uint8_t *sizes = bc->sizes;
	cs_insn *in = bc->insn[mode];
	uint64_t addr = ip;

	memset(b, 0, sizeof(*b));
	b->ip = ip;
	b->sec = sec;
	b->mode = (uint8_t)mode;
	for (;;) {
		uint64_t off = addr - sec->vaddr, target = 0;
		const uint8_t *code;
		uint8_t window[16];
		size_t avail;
		enum vmpt_iclass cls;

		if (off < sec->size && sec->size - off >= 16) {
			code = sec->data + off;
			avail = 16;
		} else {
			/* Near a section's end: the instruction may go on
			 * in the next section.
			 */
			int n = vmpt_image_read(img, asid, addr, window, 16);

			if (n < 0) {
				if (!b->ninsn)
					return n;
				break;	/* the next lookup reports it */
			}
			code = window;
			avail = (size_t)n;
		}
		uint64_t at = addr;

		if (!cs_disasm_iter(bc->cs[mode], &code, &avail, &at, in)) {
			if (!b->ninsn)
				return -VMPT_ERR_NO_MATCH;
			break;	/* the next lookup reports it */
		}
		cls = classify(in, &target);
		sizes[b->ninsn++] = (uint8_t)in->size;
		b->end_ip = addr;
		addr = (addr + in->size) & mode_mask(mode);
		b->next_ip = addr;
		if (cls != VMPT_IC_OTHER) {
			b->iclass = (uint8_t)cls;
			b->target = target & mode_mask(mode);
			b->zero_call = cls == VMPT_IC_CALL && b->target == addr;
			break;
		}
		/* A block stays inside its section: the next one may belong
		 * to another dso.
		 */
		if (b->ninsn == MAX_BLOCK_INSNS || addr - sec->vaddr >= sec->size)
			break;
	}
	return 0;
}

int vmpt_bcache_get(struct vmpt_bcache *bc, const struct vmpt_image *img,
		    const struct vmpt_section *sec, const struct vmpt_asid *asid,
		    uint64_t ip, unsigned mode, struct vmpt_block **out)
{
	struct vmpt_block *b, tmp;
	size_t h;
	int ret;

	h = hash(ip, mode, sec->id) & bc->mask;
	for (b = bc->tab[h]; b; b = b->hnext)
		if (b->ip == ip && b->sec == sec && b->mode == mode) {
			*out = b;
			return 0;
		}
	ret = decode_block(bc, img, sec, asid, ip, mode, &tmp);
	if (ret < 0)
		return ret;
	/* The sizes right behind the block: one cache line for both. */
	b = arena_alloc(bc, sizeof(*b) + tmp.ninsn);
	if (!b)
		return -VMPT_ERR_NOMEM;
	*b = tmp;
	b->isize = (uint8_t *)(b + 1);
	memcpy(b->isize, bc->sizes, tmp.ninsn);
	if (bc->n >= bc->mask && grow(bc) < 0)
		return -VMPT_ERR_NOMEM;
	h = hash(ip, mode, sec->id) & bc->mask;
	b->hnext = bc->tab[h];
	bc->tab[h] = b;
	bc->n++;
	*out = b;
	return 0;
}
