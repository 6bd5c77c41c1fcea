/* SPDX-License-Identifier: MIT */
/* vmpt's instruction decoder (decoder/flow/vmpt_insn.c) against binutils'
 * objdump on every instruction of an ELF's executable sections.
 *
 * usage: insn_sweep [--mode 64|32|16] ELF LISTING
 *
 * LISTING is objdump's disassembly of ELF as objdump_insns.awk writes it
 * ("ADDR LEN CLASS TARGET" per instruction).  At every address objdump
 * decoded, vmpt's decoder must give the same length, the same control
 * flow class and, for a direct branch, the same target.  Each
 * disagreement is printed as "DIFF BYTES objdump: LEN CLASS, vmpt: LEN
 * CLASS" (the bytes are the encoding, so a pinned list survives a new
 * build of the binary); then one summary line.  objdump's "(bad)" is
 * counted apart: where objdump finds no instruction there is nothing to
 * agree on (linear sweeps run into data, padding and jump tables), but the
 * line says how many of those vmpt decodes; so are the bytes objdump prints
 * alone: ".byte" where an instruction runs into the next symbol (objdump
 * restarts there), or a REX prefix that a legacy prefix follows (the CPU
 * ignores it as part of the instruction, objdump prints it on a line of
 * its own; the instruction after it is compared).
 * Exit 0 when the sweep ran (the caller judges the DIFF lines), 1 on
 * errors.
 */
#include "vmpt/flow.h"
#include "../vmpt_insn.h"

#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const class_names[] = {
	[VMPT_IC_OTHER] = "other", [VMPT_IC_JCC] = "jcc", [VMPT_IC_JMP] = "jmp",
	[VMPT_IC_JMP_IND] = "jmpi", [VMPT_IC_CALL] = "call", [VMPT_IC_CALL_IND] = "calli",
	[VMPT_IC_RET] = "ret", [VMPT_IC_FAR_CALL] = "fcall", [VMPT_IC_FAR_RET] = "fret",
	[VMPT_IC_FAR_JMP] = "fjmp", [VMPT_IC_INT] = "int", [VMPT_IC_SYSCALL] = "syscall",
	[VMPT_IC_IRET] = "iret", [VMPT_IC_SYSRET] = "sysret", [VMPT_IC_VMENTRY] = "vmentry",
};

struct sec {
	uint64_t addr, size;
	const uint8_t *data;
};

static struct sec secs[4096];
static size_t nsecs;

static const struct sec *find_sec(uint64_t addr)
{
	for (size_t i = 0; i < nsecs; i++)
		if (addr - secs[i].addr < secs[i].size)
			return &secs[i];
	return NULL;
}

static int load(const char *path, Elf **elf_out)
{
	int fd = open(path, O_RDONLY);
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE)
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
		if (!d || d->d_size < sh.sh_size)
			continue;
		secs[nsecs++] = (struct sec){ sh.sh_addr, sh.sh_size, d->d_buf };
	}
	*elf_out = elf;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned mode = VMPT_MODE_64;
	uint64_t insns = 0, diffs = 0, bad = 0, bad_decoded = 0, cut = 0, nosec = 0;
	uint64_t by_class[VMPT_IC_VMENTRY + 1] = { 0 };
	char line[256];
	Elf *elf;
	FILE *f;
	int a = 1;

	if (argc > 3 && !strcmp(argv[1], "--mode")) {
		mode = !strcmp(argv[2], "32") ? VMPT_MODE_32 :
		       !strcmp(argv[2], "16") ? VMPT_MODE_16 : VMPT_MODE_64;
		a = 3;
	}
	if (argc != a + 2) {
		fprintf(stderr, "usage: %s [--mode 64|32|16] ELF LISTING\n", argv[0]);
		return 1;
	}
	if (load(argv[a], &elf) < 0 || !nsecs) {
		fprintf(stderr, "%s: no executable sections\n", argv[a]);
		return 1;
	}
	f = fopen(argv[a + 1], "r");
	if (!f) {
		perror(argv[a + 1]);
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		char cls[16], tgt[32];
		uint64_t addr, want_target = 0;
		unsigned len;
		const struct sec *s;
		struct vmpt_insn in;
		int ret, ok;

		if (sscanf(line, "%" SCNx64 " %u %15s %31s", &addr, &len, cls, tgt) != 4) {
			fprintf(stderr, "%s: bad line: %s", argv[a + 1], line);
			return 1;
		}
		s = find_sec(addr);
		if (!s) {
			nosec++;
			continue;
		}
		uint64_t off = addr - s->addr, avail = s->size - off;

		ret = vmpt_insn_decode(s->data + off, avail, addr, mode, &in);
		if (!strcmp(cls, "bad")) {
			bad++;
			bad_decoded += ret == 0;
			continue;
		}
		if (!strcmp(cls, "cut")) {
			cut++;
			continue;
		}
		insns++;
		if (strcmp(tgt, "-"))
			want_target = strtoull(tgt, NULL, 16);
		ok = ret == 0 && in.size == len && !strcmp(class_names[in.iclass], cls) &&
		     (!strcmp(tgt, "-") || in.target == want_target);
		if (ret == 0)
			by_class[in.iclass]++;
		if (ok)
			continue;
		diffs++;
		printf("DIFF");
		for (unsigned i = 0; i < len && i < avail; i++)
			printf("%s%02x", i ? " " : " ", s->data[off + i]);
		printf(" objdump: %u %s %s, vmpt: ", len, cls, tgt);
		if (ret < 0)
			printf("no instruction");
		else
			printf("%u %s %" PRIx64, in.size, class_names[in.iclass], in.target);
		printf(" (at %" PRIx64 ")\n", addr);
	}
	fclose(f);
	printf("%s: %" PRIu64 " instructions, %" PRIu64 " differ; branches:", argv[a], insns, diffs);
	for (unsigned c = VMPT_IC_JCC; c <= VMPT_IC_VMENTRY; c++)
		if (by_class[c])
			printf(" %s %" PRIu64, class_names[c], by_class[c]);
	printf("; objdump (bad) %" PRIu64 " (vmpt decodes %" PRIu64 ")", bad, bad_decoded);
	if (cut)
		printf("; alone (.byte, a lone prefix) %" PRIu64, cut);
	if (nosec)
		printf("; %" PRIu64 " outside the sections", nosec);
	printf("\n");
	elf_end(elf);
	return 0;
}
