/* SPDX-License-Identifier: MIT */
/* x86 instruction length and control flow from the opcode maps of the
 * SDM, Vol. 2, Appendix A (one-byte, 0F, 0F38, 0F3A; VEX, EVEX and XOP
 * maps; AMD's 3DNow!), with Intel's branch semantics: in 64-bit mode a
 * near branch takes a 32-bit displacement whatever its operand size (the
 * hardware that writes Intel PT is Intel's).  docs/decoding.md tells why
 * vmpt has its own length decoder and how it is checked against objdump.
 */
#include "vmpt_insn.h"
#include "vmpt/error.h"
#include "vmpt/flow.h"

#include <string.h>

#define MAX_LEN 15

/* The immediate (or displacement of a relative branch) after ModRM. */
enum imm {
	I_NONE,
	I_B,		/* 8 bits */
	I_W,		/* 16 bits */
	I_Z,		/* 16 or 32 bits by operand size */
	I_V,		/* 16, 32 or 64 bits by operand size (mov reg, imm) */
	I_ENTER,	/* 16 + 8 bits */
	I_MOFFS,	/* an address: by address size */
	I_FAR,		/* ptr16:16 or ptr16:32 */
	I_REL8,		/* 8-bit branch displacement */
	I_RELZ,		/* 16 or 32 bits; 32 in 64-bit mode */
	I_GRP3B,	/* F6: 8 bits for /0 and /1 (test) */
	I_GRP3Z,	/* F7: Z for /0 and /1 (test) */
};

#define IMM(x)	((uint16_t)(x))
#define MODRM	0x10	/* a ModRM byte follows the opcode */
#define INV64	0x20	/* no such opcode in 64-bit mode */
#define PFX	0x40	/* a legacy prefix (one-byte map) */
#define INVAL	0x80	/* no such opcode */
#define CLS(c)	((uint16_t)((c) << 8))
/* Classes beyond enum vmpt_iclass that need the ModRM byte. */
#define C_GRP5	0x1e	/* FF: /2 call, /3 far call, /4 jmp, /5 far jmp */
#define C_GRP7	0x1f	/* 0F 01: vmcall, vmlaunch, vmresume, vmmcall, uiret */
#define C_INVALID 0xff	/* what grp_class finds no instruction in */

#define M	MODRM
#define MB	(MODRM | IMM(I_B))
#define MZ	(MODRM | IMM(I_Z))

