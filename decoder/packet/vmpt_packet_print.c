/* SPDX-License-Identifier: MIT */
/* Packet names and payload text, in the words libipt's ptdump uses, so
 * people can compare the two listings line by line.
 */
#include "vmpt/packet.h"
#include "vmpt/error.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const names[VMPT_PKT_TYPE_COUNT] = {
	[VMPT_PKT_PAD] = "pad",		[VMPT_PKT_PSB] = "psb",
	[VMPT_PKT_PSBEND] = "psbend",	[VMPT_PKT_TNT8] = "tnt.8",
	[VMPT_PKT_TNT64] = "tnt.64",	[VMPT_PKT_TIP] = "tip",
	[VMPT_PKT_TIP_PGE] = "tip.pge",	[VMPT_PKT_TIP_PGD] = "tip.pgd",
	[VMPT_PKT_FUP] = "fup",		[VMPT_PKT_MODE_EXEC] = "mode.exec",
	[VMPT_PKT_MODE_TSX] = "mode.tsx", [VMPT_PKT_PIP] = "pip",
	[VMPT_PKT_VMCS] = "vmcs",	[VMPT_PKT_TSC] = "tsc",
	[VMPT_PKT_MTC] = "mtc",		[VMPT_PKT_TMA] = "tma",
	[VMPT_PKT_CYC] = "cyc",		[VMPT_PKT_CBR] = "cbr",
	[VMPT_PKT_OVF] = "ovf",		[VMPT_PKT_STOP] = "stop",
	[VMPT_PKT_MNT] = "mnt",		[VMPT_PKT_EXSTOP] = "exstop",
	[VMPT_PKT_MWAIT] = "mwait",	[VMPT_PKT_PWRE] = "pwre",
	[VMPT_PKT_PWRX] = "pwrx",	[VMPT_PKT_PTW] = "ptw",
	[VMPT_PKT_CFE] = "cfe",		[VMPT_PKT_EVD] = "evd",
	[VMPT_PKT_BBP] = "bbp",		[VMPT_PKT_BIP] = "bip",
	[VMPT_PKT_BEP] = "bep",
};

const char *vmpt_pkt_name(unsigned type)
{
	return type < VMPT_PKT_TYPE_COUNT ? names[type] : "<invalid>";
}

int vmpt_pkt_type_from_name(const char *name)
{
	for (unsigned t = 0; t < VMPT_PKT_TYPE_COUNT; t++)
		if (strcmp(names[t], name) == 0)
			return (int)t;
	return -VMPT_ERR_NOT_FOUND;
}

static int format_ip(char *buf, size_t cap, const struct vmpt_packet *pkt)
{
	uint64_t ip = pkt->ip.ip;
	unsigned ipc = pkt->ip.ipc;

	switch (ipc) {
	case VMPT_IPC_SUPPRESSED:
		return snprintf(buf, cap, "%x: ????????????????", ipc);
	case VMPT_IPC_UPDATE_16:
		return snprintf(buf, cap, "%x: ????????????%04" PRIx64, ipc, ip);
	case VMPT_IPC_UPDATE_32:
		return snprintf(buf, cap, "%x: ????????%08" PRIx64, ipc, ip);
	case VMPT_IPC_UPDATE_48:
		return snprintf(buf, cap, "%x: ????%012" PRIx64, ipc, ip);
	case VMPT_IPC_SEXT_48:
		ip = (uint64_t)((int64_t)(ip << 16) >> 16);
		break;
	}
	return snprintf(buf, cap, "%x: %016" PRIx64, ipc, ip);
}

static int format_tnt(char *buf, size_t cap, const struct vmpt_packet *pkt)
{
	unsigned n = pkt->tnt.count;

	if (cap == 0)
		return (int)n;
	for (unsigned i = 0; i < n && i + 1 < cap; i++)
		buf[i] = (pkt->tnt.bits >> (n - 1 - i)) & 1 ? '!' : '.';
	buf[n < cap ? n : cap - 1] = '\0';
	return (int)n;
}

/* Like ptdump: the one wake reason of interrupt (bit 0), store (bit 2) and
 * autonomous (bit 3); "bad" for none or several. */
static const char *pwrx_wake(unsigned wake)
{
	switch (wake & 0xd) {
	case 1: return "int";
	case 4: return "st";
	case 8: return "hw";
	}
	return "bad";
}

