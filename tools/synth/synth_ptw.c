/* SPDX-License-Identifier: MIT */
/* PTWRITE in the synthetic CPU (Intel SDM Vol. 3C, "PTWRITE"; perf's
 * ptw and fup_on_ptw terms): the instruction's PTW packet, with FUPonPTW
 * the FUP naming it; and perf's emulated PTWRITE, a function whose
 * conditional jumps give the payload's bits (man perf-intel-pt).
 */
#include "synth_walk.h"

#include <string.h>

/* perf's emulated PTWRITE (man perf-intel-pt, "Emulated PTWRITE"): a
 * 16-byte jump over its magic; the 64 conditional jumps after it encode
 * the payload in TNT bits, most significant first.
 */
void synth_ptw_emulated(struct cpu *c, const struct synth_insn *jmp)
{
	static const uint8_t magic[16] = "\x0f\x0bperf,ptwrite  ";
	const struct synth_sym *fn;
	const uint8_t *b;
	size_t avail = 0;

	if (jmp->target != jmp->ip + 2 + sizeof(magic) || c->ctx == CTX_GUEST_USER)
		return;
	b = synth_cpu_code(c, jmp->ip + 2, &avail);
	fn = synth_image_sym_at(synth_cpu_image(c), jmp->ip);
	if (!b || avail < sizeof(magic) || memcmp(b, magic, sizeof(magic)) || !fn)
		return;
	c->eptw_lo = fn->addr;
	c->eptw_hi = fn->addr + fn->size;
	c->eptw_payload = synth_rnd(c);
	c->eptw_bits = 64;
	if (!c->pt->packet_en)
		return;
	synth_truth_event(c->truth, c->pt->tsc, "ptw", 1, jmp->target, synth_cpu_losing(c),
			  "fup: 0 payload: %#llx emulated",
			  (unsigned long long)c->eptw_payload);
	c->st->ptwrites++;
}

/* PTWRITE: a PTW packet with the operand (the model has no registers:
 * a value from the seed), and with FUPonPTW a FUP naming the instruction.
 */
void synth_ptw_exec(struct cpu *c, const struct synth_insn *in)
{
	struct synth_pt *pt = c->pt;
	uint64_t v;

	if (!pt->cfg.ptw || !pt->packet_en)
		return;
	v = synth_rnd(c);
	if (in->opsize != 8)
		v = (uint32_t)v;
	synth_cpu_needs_packet(c);
	synth_pt_ptw(pt, v, in->opsize, pt->cfg.fup_on_ptw);
	if (pt->cfg.fup_on_ptw)
		synth_pt_ip(pt, VMPT_PKT_FUP, in->ip);
	synth_truth_event(c->truth, pt->tsc, "ptw", 1, in->ip, synth_cpu_losing(c),
			  "fup: %u payload: %#llx", pt->cfg.fup_on_ptw,
			  (unsigned long long)v);
	c->st->ptwrites++;
}
