/* SPDX-License-Identifier: MIT */
/* Reading the trace for the flow decoder: packets are read only when the
 * walk needs one to go on (a TNT bit, a TIP, a FUP's IP); those that do
 * not steer the flow (the PSB+ header, timing, PIP, VMCS, MODE, PTW,
 * power and Event Trace packets) are applied or turned into events on the
 * way, so an event lands between the blocks around where it was recorded.
 */
#include "vmpt_flow_int.h"

static unsigned exec_mode(const struct vmpt_packet *pkt)
{
	if (pkt->exec.csl)
		return VMPT_MODE_64;
	return pkt->exec.csd ? VMPT_MODE_32 : VMPT_MODE_16;
}

static int set_pip(struct vmpt_flow *dec, uint64_t cr3, uint8_t nr)
{
	int changed = !dec->have_nr || dec->nr != nr || dec->cr3 != cr3;

	dec->have_nr = 1;
	dec->nr = nr;
	dec->cr3 = cr3;
	vmpt_flow_update_asid(dec);
	return changed ? vmpt_flow_emit_event(dec, VMPT_EV_PAGING, dec->ip, dec->enabled, cr3) : 0;
}

static int set_vmcs(struct vmpt_flow *dec, uint64_t vmcs)
{
	int changed = !dec->have_vmcs || dec->vmcs != vmcs;

	dec->have_vmcs = 1;
	dec->vmcs = vmcs;
	vmpt_flow_update_asid(dec);
	return changed ? vmpt_flow_emit_event(dec, VMPT_EV_VMCS, dec->ip, dec->enabled, vmcs) : 0;
}

static int set_mode(struct vmpt_flow *dec, unsigned mode)
{
	int changed = dec->mode != mode;

	dec->mode = (uint8_t)mode;
	return changed ? vmpt_flow_emit_event(dec, VMPT_EV_EXEC_MODE, dec->ip, dec->enabled, mode) : 0;
}

/* MODE.Exec, PIP and VMCS take effect at the next branch target. */
int vmpt_flow_apply_pending(struct vmpt_flow *dec)
{
	int ret = 0;

	if (dec->have_pend_mode)
		ret = set_mode(dec, dec->pend_mode);
	if (!ret && dec->have_pend_vmcs)
		ret = set_vmcs(dec, dec->pend_vmcs);
	if (!ret && dec->have_pend_pip)
		ret = set_pip(dec, dec->pend_cr3, dec->pend_nr);
	dec->have_pend_mode = dec->have_pend_pip = dec->have_pend_vmcs = 0;
	return ret;
}

/* A guest's TSC packet read as the host TSC the correlator found for it
 * (its patch list, looked up by the packet's offset).
 */
static inline void tsc_patch(const struct vmpt_flow *dec, uint64_t off,
			     struct vmpt_packet *pkt)
{
	if (dec->cfg.tsc_patches)
		vmpt_tsc_patch_find(dec->cfg.tsc_patches, off, &pkt->tsc);
}

/* The PSB+ header: status, not flow.  The FUP in it (if any) is the IP
 * of the next instruction when tracing is on.
 */
