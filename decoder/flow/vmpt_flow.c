/* SPDX-License-Identifier: MIT */
/* The instruction flow decoder.
 *
 * It walks the code from the current IP, block by block, until it needs
 * the trace to go on (a conditional branch needs a TNT bit, an indirect
 * branch a TIP, an asynchronous event is due at a FUP's IP), and reads
 * packets only then.  Packets that do not steer the flow (timing, PIP,
 * VMCS, MODE, PTW...) are applied or queued as events on the way, so an
 * event lands between the blocks around the point it was recorded.
 */
#include "vmpt/flow.h"
#include "vmpt/error.h"
#include "vmpt/packet.h"
#include "../packet/vmpt_packet_fast.h"
#include "vmpt_block_cache.h"
#include "vmpt_cycles.h"
#include "vmpt_evd_store.h"
#include "vmpt_time.h"
#include "vmpt_tnt_memo.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define STACK_DEPTH 64		/* the return stack libipt and the CPU keep */
/* Instructions walked without consuming trace: a loop of direct jumps
 * that never ends means the trace and the code disagree.
 */
#define MAX_WALK (1u << 22)
/* Chains are not made for CHAIN_REST plays after a window of CHAIN_WINDOW
 * plays with fewer than an eighth of chains played back.
 */
#define CHAIN_WINDOW 4096
#define CHAIN_REST (8 * CHAIN_WINDOW)
/* perf's intel-pt.max-loops default: direct branches in a row that read
 * no trace before the walk is called a never-ending loop.
 */
#define MAX_LOOPS 100000

/* config.release: trace dropped every RELEASE_STEP bytes read, up to
 * RELEASE_KEEP bytes behind the packet being read.
 */
#define RELEASE_STEP (8u << 20)
#define RELEASE_KEEP (64u << 10)

/* Blocks walked into one vmpt_flow_next_items batch at most. */
#define FLOW_BATCH 64

enum want { W_TNT, W_TIP, W_PGD, W_FUP };
enum { RESYNC_KEEP_IP = 1, RESYNC_NO_IP };

/* Events bound to the IP of the next FUP (perf's set_fup_*): a FUP with
 * any of them is theirs, no TIP follows (but after a TSX abort). */
enum fup_bound {
	FUP_CFE = 1 << 0,	/* a CFE with the IP bit */
	FUP_MWAIT = 1 << 1,	/* MWAIT: the FUP of its EXSTOP */
	FUP_PWRE = 1 << 2,	/* a PWRE after an MWAIT */
	FUP_EXSTOP = 1 << 3,	/* EXSTOP with the IP bit */
	FUP_TSX = 1 << 4,	/* MODE.TSX */
	FUP_PTW = 1 << 5,	/* PTW with the IP bit */
	/* A PSB+ read while tracing is on: perf walks to its FUP first (the
	 * direct branches on the way are samples before the psb's).
	 */
	FUP_PSB = 1 << 6,
};

/* EVD packets before one CFE (perf's INTEL_PT_MAX_EVDS: one per type). */
#define MAX_EVDS 64

/* Where a call returns to, and the call's block: its fall-through link
 * (never taken by the call itself) leads to the block there, so a return
 * rarely needs the cache's hash.
 */
struct ret_site {
	uint64_t ip;
	struct vmpt_block *call;
};

struct vmpt_flow {
	struct vmpt_flow_config cfg;
	struct vmpt_pkt_decoder pd;
	struct vmpt_last_ip lip;
	struct vmpt_bcache *own_cache;	/* when the config gives none */
	struct vmpt_bdisasm *disasm;
	struct vmpt_time time;
	struct vmpt_cycles cyc;	/* cycle counts for IPC */
	const struct vmpt_section *sec;	/* the last section hit */
	/* The block walked last and which of its successors comes next. */
	struct vmpt_block *prev;
	unsigned prev_slot;
	struct vmpt_asid asid;
	uint64_t ip;
	uint64_t tnt_bits;
	unsigned tnt_n;
	/* The flow packet read but not yet used (TIP, TIP.PGE/PGD, FUP, OVF). */
	struct vmpt_packet pkt;
	uint64_t pkt_off, pkt_ip;
	uint8_t have_pkt, pkt_ip_valid;
	uint8_t synced, enabled, mode, after_ovf;
	/* perf_resync after an error: RESYNC_KEEP_IP (perf's ERR_RESYNC)
	 * or RESYNC_NO_IP (perf's NO_IP: the last IP is gone too).
	 */
	uint8_t resync;
	/* At stop_offset: walking to the next segment's first IP. */
	uint8_t stopping;
	/* Bound to the next branch target (MODE.Exec, PIP, VMCS). */
	uint8_t have_pend_mode, pend_mode;
	uint8_t have_pend_pip, pend_nr;
	uint8_t have_pend_vmcs;
	uint64_t pend_cr3, pend_vmcs;
	/* What the trace said so far: nr/cr3/vmcs. */
	uint8_t have_nr, nr, have_vmcs;
	uint64_t cr3, vmcs;
	/* The host process the sideband says runs (vmpt_flow_set_host_space):
	 * host code is looked up under it instead of PIP's CR3; 0: unset.
	 */
	uint64_t host_space;
	/* The same for guest code (vmpt_flow_set_guest_space): the guest
	 * task the guest's sideband says runs; 0: PIP's CR3.
	 */
	uint64_t guest_space;
	/* Events that wait for their FUP (enum fup_bound) and their
	 * payloads; want_fup: the packet right after must be that FUP.
	 */
	uint8_t fup_bound, want_fup;
	uint64_t psb_off;	/* FUP_PSB: the PSB's offset */
	uint64_t fup_tsx, fup_ptw, fup_mwait, fup_pwre;
	/* Event Trace: a CFE waiting for the FUP of its event's compound
	 * packet (the IP bit clear, tracing on) or its own (FUP_CFE), with
	 * its EVDs; the EVDs read since the last CFE.
	 */
	uint8_t cfe_wait;
	uint64_t cfe_payload;
	const struct vmpt_evd *cfe_evd;
	unsigned cfe_n_evd, n_evd;
	struct vmpt_evd evd[MAX_EVDS];
	struct vmpt_evd_store *evd_store;
	uint64_t walked;
	/* Direct jumps and calls since trace was last read, and Brent's
	 * cycle finding over their targets (perf's stuck_ip): the target
	 * remembered, the period and what is left of it.
	 */
	struct {
		uint32_t n, period, left;
		uint64_t ip;
		uint32_t insns;	/* of the block closing the loop */
	} loop;
	/* Blocks get perf's sample time: the time as of the flow packet
	 * (TNT, TIP) that decided their branch; direct branches before a
	 * new packet's first bit keep the one before.
	 */
	uint64_t block_time;
	struct ret_site stack[STACK_DEPTH];
	unsigned sp, depth;
	struct vmpt_flow_item *q;
	size_t qh, qn, qcap;
	/* While vmpt_flow_next waits: where the next item goes directly. */
	struct vmpt_flow_item *direct;
	/* TNT runs (vmpt_flow_next_items only): the one found to play back
	 * next, and the one being recorded, which ends as soon as the walk
	 * leaves the hot path.
	 */
	struct vmpt_tnt_memo *memo;
	struct vmpt_run *play;
	struct vmpt_run *rec;
	/* A run may start here: new TNT bits, or the last run ended. */
	uint8_t memo_try;
	/* Runs played back to back so far (a chain in the making): the
	 * chain's key, and where the last one's packet ended (in which
	 * bytes: a part, or the seam at that offset).
	 */
	struct vmpt_run *chain_run[VMPT_CHAIN_PKTS];
	unsigned chain_n;
	const struct vmpt_section *chain_sec;
	/* Chains that are rarely played are not made for a while (as the
	 * memo rests): plays and chain plays in this window, plays to rest.
	 */
	uint32_t chain_plays, chain_hits, chain_rest;
	uint64_t chain_key;
	const uint8_t *chain_begin, *chain_end;
	uint64_t chain_base;
	/* The chain found to play: the offsets of its packets after the
	 * first, the last one's bits, and where it ends.
	 */
	uint64_t peek_off[VMPT_CHAIN_PKTS];
	uint64_t peek_bits;
	const uint8_t *peek_end;
	/* What vmpt_flow_next_items hands out when it is not a run: blocks
	 * of the hot path while their time stays that of the last item
	 * handed out (last_time, when have_last).
	 */
	uint8_t have_last;
	uint64_t last_time;
	struct vmpt_flow_item batch[FLOW_BATCH];
	/* config.release: the trace before this is dropped. */
	const uint8_t *released;
};

