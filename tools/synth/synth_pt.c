/* SPDX-License-Identifier: MIT */
/* The trace unit: turns what the walk executes into packets the way the
 * processor does (Intel SDM Vol. 3C, ch. "Intel Processor Trace"):
 * conditional branches and compressed returns collect in TNT packets that
 * are flushed before any IP packet and before PSB; IPs are compressed
 * against the last IP, which PSB resets; PSB+ repeats the state every
 * psb_period bytes; TSC/TMA/MTC/CYC carry time, with the guest's TSC
 * offset (and scaling) applied to TSC packets in VMX non-root operation.
 */
#include "synth.h"
#include "vmpt/error.h"

#include <stdlib.h>
#include <string.h>

#define TNT8_MAX 6
#define TNT64_MAX 47

void synth_pt_init(struct synth_pt *pt, const struct synth_pt_config *cfg,
		   uint64_t tsc0)
{
	memset(pt, 0, sizeof(*pt));
	pt->cfg = *cfg;
	vmpt_last_ip_init(&pt->lip);
	pt->tsc = tsc0;
	pt->cbr = cfg->cbr;
	pt->tsc_mult = 1ull << 48;
	pt->next_psb = 0;
}

void synth_pt_fini(struct synth_pt *pt)
{
	free(pt->buf);
	free(pt->marks);
	pt->buf = NULL;
	pt->marks = NULL;
}

void synth_pt_truncate(struct synth_pt *pt, size_t len)
{
	pt->len = len;
	while (pt->n_marks && pt->marks[pt->n_marks - 1].off >= len)
		pt->n_marks--;
}

static void mark_psb(struct synth_pt *pt)
{
	if (pt->n_marks == pt->cap_marks) {
		size_t ncap = pt->cap_marks ? pt->cap_marks * 2 : 64;
		struct synth_psb_mark *m = realloc(pt->marks, ncap * sizeof(*m));

		if (!m) {
			pt->oom = 1;
			return;
		}
		pt->marks = m;
		pt->cap_marks = ncap;
	}
	pt->marks[pt->n_marks].off = pt->len;
	pt->marks[pt->n_marks].next_line = *pt->lines + 1;
	pt->marks[pt->n_marks++].next_bline = *pt->blines + 1;
}

static void put(struct synth_pt *pt, const struct vmpt_packet *pkt)
{
	uint8_t b[VMPT_PKT_MAX_SIZE];
	int n = vmpt_pkt_encode(b, sizeof(b), pkt);

	if (n <= 0) {
		pt->oom = 1;	/* cannot happen for packets built here */
		return;
	}
	if (pt->len + (size_t)n > pt->cap) {
		size_t ncap = pt->cap ? pt->cap * 2 : 1 << 16;
		uint8_t *nb = realloc(pt->buf, ncap);

		if (!nb) {
			pt->oom = 1;
			return;
		}
		pt->buf = nb;
		pt->cap = ncap;
	}
	memcpy(pt->buf + pt->len, b, (size_t)n);
	pt->len += (size_t)n;
}

static uint64_t ctc_now(const struct synth_pt *pt)
{
	/* CTC = TSC * d / n: the crystal clock runs at TSC / (n/d). */
	return pt->tsc / (pt->cfg.tsc_ctc_n / pt->cfg.tsc_ctc_d);
}

/* A CYC before a packet that the cycle counter times (SDM: CYC packets
 * accompany other packets when cycles have passed and the threshold is met).
 */
static void cyc(struct synth_pt *pt)
{
	uint64_t n;
	struct vmpt_packet p = { .type = VMPT_PKT_CYC };

	if (!pt->cfg.cyc || !pt->packet_en)
		return;
	n = pt->cycles - pt->cyc_last;
	if (!n || (pt->cfg.cyc_thresh && n < (1ull << (pt->cfg.cyc_thresh - 1))))
		return;
	p.cyc = n;
	put(pt, &p);
	pt->cyc_last = pt->cycles;
}

static void put_timed(struct synth_pt *pt, const struct vmpt_packet *pkt)
{
	cyc(pt);
	put(pt, pkt);
}

uint64_t synth_pt_guest_tsc(const struct synth_pt *pt)
{
	unsigned __int128 scaled = (unsigned __int128)pt->tsc * pt->tsc_mult;

	return (uint64_t)(scaled >> 48) + (uint64_t)pt->tsc_offset;
}