int vmpt_pkt_format_payload(char *buf, size_t cap, const struct vmpt_packet *pkt)
{
	switch (pkt->type) {
	case VMPT_PKT_TIP:
	case VMPT_PKT_TIP_PGE:
	case VMPT_PKT_TIP_PGD:
	case VMPT_PKT_FUP:
		return format_ip(buf, cap, pkt);
	case VMPT_PKT_TNT8:
	case VMPT_PKT_TNT64:
		return format_tnt(buf, cap, pkt);
	case VMPT_PKT_MODE_EXEC:
		return snprintf(buf, cap, "%s%s%s%s", pkt->exec.csd ? "cs.d" : "",
				pkt->exec.csd && pkt->exec.csl ? ", " : "",
				pkt->exec.csl ? "cs.l" : "",
				pkt->exec.iflag ? (pkt->exec.csd || pkt->exec.csl ?
						   ", if" : "if") : "");
	case VMPT_PKT_MODE_TSX:
		return snprintf(buf, cap, "%s%s%s", pkt->tsx.intx ? "intx" : "",
				pkt->tsx.intx && pkt->tsx.abrt ? ", " : "",
				pkt->tsx.abrt ? "abrt" : "");
	case VMPT_PKT_PIP:
		return snprintf(buf, cap, "%" PRIx64 "%s", pkt->pip.cr3,
				pkt->pip.nr ? ", nr" : "");
	case VMPT_PKT_VMCS:
		return snprintf(buf, cap, "%" PRIx64, pkt->vmcs);
	case VMPT_PKT_TSC:
		return snprintf(buf, cap, "%" PRIx64, pkt->tsc);
	case VMPT_PKT_MTC:
		return snprintf(buf, cap, "%x", pkt->mtc);
	case VMPT_PKT_TMA:
		return snprintf(buf, cap, "%x, %x", pkt->tma.ctc, pkt->tma.fc);
	case VMPT_PKT_CYC:
		return snprintf(buf, cap, "%" PRIx64, pkt->cyc);
	case VMPT_PKT_CBR:
		return snprintf(buf, cap, "%x", pkt->cbr);
	case VMPT_PKT_MNT:
		return snprintf(buf, cap, "%" PRIx64, pkt->mnt);
	case VMPT_PKT_EXSTOP:
		return snprintf(buf, cap, "%s", pkt->exstop.ip ? "ip" : "");
	case VMPT_PKT_MWAIT:
		return snprintf(buf, cap, "%08x, %08x", pkt->mwait.hints, pkt->mwait.ext);
	case VMPT_PKT_PWRE:
		return snprintf(buf, cap, "c%u.%u%s", (pkt->pwre.state + 1) & 0xf,
				(pkt->pwre.sub_state + 1) & 0xf,
				pkt->pwre.hw ? ", hw" : "");
	case VMPT_PKT_PWRX:
		return snprintf(buf, cap, "%s: c%u, c%u", pwrx_wake(pkt->pwrx.wake),
				(pkt->pwrx.last + 1) & 0xf,
				(pkt->pwrx.deepest + 1) & 0xf);
	case VMPT_PKT_PTW:
		return snprintf(buf, cap, "%x: %" PRIx64 "%s", pkt->ptw.plc,
				pkt->ptw.payload, pkt->ptw.ip ? ", ip" : "");
	case VMPT_PKT_CFE:
		return snprintf(buf, cap, "%u: %x%s", pkt->cfe.type, pkt->cfe.vector,
				pkt->cfe.ip ? ", ip" : "");
	case VMPT_PKT_EVD:
		return snprintf(buf, cap, "%u: %" PRIx64, pkt->evd.type,
				pkt->evd.payload);
	case VMPT_PKT_BBP:
		return snprintf(buf, cap, "%u%s", pkt->bbp.type,
				pkt->bbp.sz ? ", sz4" : ", sz8");
	case VMPT_PKT_BIP:
		return snprintf(buf, cap, "%u: %" PRIx64, pkt->bip.id, pkt->bip.value);
	case VMPT_PKT_BEP:
		return snprintf(buf, cap, "%s", pkt->bep.ip ? "ip" : "");
	}
	if (cap)
		buf[0] = '\0';
	return 0;
}
