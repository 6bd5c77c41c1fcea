/* SPDX-License-Identifier: MIT */
/* The flow decoder's instruction question (length, control flow class,
 * direct target) answered by vmpt's length decoder, by Zydis 4 and by
 * capstone 4, over every executable section of ELF files; and the block
 * cache filled with every block of those sections.  Meant for callgrind:
 * one decoder per run.
 *
 * usage: insn-bench --decoder vmpt|zydis|capstone|fill [--rounds N] ELF...
 *
 * Each sweep decodes linearly (one byte on where there is no instruction)
 * and prints instructions, branches and a checksum of lengths, classes and
 * targets, so the three decoders can be seen to answer alike.
 */
#include "vmpt/error.h"
#include "vmpt/flow.h"
#include "vmpt/image.h"
#include "../decoder/flow/vmpt_block_cache.h"
#include "../decoder/flow/vmpt_insn.h"

#include <Zydis/Zydis.h>
#include <capstone/capstone.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct sec {
	uint64_t addr, size;
	const uint8_t *data;
};

static struct sec secs[4096];
static size_t nsecs;

static int load(const char *path)
{
	int fd = open(path, O_RDONLY);
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (fd < 0)
		return -1;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -1;
	while ((scn = elf_nextscn(elf, scn)) && nsecs < 4096) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		d = elf_getdata(scn, NULL);
		if (d && d->d_size >= sh.sh_size)
			secs[nsecs++] = (struct sec){ sh.sh_addr, sh.sh_size, d->d_buf };
	}
	return 0;	/* the mapping stays for the run */
}

static ZydisDecoder zydis;

/* The same answer as vmpt_insn_decode, from Zydis in its minimal mode. */
static int zydis_decode(const uint8_t *code, size_t avail, uint64_t ip,
			struct vmpt_insn *in)
{
	ZydisDecodedInstruction z;
	unsigned cls = VMPT_IC_OTHER;

	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&zydis, NULL, code, avail, &z)))
		return -VMPT_ERR_NO_MATCH;
	int far = z.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT &&
		  (z.opcode == 0x9a || z.opcode == 0xea || z.opcode == 0xca || z.opcode == 0xcb ||
		   (z.opcode == 0xff && (z.raw.modrm.reg == 3 || z.raw.modrm.reg == 5)));
	int rel = z.raw.imm[0].is_relative;	/* not a RIP-relative operand */

	switch (z.mnemonic) {
	case ZYDIS_MNEMONIC_JMP:
		cls = far ? VMPT_IC_FAR_JMP : rel ? VMPT_IC_JMP : VMPT_IC_JMP_IND;
		break;
	case ZYDIS_MNEMONIC_CALL:
		cls = far ? VMPT_IC_FAR_CALL : rel ? VMPT_IC_CALL : VMPT_IC_CALL_IND;
		break;
	case ZYDIS_MNEMONIC_RET: cls = far ? VMPT_IC_FAR_RET : VMPT_IC_RET; break;
	case ZYDIS_MNEMONIC_JB: case ZYDIS_MNEMONIC_JBE: case ZYDIS_MNEMONIC_JCXZ:
	case ZYDIS_MNEMONIC_JECXZ: case ZYDIS_MNEMONIC_JL: case ZYDIS_MNEMONIC_JLE:
	case ZYDIS_MNEMONIC_JNB: case ZYDIS_MNEMONIC_JNBE: case ZYDIS_MNEMONIC_JNL:
	case ZYDIS_MNEMONIC_JNLE: case ZYDIS_MNEMONIC_JNO: case ZYDIS_MNEMONIC_JNP:
	case ZYDIS_MNEMONIC_JNS: case ZYDIS_MNEMONIC_JNZ: case ZYDIS_MNEMONIC_JO:
	case ZYDIS_MNEMONIC_JP: case ZYDIS_MNEMONIC_JRCXZ: case ZYDIS_MNEMONIC_JS:
	case ZYDIS_MNEMONIC_JZ: case ZYDIS_MNEMONIC_LOOP: case ZYDIS_MNEMONIC_LOOPE:
	case ZYDIS_MNEMONIC_LOOPNE:
		cls = VMPT_IC_JCC;
		break;
	case ZYDIS_MNEMONIC_INT: case ZYDIS_MNEMONIC_INT1: case ZYDIS_MNEMONIC_INT3:
	case ZYDIS_MNEMONIC_INTO:
		cls = VMPT_IC_INT;
		break;
	case ZYDIS_MNEMONIC_IRET: case ZYDIS_MNEMONIC_IRETD: case ZYDIS_MNEMONIC_IRETQ:
		cls = VMPT_IC_IRET;
		break;
	case ZYDIS_MNEMONIC_SYSCALL: case ZYDIS_MNEMONIC_SYSENTER: cls = VMPT_IC_SYSCALL; break;
	case ZYDIS_MNEMONIC_SYSRET: case ZYDIS_MNEMONIC_SYSEXIT: cls = VMPT_IC_SYSRET; break;
	case ZYDIS_MNEMONIC_VMCALL: case ZYDIS_MNEMONIC_VMMCALL: cls = VMPT_IC_FAR_CALL; break;
	case ZYDIS_MNEMONIC_VMLAUNCH: case ZYDIS_MNEMONIC_VMRESUME: cls = VMPT_IC_VMENTRY; break;
	default: break;
	}
	in->size = z.length;
	in->iclass = (uint8_t)cls;
	in->target = rel && cls != VMPT_IC_OTHER ? ip + z.length + (uint64_t)z.raw.imm[0].value.s : 0;
	return 0;
}