static const uint16_t map1[256] = {
	[0x00 ... 0x03] = M, [0x04] = I_B, [0x05] = I_Z, [0x06 ... 0x07] = INV64,
	[0x08 ... 0x0b] = M, [0x0c] = I_B, [0x0d] = I_Z, [0x0e] = INV64,
	[0x10 ... 0x13] = M, [0x14] = I_B, [0x15] = I_Z, [0x16 ... 0x17] = INV64,
	[0x18 ... 0x1b] = M, [0x1c] = I_B, [0x1d] = I_Z, [0x1e ... 0x1f] = INV64,
	[0x20 ... 0x23] = M, [0x24] = I_B, [0x25] = I_Z, [0x26] = PFX, [0x27] = INV64,
	[0x28 ... 0x2b] = M, [0x2c] = I_B, [0x2d] = I_Z, [0x2e] = PFX, [0x2f] = INV64,
	[0x30 ... 0x33] = M, [0x34] = I_B, [0x35] = I_Z, [0x36] = PFX, [0x37] = INV64,
	[0x38 ... 0x3b] = M, [0x3c] = I_B, [0x3d] = I_Z, [0x3e] = PFX, [0x3f] = INV64,
	[0x60 ... 0x61] = INV64, [0x62] = M | INV64, [0x63] = M,
	[0x64 ... 0x67] = PFX,
	[0x68] = I_Z, [0x69] = MZ, [0x6a] = I_B, [0x6b] = MB,
	[0x70 ... 0x7f] = I_REL8 | CLS(VMPT_IC_JCC),
	[0x80] = MB, [0x81] = MZ, [0x82] = MB | INV64, [0x83] = MB,
	[0x84 ... 0x8f] = M,
	[0x9a] = I_FAR | INV64 | CLS(VMPT_IC_FAR_CALL),
	[0xa0 ... 0xa3] = I_MOFFS, [0xa8] = I_B, [0xa9] = I_Z,
	[0xb0 ... 0xb7] = I_B, [0xb8 ... 0xbf] = I_V,
	[0xc0 ... 0xc1] = MB, [0xc2] = I_W | CLS(VMPT_IC_RET), [0xc3] = CLS(VMPT_IC_RET),
	[0xc4 ... 0xc5] = M | INV64, [0xc6] = MB, [0xc7] = MZ, [0xc8] = I_ENTER,
	[0xca] = I_W | CLS(VMPT_IC_FAR_RET), [0xcb] = CLS(VMPT_IC_FAR_RET),
	[0xcc] = CLS(VMPT_IC_INT), [0xcd] = I_B | CLS(VMPT_IC_INT),
	[0xce] = INV64 | CLS(VMPT_IC_INT), [0xcf] = CLS(VMPT_IC_IRET),
	[0xd0 ... 0xd3] = M, [0xd4 ... 0xd5] = I_B | INV64, [0xd6] = INV64,
	[0xd8 ... 0xdf] = M,
	[0xe0 ... 0xe3] = I_REL8 | CLS(VMPT_IC_JCC), [0xe4 ... 0xe7] = I_B,
	[0xe8] = I_RELZ | CLS(VMPT_IC_CALL), [0xe9] = I_RELZ | CLS(VMPT_IC_JMP),
	[0xea] = I_FAR | INV64 | CLS(VMPT_IC_FAR_JMP), [0xeb] = I_REL8 | CLS(VMPT_IC_JMP),
	[0xf0] = PFX, [0xf1] = CLS(VMPT_IC_INT), [0xf2 ... 0xf3] = PFX,
	[0xf6] = M | I_GRP3B, [0xf7] = M | I_GRP3Z, [0xfe] = M, [0xff] = M | CLS(C_GRP5),
};

static const uint16_t map0f[256] = {
	[0x00] = M, [0x01] = M | CLS(C_GRP7), [0x02 ... 0x03] = M, [0x04] = INVAL,
	[0x05] = CLS(VMPT_IC_SYSCALL), [0x07] = CLS(VMPT_IC_SYSRET),
	[0x0a] = INVAL, [0x0c] = INVAL, [0x0d] = M,
	[0x10 ... 0x1f] = M,
	/* mov to/from CR and DR (regonly: ModRM always names registers, no
	 * SIB or displacement whatever mod says).
	 */
	[0x20 ... 0x23] = M, [0x24 ... 0x27] = INVAL, [0x28 ... 0x2f] = M,
	[0x34] = CLS(VMPT_IC_SYSCALL), [0x35] = CLS(VMPT_IC_SYSRET), [0x36] = INVAL,
	[0x39] = INVAL, [0x3b ... 0x3f] = INVAL,
	[0x40 ... 0x6f] = M, [0x70 ... 0x73] = MB, [0x74 ... 0x76] = M,
	[0x78 ... 0x79] = M, [0x7a ... 0x7b] = INVAL, [0x7c ... 0x7f] = M,
	[0x80 ... 0x8f] = I_RELZ | CLS(VMPT_IC_JCC),
	[0x90 ... 0x9f] = M,
	[0xa3] = M, [0xa4] = MB, [0xa5] = M, [0xa6 ... 0xa7] = INVAL,
	[0xab] = M, [0xac] = MB, [0xad ... 0xaf] = M,
	[0xb0 ... 0xb9] = M, [0xba] = MB, [0xbb ... 0xc1] = M, [0xc2] = MB, [0xc3] = M,
	[0xc4 ... 0xc6] = MB, [0xc7] = M,
	[0xd0 ... 0xff] = M,
};

static int vex_map1_imm(uint8_t op)
{
	return (op >= 0x70 && op <= 0x73) || op == 0xc2 || (op >= 0xc4 && op <= 0xc6);
}