int vmpt_flow_psb_plus(struct vmpt_flow *dec)
{
	struct vmpt_flow_item *psb;
	struct vmpt_packet pkt;
	uint64_t psb_off = dec->pkt_off;
	int have_fup = 0, ret;

	vmpt_last_ip_init(&dec->lip);
	if (!dec->synced)
		dec->cyc.pge = 0;
	dec->psb_time_before = dec->time.tsc;
	for (;;) {
		uint64_t off = vmpt_pkt_offset(&dec->pd);

		ret = vmpt_pkt_next(&dec->pd, &pkt);
		if (ret >= 0)
			vmpt_time_seen(&dec->time, pkt.type);
		if (ret < 0) {
			dec->pkt_off = off;
			/* A buffer that fills up ends in a PSB+ often; status
			 * only, so nothing of the flow is lost there.  The
			 * end stays the end: a later step must not read the
			 * cut packet again and call it an error (the batched
			 * walk steps again after an end).
			 */
			if (ret == -VMPT_ERR_EOS || ret == -VMPT_ERR_TRUNCATED) {
				dec->stopping = 1;
				return -VMPT_ERR_EOS;
			}
			return ret;
		}
		dec->pkt_off = off;
		switch (pkt.type) {
		case VMPT_PKT_PSBEND:
			goto done;
		case VMPT_PKT_FUP:
			dec->cyc.pge = 1;
			ret = vmpt_last_ip_update(&dec->lip, &pkt);
			if (ret < 0)
				return ret;
			have_fup = vmpt_last_ip_query(&dec->lip, &dec->pkt_ip) == 0;
			break;
		case VMPT_PKT_MODE_EXEC:
			ret = set_mode(dec, exec_mode(&pkt));
			break;
		case VMPT_PKT_PIP:
			ret = set_pip(dec, pkt.pip.cr3, pkt.pip.nr);
			break;
		case VMPT_PKT_VMCS:
			ret = set_vmcs(dec, pkt.vmcs);
			break;
		case VMPT_PKT_TSC:
			tsc_patch(dec, off, &pkt);
			/* fall through */
		case VMPT_PKT_TMA:
		case VMPT_PKT_MTC:
		case VMPT_PKT_CYC:
		case VMPT_PKT_CBR:
			vmpt_time_update(&dec->time, &pkt);
			if (dec->time.calib_pending)
				vmpt_time_calibrate(&dec->time, &dec->pd);
			vmpt_cycles_update(&dec->cyc, &dec->time, &pkt, 1);
			break;
		case VMPT_PKT_TNT8:
		case VMPT_PKT_TNT64:
		case VMPT_PKT_TIP:
		case VMPT_PKT_TIP_PGE:
		case VMPT_PKT_TIP_PGD:
		case VMPT_PKT_PSB:
			return -VMPT_ERR_BAD_PACKET;
		default:
			break;	/* PAD, MODE.TSX status, MNT... */
		}
		if (ret < 0)
			return ret;
	}
done:
	dec->have_pend_mode = dec->have_pend_pip = dec->have_pend_vmcs = 0;
	if (dec->synced && dec->enabled && have_fup && !dec->fup_bound &&
	    !dec->cfe_wait && !dec->resync && !dec->tnt_n) {
		/* the psb item when the walk reaches the FUP (FUP_PSB) */
		dec->fup_bound = FUP_PSB;
		dec->psb_off = psb_off;
		dec->pkt.type = VMPT_PKT_FUP;
		dec->pkt_ip_valid = 1;
		dec->have_pkt = 1;
		return 1;
	}
	/* perf's decoder lost its IP with an error (NO_IP): the PSB comes
	 * before the FUP in it sets one.
	 */
	if (dec->resync == RESYNC_NO_IP)
		psb = vmpt_flow_event(dec, VMPT_EV_PSB, 0, 0, psb_off);
	else
		psb = vmpt_flow_event(dec, VMPT_EV_PSB, have_fup ? dec->pkt_ip : dec->ip,
				      have_fup, psb_off);
	if (!psb)
		return -VMPT_ERR_NOMEM;
	psb->cyc = vmpt_cycles_point(&dec->cyc);
	psb->to = dec->time.cbr;
	psb->time_before = dec->psb_time_before;
	if (!dec->synced) {
		dec->synced = 1;
		vmpt_flow_reset_state(dec);
		dec->enabled = (uint8_t)have_fup;
		if (have_fup) {
			dec->ip = dec->pkt_ip;
			ret = vmpt_flow_emit_event(dec, VMPT_EV_ENABLED, dec->ip, 1, VMPT_ENABLED_PSB);
		}
		return ret < 0 ? ret : have_fup;
	}
	if (!dec->enabled && have_fup && !dec->stopping) {
		/* We missed the enable (an OVF without FUP, say). */
		dec->enabled = 1;
		dec->ip = dec->pkt_ip;
		dec->after_ovf = 0;
		dec->resync = 0;
		ret = vmpt_flow_emit_event(dec, VMPT_EV_ENABLED, dec->ip, 1, VMPT_ENABLED_PSB);
		if (ret < 0)
			return ret;
	} else if (dec->resync && dec->ip && !dec->stopping) {
		/* perf goes on at the error's IP after a PSB+ without FUP. */
		dec->enabled = 1;
		dec->resync = 0;
		ret = vmpt_flow_emit_event(dec, VMPT_EV_ENABLED, dec->ip, 1, VMPT_ENABLED_PSB);
		if (ret < 0)
			return ret;
	} else if (dec->resync == RESYNC_NO_IP) {
		dec->resync = RESYNC_KEEP_IP;	/* a PSB gives a last IP again */
	}
	return have_fup;
}

