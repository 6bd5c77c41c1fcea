/* SPDX-License-Identifier: MIT */
/* Encoding Intel PT packets: the inverse of pt_packet.c, used by the trace
 * synthesizer and by tests.
 */
#include "vmpt/packet.h"
#include "vmpt/error.h"

#include <string.h>

static void write_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static int ipc_bytes(unsigned ipc)
{
	switch (ipc) {
	case VMPT_IPC_SUPPRESSED: return 0;
	case VMPT_IPC_UPDATE_16: return 2;
	case VMPT_IPC_UPDATE_32: return 4;
	case VMPT_IPC_SEXT_48:
	case VMPT_IPC_UPDATE_48: return 6;
	case VMPT_IPC_FULL: return 8;
	}
	return -VMPT_ERR_INVAL;
}

static int ext(uint8_t *buf, uint8_t op)
{
	buf[0] = 0x02;
	buf[1] = op;
	return 2;
}

int vmpt_pkt_encode(uint8_t *buf, size_t cap, const struct vmpt_packet *pkt)
{
	uint8_t b[VMPT_PKT_MAX_SIZE];
	int n;

	memset(b, 0, sizeof(b));
	switch (pkt->type) {
	case VMPT_PKT_PAD:
		n = 1;
		break;
	case VMPT_PKT_PSB:
		for (n = 0; n < VMPT_PKT_MAX_SIZE; n += 2)
			ext(b + n, 0x82);
		break;
	case VMPT_PKT_PSBEND:
		n = ext(b, 0x23);
		break;
	case VMPT_PKT_OVF:
		n = ext(b, 0xf3);
		break;
	case VMPT_PKT_STOP:
		n = ext(b, 0x83);
		break;
	case VMPT_PKT_TNT8:
		if (pkt->tnt.count < 1 || pkt->tnt.count > 6)
			return -VMPT_ERR_INVAL;
		b[0] = (uint8_t)(((pkt->tnt.bits & ((1u << pkt->tnt.count) - 1)) |
				  (1u << pkt->tnt.count)) << 1);
		n = 1;
		break;
	case VMPT_PKT_TNT64:
		if (pkt->tnt.count < 1 || pkt->tnt.count > 47)
			return -VMPT_ERR_INVAL;
		ext(b, 0xa3);
		write_le(b + 2, (pkt->tnt.bits & ((1ull << pkt->tnt.count) - 1)) |
				(1ull << pkt->tnt.count), 6);
		n = 8;
		break;
	case VMPT_PKT_TIP:
	case VMPT_PKT_TIP_PGE:
	case VMPT_PKT_TIP_PGD:
	case VMPT_PKT_FUP: {
		static const uint8_t op[VMPT_PKT_TYPE_COUNT] = {
			[VMPT_PKT_TIP] = 0x0d, [VMPT_PKT_TIP_PGE] = 0x11,
			[VMPT_PKT_TIP_PGD] = 0x01, [VMPT_PKT_FUP] = 0x1d,
		};
		int ipb = ipc_bytes(pkt->ip.ipc);

		if (ipb < 0)
			return ipb;
		b[0] = (uint8_t)(op[pkt->type] | (pkt->ip.ipc << 5));
		write_le(b + 1, pkt->ip.ip, (unsigned)ipb);
		n = 1 + ipb;
		break;
	}
	case VMPT_PKT_MODE_EXEC:
		b[0] = 0x99;
		b[1] = (uint8_t)((pkt->exec.csl & 1) | (pkt->exec.csd & 1) << 1 |
				 (pkt->exec.iflag & 1) << 2);
		n = 2;
		break;
	case VMPT_PKT_MODE_TSX:
		b[0] = 0x99;
		b[1] = (uint8_t)(0x20 | (pkt->tsx.intx & 1) | (pkt->tsx.abrt & 1) << 1);
		n = 2;
		break;
	case VMPT_PKT_PIP:
		if (pkt->pip.cr3 & 0x1f)
			return -VMPT_ERR_INVAL;
		ext(b, 0x43);
		write_le(b + 2, ((pkt->pip.cr3 >> 5) << 1) | (pkt->pip.nr & 1), 6);
		n = 8;
		break;
	case VMPT_PKT_VMCS:
		if (pkt->vmcs & 0xfff)
			return -VMPT_ERR_INVAL;
		ext(b, 0xc8);
		write_le(b + 2, pkt->vmcs >> 12, 5);
		n = 7;
		break;
	case VMPT_PKT_TSC:
		b[0] = 0x19;
		write_le(b + 1, pkt->tsc, 7);
		n = 8;
		break;
	case VMPT_PKT_MTC:
		b[0] = 0x59;
		b[1] = pkt->mtc;
		n = 2;
		break;
	case VMPT_PKT_TMA:
		ext(b, 0x73);
		write_le(b + 2, pkt->tma.ctc, 2);
		write_le(b + 5, pkt->tma.fc & 0x1ff, 2);
		n = 7;
		break;
	case VMPT_PKT_CYC: {
		uint64_t v = pkt->cyc >> 5;

		b[0] = (uint8_t)(0x03 | (pkt->cyc & 0x1f) << 3 | (v ? 4 : 0));
		for (n = 1; v; n++, v >>= 7)
			b[n] = (uint8_t)((v & 0x7f) << 1 | (v >> 7 ? 1 : 0));
		break;
	}
	case VMPT_PKT_CBR:
		ext(b, 0x03);
		b[2] = pkt->cbr;
		n = 4;
		break;
	case VMPT_PKT_MNT:
		ext(b, 0xc3);
		b[2] = 0x88;
		write_le(b + 3, pkt->mnt, 8);
		n = 11;
		break;
	case VMPT_PKT_EXSTOP:
		n = ext(b, pkt->exstop.ip ? 0xe2 : 0x62);
		break;
	case VMPT_PKT_MWAIT:
		ext(b, 0xc2);
		write_le(b + 2, pkt->mwait.hints, 4);
		write_le(b + 6, pkt->mwait.ext, 4);
		n = 10;
		break;
	case VMPT_PKT_PWRE:
		ext(b, 0x22);
		b[2] = (uint8_t)((pkt->pwre.hw & 1) << 7);
		b[3] = (uint8_t)((pkt->pwre.state & 0xf) << 4 | (pkt->pwre.sub_state & 0xf));
		n = 4;
		break;
	case VMPT_PKT_PWRX:
		ext(b, 0xa2);
		b[2] = (uint8_t)((pkt->pwrx.last & 0xf) << 4 | (pkt->pwrx.deepest & 0xf));
		b[3] = pkt->pwrx.wake & 0xf;
		n = 7;
		break;
	case VMPT_PKT_PTW:
		if (pkt->ptw.plc > 1)
			return -VMPT_ERR_INVAL;
		ext(b, (uint8_t)(0x12 | pkt->ptw.plc << 5 | (pkt->ptw.ip & 1) << 7));
		write_le(b + 2, pkt->ptw.payload, pkt->ptw.plc ? 8 : 4);
		n = pkt->ptw.plc ? 10 : 6;
		break;
	case VMPT_PKT_CFE:
		ext(b, 0x13);
		b[2] = (uint8_t)((pkt->cfe.ip & 1) << 7 | (pkt->cfe.type & 0x1f));
		b[3] = pkt->cfe.vector;
		n = 4;
		break;
	case VMPT_PKT_EVD:
		ext(b, 0x53);
		b[2] = pkt->evd.type & 0x3f;
		write_le(b + 3, pkt->evd.payload, 8);
		n = 11;
		break;
	case VMPT_PKT_BBP:
		ext(b, 0x63);
		b[2] = (uint8_t)((pkt->bbp.sz & 1) << 7 | (pkt->bbp.type & 0x1f));
		n = 3;
		break;
	case VMPT_PKT_BIP:
		/* The payload size comes from the BBP before it. */
		if (pkt->size != 5 && pkt->size != 9)
			return -VMPT_ERR_INVAL;
		b[0] = (uint8_t)((pkt->bip.id & 0x1f) << 3 | 0x4);
		write_le(b + 1, pkt->bip.value, pkt->size - 1u);
		n = pkt->size;
		break;
	case VMPT_PKT_BEP:
		n = ext(b, pkt->bep.ip ? 0xb3 : 0x33);
		break;
	default:
		return -VMPT_ERR_INVAL;
	}
	if ((size_t)n > cap)
		return -VMPT_ERR_NOMEM;
	memcpy(buf, b, (size_t)n);
	return n;
}