static inline int64_t sext(const uint8_t *p, unsigned n)
{
	switch (n) {
	case 1: return (int8_t)p[0];
	case 2: return (int16_t)(p[0] | p[1] << 8);
	default: {
		uint32_t v;

		memcpy(&v, p, 4);
		return (int32_t)v;
	}
	}
}

/* The bytes of ModRM, SIB and displacement at p (ModRM first). */
static inline unsigned modrm_len(const uint8_t *p, size_t avail, unsigned adsz)
{
	unsigned mod = p[0] >> 6, rm = p[0] & 7;

	if (mod == 3)
		return 1;
	if (adsz == 2)
		return mod == 1 ? 2 : mod == 2 || rm == 6 ? 3 : 1;
	if (rm == 4) {
		if (avail < 2)
			return MAX_LEN + 1;
		if (mod == 0 && (p[1] & 7) == 5)
			return 6;
		return mod == 1 ? 3 : mod == 2 ? 6 : 2;
	}
	return mod == 1 ? 2 : mod == 2 || rm == 5 ? 5 : 1;
}

static unsigned grp_class(unsigned cls, uint8_t modrm, unsigned rep, unsigned opsz66)
{
	unsigned reg = (modrm >> 3) & 7;

	if (cls == C_GRP5) {
		switch (reg) {
		case 2: return VMPT_IC_CALL_IND;
		case 4: return VMPT_IC_JMP_IND;
		/* far with a register operand, and /7: #UD */
		case 3: return modrm < 0xc0 ? VMPT_IC_FAR_CALL : C_INVALID;
		case 5: return modrm < 0xc0 ? VMPT_IC_FAR_JMP : C_INVALID;
		case 7: return C_INVALID;
		default: return VMPT_IC_OTHER;
		}
	}
	if (rep || opsz66)
		return rep == 0xf3 && !opsz66 && modrm == 0xec ? VMPT_IC_IRET : VMPT_IC_OTHER;
	switch (modrm) {
	case 0xc1:	/* vmcall */
	case 0xd9:	/* vmmcall */
		return VMPT_IC_FAR_CALL;
	case 0xc2:	/* vmlaunch */
	case 0xc3:	/* vmresume */
		return VMPT_IC_VMENTRY;
	default:
		return VMPT_IC_OTHER;
	}
}