static const char *const event_names[VMPT_EV_COUNT] = {
	[VMPT_EV_ENABLED] = "enabled",
	[VMPT_EV_DISABLED] = "disabled",
	[VMPT_EV_ASYNC_DISABLED] = "async-disabled",
	[VMPT_EV_ASYNC_BRANCH] = "async-branch",
	[VMPT_EV_OVERFLOW] = "overflow",
	[VMPT_EV_EXEC_MODE] = "exec-mode",
	[VMPT_EV_PAGING] = "paging",
	[VMPT_EV_VMCS] = "vmcs",
	[VMPT_EV_TSX] = "tsx",
	[VMPT_EV_PTWRITE] = "ptwrite",
	[VMPT_EV_CBR] = "cbr",
	[VMPT_EV_PWRE] = "pwre",
	[VMPT_EV_PWRX] = "pwrx",
	[VMPT_EV_EXSTOP] = "exstop",
	[VMPT_EV_MWAIT] = "mwait",
	[VMPT_EV_ERROR] = "error",
	[VMPT_EV_PSB] = "psb",
	[VMPT_EV_CFE] = "cfe",
};

const char *vmpt_event_name(unsigned ev)
{
	return ev < VMPT_EV_COUNT ? event_names[ev] : "?";
}

struct vmpt_flow *vmpt_flow_new(const struct vmpt_flow_config *config)
{
	struct vmpt_flow *dec = calloc(1, sizeof(*dec));

	if (!dec)
		return NULL;
	dec->cfg = *config;
	if (!config->cache)
		dec->own_cache = vmpt_bcache_new();
	if (!config->cache && !dec->own_cache) {
		free(dec);
		return NULL;
	}
	dec->disasm = vmpt_bdisasm_new(config->cache ? config->cache : dec->own_cache);
	dec->memo = vmpt_tnt_memo_new();
	dec->evd_store = vmpt_evd_store_new();
	if (!dec->disasm || !dec->memo || !dec->evd_store) {
		vmpt_flow_free(dec);
		return NULL;
	}
	if (config->n_parts)
		vmpt_pkt_decoder_init_parts(&dec->pd, config->parts, config->n_parts);
	else
		vmpt_pkt_decoder_init(&dec->pd, config->begin,
				      (size_t)(config->end - config->begin));
	/* config.release: one contiguous trace (a part or none). */
	dec->released = config->n_parts ? config->parts[0].begin : config->begin;
	vmpt_last_ip_init(&dec->lip);
	vmpt_time_init(&dec->time, config->tsc_ctc_ratio_n,
		       config->tsc_ctc_ratio_d, config->mtc_period,
		       config->max_nonturbo_ratio);
	vmpt_cycles_init(&dec->cyc, config->max_nonturbo_ratio, config->cyc_thresh);
	/* Until a PIP says NR=1, code is the host's (as perf takes it):
	 * SYSCALL and friends change neither CR3 nor the machine, so a
	 * trace may run a while before any PIP. */
	dec->asid = vmpt_asid_any();
	dec->asid.machine = VMPT_MACHINE_HOST;
	return dec;
}

void vmpt_flow_free(struct vmpt_flow *dec)
{
	if (!dec)
		return;
	vmpt_bdisasm_free(dec->disasm);
	vmpt_bcache_free(dec->own_cache);
	vmpt_tnt_memo_free(dec->memo);
	vmpt_evd_store_free(dec->evd_store);
	free(dec->q);
	free(dec);
}

/* Trace was read: the walk goes on from here. */
static inline void progressed(struct vmpt_flow *dec)
{
	dec->walked = 0;
	dec->loop.n = 0;
}

/* A direct jump or call to `to` that reads no trace: -VMPT_ERR_LOOP when
 * the walk is in a loop that never reads any (perf's intel_pt_walk_insn:
 * a target seen again, or more than MAX_LOOPS of them), else 0.
 */
static inline int loop_step(struct vmpt_flow *dec, uint64_t to)
{
	uint32_t n = dec->loop.n++;

	if (n == 1) {
		dec->loop.ip = to;
		dec->loop.period = dec->loop.left = 1;
	} else if (n > 1) {
		if (n > MAX_LOOPS || to == dec->loop.ip)
			return -VMPT_ERR_LOOP;
		if (!--dec->loop.left) {
			dec->loop.left = ++dec->loop.period;
			dec->loop.ip = to;
		}
	}
	return 0;
}

static struct vmpt_flow_item *emit(struct vmpt_flow *dec, unsigned kind)
{
	struct vmpt_flow_item *it;

	if (dec->qh == dec->qn)
		dec->qh = dec->qn = 0;
	if (dec->direct && dec->qn == 0) {
		/* The caller's item itself: no copy on the hot path. */
		it = dec->direct;
		dec->direct = NULL;
		goto fill;
	}
	if (dec->qn == dec->qcap) {
		size_t cap = dec->qcap ? dec->qcap * 2 : 64;
		struct vmpt_flow_item *q = realloc(dec->q, cap * sizeof(*q));

		if (!q)
			return NULL;
		dec->q = q;
		dec->qcap = cap;
	}
	it = &dec->q[dec->qn++];
fill:
	memset(it, 0, sizeof(*it));
	it->kind = (uint8_t)kind;
	it->mode = dec->mode;
	it->offset = dec->pkt_off;
	it->time = kind == VMPT_FLOW_BLOCK ? dec->block_time : dec->time.tsc;
	it->cyc_est = dec->cyc.est;
	return it;
}

static struct vmpt_flow_item *event(struct vmpt_flow *dec, unsigned ev, uint64_t ip,
				    int ip_valid, uint64_t payload)
{
	struct vmpt_flow_item *it = emit(dec, VMPT_FLOW_EVENT);

	if (!it)
		return NULL;
	it->ev = (uint8_t)ev;
	it->ip = ip;
	it->ip_valid = (uint8_t)ip_valid;
	it->payload = payload;
	it->nr = dec->nr;
	return it;
}

static int emit_event(struct vmpt_flow *dec, unsigned ev, uint64_t ip,
		      int ip_valid, uint64_t payload)
{
	return event(dec, ev, ip, ip_valid, payload) ? 0 : -VMPT_ERR_NOMEM;
}

/* An event where perf's decoder returns a state: an IPC point. */
static int emit_ipc_event(struct vmpt_flow *dec, unsigned ev, uint64_t ip,
			  int ip_valid, uint64_t payload)
{
	struct vmpt_flow_item *it = event(dec, ev, ip, ip_valid, payload);

	if (!it)
		return -VMPT_ERR_NOMEM;
	it->cyc = vmpt_cycles_point(&dec->cyc);
	return 0;
}

static void reset_flow_state(struct vmpt_flow *dec)
{
	dec->tnt_n = 0;
	dec->have_pkt = 0;
	dec->depth = 0;
	dec->have_pend_mode = dec->have_pend_pip = dec->have_pend_vmcs = 0;
	dec->fup_bound = dec->want_fup = dec->cfe_wait = 0;
	dec->n_evd = 0;
	progressed(dec);
	dec->after_ovf = 0;
	dec->prev = NULL;
	dec->rec = NULL;
	dec->chain_n = 0;
}

/* Report an error at the current packet and IP, then look for the next
 * PSB (libipt), or with perf_resync the next IP packet (perf).
 */
static int error_resync(struct vmpt_flow *dec, int err)
{
	struct vmpt_flow_item *it = emit(dec, VMPT_FLOW_EVENT);
	int decode_error = err == -VMPT_ERR_NO_MATCH || err == -VMPT_ERR_NO_IMAGE ||
			   err == -VMPT_ERR_IP_SUPPRESSED || err == -VMPT_ERR_NO_LAST_IP ||
			   err == -VMPT_ERR_LOOP;

	if (!it)
		return -VMPT_ERR_NOMEM;
	it->ev = VMPT_EV_ERROR;
	it->err = err;
	/* perf walked the block closing a loop before it gave up. */
	if (err == -VMPT_ERR_LOOP)
		it->ninsn = dec->loop.insns;
	it->ip = dec->ip;
	it->ip_valid = dec->enabled;
	it->cyc = dec->cyc.tot;
	reset_flow_state(dec);
	dec->enabled = 0;
	if (!dec->cfg.perf_resync || !decode_error || !dec->synced) {
		dec->synced = 0;
		dec->resync = 0;
		return 0;
	}
	dec->resync = err == -VMPT_ERR_NO_IMAGE ? RESYNC_NO_IP : RESYNC_KEEP_IP;
	if (dec->resync == RESYNC_NO_IP) {
		dec->ip = 0;
		vmpt_last_ip_init(&dec->lip);
	}
	return 0;
}

