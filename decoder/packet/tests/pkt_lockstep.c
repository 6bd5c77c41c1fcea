/* SPDX-License-Identifier: MIT */
#include "pkt_lockstep.h"

#include "vmpt/error.h"
#include "vmpt/packet.h"

#include <intel-pt.h>

static int same_type(const struct vmpt_packet *v, const struct pt_packet *p)
{
	switch (p->type) {
	case ppt_pad: return v->type == VMPT_PKT_PAD;
	case ppt_psb: return v->type == VMPT_PKT_PSB;
	case ppt_psbend: return v->type == VMPT_PKT_PSBEND;
	case ppt_fup: return v->type == VMPT_PKT_FUP;
	case ppt_tip: return v->type == VMPT_PKT_TIP;
	case ppt_tip_pge: return v->type == VMPT_PKT_TIP_PGE;
	case ppt_tip_pgd: return v->type == VMPT_PKT_TIP_PGD;
	case ppt_tnt_8: return v->type == VMPT_PKT_TNT8;
	case ppt_tnt_64: return v->type == VMPT_PKT_TNT64;
	case ppt_mode:
		return v->type == (p->payload.mode.leaf == pt_mol_tsx ?
				   VMPT_PKT_MODE_TSX : VMPT_PKT_MODE_EXEC);
	case ppt_pip: return v->type == VMPT_PKT_PIP;
	case ppt_vmcs: return v->type == VMPT_PKT_VMCS;
	case ppt_cbr: return v->type == VMPT_PKT_CBR;
	case ppt_tsc: return v->type == VMPT_PKT_TSC;
	case ppt_tma: return v->type == VMPT_PKT_TMA;
	case ppt_mtc: return v->type == VMPT_PKT_MTC;
	case ppt_cyc: return v->type == VMPT_PKT_CYC;
	case ppt_stop: return v->type == VMPT_PKT_STOP;
	case ppt_ovf: return v->type == VMPT_PKT_OVF;
	case ppt_mnt: return v->type == VMPT_PKT_MNT;
	case ppt_exstop: return v->type == VMPT_PKT_EXSTOP;
	case ppt_mwait: return v->type == VMPT_PKT_MWAIT;
	case ppt_pwre: return v->type == VMPT_PKT_PWRE;
	case ppt_pwrx: return v->type == VMPT_PKT_PWRX;
	case ppt_ptw: return v->type == VMPT_PKT_PTW;
	default: return 0;
	}
}

/* Packets vmpt decodes where libipt 2.0.5 reports an error. */
static int newer_than_libipt(const struct vmpt_packet *v)
{
	return v->type == VMPT_PKT_CFE || v->type == VMPT_PKT_EVD ||
	       v->type == VMPT_PKT_BBP || v->type == VMPT_PKT_BEP ||
	       (v->type == VMPT_PKT_CYC && v->size == 10);
}

uint64_t pkt_lockstep(const uint8_t *buf, size_t size, struct pkt_lockstep_stats *st)
{
	struct pt_packet_decoder *ipt;
	struct vmpt_pkt_decoder dec;
	struct pt_config cfg;
	uint64_t bad = 0;
	int vs, is;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + size;
	ipt = pt_pkt_alloc_decoder(&cfg);
	if (!ipt)
		return 1;
	vmpt_pkt_decoder_init(&dec, buf, size);
	vs = vmpt_pkt_sync_forward(&dec);
	is = pt_pkt_sync_forward(ipt);
	while (!bad && vs == 0 && is >= 0) {
		struct vmpt_packet v;
		struct pt_packet p;
		uint64_t offset = vmpt_pkt_offset(&dec), at;
		int vn, in;

		if (pt_pkt_get_offset(ipt, &at) < 0 || at != offset) {
			bad = offset + 1;
			break;
		}
		vn = vmpt_pkt_next(&dec, &v);
		in = pt_pkt_next(ipt, &p, sizeof(p));
		if (offset == size) {
			if (vn != -VMPT_ERR_EOS || in != -pte_eos)
				bad = offset + 1;
			goto done;
		}
		if (vn > 0 && in > 0) {
			if (!same_type(&v, &p) || vn != in)
				bad = offset + 1;
			st->packets++;
			continue;
		}
		if (vn > 0) {
			if (!newer_than_libipt(&v))
				bad = offset + 1;
			vmpt_pkt_seek(&dec, offset);
			st->newer++;
		} else if (in > 0) {
			bad = offset + 1;
		} else {
			st->errors++;
		}
		vs = vmpt_pkt_sync_forward(&dec);
		is = pt_pkt_sync_forward(ipt);
		while (is >= 0) {
			uint64_t sync;

			if (pt_pkt_get_sync_offset(ipt, &sync) < 0 || sync >= offset)
				break;
			st->backward++;
			is = pt_pkt_sync_forward(ipt);
		}
	}
	/* Out of PSBs: both, at the same time. */
	if (!bad && (vs == 0) != (is >= 0))
		bad = vmpt_pkt_offset(&dec) + 1;
done:
	pt_pkt_free_decoder(ipt);
	return bad;
}
