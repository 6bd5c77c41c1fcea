/* SPDX-License-Identifier: MIT */
/* The one question the flow decoder asks of x86 code: how long is the
 * instruction at ip, how does it change the flow, and where does a direct
 * branch go.  Internal to the flow decoder.
 *
 * Answered by a table-driven length decoder over the SDM's opcode maps
 * (Vol. 2, Appendix A), as libipt's pt_ild.c and the kernel's insn decoder
 * (perf's intel-pt-insn-decoder.c) do: prefixes, REX, VEX, EVEX, XOP,
 * 3DNow!, ModRM, SIB, displacement, immediate.  No operand is decoded,
 * so every instruction of every extension has its length, and a new
 * extension in an old map needs no change.  Stateless and thread-safe.
 */
#ifndef VMPT_INSN_H
#define VMPT_INSN_H

#include <stddef.h>
#include <stdint.h>

struct vmpt_insn {
	uint8_t size;		/* 1..15 bytes */
	uint8_t iclass;		/* enum vmpt_iclass */
	uint64_t target;	/* direct JMP/CALL/JCC: where it goes (in mode's width) */
};

/* The instruction at ip, whose bytes are code[0, avail), in mode (enum
 * vmpt_exec_mode).  0, or -VMPT_ERR_NO_MATCH: no instruction there (an
 * opcode the mode does not have, or the bytes end before it does).
 */
int vmpt_insn_decode(const uint8_t *code, size_t avail, uint64_t ip,
		     unsigned mode, struct vmpt_insn *insn);

#endif