static csh cs;
static cs_insn *csi;

/* What the block cache asked of capstone before vmpt_insn.c (without
 * operand details: a direct branch prints its target as the operand).
 */
static int capstone_decode(const uint8_t *code, size_t avail, uint64_t ip,
			   struct vmpt_insn *in)
{
	uint64_t at = ip;
	unsigned cls = VMPT_IC_OTHER;

	if (!cs_disasm_iter(cs, &code, &avail, &at, csi))
		return -VMPT_ERR_NO_MATCH;
	int imm = csi->op_str[0] == '0' && csi->op_str[1] == 'x';

	switch (csi->id) {
	case X86_INS_JMP: cls = imm ? VMPT_IC_JMP : VMPT_IC_JMP_IND; break;
	case X86_INS_CALL: cls = imm ? VMPT_IC_CALL : VMPT_IC_CALL_IND; break;
	case X86_INS_RET: cls = VMPT_IC_RET; break;
	case X86_INS_JAE: case X86_INS_JA: case X86_INS_JBE: case X86_INS_JB:
	case X86_INS_JCXZ: case X86_INS_JECXZ: case X86_INS_JRCXZ:
	case X86_INS_JE: case X86_INS_JGE: case X86_INS_JG: case X86_INS_JLE:
	case X86_INS_JL: case X86_INS_JNE: case X86_INS_JNO: case X86_INS_JNP:
	case X86_INS_JNS: case X86_INS_JO: case X86_INS_JP: case X86_INS_JS:
	case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
		cls = VMPT_IC_JCC;
		break;
	case X86_INS_INT: case X86_INS_INT1: case X86_INS_INT3: case X86_INS_INTO:
		cls = VMPT_IC_INT;
		break;
	case X86_INS_SYSCALL: case X86_INS_SYSENTER: cls = VMPT_IC_SYSCALL; break;
	default: break;
	}
	in->size = (uint8_t)csi->size;
	in->iclass = (uint8_t)cls;
	in->target = imm && cls != VMPT_IC_OTHER ? strtoull(csi->op_str, NULL, 16) : 0;
	return 0;
}