/* The segment ends at this PSB; the next segment starts at the IP its
 * header gives, so walk there (a FUP without an event) and end.
 */
static int stop_at_psb(struct vmpt_flow *dec)
{
	int was_enabled = dec->enabled, ret;

	if (dec->stopping)
		return -VMPT_ERR_EOS;
	dec->stopping = 1;
	ret = vmpt_flow_psb_plus(dec);
	/* its psb item at the FUP (FUP_PSB), as one decoder going on */
	if (!(dec->fup_bound & FUP_PSB))
		dec->block_time = dec->time.tsc;
	/* Tracing off: the next piece says where it comes on (vmpt/jobs.h
	 * keeps that, as one decoder going on says it).
	 */
	if (ret <= 0 || !was_enabled)
		return -VMPT_ERR_EOS;
	dec->pkt.type = VMPT_PKT_FUP;
	dec->pkt_ip_valid = 1;
	dec->have_pkt = 1;
	dec->fup_bound &= FUP_PSB;
	dec->want_fup = dec->cfe_wait = 0;
	return 0;
}

/* A CFE item (Event Trace) with its EVDs: at the IP its FUP gives
 * (ip_valid), else where the walk is. */
static int emit_cfe(struct vmpt_flow *dec, uint64_t ip, int ip_valid, int ipc)
{
	struct vmpt_flow_item *it = vmpt_flow_event(dec, VMPT_EV_CFE, ip, ip_valid, dec->cfe_payload);

	if (!it)
		return -VMPT_ERR_NOMEM;
	it->evd = dec->cfe_evd;
	it->ninsn = dec->cfe_n_evd;
	if (ipc)
		it->cyc = vmpt_cycles_point(&dec->cyc);
	dec->cfe_wait = 0;
	return 0;
}

/* The events bound to a FUP, at its IP (or, when it did not come, where
 * the walk is), in the order perf samples them: the CFE, MWAIT, PWRE,
 * EXSTOP, MODE.TSX, PTW.  perf returns them as one state: one IPC point,
 * the first item's (a TSX abort's is its branch, which follows).  A CFE
 * waiting for the FUP of its compound packet goes first too, without it:
 * the event's branch is the IPC point.  Returns 1 when a TIP follows.
 */
int vmpt_flow_emit_bound(struct vmpt_flow *dec, uint64_t at, int ip_valid)
{
	static const struct { uint8_t bit, ev; } order[] = {
		{ FUP_MWAIT, VMPT_EV_MWAIT }, { FUP_PWRE, VMPT_EV_PWRE },
		{ FUP_EXSTOP, VMPT_EV_EXSTOP }, { FUP_TSX, VMPT_EV_TSX },
		{ FUP_PTW, VMPT_EV_PTWRITE },
	};
	const uint64_t payload[] = { dec->fup_mwait, dec->fup_pwre, 0, dec->fup_tsx,
				     dec->fup_ptw };
	unsigned bound = dec->fup_bound;
	int abort = (bound & FUP_TSX) && (dec->fup_tsx & 2), ipc = !abort && bound;
	int ret = 0;

	dec->fup_bound = dec->want_fup = 0;
	if (bound & FUP_PSB) {
		struct vmpt_flow_item *psb = vmpt_flow_event(dec, VMPT_EV_PSB, at, ip_valid, dec->psb_off);

		if (!psb)
			return -VMPT_ERR_NOMEM;
		psb->cyc = vmpt_cycles_point(&dec->cyc);
		psb->to = dec->time.cbr;
		psb->time_before = dec->psb_time_before;
		dec->block_time = dec->time.tsc;
		return 0;
	}
	if (dec->cfe_wait) {
		ret = emit_cfe(dec, at, ip_valid, ipc);
		ipc = 0;
	}
	for (unsigned i = 0; !ret && i < sizeof(order) / sizeof(order[0]); i++) {
		struct vmpt_flow_item *it;

		if (!(bound & order[i].bit))
			continue;
		it = vmpt_flow_event(dec, order[i].ev, at, ip_valid, payload[i]);
		if (!it)
			return -VMPT_ERR_NOMEM;
		if (ipc)
			it->cyc = vmpt_cycles_point(&dec->cyc);
		ipc = 0;
	}
	if (ret < 0)
		return ret;
	return !bound || abort;
}

