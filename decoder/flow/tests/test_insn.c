/* SPDX-License-Identifier: MIT */
/* vmpt_insn_decode's rules one encoding at a time, in 64-, 32- and 16-bit
 * mode: what the objdump sweep (insn_sweep_test.sh) cannot reach, since
 * no 16-bit binary is at hand and compilers never emit some forms, and
 * the encodings issue 17 named (EVEX vpcmpb, CET rdsspq).  Lengths and
 * classes as the SDM gives them, cross-checked with objdump -M intel64.
 * And random bytes never make it read past what it was given.
 */
#include "vmpt/error.h"
#include "vmpt/flow.h"
#include "../vmpt_insn.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

struct want {
	unsigned mode;
	const char *what;
	uint8_t bytes[16];
	unsigned n;		/* bytes given */
	int size;		/* 0: no instruction */
	unsigned iclass;
	uint64_t target;	/* from ip 0x1000 */
};

#define M64 VMPT_MODE_64
#define M32 VMPT_MODE_32
#define M16 VMPT_MODE_16

static const struct want cases[] = {
	{ M64, "EVEX vpcmpb k0,ymm16,[rdi],0", { 0x62, 0xf3, 0x7d, 0x20, 0x3f, 0x07, 0x00 }, 7, 7, VMPT_IC_OTHER, 0 },
	{ M64, "CET rdsspq rax", { 0xf3, 0x48, 0x0f, 0x1e, 0xc8 }, 5, 5, VMPT_IC_OTHER, 0 },
	{ M64, "endbr64", { 0xf3, 0x0f, 0x1e, 0xfa }, 4, 4, VMPT_IC_OTHER, 0 },
	{ M64, "AMX tileloadd tmm1,[rax+rcx*1]", { 0xc4, 0xe2, 0x7b, 0x4b, 0x0c, 0x08 }, 6, 6, VMPT_IC_OTHER, 0 },
	{ M64, "VEX vzeroupper (no ModRM)", { 0xc5, 0xf8, 0x77 }, 3, 3, VMPT_IC_OTHER, 0 },
	{ M64, "VEX vpshufd imm8", { 0xc5, 0xf9, 0x70, 0xc1, 0x1b }, 5, 5, VMPT_IC_OTHER, 0 },
	{ M64, "EVEX.0F3A vpternlogd disp8", { 0x62, 0xf3, 0x75, 0x48, 0x25, 0x40, 0x01, 0x96 }, 8, 8, VMPT_IC_OTHER, 0 },
	{ M64, "XOP vprotd imm8", { 0x8f, 0xe8, 0x78, 0xc2, 0xc1, 0x05 }, 6, 6, VMPT_IC_OTHER, 0 },
	{ M64, "XOP bextr imm32", { 0x8f, 0xea, 0x78, 0x10, 0xc1, 1, 2, 3, 4 }, 9, 9, VMPT_IC_OTHER, 0 },
	{ M64, "pop [rax] (8F /0, not XOP)", { 0x8f, 0x00 }, 2, 2, VMPT_IC_OTHER, 0 },
	{ M64, "3DNow! pfadd", { 0x0f, 0x0f, 0xc1, 0x9e }, 4, 4, VMPT_IC_OTHER, 0 },
	{ M64, "mov cr3, rax with mod 0: no displacement", { 0x0f, 0x22, 0x18 }, 3, 3, VMPT_IC_OTHER, 0 },
	{ M64, "movabs al, moffs64", { 0xa0, 1, 2, 3, 4, 5, 6, 7, 8 }, 9, 9, VMPT_IC_OTHER, 0 },
	{ M64, "movabs rax, imm64", { 0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8 }, 10, 10, VMPT_IC_OTHER, 0 },
	{ M64, "mov ax, imm16 (66)", { 0x66, 0xb8, 1, 2 }, 4, 4, VMPT_IC_OTHER, 0 },
	{ M64, "REX before 66 does not count", { 0x48, 0x66, 0xb8, 1, 2 }, 5, 5, VMPT_IC_OTHER, 0 },
	{ M64, "test byte [rax], imm8 (F6 /0)", { 0xf6, 0x00, 0x01 }, 3, 3, VMPT_IC_OTHER, 0 },
	{ M64, "not byte [rax] (F6 /2: no imm)", { 0xf6, 0x10 }, 2, 2, VMPT_IC_OTHER, 0 },
	{ M64, "SIB base 5 with mod 0: disp32", { 0x8b, 0x04, 0x25, 1, 2, 3, 4 }, 7, 7, VMPT_IC_OTHER, 0 },
	{ M64, "enter", { 0xc8, 0x10, 0x00, 0x01 }, 4, 4, VMPT_IC_OTHER, 0 },
	{ M64, "extrq imm8, imm8 (66 0F 78)", { 0x66, 0x0f, 0x78, 0xc0, 0x01, 0x02 }, 6, 6, VMPT_IC_OTHER, 0 },
	{ M64, "vmread (0F 78)", { 0x0f, 0x78, 0xc8 }, 3, 3, VMPT_IC_OTHER, 0 },
	{ M64, "call rel32", { 0xe8, 0x10, 0, 0, 0 }, 5, 5, VMPT_IC_CALL, 0x1015 },
	{ M64, "66 call: still rel32 (Intel)", { 0x66, 0xe8, 0x10, 0, 0, 0 }, 6, 6, VMPT_IC_CALL, 0x1016 },
	{ M64, "jmp rel8 back", { 0xeb, 0xfe }, 2, 2, VMPT_IC_JMP, 0x1000 },
	{ M64, "bnd jmp rel32", { 0xf2, 0xe9, 0, 0, 0, 0 }, 6, 6, VMPT_IC_JMP, 0x1006 },
	{ M64, "jne rel32", { 0x0f, 0x85, 0xfa, 0xff, 0xff, 0xff }, 6, 6, VMPT_IC_JCC, 0x1000 },
	{ M64, "jrcxz", { 0xe3, 0x02 }, 2, 2, VMPT_IC_JCC, 0x1004 },
	{ M64, "loop", { 0xe2, 0x00 }, 2, 2, VMPT_IC_JCC, 0x1002 },
	{ M64, "notrack jmp rax", { 0x3e, 0xff, 0xe0 }, 3, 3, VMPT_IC_JMP_IND, 0 },
	{ M64, "call [rip+disp]", { 0xff, 0x15, 1, 2, 3, 4 }, 6, 6, VMPT_IC_CALL_IND, 0 },
	{ M64, "ljmp [rax]", { 0xff, 0x28 }, 2, 2, VMPT_IC_FAR_JMP, 0 },
	{ M64, "lcall [rax]", { 0xff, 0x18 }, 2, 2, VMPT_IC_FAR_CALL, 0 },
	{ M64, "jmp far with a register: #UD", { 0xff, 0xe8 }, 2, 0, 0, 0 },
	{ M64, "repz ret", { 0xf3, 0xc3 }, 2, 2, VMPT_IC_RET, 0 },
	{ M64, "ret imm16", { 0xc2, 0x08, 0x00 }, 3, 3, VMPT_IC_RET, 0 },
	{ M64, "lretq", { 0x48, 0xcb }, 2, 2, VMPT_IC_FAR_RET, 0 },
	{ M64, "iretq", { 0x48, 0xcf }, 2, 2, VMPT_IC_IRET, 0 },
	{ M64, "int3", { 0xcc }, 1, 1, VMPT_IC_INT, 0 },
	{ M64, "int 0x80", { 0xcd, 0x80 }, 2, 2, VMPT_IC_INT, 0 },
	{ M64, "int1", { 0xf1 }, 1, 1, VMPT_IC_INT, 0 },
	{ M64, "syscall", { 0x0f, 0x05 }, 2, 2, VMPT_IC_SYSCALL, 0 },
	{ M64, "sysretq", { 0x48, 0x0f, 0x07 }, 3, 3, VMPT_IC_SYSRET, 0 },
	{ M64, "sysenter", { 0x0f, 0x34 }, 2, 2, VMPT_IC_SYSCALL, 0 },
	{ M64, "vmlaunch", { 0x0f, 0x01, 0xc2 }, 3, 3, VMPT_IC_VMENTRY, 0 },
	{ M64, "vmresume", { 0x0f, 0x01, 0xc3 }, 3, 3, VMPT_IC_VMENTRY, 0 },
	{ M64, "vmcall", { 0x0f, 0x01, 0xc1 }, 3, 3, VMPT_IC_FAR_CALL, 0 },
	{ M64, "uiret", { 0xf3, 0x0f, 0x01, 0xec }, 4, 4, VMPT_IC_IRET, 0 },
	{ M64, "wait (fwait before fninit is its own instruction)", { 0x9b, 0xdb, 0xe3 }, 3, 1, VMPT_IC_OTHER, 0 },
	{ M64, "ud2", { 0x0f, 0x0b }, 2, 2, VMPT_IC_OTHER, 0 },
	{ M64, "xbegin rel32 is no branch in the trace", { 0xc7, 0xf8, 0, 0, 0, 0 }, 6, 6, VMPT_IC_OTHER, 0 },
	{ M64, "push es: not in 64-bit mode", { 0x06 }, 1, 0, 0, 0 },
	{ M64, "truncated", { 0x48, 0x8b, 0x04 }, 3, 0, 0, 0 },
	{ M64, "15 prefixes: too long", { 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
					  0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x90 }, 15, 15, VMPT_IC_OTHER, 0 },
	{ M64, "16 bytes: too long", { 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
				       0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x90 }, 16, 0, 0, 0 },

	{ M32, "inc eax (40: no REX)", { 0x40 }, 1, 1, VMPT_IC_OTHER, 0 },
	{ M32, "les (C4 with mod != 3)", { 0xc4, 0x00 }, 2, 2, VMPT_IC_OTHER, 0 },
	{ M32, "VEX vzeroupper", { 0xc5, 0xf8, 0x77 }, 3, 3, VMPT_IC_OTHER, 0 },
	{ M32, "bound (62 with mod != 3)", { 0x62, 0x00 }, 2, 2, VMPT_IC_OTHER, 0 },
	{ M32, "EVEX vpxord", { 0x62, 0xf1, 0x7d, 0x48, 0xef, 0xc0 }, 6, 6, VMPT_IC_OTHER, 0 },
	{ M32, "mov al, moffs32", { 0xa0, 1, 2, 3, 4 }, 5, 5, VMPT_IC_OTHER, 0 },
	{ M32, "mov al, moffs16 (67)", { 0x67, 0xa0, 1, 2 }, 4, 4, VMPT_IC_OTHER, 0 },
	{ M32, "16-bit addressing [bp+si+disp16]", { 0x67, 0x8b, 0x82, 1, 2 }, 5, 5, VMPT_IC_OTHER, 0 },
	{ M32, "ljmp ptr16:32", { 0xea, 1, 2, 3, 4, 5, 6 }, 7, 7, VMPT_IC_FAR_JMP, 0 },
	{ M32, "lcall ptr16:16 (66)", { 0x66, 0x9a, 1, 2, 3, 4 }, 6, 6, VMPT_IC_FAR_CALL, 0 },
	{ M32, "66 jmp rel16", { 0x66, 0xe9, 0x10, 0x00 }, 4, 4, VMPT_IC_JMP, 0x1014 },
	{ M32, "call rel32 wraps at 4 GiB", { 0xe8, 0xfa, 0xef, 0xff, 0xff }, 5, 5, VMPT_IC_CALL, 0xffffffff },
	{ M32, "into", { 0xce }, 1, 1, VMPT_IC_INT, 0 },

	{ M16, "mov ax, imm16", { 0xb8, 1, 2 }, 3, 3, VMPT_IC_OTHER, 0 },
	{ M16, "mov eax, imm32 (66)", { 0x66, 0xb8, 1, 2, 3, 4 }, 6, 6, VMPT_IC_OTHER, 0 },
	{ M16, "[disp16] (mod 0, rm 6)", { 0x8b, 0x06, 1, 2 }, 4, 4, VMPT_IC_OTHER, 0 },
	{ M16, "32-bit addressing with SIB (67)", { 0x67, 0x8b, 0x04, 0x24 }, 4, 4, VMPT_IC_OTHER, 0 },
	{ M16, "jmp rel16", { 0xe9, 0xfd, 0xff }, 3, 3, VMPT_IC_JMP, 0x1000 },
	{ M16, "jne rel16 wraps at 64 KiB", { 0x0f, 0x85, 0xfc, 0xef }, 4, 4, VMPT_IC_JCC, 0x0000 },
	{ M16, "ljmp ptr16:16", { 0xea, 1, 2, 3, 4 }, 5, 5, VMPT_IC_FAR_JMP, 0 },
	{ M16, "iret", { 0xcf }, 1, 1, VMPT_IC_IRET, 0 },
};

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct want *w = &cases[i];
		struct vmpt_insn in = { 0 };
		int ret = vmpt_insn_decode(w->bytes, w->n, 0x1000, w->mode, &in);

		print_message("%s\n", w->what);
		if (!w->size) {
			assert_int_equal(ret, -VMPT_ERR_NO_MATCH);
			continue;
		}
		assert_int_equal(ret, 0);
		assert_int_equal(in.size, w->size);
		assert_int_equal(in.iclass, w->iclass);
		if (w->iclass == VMPT_IC_JMP || w->iclass == VMPT_IC_CALL || w->iclass == VMPT_IC_JCC)
			assert_int_equal(in.target, w->target);
	}
}

/* Hostile bytes: random ones of every length up to 15, each in a buffer
 * of exactly that size (ASan reports a read past it); a decoded length
 * never exceeds what was given.
 */
static void test_random_bytes(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (int i = 0; i < 300000; i++) {
		size_t n = (size_t)(i % 15) + 1;
		uint8_t *buf = malloc(n);
		struct vmpt_insn in;

		assert_non_null(buf);
		for (size_t k = 0; k < n; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			/* prefixes and escapes often, so long forms come up */
			buf[k] = (x >> 8) % 4 ? (uint8_t)x :
				 (uint8_t)"\x66\x67\xf3\x48\x0f\x62\xc4\x8f"[x % 8];
		}
		for (unsigned mode = VMPT_MODE_64; mode <= VMPT_MODE_16; mode++)
			if (vmpt_insn_decode(buf, n, 0x1000, mode, &in) == 0)
				assert_true(in.size >= 1 && in.size <= n);
		free(buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_random_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