static void sweep(const char *name,
		  int (*dec)(const uint8_t *, size_t, uint64_t, struct vmpt_insn *))
{
	uint64_t insns = 0, branches = 0, none = 0, sum = 0;

	for (size_t s = 0; s < nsecs; s++) {
		for (uint64_t off = 0; off < secs[s].size;) {
			struct vmpt_insn in;
			size_t avail = secs[s].size - off;

			if (dec(secs[s].data + off, avail < 15 ? avail : 15,
				secs[s].addr + off, &in) < 0) {
				none++;
				off++;
				continue;
			}
			insns++;
			branches += in.iclass != VMPT_IC_OTHER;
			sum = sum * 31 + in.size + in.iclass * 16 + in.target;
			off += in.size;
		}
	}
	printf("%-9s %10" PRIu64 " insns %9" PRIu64 " branches %6" PRIu64
	       " bytes without an insn, checksum %016" PRIx64 "\n",
	       name, insns, branches, none, sum);
}

static int vmpt_decode(const uint8_t *code, size_t avail, uint64_t ip, struct vmpt_insn *in)
{
	return vmpt_insn_decode(code, avail, ip, VMPT_MODE_64, in);
}

/* Every block of the sections into a block cache, as the flow decoder
 * fills it: blocks one after another, and each branch's target.
 */
static void fill(char **paths, int n)
{
	struct vmpt_image *img = vmpt_image_new();
	struct vmpt_asid any = vmpt_asid_any();
	struct vmpt_bcache *bc = vmpt_bcache_new();
	struct vmpt_bdisasm *d = vmpt_bdisasm_new(bc);
	uint64_t blocks = 0, insns = 0;

	for (int i = 0; i < n; i++)
		if (vmpt_image_add_elf(img, paths[i], VMPT_ELF_LINK_ADDR, &any) < 0)
			fprintf(stderr, "%s: not added\n", paths[i]);
	for (size_t s = 0; s < nsecs; s++) {
		for (uint64_t ip = secs[s].addr; ip < secs[s].addr + secs[s].size;) {
			const struct vmpt_section *sec = vmpt_image_find(img, &any, ip);
			struct vmpt_block *b, *t;

			if (!sec || vmpt_bcache_get(d, img, sec, &any, ip, VMPT_MODE_64, &b) < 0) {
				ip++;
				continue;
			}
			blocks++;
			insns += b->ninsn;
			if (b->target && (sec = vmpt_image_find(img, &any, b->target)) &&
			    vmpt_bcache_get(d, img, sec, &any, b->target, VMPT_MODE_64, &t) == 0)
				blocks++;
			ip = b->next_ip;
		}
	}
	printf("fill      %10" PRIu64 " insns in %" PRIu64 " blocks\n", insns, blocks);
	vmpt_bdisasm_free(d);
	vmpt_bcache_free(bc);
	vmpt_image_free(img);
}

int main(int argc, char **argv)
{
	const char *which = NULL;
	int rounds = 1, a = 1;

	for (; a + 1 < argc && argv[a][0] == '-'; a += 2) {
		if (!strcmp(argv[a], "--decoder"))
			which = argv[a + 1];
		else if (!strcmp(argv[a], "--rounds"))
			rounds = atoi(argv[a + 1]);
	}
	if (!which || a >= argc || rounds < 1) {
		fprintf(stderr, "usage: %s --decoder vmpt|zydis|capstone|fill "
			"[--rounds N] ELF...\n", argv[0]);
		return 2;
	}
	elf_version(EV_CURRENT);
	for (int i = a; i < argc; i++)
		if (load(argv[i]) < 0) {
			fprintf(stderr, "%s: cannot read\n", argv[i]);
			return 1;
		}
	ZydisDecoderInit(&zydis, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	ZydisDecoderEnableMode(&zydis, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE);
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK || !(csi = cs_malloc(cs)))
		return 1;
	for (int r = 0; r < rounds; r++) {
		clock_t t = clock();

		if (!strcmp(which, "vmpt"))
			sweep("vmpt", vmpt_decode);
		else if (!strcmp(which, "zydis"))
			sweep("zydis", zydis_decode);
		else if (!strcmp(which, "capstone"))
			sweep("capstone", capstone_decode);
		else if (!strcmp(which, "fill"))
			fill(argv + a, argc - a);
		else
			return 2;
		printf("  %.3f s CPU\n", (double)(clock() - t) / CLOCKS_PER_SEC);
	}
	cs_free(csi, 1);
	cs_close(&cs);
	return 0;
}