/* A CFE packet, with the EVDs read before it.  With the IP bit a FUP of
 * its own follows; without it, with tracing on, it binds to the FUP of
 * its event's compound packet; with tracing off it binds to none (perf:
 * "the IP flag indicates if the event binds to an IP").
 */
static int cfe(struct vmpt_flow *dec, const struct vmpt_packet *pkt)
{
	int ret;

	/* one that never saw its FUP goes out where the walk is */
	if (dec->cfe_wait && (ret = emit_cfe(dec, dec->ip, 0, 0)) < 0)
		return ret;
	dec->fup_bound &= (uint8_t)~FUP_CFE;
	dec->cfe_payload = pkt->cfe.type | (uint64_t)pkt->cfe.vector << 8 |
			   (uint64_t)pkt->cfe.ip << 16;
	dec->cfe_evd = NULL;
	dec->cfe_n_evd = dec->n_evd;
	if (dec->n_evd) {
		dec->cfe_evd = vmpt_evd_store_intern(dec->evd_store, dec->evd, dec->n_evd);
		if (!dec->cfe_evd)
			return -VMPT_ERR_NOMEM;
	}
	dec->n_evd = 0;
	dec->cfe_wait = 1;
	if (pkt->cfe.ip) {
		dec->fup_bound |= FUP_CFE;
		dec->want_fup = 1;
		return 0;
	}
	/* perf returns a state for it: an IPC point */
	return dec->enabled ? 0 : emit_cfe(dec, dec->ip, 0, 1);
}

/* Read packets up to the next one that steers the flow: TNT (bits loaded),
 * or TIP/TIP.PGE/TIP.PGD/FUP/OVF (kept in dec->pkt).  after_fup: looking
 * for what follows an asynchronous FUP (perf's decoder reads those
 * packets apart: they are no IPC points, and CYC thresholds do not
 * matter).
 */
int vmpt_flow_deferred_tip(struct vmpt_flow *dec)
{
	struct vmpt_packet pkt;
	uint64_t off;
	int ret;

	do {
		off = vmpt_pkt_offset(&dec->pd);
		ret = vmpt_pkt_next(&dec->pd, &pkt);
		if (ret < 0)
			return ret;
	} while (pkt.type == VMPT_PKT_PAD);
	dec->pkt_off = off;
	if (pkt.type != VMPT_PKT_TIP || pkt.ip.ipc == VMPT_IPC_SUPPRESSED ||
	    (dec->resync == RESYNC_NO_IP && !dec->lip.have_ip &&
	     pkt.ip.ipc != VMPT_IPC_SEXT_48 && pkt.ip.ipc != VMPT_IPC_FULL)) {
		/* Not the TIP: it is read again after the error. */
		vmpt_pkt_seek(&dec->pd, off);
		return -VMPT_ERR_NO_MATCH;
	}
	vmpt_time_seen(&dec->time, pkt.type);
	vmpt_cycles_seen(&dec->cyc, pkt.type);
	ret = vmpt_last_ip_update(&dec->lip, &pkt);
	if (ret < 0)
		return ret;
	dec->pkt_ip_valid = vmpt_last_ip_query(&dec->lip, &dec->pkt_ip) == 0;
	dec->pkt = pkt;
	return 0;
}