static void update_asid(struct vmpt_flow *dec)
{
	uint64_t machine = dec->asid.machine;

	if (dec->have_nr)
		machine = !dec->nr ? VMPT_MACHINE_HOST :
			  dec->have_vmcs ? dec->vmcs : VMPT_MACHINE_GUEST;
	int guest = dec->have_nr && dec->nr;
	uint64_t space = guest ? dec->guest_space : dec->host_space;
	uint64_t cr3 = space ? space : dec->have_nr ? dec->cr3 : VMPT_ASID_ANY;

	if (machine != dec->asid.machine || cr3 != dec->asid.cr3) {
		dec->asid.machine = machine;
		dec->asid.cr3 = cr3;
		dec->sec = NULL;	/* the code may be elsewhere now */
	}
}

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
	update_asid(dec);
	return changed ? emit_event(dec, VMPT_EV_PAGING, dec->ip, dec->enabled, cr3) : 0;
}

static int set_vmcs(struct vmpt_flow *dec, uint64_t vmcs)
{
	int changed = !dec->have_vmcs || dec->vmcs != vmcs;

	dec->have_vmcs = 1;
	dec->vmcs = vmcs;
	update_asid(dec);
	return changed ? emit_event(dec, VMPT_EV_VMCS, dec->ip, dec->enabled, vmcs) : 0;
}

static int set_mode(struct vmpt_flow *dec, unsigned mode)
{
	int changed = dec->mode != mode;

	dec->mode = (uint8_t)mode;
	return changed ? emit_event(dec, VMPT_EV_EXEC_MODE, dec->ip, dec->enabled, mode) : 0;
}

