/* SPDX-License-Identifier: MIT */
/* Decoding single Intel PT packets, opcode by opcode as the SDM lays them out
 * (Vol. 3C, "Packet Definitions").  Called once per packet: no allocation.
 * The common one-opcode-byte packets go through a table (vmpt_packet_fast.h);
 * the rest through one switch on the first byte, one on the extended opcode.
 */
#include "vmpt/packet.h"
#include "vmpt/error.h"
#include "vmpt_packet_fast.h"

#include <string.h>

/* Little-endian read of n (<= 8) bytes. */
static inline uint64_t read_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i > 0; i--)
		v = (v << 8) | p[i - 1];
	return v;
}

static inline int need(const uint8_t *pos, const uint8_t *end, unsigned n)
{
	return (size_t)(end - pos) < n;
}

static const uint8_t psb_pattern[VMPT_PKT_MAX_SIZE] = {
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
};

static int ip_bytes(unsigned ipc)
{
	switch (ipc) {
	case VMPT_IPC_SUPPRESSED: return 0;
	case VMPT_IPC_UPDATE_16: return 2;
	case VMPT_IPC_UPDATE_32: return 4;
	case VMPT_IPC_SEXT_48: return 6;
	case VMPT_IPC_UPDATE_48: return 6;
	case VMPT_IPC_FULL: return 8;
	}
	return -VMPT_ERR_BAD_PACKET;
}

static int decode_ip(const uint8_t *pos, const uint8_t *end, unsigned type,
		     struct vmpt_packet *pkt)
{
	unsigned ipc = pos[0] >> 5;
	int n = ip_bytes(ipc);

	if (n < 0)
		return n;
	if (need(pos, end, 1 + n))
		return -VMPT_ERR_TRUNCATED;
	pkt->type = type;
	pkt->ip.ipc = ipc;
	pkt->ip.ip = read_le(pos + 1, n);
	return 1 + n;
}

static int decode_tnt8(uint8_t byte, struct vmpt_packet *pkt)
{
	/* The stop bit is the highest set bit; the TNT bits sit between it
	 * and bit 0 (which is the 0 of the header). */
	int stop = 31 - __builtin_clz(byte);

	pkt->type = VMPT_PKT_TNT8;
	pkt->tnt.count = stop - 1;
	pkt->tnt.bits = (byte >> 1) & ((1u << (stop - 1)) - 1);
	return 1;
}

static int decode_cyc(const uint8_t *pos, const uint8_t *end,
		      struct vmpt_packet *pkt)
{
	uint64_t value = pos[0] >> 3;
	unsigned shift = 5;
	const uint8_t *p = pos;

	if (pos[0] & 0x4) {
		do {
			if (++p >= end)
				return -VMPT_ERR_TRUNCATED;
			if (shift >= 64)
				return -VMPT_ERR_BAD_PACKET;
			value |= (uint64_t)(*p >> 1) << shift;
			shift += 7;
		} while (*p & 1);
	}
	pkt->type = VMPT_PKT_CYC;
	pkt->cyc = value;
	return (int)(p - pos) + 1;
}

static int decode_ext(const uint8_t *pos, const uint8_t *end, unsigned ctx,
		      struct vmpt_packet *pkt)
{
	uint8_t op;
	uint64_t v;

	(void)ctx;
	if (need(pos, end, 2))
		return -VMPT_ERR_TRUNCATED;
	op = pos[1];

	/* PTWRITE: the low five bits name it, the rest are fields. */
	if ((op & 0x1f) == 0x12) {
		unsigned plc = (op >> 5) & 3;
		unsigned n = plc == 0 ? 4 : plc == 1 ? 8 : 0;

		if (!n)
			return -VMPT_ERR_BAD_PACKET;
		if (need(pos, end, 2 + n))
			return -VMPT_ERR_TRUNCATED;
		pkt->type = VMPT_PKT_PTW;
		pkt->ptw.plc = plc;
		pkt->ptw.ip = op >> 7;
		pkt->ptw.payload = read_le(pos + 2, n);
		return 2 + n;
	}