static void tsc_tma(struct synth_pt *pt)
{
	struct vmpt_packet p = { .type = VMPT_PKT_TSC };
	uint64_t mult = pt->cfg.tsc_ctc_n / pt->cfg.tsc_ctc_d;
	uint64_t ctc = ctc_now(pt);

	p.tsc = (pt->nr ? synth_pt_guest_tsc(pt) : pt->tsc) &
		((1ull << 56) - 1);
	put(pt, &p);
	if (!pt->cfg.mtc)
		return;
	/* TMA: the CTC and the TSC ticks since its last edge (host clocks:
	 * neither the CTC nor the fast counter is offset).
	 */
	memset(&p, 0, sizeof(p));
	p.type = VMPT_PKT_TMA;
	p.tma.ctc = (uint16_t)ctc;
	p.tma.fc = (uint16_t)(pt->tsc - ctc * mult);
	put(pt, &p);
	pt->mtc_last = ctc >> pt->cfg.mtc_freq;
}

void synth_pt_tsc(struct synth_pt *pt)
{
	if (!pt->cfg.tsc)
		return;
	cyc(pt);
	tsc_tma(pt);
}

/* Time goes on by ticks: one MTC per CTC period, also while packet
 * generation is off (SDM: MTC and PSB do not depend on FilterEn or
 * ContextEn), none in a C-state (the wake resynchronizes the time).
 */
static void advance(struct synth_pt *pt, uint64_t ticks)
{
	uint64_t mtc;

	pt->tsc += ticks;
	if (!pt->cfg.mtc)
		return;
	mtc = ctc_now(pt) >> pt->cfg.mtc_freq;
	if (pt->asleep) {
		pt->mtc_last = mtc;
		return;
	}
	while (pt->mtc_last != mtc) {
		struct vmpt_packet p = { .type = VMPT_PKT_MTC };

		pt->mtc_last++;
		p.mtc = (uint8_t)pt->mtc_last;
		put_timed(pt, &p);
		if (!pt->packet_en)
			synth_pt_maybe_psb(pt, 0);
	}
}

void synth_pt_tick(struct synth_pt *pt, uint64_t cycles)
{
	/* cbr/max_non_turbo cycles per tick: at the max non-turbo ratio
	 * (the default) one per tick. */
	uint64_t num = cycles * pt->cfg.cbr + pt->tick_rem;

	pt->cycles += cycles;
	pt->tick_rem = num % pt->cbr;
	advance(pt, num / pt->cbr);
}

void synth_pt_idle(struct synth_pt *pt, uint64_t ticks)
{
	pt->cycles += ticks * pt->cbr / pt->cfg.cbr;
	advance(pt, ticks);
}

static void put_tnt(struct synth_pt *pt)
{
	struct vmpt_packet p = { 0 };

	if (!pt->tnt_count)
		return;
	p.type = pt->tnt_count <= TNT8_MAX ? VMPT_PKT_TNT8 : VMPT_PKT_TNT64;
	p.tnt.bits = pt->tnt_bits;
	p.tnt.count = (uint8_t)pt->tnt_count;
	put_timed(pt, &p);
	pt->tnt_bits = 0;
	pt->tnt_count = 0;
	for (unsigned i = 0; i < pt->n_deferred; i++)
		put(pt, &pt->deferred[i]);
	pt->n_deferred = 0;
}

void synth_pt_flush_tnt(struct synth_pt *pt)
{
	put_tnt(pt);
}

void synth_pt_tnt(struct synth_pt *pt, int taken)
{
	pt->tnt_bits = (pt->tnt_bits << 1) | (taken ? 1 : 0);
	pt->tnt_count++;
	if (pt->tnt_count == (pt->cfg.tnt64 ? TNT64_MAX : TNT8_MAX))
		put_tnt(pt);
}

void synth_pt_ip(struct synth_pt *pt, unsigned type, uint64_t ip)
{
	struct vmpt_packet p = { .type = (uint8_t)type };
	uint64_t payload;

	put_tnt(pt);
	p.ip.ipc = (uint8_t)vmpt_last_ip_compress(&pt->lip, ip, &payload);
	p.ip.ip = payload;
	put_timed(pt, &p);
	vmpt_last_ip_update(&pt->lip, &p);
}

void synth_pt_tip_indirect(struct synth_pt *pt, uint64_t ip)
{
	struct vmpt_packet p = { .type = VMPT_PKT_TIP };
	uint64_t payload;

	if (!pt->cfg.defer_tips || !pt->tnt_count || pt->n_deferred == SYNTH_DEFERRED_MAX) {
		synth_pt_ip(pt, VMPT_PKT_TIP, ip);
		return;
	}
	/* Compressed against the IP packets before it in the stream: the
	 * deferred ones go out in order, right after the TNT.
	 */
	p.ip.ipc = (uint8_t)vmpt_last_ip_compress(&pt->lip, ip, &payload);
	p.ip.ip = payload;
	vmpt_last_ip_update(&pt->lip, &p);
	pt->deferred[pt->n_deferred++] = p;
}