/* MODE.Exec, PIP and VMCS take effect at the next branch target. */
static int apply_pending(struct vmpt_flow *dec)
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
static int psb_plus(struct vmpt_flow *dec)
{
	struct vmpt_flow_item *psb;
	struct vmpt_packet pkt;
	uint64_t psb_off = dec->pkt_off;
	int have_fup = 0, ret;

	vmpt_last_ip_init(&dec->lip);
	if (!dec->synced)
		dec->cyc.pge = 0;
	for (;;) {
		uint64_t off = vmpt_pkt_offset(&dec->pd);

		ret = vmpt_pkt_next(&dec->pd, &pkt);
		if (ret >= 0)
			vmpt_time_seen(&dec->time, pkt.type);
		if (ret < 0) {
			dec->pkt_off = off;
			/* A buffer that fills up ends in a PSB+ often; status
			 * only, so nothing of the flow is lost there.
			 */
			if (ret == -VMPT_ERR_EOS || ret == -VMPT_ERR_TRUNCATED)
				return -VMPT_ERR_EOS;
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
	psb = event(dec, VMPT_EV_PSB, have_fup ? dec->pkt_ip : dec->ip, have_fup, psb_off);
	if (!psb)
		return -VMPT_ERR_NOMEM;
	psb->cyc = vmpt_cycles_point(&dec->cyc);
	psb->to = dec->time.cbr;
	if (!dec->synced) {
		dec->synced = 1;
		reset_flow_state(dec);
		dec->enabled = (uint8_t)have_fup;
		if (have_fup) {
			dec->ip = dec->pkt_ip;
			ret = emit_event(dec, VMPT_EV_ENABLED, dec->ip, 1, VMPT_ENABLED_PSB);
		}
		return ret < 0 ? ret : have_fup;
	}
	if (!dec->enabled && have_fup && !dec->stopping) {
		/* We missed the enable (an OVF without FUP, say). */
		dec->enabled = 1;
		dec->ip = dec->pkt_ip;
		dec->after_ovf = 0;
		dec->resync = 0;
		ret = emit_event(dec, VMPT_EV_ENABLED, dec->ip, 1, VMPT_ENABLED_PSB);
		if (ret < 0)
			return ret;
	} else if (dec->resync && dec->ip && !dec->stopping) {
		/* perf goes on at the error's IP after a PSB+ without FUP. */
		dec->enabled = 1;
		dec->resync = 0;
		ret = emit_event(dec, VMPT_EV_ENABLED, dec->ip, 1, VMPT_ENABLED_PSB);
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
	ret = psb_plus(dec);
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
	struct vmpt_flow_item *it = event(dec, VMPT_EV_CFE, ip, ip_valid, dec->cfe_payload);

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
static int emit_bound(struct vmpt_flow *dec, uint64_t at, int ip_valid)
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
		struct vmpt_flow_item *psb = event(dec, VMPT_EV_PSB, at, ip_valid, dec->psb_off);

		if (!psb)
			return -VMPT_ERR_NOMEM;
		psb->cyc = vmpt_cycles_point(&dec->cyc);
		psb->to = dec->time.cbr;
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
		it = event(dec, order[i].ev, at, ip_valid, payload[i]);
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
/* PAD, TNT-8 and TIP, most of a trace, straight from the fast table
 * (which holds only what the full decoder gives): 1 when a TNT-8 or a TIP
 * was read as fetch() reads them, 0 when the next packet is another (the
 * PADs before it are read).
 */
static inline __attribute__((always_inline)) int
fetch_fast(struct vmpt_flow *dec, int after_fup)
{
	const uint8_t *p = dec->pd.pos, *end = dec->pd.end;
	uint32_t e = 0;
	unsigned ipc;

	if (dec->pd.ctx != VMPT_CTX_NONE || dec->want_fup)
		return 0;
	while (p < end && (e = vmpt_pkt_fast_table[*p]) == VMPT_PKT_FAST(VMPT_PKT_PAD, 1, 0, 0))
		p++;
	if (p != dec->pd.pos)
		dec->pkt_off = dec->pd.base + (uint64_t)(p - 1 - dec->pd.begin);
	dec->pd.pos = p;
	if (p == end)
		return 0;
	if ((uint16_t)e == VMPT_PKT_FAST(VMPT_PKT_TNT8, 1, 0, 0)) {
		dec->pkt_off = dec->pd.base + (uint64_t)(p - dec->pd.begin);
		dec->pd.pos = p + 1;
		dec->tnt_bits = e >> 24;
		dec->tnt_n = (e >> 16) & 0xff;
		dec->memo_try = 1;
		if (!after_fup)
			vmpt_cycles_seen(&dec->cyc, VMPT_PKT_TNT8);
		return 1;
	}
	/* A TIP where vmpt_pkt_next would take its fast path too, with a
	 * last IP to update (fetch's special case after a resync aside).
	 */
	ipc = (e >> 16) & 0xff;
	if ((uint8_t)e != VMPT_PKT_TIP || p >= dec->pd.limit || end - p < VMPT_PKT_FAST_READ ||
	    !dec->lip.have_ip || ipc == 5 || ipc > VMPT_IPC_FULL)
		return 0;
	dec->pkt_off = dec->pd.base + (uint64_t)(p - dec->pd.begin);
	dec->pd.pos = p + vmpt_pkt_decode_fast(p, &dec->pkt);
	vmpt_time_seen(&dec->time, VMPT_PKT_TIP);
	if (!after_fup)
		vmpt_cycles_seen(&dec->cyc, VMPT_PKT_TIP);
	vmpt_last_ip_update(&dec->lip, &dec->pkt);
	dec->pkt_ip_valid = vmpt_last_ip_query(&dec->lip, &dec->pkt_ip) == 0;
	dec->have_pkt = 1;
	return 1;
}

static int fetch(struct vmpt_flow *dec, int after_fup)
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
			if (pkt.type != VMPT_PKT_FUP && (ret = emit_bound(dec, dec->ip, 0)) < 0)
				return ret;
		}
		if (pkt.type == VMPT_PKT_PSB && dec->cfg.stop_offset &&
		    off >= dec->cfg.stop_offset)
			return stop_at_psb(dec);
		ret = 0;
		switch (pkt.type) {
		case VMPT_PKT_PSB:
			ret = psb_plus(dec);
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
				ret = emit_ipc_event(dec, VMPT_EV_PTWRITE, dec->ip, 0,
						     pkt.ptw.payload);
			}
			break;
		case VMPT_PKT_EXSTOP:
			if (pkt.exstop.ip) {
				dec->fup_bound |= FUP_EXSTOP;
				dec->want_fup = 1;
			} else {
				ret = emit_ipc_event(dec, VMPT_EV_EXSTOP, dec->ip, 0, 0);
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
				ret = emit_ipc_event(dec, VMPT_EV_PWRE, dec->ip, 0, pwre);
			}
			break;
		}
		case VMPT_PKT_PWRX:
			ret = emit_ipc_event(dec, VMPT_EV_PWRX, dec->ip, 0,
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
				ret = emit_ipc_event(dec, VMPT_EV_CBR, dec->ip, 0, pkt.cbr);
			else
				ret = emit_event(dec, VMPT_EV_CBR, dec->ip, 0, pkt.cbr);
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

static int in_filter(const struct vmpt_flow *dec, uint64_t ip)
{
	if (!dec->cfg.n_filters)
		return 1;
	for (unsigned i = 0; i < dec->cfg.n_filters; i++)
		if (ip >= dec->cfg.filter_a[i] && ip <= dec->cfg.filter_b[i])
			return 1;
	return 0;
}

/* Did the branch ending b switch tracing off (the pending TIP.PGD)?  With
 * an IP, it is the branch that goes there; suppressed, a far transfer, or
 * (with a filter) a branch whose target leaves the filter.
 */
static int pgd_binds(const struct vmpt_flow *dec, const struct vmpt_block *b)
{
	int known = dec->pkt_ip_valid;

	switch (b->iclass) {
	case VMPT_IC_JMP:
	case VMPT_IC_CALL:
		if (known)
			return b->target == dec->pkt_ip;
		return dec->cfg.n_filters && !in_filter(dec, b->target);
	case VMPT_IC_JCC:
		if (known)
			return 1;
		return dec->cfg.n_filters && !in_filter(dec, b->target);
	case VMPT_IC_OTHER:
		return 0;
	default:
		return 1;
	}
}

static void push_ret(struct vmpt_flow *dec, struct vmpt_block *call)
{
	dec->stack[dec->sp].ip = call->next_ip;
	dec->stack[dec->sp].call = call;
	dec->sp = (dec->sp + 1) % STACK_DEPTH;
	if (dec->depth < STACK_DEPTH)
		dec->depth++;
}

static int pop_ret(struct vmpt_flow *dec, struct ret_site *site)
{
	if (!dec->depth)
		return -VMPT_ERR_NO_MATCH;
	dec->sp = (dec->sp + STACK_DEPTH - 1) % STACK_DEPTH;
	dec->depth--;
	*site = dec->stack[dec->sp];
	return 0;
}

/* A return went to dec->ip: the walk goes on from the call's block when
 * that is the call's return site.
 */
static void went_back(struct vmpt_flow *dec, const struct ret_site *site)
{
	dec->prev = site->ip == dec->ip ? site->call : NULL;
	dec->prev_slot = 0;
}

/* The code at dec->ip comes from the section hit last while the IP stays
 * in it (and the address space does not change), else from the image.
 * Within that section a successor link of the block walked last gives the
 * same block as the cache would.
 */
static int lookup_block(struct vmpt_flow *dec, struct vmpt_block **out)
{
	const struct vmpt_section *s = dec->sec;
	struct vmpt_block *prev = dec->prev, *b;
	int ret;

	if (!s || dec->ip - s->vaddr >= s->size) {
		s = vmpt_image_find(dec->cfg.image, &dec->asid, dec->ip);
		if (!s)
			return -VMPT_ERR_NO_IMAGE;
		dec->sec = s;
	}
	if (prev && prev->sec == s) {
		b = atomic_load_explicit(&prev->succ[dec->prev_slot], memory_order_acquire);
		if (b && b->ip == dec->ip && b->mode == dec->mode) {
			*out = b;
			return 0;
		}
	}
	ret = vmpt_bcache_get(dec->disasm, dec->cfg.image, s, &dec->asid, dec->ip,
			      dec->mode, &b);
	if (ret < 0)
		return ret;
	/* Set once: a link rewritten at every new indirect target (or even
	 * a failing compare-and-swap, which takes the line exclusive) would
	 * bounce its cache line between the threads sharing the cache.
	 */
	if (prev && prev->sec == s &&
	    !atomic_load_explicit(&prev->succ[dec->prev_slot], memory_order_relaxed)) {
		struct vmpt_block *none = NULL;

		atomic_compare_exchange_strong_explicit(&prev->succ[dec->prev_slot], &none, b,
							memory_order_release,
							memory_order_relaxed);
	}
	*out = b;
	return 0;
}

static struct vmpt_flow_item *emit_block(struct vmpt_flow *dec,
					 const struct vmpt_block *b,
					 uint32_t ninsn)
{
	struct vmpt_flow_item *it = emit(dec, VMPT_FLOW_BLOCK);

	if (!it)
		return NULL;
	it->ip = b->ip;
	it->ninsn = ninsn;
	it->isize = b->isize;
	it->sec = b->sec;
	it->mode = b->mode;
	if (ninsn == b->ninsn) {
		it->iclass = b->iclass;
		it->end_ip = b->end_ip;
		it->to = b->next_ip;
	} else {
		uint64_t ip = b->ip;

		for (uint32_t i = 0; i + 1 < ninsn; i++)
			ip += b->isize[i];
		it->iclass = VMPT_IC_OTHER;
		it->end_ip = ip;
		it->to = ip + b->isize[ninsn - 1];
	}
	dec->walked += ninsn;
	return it;
}

/* The walk reached the IP of a FUP. */
static int fup_reached(struct vmpt_flow *dec)
{
	uint64_t at = dec->ip;
	int ret;

	dec->have_pkt = 0;
	progressed(dec);
	dec->prev = NULL;
	if (dec->stopping) {
		ret = dec->fup_bound & FUP_PSB ? emit_bound(dec, at, 1) : 0;
		return ret < 0 ? ret : -VMPT_ERR_EOS;
	}
	/* Events bound to this FUP: no TIP follows but after a TSX abort.
	 * A CFE of the compound packet's goes before its branch. */
	ret = emit_bound(dec, at, 1);
	if (ret <= 0)
		return ret;
	/* An asynchronous event: a TIP says where it went, a TIP.PGD that
	 * tracing stopped here.
	 */
	ret = fetch(dec, 1);
	if (ret < 0)
		return ret == -VMPT_ERR_EOS ? 0 : ret;
	if (dec->tnt_n || !dec->have_pkt)
		return -VMPT_ERR_NO_MATCH;
	switch (dec->pkt.type) {
	case VMPT_PKT_TIP:
		if (!dec->pkt_ip_valid)
			return -VMPT_ERR_NO_MATCH;
		dec->have_pkt = 0;
		ret = apply_pending(dec);
		if (ret < 0)
			return ret;
		struct vmpt_flow_item *it = emit(dec, VMPT_FLOW_EVENT);

		if (!it)
			return -VMPT_ERR_NOMEM;
		it->ev = VMPT_EV_ASYNC_BRANCH;
		it->ip = at;
		it->ip_valid = 1;
		it->to = dec->pkt_ip;
		it->cyc = vmpt_cycles_point(&dec->cyc);
		dec->ip = dec->pkt_ip;
		return 0;
	case VMPT_PKT_TIP_PGD:
		dec->have_pkt = 0;
		dec->enabled = 0;
		ret = apply_pending(dec);
		if (ret < 0)
			return ret;
		return emit_ipc_event(dec, VMPT_EV_ASYNC_DISABLED, at, 1, 0);
	default:
		return -VMPT_ERR_NO_MATCH;
	}
}

/* Take the way out of block b the trace gives; `want` is what is pending. */
static int leave_block(struct vmpt_flow *dec, struct vmpt_block *b,
		       struct vmpt_flow_item *it, enum want want)
{
	struct ret_site site = { 0 };
	int ret;

	if (want == W_PGD && pgd_binds(dec, b)) {
		dec->have_pkt = 0;
		dec->enabled = 0;
		if (dec->pkt_ip_valid) {
			it->taken = b->iclass != VMPT_IC_JCC || dec->pkt_ip != b->next_ip;
			it->to = dec->pkt_ip;
		}
		it->cyc = vmpt_cycles_point(&dec->cyc);
		/* perf's decoder stays at the branch, or goes where the
		 * TIP.PGD says: later events (a CBR) are there.
		 */
		dec->ip = dec->pkt_ip_valid ? dec->pkt_ip : b->end_ip;
		ret = apply_pending(dec);
		if (ret < 0)
			return ret;
		progressed(dec);
		return emit_event(dec, VMPT_EV_DISABLED,
				  dec->pkt_ip_valid ? dec->pkt_ip : 0,
				  dec->pkt_ip_valid, 0);
	}
	switch (b->iclass) {
	case VMPT_IC_OTHER:
		dec->ip = b->next_ip;
		return 0;
	case VMPT_IC_CALL:
		if (!b->zero_call)
			push_ret(dec, b);
		/* fall through */
	case VMPT_IC_JMP:
		it->taken = 1;
		it->to = dec->ip = b->target;
		return 0;
	case VMPT_IC_JCC:
		if (want != W_TNT)
			return -VMPT_ERR_NO_MATCH;
		dec->tnt_n--;
		progressed(dec);
		/* perf's time: as of the TNT packet the bit came in. */
		it->time = dec->block_time = dec->time.tsc;
		it->cyc = vmpt_cycles_point(&dec->cyc);
		it->taken = (dec->tnt_bits >> dec->tnt_n) & 1;
		it->to = dec->ip = it->taken ? b->target : b->next_ip;
		return 0;
	case VMPT_IC_RET:
		if (want == W_TNT) {
			/* A compressed return: a taken bit, the address from
			 * our call stack.  A RET that meets a TNT bit was
			 * compressed whether or not the config says so: the
			 * TIP of one that was not would come before the bit.
			 */
			dec->tnt_n--;
			progressed(dec);
			it->time = dec->block_time = dec->time.tsc;
			if (dec->cfg.retcomp == VMPT_RETCOMP_OFF ||
			    !((dec->tnt_bits >> dec->tnt_n) & 1))
				return -VMPT_ERR_NO_MATCH;
			ret = pop_ret(dec, &site);
			if (ret < 0)
				return ret;
			it->cyc = vmpt_cycles_point(&dec->cyc);
			it->taken = 1;
			it->to = dec->ip = site.ip;
			went_back(dec, &site);
			return 0;
		}
		break;
	default:
		break;
	}
	/* Indirect: the TIP has the target. */
	if (want != W_TIP)
		return -VMPT_ERR_NO_MATCH;
	if (!dec->pkt_ip_valid)
		return -VMPT_ERR_IP_SUPPRESSED;
	if (b->iclass == VMPT_IC_CALL_IND)
		push_ret(dec, b);
	/* The CPU pops its call stack on every ret, compressed or not (as
	 * perf's decoder does); a mismatching top is why this one has a TIP.
	 */
	if (b->iclass == VMPT_IC_RET && dec->depth)
		pop_ret(dec, &site);
	dec->have_pkt = 0;
	progressed(dec);
	it->taken = 1;
	it->to = dec->ip = dec->pkt_ip;
	it->time = dec->block_time = dec->time.tsc;
	it->cyc = vmpt_cycles_point(&dec->cyc);
	if (b->iclass == VMPT_IC_RET)
		went_back(dec, &site);
	return apply_pending(dec);
}

/* One block toward what the trace asks for next. */
static int walk(struct vmpt_flow *dec, enum want want)
{
	struct vmpt_block *b;
	struct vmpt_flow_item *it;
	int ret;

	if (want == W_FUP && dec->ip == dec->pkt_ip)
		return fup_reached(dec);
	if (dec->walked > MAX_WALK)
		return -VMPT_ERR_NO_MATCH;
	ret = lookup_block(dec, &b);
	if (ret < 0)
		return ret;
	if (want == W_FUP && dec->pkt_ip - b->ip < b->next_ip - b->ip) {
		/* The event comes in the middle of this block: the
		 * instructions before it ran, the one at it did not.
		 */
		uint64_t ip = b->ip;
		uint32_t n = 0;

		while (ip != dec->pkt_ip && n < b->ninsn)
			ip += b->isize[n++];
		if (ip != dec->pkt_ip)
			return -VMPT_ERR_NO_MATCH;
		if (n && !emit_block(dec, b, n))
			return -VMPT_ERR_NOMEM;
		dec->ip = ip;
		return fup_reached(dec);
	}
	/* A loop reading no trace ends at the branch closing it: perf's
	 * error, at its target, and no branch.
	 */
	if ((b->iclass == VMPT_IC_JMP || b->iclass == VMPT_IC_CALL) &&
	    !(want == W_PGD && pgd_binds(dec, b)) && loop_step(dec, b->target) < 0) {
		dec->ip = b->target;
		dec->loop.insns = b->ninsn;
		return -VMPT_ERR_LOOP;
	}
	it = emit_block(dec, b, b->ninsn);
	if (!it)
		return -VMPT_ERR_NOMEM;
	ret = leave_block(dec, b, it, want);
	if (ret < 0) {
		dec->ip = b->end_ip;	/* the error is at the branch */
		return ret;
	}
	/* Only a walk that goes on from b may use b's successors (a
	 * return's way on is set by went_back).
	 */
	if (dec->enabled && b->iclass != VMPT_IC_RET) {
		dec->prev = b;
		dec->prev_slot = dec->ip != b->next_ip;
	}
	return 0;
}

static int enable_at(struct vmpt_flow *dec, uint64_t ip)
{
	int ret;

	dec->have_pkt = 0;
	dec->enabled = 1;
	dec->after_ovf = 0;
	progressed(dec);
	dec->prev = NULL;
	dec->ip = ip;
	ret = apply_pending(dec);
	if (ret < 0)
		return ret;
	return emit_ipc_event(dec, VMPT_EV_ENABLED, ip, 1, 0);
}

static int overflow(struct vmpt_flow *dec)
{
	struct vmpt_flow_item *it = event(dec, VMPT_EV_OVERFLOW, dec->ip, dec->enabled, 0);

	if (!it)
		return -VMPT_ERR_NOMEM;
	it->cyc = dec->cyc.tot;
	dec->have_pkt = 0;
	dec->tnt_n = 0;
	dec->depth = 0;
	/* what waited for a FUP is lost with the trace (perf) */
	dec->fup_bound = dec->want_fup = dec->cfe_wait = 0;
	dec->n_evd = 0;
	dec->enabled = 0;
	dec->after_ovf = 1;
	/* perf resynchronizes after an overflow as after an error. */
	if (dec->cfg.perf_resync)
		dec->resync = RESYNC_KEEP_IP;
	return 0;
}

/* perf_resync: the packet after an error that says where the trace goes
 * on (perf's intel_pt_walk_to_ip); TNT bits are passed over.
 */
static int step_resync(struct vmpt_flow *dec)
{
	uint64_t ip;

	if (dec->tnt_n) {
		dec->tnt_n = 0;
		return 0;
	}
	dec->have_pkt = 0;
	if (dec->pkt.type == VMPT_PKT_OVF)
		return overflow(dec);
	ip = dec->pkt_ip_valid ? dec->pkt_ip :
	     dec->resync == RESYNC_KEEP_IP ? dec->ip : 0;
	if (!ip)
		return 0;
	dec->resync = 0;
	if (dec->pkt.type != VMPT_PKT_TIP_PGD)
		return enable_at(dec, ip);
	/* Tracing stopped there: perf's "tr strt tr end". */
	dec->ip = ip;
	return emit_ipc_event(dec, VMPT_EV_ENABLED, ip, 1, VMPT_ENABLED_RESYNC_END);
}

/* Handle the pending flow packet while tracing is off. */
static int step_disabled(struct vmpt_flow *dec)
{
	int ret;

	if (dec->tnt_n) {
		dec->tnt_n = 0;
		return -VMPT_ERR_NO_MATCH;
	}
	switch (dec->pkt.type) {
	case VMPT_PKT_TIP_PGE:
		if (!dec->pkt_ip_valid)
			return -VMPT_ERR_IP_SUPPRESSED;
		return enable_at(dec, dec->pkt_ip);
	case VMPT_PKT_FUP:
		/* After an overflow the FUP says where tracing goes on. */
		if (dec->after_ovf && dec->pkt_ip_valid)
			return enable_at(dec, dec->pkt_ip);
		dec->have_pkt = 0;
		/* with tracing off, what is bound to it is at its IP (perf) */
		ret = emit_bound(dec, dec->pkt_ip, dec->pkt_ip_valid);
		return ret < 0 ? ret : 0;
	case VMPT_PKT_TIP_PGD:
		dec->have_pkt = 0;
		return 0;
	case VMPT_PKT_OVF:
		return overflow(dec);
	default:
		dec->have_pkt = 0;
		return -VMPT_ERR_NO_MATCH;
	}
}

static int step(struct vmpt_flow *dec)
{
	struct vmpt_packet pkt;
	int ret;

	if (dec->stopping && !dec->have_pkt)
		return -VMPT_ERR_EOS;
	if (!dec->synced) {
		if (vmpt_pkt_sync_forward(&dec->pd) < 0)
			return -VMPT_ERR_EOS;
		dec->pkt_off = vmpt_pkt_offset(&dec->pd);
		if (dec->cfg.stop_offset && dec->pkt_off >= dec->cfg.stop_offset)
			return -VMPT_ERR_EOS;
		ret = vmpt_pkt_next(&dec->pd, &pkt);
		if (ret < 0)
			return error_resync(dec, ret);
		ret = psb_plus(dec);
		dec->block_time = dec->time.tsc;
		if (ret == -VMPT_ERR_EOS)
			return ret;
		return ret < 0 ? error_resync(dec, ret) : 0;
	}
	if (!dec->tnt_n && !dec->have_pkt) {
		dec->block_time = dec->time.tsc;
		ret = fetch(dec, 0);
		if (ret == -VMPT_ERR_EOS)
			return ret;
		if (ret < 0)
			return error_resync(dec, ret);
		return 0;
	}
	if (dec->resync)
		ret = step_resync(dec);
	else if (!dec->enabled)
		ret = step_disabled(dec);
	else if (dec->tnt_n)
		ret = walk(dec, W_TNT);
	else if (dec->pkt.type == VMPT_PKT_TIP)
		ret = walk(dec, W_TIP);
	else if (dec->pkt.type == VMPT_PKT_TIP_PGD)
		ret = walk(dec, W_PGD);
	else if (dec->pkt.type == VMPT_PKT_FUP)
		ret = dec->pkt_ip_valid ? walk(dec, W_FUP) : -VMPT_ERR_IP_SUPPRESSED;
	else if (dec->pkt.type == VMPT_PKT_OVF)
		ret = overflow(dec);
	else	/* TIP.PGE while on: tracing restarted there (a VM entry) */
		ret = dec->pkt_ip_valid ? enable_at(dec, dec->pkt_ip) :
					  -VMPT_ERR_IP_SUPPRESSED;
	if (ret == -VMPT_ERR_EOS)
		return ret;
	return ret < 0 ? error_resync(dec, ret) : 0;
}

void vmpt_flow_set_host_space(struct vmpt_flow *dec, uint64_t space)
{
	dec->host_space = space;
	update_asid(dec);
	/* A run being recorded may go on in other code now. */
	dec->rec = NULL;
}

void vmpt_flow_set_guest_space(struct vmpt_flow *dec, uint64_t space)
{
	dec->guest_space = space;
	update_asid(dec);
	dec->rec = NULL;
}

void vmpt_flow_count_on(struct vmpt_flow *dec, const struct vmpt_flow *from)
{
	dec->cyc = from->cyc;
	/* Decoding starts anew: tracing is off until the trace says on. */
	dec->cyc.pge = 0;
	dec->cyc.after_cyc = 0;
}

int vmpt_flow_sync_at(struct vmpt_flow *dec, uint64_t offset, uint64_t stop)
{
	if (vmpt_pkt_seek(&dec->pd, offset) < 0)
		return -VMPT_ERR_EOS;
	dec->pd.sync = UINT64_MAX;
	dec->synced = 0;
	dec->enabled = 0;
	dec->resync = 0;
	dec->stopping = 0;
	dec->cfg.stop_offset = stop;
	dec->qh = dec->qn = 0;
	dec->have_last = 0;	/* the caller sets the space anew */
	dec->released = dec->pd.pos;
	reset_flow_state(dec);
	/* What the trace said before belongs to another piece: start as a
	 * new decoder does, in the host.
	 */
	dec->have_nr = dec->nr = dec->have_vmcs = 0;
	dec->cr3 = dec->vmcs = 0;
	dec->mode = VMPT_MODE_64;
	dec->asid = vmpt_asid_any();
	dec->asid.machine = VMPT_MACHINE_HOST;
	update_asid(dec);
	dec->sec = NULL;
	return 0;
}

/* A run about to play back, after those played back to back before it:
 * the chain grows, and is kept when it has all its packets.  Back to back:
 * the run takes all the bits of a TNT-8 packet read just after the last
 * one's (PADs between), from its first, in the same section.
 */
static void chain_grow(struct vmpt_flow *dec, struct vmpt_run *r)
{
	const uint8_t *tnt = dec->pd.pos - 1, *p = dec->chain_end;
	unsigned n = dec->tnt_n;

	if (r->nbits != n || n > 6) {
		dec->chain_n = 0;
		return;
	}
	/* In the same bytes, a few PADs at most after the last one's end
	 * (tnt - p wraps when before it).
	 */
	if (dec->chain_n && (dec->chain_begin != dec->pd.begin ||
			     dec->chain_base != dec->pd.base || (size_t)(tnt - p) > 16))
		dec->chain_n = 0;
	if (dec->chain_n) {
		uint32_t e = vmpt_pkt_fast_table[*tnt];

		if ((uint16_t)e != VMPT_PKT_FAST(VMPT_PKT_TNT8, 1, 0, 0) ||
		    ((e >> 16) & 0xff) != n || r->first->sec != dec->chain_sec)
			dec->chain_n = 0;
		while (dec->chain_n && p < tnt)
			if (*p++ != 0)
				dec->chain_n = 0;
	}
	if (!dec->chain_n) {
		dec->chain_key = 0;
		dec->chain_sec = r->first->sec;
	}
	dec->chain_key = vmpt_chain_key_add(dec->chain_key, dec->chain_n, dec->tnt_bits, n);
	dec->chain_run[dec->chain_n++] = r;
	dec->chain_begin = dec->pd.begin;
	dec->chain_base = dec->pd.base;
	dec->chain_end = dec->pd.pos;
	if (dec->chain_n == VMPT_CHAIN_PKTS) {
		vmpt_tnt_memo_chain(dec->memo, dec->chain_run, dec->chain_n, dec->chain_key);
		dec->chain_n = 0;
	}
}

/* The chain from b for the bits pending and the TNT-8 packets after them,
 * or NULL; where its packets are is kept for play_run.  Only while the
 * time is that of the last item handed out: the caller sets the address
 * space by the time between calls (see vmpt_flow_next_items), and a
 * chain takes what would be several calls.
 */
static struct vmpt_run *find_chain(struct vmpt_flow *dec, const struct vmpt_block *b)
{
	const uint8_t *p = dec->pd.pos, *end = dec->pd.limit;
	uint64_t key;
	uint32_t e = 0;

	if (dec->tnt_n > 6 || dec->have_pkt || dec->pd.ctx != VMPT_CTX_NONE ||
	    dec->want_fup || !dec->have_last || dec->last_time != dec->time.tsc ||
	    dec->block_time != dec->time.tsc)
		return NULL;
	key = vmpt_chain_key_add(0, 0, dec->tnt_bits, dec->tnt_n);
	for (unsigned k = 1; k < VMPT_CHAIN_PKTS; k++) {
		while (p < end && (e = vmpt_pkt_fast_table[*p]) ==
				  VMPT_PKT_FAST(VMPT_PKT_PAD, 1, 0, 0))
			p++;
		if (p >= end || (uint16_t)e != VMPT_PKT_FAST(VMPT_PKT_TNT8, 1, 0, 0))
			return NULL;
		dec->peek_off[k] = dec->pd.base + (uint64_t)(p - dec->pd.begin);
		key = vmpt_chain_key_add(key, k, e >> 24, (e >> 16) & 0xff);
		p++;
	}
	dec->peek_bits = e >> 24;
	dec->peek_end = p;
	return vmpt_tnt_memo_find_chain(dec->memo, b, key);
}

/* The run (or chain) played back: its items, given their time, offset
 * and cycle count in place, and the state the walk would have after the
 * last.  Nothing is read during a run: the offset is that of the packet
 * whose bits a step takes, the time that of the packet (the time of the
 * block before until the first bit), the same for every packet of a
 * chain; only the first bit can take a new cycle count.
 */
static const struct vmpt_flow_item *play_run(struct vmpt_flow *dec, size_t *n)
{
	struct vmpt_run *r = dec->play;
	struct vmpt_flow_item *it = r->item, *p = it, *end;
	uint32_t last = r->nsteps - 1, first_bit = r->first_bit;
	uint64_t before = dec->block_time, tsc = dec->time.tsc;
	uint8_t est = dec->cyc.est;

	if (!dec->chain_rest && ++dec->chain_plays == CHAIN_WINDOW) {
		if (dec->chain_hits < CHAIN_WINDOW / 8) {
			dec->chain_rest = CHAIN_REST;
			dec->chain_n = 0;
		}
		dec->chain_plays = dec->chain_hits = 0;
	}
	if (r->npkts == 1) {
		uint64_t off = dec->pkt_off;

		if (!dec->chain_rest)
			chain_grow(dec, r);
		else
			dec->chain_rest--;
		for (end = it + last + 1; p != end; p++) {
			p->time = tsc;
			p->offset = off;
			p->cyc_est = est;
		}
	} else {
		dec->chain_hits++;
		dec->chain_n = 0;
		dec->peek_off[0] = dec->pkt_off;
		for (uint32_t k = 0; k < r->npkts; k++) {
			uint64_t off = dec->peek_off[k];

			end = it + (k + 1 < r->npkts ? r->seg[k + 1] : last + 1);
			for (; p != end; p++) {
				p->time = tsc;
				p->offset = off;
				p->cyc_est = est;
			}
		}
	}
	for (uint32_t i = 0; i < first_bit; i++)
		it[i].time = before;
	it[first_bit].cyc = vmpt_cycles_point(&dec->cyc);
	if (r->pushes)
		for (uint32_t i = 0; i <= last; i++)
			if (r->step[i].push)
				push_ret(dec, r->step[i].block);
	if (r->npkts == 1) {
		dec->tnt_n -= r->nbits;
	} else {
		/* The packets after the first, read (as fetch_fast would). */
		dec->pd.pos = dec->peek_end;
		dec->pkt_off = dec->peek_off[r->npkts - 1];
		dec->tnt_bits = dec->peek_bits;
		dec->tnt_n = 0;
	}
	dec->block_time = tsc;
	progressed(dec);	/* a run ends with a bit */
	dec->ip = it[last].to;
	dec->prev = r->step[last].block;
	dec->prev_slot = it[last].taken;
	dec->play = NULL;
	dec->memo_try = 1;
	*n = r->nsteps;
	return it;
}

/* Append the block just walked to the run being recorded; keep the run
 * when it took the last bit (or is full), drop it when the walk went
 * somewhere a run cannot follow (a return, another section).
 */
static void record_step(struct vmpt_flow *dec, struct vmpt_block *b,
			const struct vmpt_flow_item *it)
{
	struct vmpt_run *r = dec->rec;
	struct vmpt_run_step *s = &r->step[r->nsteps];

	switch (b->iclass) {
	case VMPT_IC_OTHER:
	case VMPT_IC_JCC:
	case VMPT_IC_JMP:
	case VMPT_IC_CALL:
		if (b->sec == r->first->sec)
			break;
		/* fall through */
	default:
		dec->rec = NULL;
		return;
	}
	r->item[r->nsteps] = *it;
	r->item[r->nsteps].cyc = 0;
	s->block = b;
	s->bit = b->iclass == VMPT_IC_JCC;
	s->push = b->iclass == VMPT_IC_CALL && !b->zero_call;
	if (s->bit && !r->nbits++)
		r->first_bit = r->nsteps;
	r->pushes += s->push;
	r->nsteps++;
	r->ninsn += b->ninsn;
	if (s->bit && (!dec->tnt_n || r->nsteps == VMPT_RUN_MAX)) {
		vmpt_tnt_memo_commit(dec->memo);
		dec->rec = NULL;
		dec->memo_try = 1;
	} else if (r->nsteps == VMPT_RUN_MAX) {
		dec->rec = NULL;
	}
}

/* The hot path: tracing on, nothing queued, and the way out of the next
 * block is a TNT bit, a TIP or no trace at all.  The block goes straight
 * into the caller's item, with what walk() and leave_block() would do
 * (returns 1), or, with runs, a run recorded from it is ready to play
 * back (returns 2); anything else (an error, an event due, a pending mode or PIP) is
 * left to them (returns 0).
 */
static inline __attribute__((always_inline)) int
walk_fast(struct vmpt_flow *dec, struct vmpt_flow_item *it, int runs)
{
	struct vmpt_block *b, *prev = dec->prev;
	struct ret_site site = { 0 };
	uint64_t cyc = 0;
	uint8_t taken;

	if (dec->walked > MAX_WALK)
		return 0;
	/* lookup_block's successor link, inline: a block of the current
	 * section at the IP is the one lookup_block gives.
	 */
	if (!prev || prev->sec != dec->sec ||
	    !(b = atomic_load_explicit(&prev->succ[dec->prev_slot], memory_order_acquire)) ||
	    b->ip != dec->ip || b->mode != dec->mode) {
		if (lookup_block(dec, &b) < 0)
			return 0;
	}
	/* The walk goes on to one of b's successors: fetch both while b is
	 * handled (on a walk that never repeats, a block is rarely in L1).
	 */
	__builtin_prefetch(atomic_load_explicit(&b->succ[0], memory_order_relaxed));
	__builtin_prefetch(atomic_load_explicit(&b->succ[1], memory_order_relaxed));
	if (runs && dec->tnt_n && dec->memo_try && !dec->rec) {
		uint64_t key = vmpt_tnt_key(dec->tnt_bits, dec->tnt_n);
		struct vmpt_run *run = vmpt_tnt_memo_find(dec->memo, b, key), *chain;

		if (run && run->chain_head && run->nbits == dec->tnt_n &&
		    (chain = find_chain(dec, b)))
			run = chain;
		if (run && dec->walked + run->ninsn <= MAX_WALK) {
			dec->play = run;
			return 2;
		}
		dec->rec = vmpt_tnt_memo_start(dec->memo, b, key);
		dec->memo_try = 0;
	}
	/* Most blocks end in a conditional jump: tested before the jump
	 * table of the rest.
	 */
	if (b->iclass == VMPT_IC_JCC) {
		if (!dec->tnt_n)
			return 0;
		dec->tnt_n--;
		progressed(dec);
		dec->block_time = dec->time.tsc;
		cyc = vmpt_cycles_point(&dec->cyc);
		taken = (dec->tnt_bits >> dec->tnt_n) & 1;
		dec->ip = taken ? b->target : b->next_ip;
	} else switch (b->iclass) {
	case VMPT_IC_CALL:
	case VMPT_IC_JMP:
		/* A loop reading no trace: walk() reports it. */
		if (loop_step(dec, b->target) < 0)
			return 0;
		if (b->iclass == VMPT_IC_CALL && !b->zero_call)
			push_ret(dec, b);
		taken = 1;
		dec->ip = b->target;
		dec->walked += b->ninsn;
		break;
	case VMPT_IC_OTHER:
		taken = 0;
		dec->ip = b->next_ip;
		dec->walked += b->ninsn;
		break;
	case VMPT_IC_RET:
		if (dec->tnt_n) {
			if (dec->cfg.retcomp == VMPT_RETCOMP_OFF || !dec->depth ||
			    !((dec->tnt_bits >> (dec->tnt_n - 1)) & 1))
				return 0;
			dec->tnt_n--;
			progressed(dec);
			dec->block_time = dec->time.tsc;
			cyc = vmpt_cycles_point(&dec->cyc);
			taken = 1;
			pop_ret(dec, &site);
			dec->ip = site.ip;
			break;
		}
		/* fall through */
	default:	/* indirect: the TIP */
		if (dec->tnt_n || !dec->have_pkt || dec->pkt.type != VMPT_PKT_TIP ||
		    !dec->pkt_ip_valid || dec->have_pend_mode || dec->have_pend_pip ||
		    dec->have_pend_vmcs)
			return 0;
		if (b->iclass == VMPT_IC_CALL_IND)
			push_ret(dec, b);
		if (b->iclass == VMPT_IC_RET && dec->depth)
			pop_ret(dec, &site);
		dec->have_pkt = 0;
		progressed(dec);
		cyc = vmpt_cycles_point(&dec->cyc);
		taken = 1;
		dec->ip = dec->pkt_ip;
		break;
	}
	if (!dec->tnt_n && !dec->have_pkt)
		dec->block_time = dec->time.tsc;
	/* Field by field: a compound literal would go through a copy. */
	it->kind = VMPT_FLOW_BLOCK;
	it->mode = b->mode;
	it->iclass = b->iclass;
	it->taken = taken;
	it->ev = 0;
	it->ip_valid = 0;
	it->nr = 0;
	it->cyc_est = dec->cyc.est;
	it->err = 0;
	it->ninsn = b->ninsn;
	it->isize = b->isize;
	it->sec = b->sec;
	it->ip = b->ip;
	it->end_ip = b->end_ip;
	it->to = taken ? dec->ip : b->next_ip;
	it->payload = 0;
	it->offset = dec->pkt_off;
	it->time = dec->block_time;
	it->cyc = cyc;
	if (b->iclass == VMPT_IC_RET) {
		went_back(dec, &site);
	} else {
		dec->prev = b;
		dec->prev_slot = taken;
	}
	if (dec->rec)
		record_step(dec, b, it);
	return 1;
}

/* The walk needs the next packet and nothing else is due: step() would
 * only read it (fetch).
 */
static inline int wants_packet(const struct vmpt_flow *dec)
{
	return dec->qh == dec->qn && !dec->play && !dec->tnt_n && !dec->have_pkt &&
	       dec->synced && dec->enabled && !dec->stopping;
}

/* The next item into *item; with runs, TNT runs are recorded, and one
 * ready to play back returns 1 instead (nothing filled).  Played one item
 * per call a run would cost more than the walk.  Inlined in both callers
 * with walk_fast, so that each has its own hot path.
 */
static inline __attribute__((always_inline)) int
next_item(struct vmpt_flow *dec, struct vmpt_flow_item *item, int runs)
{
	for (;;) {
		int ret;

		if (dec->qh != dec->qn) {
			*item = dec->q[dec->qh++];
			return 0;
		}
		if (dec->play)
			return 1;
		if ((dec->tnt_n || (dec->have_pkt && dec->pkt.type == VMPT_PKT_TIP)) &&
		    dec->enabled && !dec->stopping) {
			ret = walk_fast(dec, item, runs);
			if (ret == 1)
				return 0;
			if (ret == 2)
				continue;	/* a run to play */
		}
		dec->rec = NULL;	/* the walk leaves the hot path */
		/* step() reading a TNT-8 or TIP, inline */
		if (wants_packet(dec)) {
			dec->block_time = dec->time.tsc;
			if (fetch_fast(dec, 0))
				continue;
		}
		dec->direct = item;
		ret = step(dec);
		if (!dec->direct)
			return 0;	/* step wrote *item */
		dec->direct = NULL;
		if (ret < 0 && dec->qh == dec->qn)
			return ret;
	}
}

int vmpt_flow_next(struct vmpt_flow *dec, struct vmpt_flow_item *item)
{
	return next_item(dec, item, 0);
}

/* vmpt_flow_carry's contents. */
struct carry {
	struct vmpt_time time;
	uint64_t cr3, vmcs, machine;
	uint8_t have_nr, nr, have_vmcs, mode;
	uint8_t no_cyc;		/* the config's: the cycle count never matters */
};
_Static_assert(sizeof(struct carry) <= sizeof(struct vmpt_flow_carry),
	       "vmpt_flow_carry too small");

void vmpt_flow_carry_get(const struct vmpt_flow *dec, struct vmpt_flow_carry *c)
{
	struct carry k;

	/* Bytes compared as they are: padding zeroed, the time copied whole. */
	memset(c, 0, sizeof(*c));
	memset(&k, 0, sizeof(k));
	memcpy(&k.time, &dec->time, sizeof(k.time));
	k.cr3 = dec->cr3;
	k.vmcs = dec->vmcs;
	k.machine = dec->asid.machine;
	k.have_nr = dec->have_nr;
	k.nr = dec->nr;
	k.have_vmcs = dec->have_vmcs;
	k.mode = dec->mode;
	k.no_cyc = dec->cfg.no_cyc;
	memcpy(c, &k, sizeof(k));
}

void vmpt_flow_carry_set(struct vmpt_flow *dec, const struct vmpt_flow_carry *c)
{
	struct carry k;

	memcpy(&k, c, sizeof(k));
	memcpy(&dec->time, &k.time, sizeof(dec->time));
	dec->cr3 = k.cr3;
	dec->vmcs = k.vmcs;
	dec->asid.machine = k.machine;
	dec->have_nr = k.have_nr;
	dec->nr = k.nr;
	dec->have_vmcs = k.have_vmcs;
	dec->mode = k.mode;
	dec->block_time = dec->time.tsc;
	dec->sec = NULL;
	dec->rec = NULL;
	dec->have_last = 0;
	update_asid(dec);
}

/* Without CYC packets the count's base (set at a CBR that changes the
 * ratio, which a fresh decoder's first CBR always does) never reaches a
 * time: a piece need not be decoded again for it.
 */
static void forget_cycles(struct carry *k)
{
	if (!k->no_cyc)
		return;
	k->time.base = 0;
	k->time.cyc = 0;
	k->time.have_base = 0;
	k->time.have_calc = 0;
	k->time.calib_pending = 0;
	k->time.calc_ratio = 0;
}

int vmpt_flow_carry_equal(const struct vmpt_flow_carry *a, const struct vmpt_flow_carry *b)
{
	struct carry x, y;

	memcpy(&x, a, sizeof(x));
	memcpy(&y, b, sizeof(y));
	forget_cycles(&x);
	forget_cycles(&y);
	return !memcmp(&x, &y, sizeof(x));
}

int vmpt_flow_enabled(const struct vmpt_flow *dec)
{
	return dec->enabled;
}

/* config.release: drop the pages of the trace read (whole pages, from
 * the last drop up to a little behind the packet being read).
 */
static void release_behind(struct vmpt_flow *dec)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t from = ((uintptr_t)dec->released + page - 1) & ~(page - 1);
	uintptr_t to = ((uintptr_t)dec->pd.pos - RELEASE_KEEP) & ~(page - 1);

	if (to > from)
		madvise((void *)from, to - from, MADV_DONTNEED);
	dec->released = dec->pd.pos - RELEASE_KEEP;
}

/* Can walk_fast take the next block (next_item's test)? */
static inline int on_hot_path(const struct vmpt_flow *dec)
{
	return dec->qh == dec->qn && !dec->play &&
	       (dec->tnt_n || (dec->have_pkt && dec->pkt.type == VMPT_PKT_TIP)) &&
	       dec->enabled && !dec->stopping;
}

int vmpt_flow_next_items(struct vmpt_flow *dec, const struct vmpt_flow_item **items,
			 size_t *n)
{
	struct vmpt_flow_item *b = dec->batch;
	int ret = next_item(dec, b, 1);
	size_t k = 1;

	if (dec->cfg.release && dec->cfg.n_parts <= 1 &&
	    dec->pd.pos - dec->released > RELEASE_STEP)
		release_behind(dec);
	if (ret < 0)
		return ret;
	if (ret == 1) {
		*items = play_run(dec, n);
		dec->last_time = (*items)[*n - 1].time;
		dec->have_last = 1;
		return 0;
	}
	/* More blocks in one call: the caller may set the host address
	 * space by each item's time (vmpt_flow_set_host_space), which then
	 * applies from the next item on; a block walked before the caller
	 * saw the one before it is the same only while the time has not
	 * changed since the last item handed out.
	 */
	if (b[0].kind == VMPT_FLOW_BLOCK && dec->have_last && dec->qh == dec->qn &&
	    !dec->play && dec->enabled && !dec->stopping) {
		/* Of on_hot_path's test walk_fast changes only the bits and
		 * the packet (a run to play ends the batch), step() all.
		 */
		while (k < FLOW_BATCH && b[k - 1].time == dec->last_time) {
			/* Out of bits: the next packet read here, not in
			 * another call (what it queues ends the batch; an
			 * error, the end included, comes again from step()
			 * in the next call).
			 */
			if (!dec->tnt_n && !(dec->have_pkt && dec->pkt.type == VMPT_PKT_TIP)) {
				if (!wants_packet(dec))
					break;
				/* step() on the hot path, inline for a TNT-8 or TIP */
				dec->rec = NULL;	/* as next_item */
				dec->block_time = dec->time.tsc;
				if (!fetch_fast(dec, 0) && (step(dec) < 0 || !on_hot_path(dec)))
					break;
			}
			ret = walk_fast(dec, &b[k], 1);
			if (ret != 1) {
				if (!ret)
					dec->rec = NULL;	/* as next_item */
				break;
			}
			k++;
		}
	}
	dec->last_time = b[k - 1].time;
	dec->have_last = 1;
	*items = b;
	*n = k;
	return 0;
}

int vmpt_flow_psb_offsets(const uint8_t *begin, const uint8_t *end,
			  uint64_t **offsets, size_t *n)
{
	const uint8_t *p = begin;
	uint64_t *o = NULL;
	size_t cnt = 0, cap = 0;

	while ((p = vmpt_pkt_find_psb(p, end))) {
		if (cnt == cap) {
			uint64_t *t;

			cap = cap ? cap * 2 : 64;
			t = realloc(o, cap * sizeof(*t));
			if (!t) {
				free(o);
				return -VMPT_ERR_NOMEM;
			}
			o = t;
		}
		o[cnt++] = (uint64_t)(p - begin);
		p++;
	}
	*offsets = o;
	*n = cnt;
	return 0;
}