	switch (op) {
	case 0x82:
		if (need(pos, end, VMPT_PKT_MAX_SIZE))
			return -VMPT_ERR_TRUNCATED;
		if (memcmp(pos, psb_pattern, VMPT_PKT_MAX_SIZE) != 0)
			return -VMPT_ERR_BAD_PACKET;
		pkt->type = VMPT_PKT_PSB;
		return VMPT_PKT_MAX_SIZE;
	case 0x23:
		pkt->type = VMPT_PKT_PSBEND;
		return 2;
	case 0xf3:
		pkt->type = VMPT_PKT_OVF;
		return 2;
	case 0x83:
		pkt->type = VMPT_PKT_STOP;
		return 2;
	case 0xa3:
		if (need(pos, end, 8))
			return -VMPT_ERR_TRUNCATED;
		v = read_le(pos + 2, 6);
		/* A stop bit alone carries no branch: libipt rejects it too. */
		if (v <= 1)
			return -VMPT_ERR_BAD_PACKET;
		pkt->type = VMPT_PKT_TNT64;
		pkt->tnt.count = 63 - __builtin_clzll(v);
		pkt->tnt.bits = v & ((1ull << pkt->tnt.count) - 1);
		return 8;
	case 0x43:
		if (need(pos, end, 8))
			return -VMPT_ERR_TRUNCATED;
		v = read_le(pos + 2, 6);
		pkt->type = VMPT_PKT_PIP;
		pkt->pip.nr = v & 1;
		pkt->pip.cr3 = (v >> 1) << 5;
		return 8;
	case 0xc8:
		if (need(pos, end, 7))
			return -VMPT_ERR_TRUNCATED;
		pkt->type = VMPT_PKT_VMCS;
		pkt->vmcs = read_le(pos + 2, 5) << 12;
		return 7;
	case 0x03:
		if (need(pos, end, 4))
			return -VMPT_ERR_TRUNCATED;
		pkt->type = VMPT_PKT_CBR;
		pkt->cbr = pos[2];
		return 4;
	case 0x73:
		if (need(pos, end, 7))
			return -VMPT_ERR_TRUNCATED;
		/* Byte 4 and FC's top byte above bit 0 are reserved (zero in
		 * every hardware trace); like libipt, take others for garbage. */
		if (pos[4] || (pos[6] & 0xfe))
			return -VMPT_ERR_BAD_PACKET;
		pkt->type = VMPT_PKT_TMA;
		pkt->tma.ctc = (uint16_t)read_le(pos + 2, 2);
		pkt->tma.fc = (uint16_t)(read_le(pos + 5, 2) & 0x1ff);
		return 7;
	case 0xc3:
		if (need(pos, end, 3))
			return -VMPT_ERR_TRUNCATED;
		if (pos[2] != 0x88)
			return -VMPT_ERR_BAD_OPC;
		if (need(pos, end, 11))
			return -VMPT_ERR_TRUNCATED;
		pkt->type = VMPT_PKT_MNT;
		pkt->mnt = read_le(pos + 3, 8);
		return 11;
	case 0x62:
	case 0xe2:
		pkt->type = VMPT_PKT_EXSTOP;
		pkt->exstop.ip = op >> 7;
		return 2;
	case 0xc2:
		if (need(pos, end, 10))
			return -VMPT_ERR_TRUNCATED;
		pkt->type = VMPT_PKT_MWAIT;
		pkt->mwait.hints = (uint32_t)read_le(pos + 2, 4);
		pkt->mwait.ext = (uint32_t)read_le(pos + 6, 4);
		return 10;
	case 0x22:
		if (need(pos, end, 4))
			return -VMPT_ERR_TRUNCATED;
		pkt->type = VMPT_PKT_PWRE;
		pkt->pwre.hw = pos[2] >> 7;
		pkt->pwre.state = pos[3] >> 4;
		pkt->pwre.sub_state = pos[3] & 0xf;
		return 4;
	case 0xa2:
		if (need(pos, end, 7))
			return -VMPT_ERR_TRUNCATED;
		pkt->type = VMPT_PKT_PWRX;
		pkt->pwrx.last = pos[2] >> 4;
		pkt->pwrx.deepest = pos[2] & 0xf;
		pkt->pwrx.wake = pos[3] & 0xf;
		return 7;
	case 0x63:
		if (need(pos, end, 3))
			return -VMPT_ERR_TRUNCATED;
		pkt->type = VMPT_PKT_BBP;
		pkt->bbp.sz = pos[2] >> 7;
		pkt->bbp.type = pos[2] & 0x1f;
		return 3;
	case 0x33:
	case 0xb3:
		pkt->type = VMPT_PKT_BEP;
		pkt->bep.ip = op >> 7;
		return 2;
	case 0x13:
		if (need(pos, end, 4))
			return -VMPT_ERR_TRUNCATED;
		pkt->type = VMPT_PKT_CFE;
		pkt->cfe.ip = pos[2] >> 7;
		pkt->cfe.type = pos[2] & 0x1f;
		pkt->cfe.vector = pos[3];
		return 4;
	case 0x53:
		if (need(pos, end, 11))
			return -VMPT_ERR_TRUNCATED;
		pkt->type = VMPT_PKT_EVD;
		pkt->evd.type = pos[2] & 0x3f;
		pkt->evd.payload = read_le(pos + 3, 8);
		return 11;
	}
	return -VMPT_ERR_BAD_OPC;
}