int vmpt_insn_decode(const uint8_t *code, size_t avail, uint64_t ip,
		     unsigned mode, struct vmpt_insn *insn)
{
	const int m64 = mode == VMPT_MODE_64;
	size_t n = avail < MAX_LEN ? avail : MAX_LEN, i = 0;
	unsigned rex_w = 0, opsz66 = 0, adsz67 = 0, rep = 0;
	unsigned opsz, adsz, cls, imm, len, regonly = 0;
	uint16_t e;
	uint8_t op, modrm = 0;

	/* Legacy prefixes, then in 64-bit mode REX (which counts only
	 * right before the opcode).
	 */
	for (;; i++) {
		if (i >= n)
			return -VMPT_ERR_NO_MATCH;
		op = code[i];
		if (map1[op] & PFX) {
			rex_w = 0;
			if (op == 0x66)
				opsz66 = 1;
			else if (op == 0x67)
				adsz67 = 1;
			else if (op == 0xf2 || op == 0xf3)
				rep = op;
			continue;
		}
		if (m64 && (op & 0xf0) == 0x40) {
			rex_w = op & 8;
			continue;
		}
		break;
	}
	i++;
	if (m64) {
		opsz = rex_w ? 8 : opsz66 ? 2 : 4;
		adsz = adsz67 ? 4 : 8;
	} else {
		opsz = (mode == VMPT_MODE_16) ^ opsz66 ? 2 : 4;
		adsz = (mode == VMPT_MODE_16) ^ adsz67 ? 2 : 4;
	}
	/* Escapes: 0F maps; VEX (C4, C5), EVEX (62) outside 64-bit mode
	 * only where LES, LDS, BOUND could not be (ModRM.mod = 3); XOP (8F)
	 * where POP could not be (ModRM.reg != 0).
	 */
	if (op == 0x0f) {
		if (i >= n)
			return -VMPT_ERR_NO_MATCH;
		op = code[i++];
		if (op == 0x38) {
			e = MODRM;
			i++;
		} else if (op == 0x3a) {
			e = MB;
			i++;
		} else if (op == 0x0f) {
			e = MB;		/* 3DNow!: the opcode is the immediate */
		} else {
			e = map0f[op];
			regonly = op >= 0x20 && op <= 0x23;
			if (op == 0x78 && (opsz66 || rep == 0xf2))
				e = M | IMM(I_W);	/* extrq/insertq ib, ib */
		}
	} else if ((op == 0xc4 || op == 0xc5 || op == 0x62) &&
		   (m64 || (i < n && code[i] >= 0xc0))) {
		unsigned map, evex = op == 0x62;

		if (op == 0xc5) {
			map = 1;
			i += 1;
		} else if (op == 0xc4) {
			if (i >= n)
				return -VMPT_ERR_NO_MATCH;
			map = code[i] & 0x1f;
			i += 2;
		} else {
			if (i >= n)
				return -VMPT_ERR_NO_MATCH;
			map = code[i] & 0xf;
			i += 3;
			if (map >= 4 && map != 5 && map != 6)
				return -VMPT_ERR_NO_MATCH;
		}
		if (i >= n)
			return -VMPT_ERR_NO_MATCH;
		op = code[i++];
		if (map == 1)
			e = op == 0x77 && !evex ? 0 :	/* vzeroupper/all */
			    vex_map1_imm(op) ? MB : M;
		else if (map == 2 || map == 5 || map == 6)
			e = M;
		else if (map == 3)
			e = MB;
		else
			return -VMPT_ERR_NO_MATCH;
	} else if (op == 0x8f && i < n && (code[i] & 0x1f) >= 8) {
		unsigned map = code[i] & 0x1f;

		i += 2;
		if (i >= n)
			return -VMPT_ERR_NO_MATCH;
		op = code[i++];
		if (map == 8)
			e = MB;
		else if (map == 9)
			e = M;
		else if (map == 0xa)
			e = M | IMM(I_Z);
		else
			return -VMPT_ERR_NO_MATCH;
		opsz = 4;
	} else {
		e = map1[op];
		if (m64 && (e & INV64))
			return -VMPT_ERR_NO_MATCH;
	}
	if (e & INVAL)
		return -VMPT_ERR_NO_MATCH;
	cls = e >> 8;
	imm = e & 0xf;
	len = (unsigned)i;
	if (e & MODRM) {
		if (i >= n)
			return -VMPT_ERR_NO_MATCH;
		modrm = code[i];
		len += regonly ? 1 : modrm_len(code + i, n - i, adsz);
		if (cls >= C_GRP5) {
			cls = grp_class(cls, modrm, rep, opsz66);
			if (cls == C_INVALID)
				return -VMPT_ERR_NO_MATCH;
		}
	}
	switch (imm) {
	case I_NONE: break;
	case I_B: len += 1; break;
	case I_W: len += 2; break;
	case I_Z: len += opsz == 2 ? 2 : 4; break;
	case I_V: len += opsz; break;
	case I_ENTER: len += 3; break;
	case I_MOFFS: len += adsz; break;
	case I_FAR: len += opsz == 2 ? 4 : 6; break;
	case I_REL8: len += 1; break;
	case I_RELZ: len += m64 || opsz == 4 ? 4 : 2; break;
	case I_GRP3B: len += ((modrm >> 3) & 7) < 2; break;
	case I_GRP3Z: len += ((modrm >> 3) & 7) < 2 ? (opsz == 2 ? 2 : 4) : 0; break;
	}
	if (len > n)
		return -VMPT_ERR_NO_MATCH;
	insn->size = (uint8_t)len;
	insn->iclass = (uint8_t)cls;
	insn->target = 0;
	if (imm == I_REL8 || imm == I_RELZ) {
		unsigned d = imm == I_REL8 ? 1 : m64 || opsz == 4 ? 4 : 2;
		uint64_t to = ip + len + (uint64_t)sext(code + len - d, d);

		insn->target = m64 ? to : mode == VMPT_MODE_32 ? (uint32_t)to : (uint16_t)to;
	}
	return 0;
}