void synth_pt_ip_suppressed(struct synth_pt *pt, unsigned type)
{
	struct vmpt_packet p = { .type = (uint8_t)type };

	put_tnt(pt);
	p.ip.ipc = VMPT_IPC_SUPPRESSED;
	put_timed(pt, &p);
}

void synth_pt_pip(struct synth_pt *pt, uint64_t cr3, int nr)
{
	struct vmpt_packet p = { .type = VMPT_PKT_PIP };

	put_tnt(pt);	/* branches before the event come first */
	pt->cr3 = cr3;
	pt->nr = nr;
	p.pip.cr3 = cr3;
	p.pip.nr = (uint8_t)nr;
	put_timed(pt, &p);
}

void synth_pt_mode_exec(struct synth_pt *pt)
{
	struct vmpt_packet p = { .type = VMPT_PKT_MODE_EXEC };

	p.exec.csl = 1;		/* the walk runs 64-bit code only */
	put_tnt(pt);
	put_timed(pt, &p);
}

void synth_pt_vmcs(struct synth_pt *pt, uint64_t vmcs)
{
	struct vmpt_packet p = { .type = VMPT_PKT_VMCS };

	put_tnt(pt);
	pt->vmcs = vmcs;
	p.vmcs = vmcs;
	put_timed(pt, &p);
}

void synth_pt_ovf(struct synth_pt *pt)
{
	struct vmpt_packet p = { .type = VMPT_PKT_OVF };

	/* What was pending when the buffer overflowed is lost with it. */
	pt->tnt_bits = 0;
	pt->tnt_count = 0;
	pt->n_deferred = 0;
	put(pt, &p);
	pt->cyc_last = pt->cycles;
}

void synth_pt_maybe_psb(struct synth_pt *pt, uint64_t ip)
{
	struct vmpt_packet p;

	if (pt->len < pt->next_psb || pt->asleep)
		return;
	put_tnt(pt);
	if (pt->lines)
		mark_psb(pt);
	memset(&p, 0, sizeof(p));
	p.type = VMPT_PKT_PSB;
	put(pt, &p);
	pt->next_psb = pt->len - VMPT_PKT_MAX_SIZE + pt->cfg.psb_period;
	pt->psb_count++;
	/* PSB resets the last IP and the return compression stack. */
	vmpt_last_ip_init(&pt->lip);
	pt->rcount = 0;
	if (pt->cfg.tsc)
		tsc_tma(pt);
	memset(&p, 0, sizeof(p));
	p.type = VMPT_PKT_CBR;
	p.cbr = (uint8_t)pt->cbr;
	put(pt, &p);
	if (pt->vmx && pt->vmcs) {
		memset(&p, 0, sizeof(p));
		p.type = VMPT_PKT_VMCS;
		p.vmcs = pt->vmcs;
		put(pt, &p);
	}
	/* SDM "PSB+": PIP if ContextEn and OS, MODE.Exec and FUP if PacketEn. */
	if (pt->os && pt->packet_en) {
		memset(&p, 0, sizeof(p));
		p.type = VMPT_PKT_PIP;
		p.pip.cr3 = pt->cr3;
		p.pip.nr = (uint8_t)pt->nr;
		put(pt, &p);
	}
	if (pt->packet_en) {
		uint64_t payload;

		memset(&p, 0, sizeof(p));
		p.type = VMPT_PKT_MODE_EXEC;
		p.exec.csl = 1;
		put(pt, &p);
		memset(&p, 0, sizeof(p));
		p.type = VMPT_PKT_FUP;
		p.ip.ipc = (uint8_t)vmpt_last_ip_compress(&pt->lip, ip, &payload);
		p.ip.ip = payload;
		put(pt, &p);
		vmpt_last_ip_update(&pt->lip, &p);
	}
	memset(&p, 0, sizeof(p));
	p.type = VMPT_PKT_PSBEND;
	put(pt, &p);
}

void synth_pt_call(struct synth_pt *pt, uint64_t ret_ip)
{
	pt->rtop = (pt->rtop + 1) % SYNTH_RETCOMP_DEPTH;
	pt->rstack[pt->rtop] = ret_ip;
	if (pt->rcount < SYNTH_RETCOMP_DEPTH)
		pt->rcount++;
}