static int decode_slow(const uint8_t *pos, const uint8_t *end, unsigned ctx,
		       struct vmpt_packet *pkt)
{
	uint8_t byte;

	if (pos >= end)
		return -VMPT_ERR_EOS;
	byte = pos[0];

	if ((byte & 1) == 0) {
		if (byte == 0x00) {
			pkt->type = VMPT_PKT_PAD;
			return pkt->size = 1;
		}
		if (byte == 0x02) {
			int n = decode_ext(pos, end, ctx, pkt);

			if (n > 0)
				pkt->size = n;
			return n;
		}
		if (ctx != VMPT_CTX_NONE && (byte & 7) == 4) {
			unsigned n = ctx == VMPT_CTX_BLK4 ? 4 : 8;

			if (need(pos, end, 1 + n))
				return -VMPT_ERR_TRUNCATED;
			pkt->type = VMPT_PKT_BIP;
			pkt->bip.id = byte >> 3;
			pkt->bip.value = read_le(pos + 1, n);
			return pkt->size = 1 + n;
		}
		return pkt->size = decode_tnt8(byte, pkt);
	}

	if ((byte & 3) == 3) {
		int n = decode_cyc(pos, end, pkt);

		if (n > 0)
			pkt->size = n;
		return n;
	}

	switch (byte & 0x1f) {
	case 0x0d:
	case 0x11:
	case 0x01:
	case 0x1d: {
		static const uint8_t types[32] = {
			[0x0d] = VMPT_PKT_TIP, [0x11] = VMPT_PKT_TIP_PGE,
			[0x01] = VMPT_PKT_TIP_PGD, [0x1d] = VMPT_PKT_FUP,
		};
		int n = decode_ip(pos, end, types[byte & 0x1f], pkt);

		if (n > 0)
			pkt->size = n;
		return n;
	}
	}

	switch (byte) {
	case 0x19:
		if (need(pos, end, 8))
			return -VMPT_ERR_TRUNCATED;
		pkt->type = VMPT_PKT_TSC;
		pkt->tsc = read_le(pos + 1, 7);
		return pkt->size = 8;
	case 0x59:
		if (need(pos, end, 2))
			return -VMPT_ERR_TRUNCATED;
		pkt->type = VMPT_PKT_MTC;
		pkt->mtc = pos[1];
		return pkt->size = 2;
	case 0x99:
		if (need(pos, end, 2))
			return -VMPT_ERR_TRUNCATED;
		switch (pos[1] >> 5) {
		case 0:
			pkt->type = VMPT_PKT_MODE_EXEC;
			pkt->exec.csl = pos[1] & 1;
			pkt->exec.csd = (pos[1] >> 1) & 1;
			pkt->exec.iflag = (pos[1] >> 2) & 1;
			break;
		case 1:
			pkt->type = VMPT_PKT_MODE_TSX;
			pkt->tsx.intx = pos[1] & 1;
			pkt->tsx.abrt = (pos[1] >> 1) & 1;
			break;
		default:
			return -VMPT_ERR_BAD_PACKET;
		}
		return pkt->size = 2;
	}
	return -VMPT_ERR_BAD_OPC;
}

