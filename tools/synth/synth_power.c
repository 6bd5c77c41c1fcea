/* SPDX-License-Identifier: MIT */
/* Power in the synthetic CPU (Intel SDM Vol. 3C, "Power Event Tracing"):
 * a core that executes MWAIT (or HLT) enters a C-state, which PwrEvtEn
 * reports as MWAIT (hints, extensions; MWAIT only), PWRE (the C-state)
 * and EXSTOP with the IP bit and its FUP (the instruction execution goes
 * on with); while it sleeps no packet is generated, not even MTC; it
 * wakes with PWRX (the C-states and the wake reason), then CBR, TSC and
 * TMA give the frequency and the time again.  Frequency changes (P-states)
 * are CBR, TSC and TMA; the core then runs cbr/max_non_turbo cycles per
 * TSC tick (synth_pt.c).
 */
#include "synth_walk.h"

/* Core:bus ratios of frequency changes (100 MHz each). */
#define RATIO_MIN 16
#define RATIO_MAX 40

void synth_power_cstate(struct cpu *c, int mwait, uint32_t hints,
			uint32_t ext, uint64_t ticks, unsigned wake)
{
	struct synth_pt *pt = c->pt;
	/* MWAIT hints: bits 7:4 the C-state - 1, 3:0 the sub-state; HLT is C1 */
	unsigned state = mwait ? ((hints >> 4) & 0xf) + 1 : 1;
	unsigned sub = mwait ? hints & 0xf : 0;
	int lost = synth_cpu_losing(c);

	c->st->cstates++;
	if (pt->cfg.pwr_evt && pt->packet_en) {
		synth_cpu_needs_packet(c);
		if (mwait) {
			synth_pt_mwait(pt, hints, ext);
			synth_truth_event(c->truth, pt->tsc, "mwait", 1, c->ip, lost,
					  "hints: %#x extensions: %#x", hints, ext);
		}
		/* PWRE binds to the MWAIT's FUP when there is one */
		synth_pt_pwre(pt, state, sub, 0);
		synth_truth_event(c->truth, pt->tsc, "pwre", mwait, c->ip, lost,
				  "hw: 0 cstate: %u sub-cstate: %u", state, sub);
		synth_pt_exstop(pt, 1);
		synth_pt_ip(pt, VMPT_PKT_FUP, c->ip);
		synth_truth_event(c->truth, pt->tsc, "exstop", 1, c->ip, lost, "%s", "");
		c->st->events += 2 + (unsigned)mwait;
	}
	pt->asleep = 1;
	synth_pt_idle(pt, ticks);
	pt->asleep = 0;
	if (pt->cfg.pwr_evt) {
		synth_pt_pwrx(pt, state, state, wake);
		synth_truth_event(c->truth, pt->tsc, "pwrx", 0, 0, lost,
				  "deepest cstate: %u last cstate: %u wake reason: %#x",
				  state, state, wake);
		c->st->events++;
	}
	/* SDM: CBR on the wake, and the time (TSC, TMA) again */
	synth_pt_set_cbr(pt, pt->cbr);
}

void synth_power_freq(struct cpu *c)
{
	struct synth_pt *pt = c->pt;
	unsigned r = RATIO_MIN + (unsigned)(synth_rnd(c) % (RATIO_MAX - RATIO_MIN));

	if (r >= pt->cbr)	/* any other ratio */
		r++;
	synth_pt_set_cbr(pt, r);
	synth_truth_event(c->truth, pt->tsc, "cbr", 0, 0, synth_cpu_losing(c),
			  "cbr: %u", r);
	c->st->freq_changes++;
}

/* MWAIT, or HLT in a guest that runs it (cpu-pm): a C-state at c->ip, the
 * instruction after it.  The host idles until the vCPU thread is woken
 * (the store to the monitored flags wakes it); a guest sleeps until an
 * interrupt, which exits to the host.
 */
void synth_power_idle(struct cpu *c, int mwait)
{
	static const uint32_t hints[] = { 0x00, 0x01, 0x20 };	/* C1, C1E, C6 */
	uint32_t h = mwait ? hints[synth_rnd(c) % 3] : 0;

	synth_power_cstate(c, mwait, h, mwait, synth_rnd_period(c, 20000),
			   synth_cpu_guest(c) ? 1 : 4);
	if (synth_cpu_guest(c))
		synth_vmx_async_exit(c, c->ip, 0);
}