int vmpt_flow_fetch(struct vmpt_flow *dec, int after_fup)
{
	struct vmpt_packet pkt;
	int ret;

	for (;;) {
		if (fetch_fast(dec, after_fup))
			return 0;
		uint64_t off = vmpt_pkt_offset(&dec->pd);

		ret = vmpt_pkt_next(&dec->pd, &pkt);
		if (ret < 0)
			return ret;
		dec->pkt_off = off;
		vmpt_time_seen(&dec->time, pkt.type);
		if (!after_fup)
			vmpt_cycles_seen(&dec->cyc, pkt.type);
		if (dec->want_fup && pkt.type != VMPT_PKT_PAD) {
			/* PTW, EXSTOP, CFE with the IP bit, MODE.TSX: the FUP
			 * comes right after them; without it, they bind to no
			 * IP (perf drops them, vmpt loses nothing) */
			dec->want_fup = 0;
			if (pkt.type != VMPT_PKT_FUP && (ret = vmpt_flow_emit_bound(dec, dec->ip, 0)) < 0)
				return ret;
		}
		if (pkt.type == VMPT_PKT_PSB && dec->cfg.stop_offset &&
		    off >= dec->cfg.stop_offset)
			return stop_at_psb(dec);
		ret = 0;
		switch (pkt.type) {
		case VMPT_PKT_PSB:
			ret = vmpt_flow_psb_plus(dec);
			/* walk to its FUP first (FUP_PSB), in the time before */
			if (ret > 0 && (dec->fup_bound & FUP_PSB))
				return 0;
			/* Code after a PSB+ has its time, as perf's samples. */
			dec->block_time = dec->time.tsc;
			if (ret > 0)
				ret = 0;
			break;
		case VMPT_PKT_TNT8:
		case VMPT_PKT_TNT64:
			if (!pkt.tnt.count)
				break;
			dec->tnt_bits = pkt.tnt.bits;
			dec->tnt_n = pkt.tnt.count;
			dec->memo_try = 1;
			return 0;
		case VMPT_PKT_TIP_PGE:
		case VMPT_PKT_TIP_PGD:
			/* perf's cycle counting knows tracing is on or off
			 * as soon as it reads them.
			 */
			if (pkt.type == VMPT_PKT_TIP_PGE)
				vmpt_cycles_pge(&dec->cyc, &dec->time);
			else
				dec->cyc.pge = 0;
			/* fall through */
		case VMPT_PKT_TIP:
		case VMPT_PKT_FUP:
			if (dec->resync == RESYNC_NO_IP && !dec->lip.have_ip &&
			    pkt.ip.ipc != VMPT_IPC_SEXT_48 && pkt.ip.ipc != VMPT_IPC_FULL) {
				/* perf: without a last IP only full IPs count. */
				dec->pkt = pkt;
				dec->have_pkt = 1;
				dec->pkt_ip_valid = 0;
				return 0;
			}
			ret = vmpt_last_ip_update(&dec->lip, &pkt);
			if (ret < 0)
				return ret;
			dec->pkt_ip_valid = vmpt_last_ip_query(&dec->lip, &dec->pkt_ip) == 0;
			/* fall through */
		case VMPT_PKT_OVF:
			dec->pkt = pkt;
			dec->have_pkt = 1;
			return 0;
		case VMPT_PKT_MODE_EXEC:
			dec->have_pend_mode = 1;
			dec->pend_mode = (uint8_t)exec_mode(&pkt);
			break;
		case VMPT_PKT_PIP:
			dec->have_pend_pip = 1;
			dec->pend_cr3 = pkt.pip.cr3;
			dec->pend_nr = pkt.pip.nr;
			break;
		case VMPT_PKT_VMCS:
			dec->have_pend_vmcs = 1;
			dec->pend_vmcs = pkt.vmcs;
			break;
		case VMPT_PKT_MODE_TSX:
			/* with tracing off it is status only (perf) */
			if (!dec->enabled)
				break;
			dec->fup_bound |= FUP_TSX;
			dec->want_fup = 1;
			dec->fup_tsx = (uint64_t)(pkt.tsx.intx | (pkt.tsx.abrt << 1));
			break;
		/* perf's decoder returns a state at PTW, EXSTOP, PWRE and
		 * PWRX (the IP bit and MWAIT wait for the FUP): IPC points.
		 */
		case VMPT_PKT_PTW:
			if (pkt.ptw.ip) {
				dec->fup_bound |= FUP_PTW;
				dec->want_fup = 1;
				dec->fup_ptw = pkt.ptw.payload;
			} else {
				ret = vmpt_flow_emit_ipc_event(dec, VMPT_EV_PTWRITE, dec->ip, 0,
						     pkt.ptw.payload);
			}
			break;
		case VMPT_PKT_EXSTOP:
			if (pkt.exstop.ip) {
				dec->fup_bound |= FUP_EXSTOP;
				dec->want_fup = 1;
			} else {
				ret = vmpt_flow_emit_ipc_event(dec, VMPT_EV_EXSTOP, dec->ip, 0, 0);
			}
			break;
		case VMPT_PKT_MWAIT:
			/* at the FUP of the EXSTOP that follows (perf) */
			dec->fup_bound |= FUP_MWAIT;
			dec->fup_mwait = pkt.mwait.hints | (uint64_t)pkt.mwait.ext << 32;
			break;
		case VMPT_PKT_PWRE: {
			uint64_t pwre = pkt.pwre.state | (uint64_t)pkt.pwre.sub_state << 8 |
					(uint64_t)pkt.pwre.hw << 16;

			/* after an MWAIT it is the MWAIT's, at its FUP */
			if (dec->fup_bound & FUP_MWAIT) {
				dec->fup_bound |= FUP_PWRE;
				dec->fup_pwre = pwre;
			} else {
				ret = vmpt_flow_emit_ipc_event(dec, VMPT_EV_PWRE, dec->ip, 0, pwre);
			}
			break;
		}
		case VMPT_PKT_PWRX:
			ret = vmpt_flow_emit_ipc_event(dec, VMPT_EV_PWRX, dec->ip, 0,
					     pkt.pwrx.last | (uint64_t)pkt.pwrx.deepest << 8 |
					     (uint64_t)pkt.pwrx.wake << 16);
			break;
		case VMPT_PKT_EVD:
			if (dec->n_evd == MAX_EVDS)
				return -VMPT_ERR_BAD_PACKET;
			dec->evd[dec->n_evd].type = pkt.evd.type;
			dec->evd[dec->n_evd++].payload = pkt.evd.payload;
			break;
		case VMPT_PKT_CFE:
			ret = cfe(dec, &pkt);
			break;
		case VMPT_PKT_CBR:
			vmpt_time_update(&dec->time, &pkt);
			/* A new CBR is a state of perf's, unless after a FUP. */
			if (vmpt_cycles_update(&dec->cyc, &dec->time, &pkt, 0) && !after_fup)
				ret = vmpt_flow_emit_ipc_event(dec, VMPT_EV_CBR, dec->ip, 0, pkt.cbr);
			else
				ret = vmpt_flow_emit_event(dec, VMPT_EV_CBR, dec->ip, 0, pkt.cbr);
			break;
		case VMPT_PKT_TSC:
			tsc_patch(dec, off, &pkt);
			/* fall through */
		case VMPT_PKT_TMA:
		case VMPT_PKT_MTC:
		case VMPT_PKT_CYC:
			vmpt_time_update(&dec->time, &pkt);
			if (dec->time.calib_pending)
				vmpt_time_calibrate(&dec->time, &dec->pd);
			vmpt_cycles_update(&dec->cyc, &dec->time, &pkt, 0);
			break;
		default:
			break;	/* PAD, PSBEND, MNT, STOP, block packets */
		}
		if (ret < 0)
			return ret;
	}
}