uint32_t vmpt_pkt_fast_table[256];

/* Derive the fast table from the full decoder, so the two cannot disagree:
 * a byte is fast when the full decoder, outside a block, gives it one of the
 * types below with a size that depends on that byte alone.  Until this runs
 * the table is all zero, which sends every byte to the full decoder.
 */
__attribute__((constructor)) static void fill_fast_table(void)
{
	for (unsigned b = 0; b < 256; b++) {
		uint8_t bytes[VMPT_PKT_FAST_READ] = { (uint8_t)b };
		struct vmpt_packet pkt;
		int n = decode_slow(bytes, bytes + sizeof(bytes), VMPT_CTX_NONE, &pkt);
		unsigned aux = 0;
		uint64_t bits = 0;

		if (n <= 0)
			continue;
		switch (pkt.type) {
		case VMPT_PKT_PAD:
		case VMPT_PKT_TSC:
		case VMPT_PKT_MTC:
			break;
		case VMPT_PKT_TNT8:
			bits = pkt.tnt.bits;
			aux = pkt.tnt.count;
			break;
		case VMPT_PKT_CYC:
			if (n != 1)
				continue;	/* multi-byte: size depends on the payload */
			bits = pkt.cyc;
			break;
		case VMPT_PKT_TIP:
		case VMPT_PKT_TIP_PGE:
		case VMPT_PKT_TIP_PGD:
		case VMPT_PKT_FUP:
			aux = pkt.ip.ipc;
			break;
		default:
			continue;
		}
		vmpt_pkt_fast_table[b] = VMPT_PKT_FAST(pkt.type, n, aux, bits);
	}
}

int vmpt_pkt_decode(const uint8_t *pos, const uint8_t *end, unsigned ctx,
		    struct vmpt_packet *pkt)
{
	if (ctx == VMPT_CTX_NONE && end - pos >= VMPT_PKT_FAST_READ) {
		int n = vmpt_pkt_decode_fast(pos, pkt);

		if (n)
			return n;
	}
	return decode_slow(pos, end, ctx, pkt);
}

unsigned vmpt_pkt_next_ctx(unsigned ctx, const struct vmpt_packet *pkt)
{
	switch (pkt->type) {
	case VMPT_PKT_BBP:
		return pkt->bbp.sz ? VMPT_CTX_BLK4 : VMPT_CTX_BLK8;
	/* Packets that may sit inside a block without ending it. */
	case VMPT_PKT_BIP:
	case VMPT_PKT_PAD:
	case VMPT_PKT_TSC:
	case VMPT_PKT_TMA:
	case VMPT_PKT_MTC:
	case VMPT_PKT_CYC:
	case VMPT_PKT_CBR:
	case VMPT_PKT_MNT:
	case VMPT_PKT_FUP:
	case VMPT_PKT_EXSTOP:
	case VMPT_PKT_PWRE:
	case VMPT_PKT_PWRX:
		return ctx;
	default:
		return VMPT_CTX_NONE;
	}
}

/* Like libipt, take the last 16 bytes of a longer run of the PSB pattern:
 * the bytes before a real PSB can end in 02 82 (an IP payload, say), but the
 * packet after it never starts with 02 82 (that would be another PSB).
 */
const uint8_t *vmpt_pkt_find_psb(const uint8_t *pos, const uint8_t *end)
{
	while (pos < end && (size_t)(end - pos) >= VMPT_PKT_MAX_SIZE) {
		const uint8_t *p = memchr(pos, 0x82, (size_t)(end - pos));
		const uint8_t *run_end;

		if (!p)
			return NULL;
		if (p == pos || p[-1] != 0x02) {
			pos = p + 1;
			continue;
		}
		if ((size_t)(end - (p - 1)) < VMPT_PKT_MAX_SIZE)
			return NULL;
		if (memcmp(p - 1, psb_pattern, VMPT_PKT_MAX_SIZE) != 0) {
			pos = p + 1;
			continue;
		}
		run_end = p - 1 + VMPT_PKT_MAX_SIZE;
		while (end - run_end >= 2 && run_end[0] == 0x02 && run_end[1] == 0x82)
			run_end += 2;
		return run_end - VMPT_PKT_MAX_SIZE;
	}
	return NULL;
}