int synth_pt_ret(struct synth_pt *pt, uint64_t target)
{
	int match;

	if (!pt->rcount)
		return 0;
	match = pt->rstack[pt->rtop] == target;
	pt->rtop = (pt->rtop + SYNTH_RETCOMP_DEPTH - 1) % SYNTH_RETCOMP_DEPTH;
	pt->rcount--;
	return match && pt->cfg.retcomp;
}

void synth_pt_resume(struct synth_pt *pt, uint64_t tsc, int first)
{
	struct vmpt_packet p = { .type = VMPT_PKT_CBR };

	p.cbr = (uint8_t)pt->cbr;
	/* Nothing was generated while TraceEn was 0: no MTC for the gap. */
	pt->tsc = tsc;
	pt->cyc_last = pt->cycles;
	pt->mtc_last = ctc_now(pt) >> pt->cfg.mtc_freq;
	if (first) {
		/* PacketByteCnt is 0 the first time: PSB+ */
		pt->next_psb = 0;
		synth_pt_maybe_psb(pt, 0);
		return;
	}
	/* SDM "TraceEn 0 -> 1, PacketByteCnt > 0": TSC, TMA, CBR.  The last
	 * IP and the return stack are another thread's: start afresh, so that
	 * this stream decodes on its own (IPs are then never compressed
	 * against history, RETs only against this thread's calls). */
	if (pt->cfg.tsc)
		tsc_tma(pt);
	put(pt, &p);
	vmpt_last_ip_init(&pt->lip);
	pt->rcount = 0;
}

void synth_pt_evd(struct synth_pt *pt, unsigned type, uint64_t payload)
{
	struct vmpt_packet p = { .type = VMPT_PKT_EVD };

	p.evd.type = (uint8_t)type;
	p.evd.payload = payload;
	put_timed(pt, &p);
}

void synth_pt_cfe(struct synth_pt *pt, unsigned type, unsigned vector, int ip)
{
	struct vmpt_packet p = { .type = VMPT_PKT_CFE };

	/* Branches before the event come first (the FUP after it would
	 * flush them anyway). */
	put_tnt(pt);
	p.cfe.type = (uint8_t)type;
	p.cfe.vector = (uint8_t)vector;
	p.cfe.ip = (uint8_t)!!ip;
	put_timed(pt, &p);
}

void synth_pt_ptw(struct synth_pt *pt, uint64_t payload, unsigned bytes, int ip)
{
	struct vmpt_packet p = { .type = VMPT_PKT_PTW };

	put_tnt(pt);
	p.ptw.payload = bytes == 8 ? payload : (uint32_t)payload;
	p.ptw.plc = bytes == 8;
	p.ptw.ip = (uint8_t)!!ip;
	put_timed(pt, &p);
}

void synth_pt_mwait(struct synth_pt *pt, uint32_t hints, uint32_t ext)
{
	struct vmpt_packet p = { .type = VMPT_PKT_MWAIT };

	put_tnt(pt);
	p.mwait.hints = hints;
	p.mwait.ext = ext;
	put_timed(pt, &p);
}

void synth_pt_pwre(struct synth_pt *pt, unsigned state, unsigned sub, int hw)
{
	struct vmpt_packet p = { .type = VMPT_PKT_PWRE };

	put_tnt(pt);	/* branches before the C-state come first */
	p.pwre.state = (uint8_t)state;
	p.pwre.sub_state = (uint8_t)sub;
	p.pwre.hw = (uint8_t)!!hw;
	put_timed(pt, &p);
}

void synth_pt_exstop(struct synth_pt *pt, int ip)
{
	struct vmpt_packet p = { .type = VMPT_PKT_EXSTOP };

	put_tnt(pt);	/* with the IP bit, its FUP comes right after it */
	p.exstop.ip = (uint8_t)!!ip;
	put_timed(pt, &p);
}

void synth_pt_pwrx(struct synth_pt *pt, unsigned last, unsigned deepest,
		   unsigned wake)
{
	struct vmpt_packet p = { .type = VMPT_PKT_PWRX };

	p.pwrx.last = (uint8_t)last;
	p.pwrx.deepest = (uint8_t)deepest;
	p.pwrx.wake = (uint8_t)wake;
	put(pt, &p);
}

void synth_pt_set_cbr(struct synth_pt *pt, unsigned cbr)
{
	struct vmpt_packet p = { .type = VMPT_PKT_CBR };

	pt->cbr = cbr;
	p.cbr = (uint8_t)cbr;
	put(pt, &p);
	if (pt->cfg.tsc)
		tsc_tma(pt);
}
