/* SPDX-License-Identifier: MIT */
/* The synthetic CPU: executes real code one instruction at a time,
 * choosing what data would decide (conditional outcomes from the seed,
 * indirect targets among real function entries), and tells the trace unit
 * what happened the way the hardware reports it:
 *
 *   jcc                 TNT bit
 *   direct jmp/call     nothing (a call feeds return compression)
 *   indirect jmp/call   TIP
 *   ret                 TNT bit when compressed, else TIP
 *   syscall/sysret      TIP when both rings are traced; else TIP.PGD (IP
 *                       suppressed) into the untraced ring, and MODE.Exec +
 *                       TIP.PGE when the traced ring runs again
 *   interrupt/iret      FUP + TIP to the handler, TIP back; or, user-only,
 *                       FUP + TIP.PGD ... MODE.Exec + TIP.PGE
 *   leaving/entering    TIP.PGD(target) instead of the branch's packet /
 *   the IP filter       TIP.PGE(target)
 *   vmlaunch/vmresume   PIP(NR=1), TIP(guest IP)       (synth_vmx.c)
 *   VM exit             FUP(guest IP), PIP(NR=0), TIP(host RIP)
 *   vmptrld             VMCS
 *   ptwrite             PTW (PTWEn), FUP (FUPonPTW)     (synth_ptw.c)
 *   mwait               a C-state                      (synth_power.c)
 *
 * With EventEn, interrupts and IRET have their CFE (Event Trace) too.
 */
#include "synth_guest.h"
#include "synth_walk.h"
#include "vmpt/error.h"

#include <stdlib.h>
#include <string.h>

/* How far ahead a direct jump is followed to see whether it loops. */
#define SYNTH_LOOP_LOOKAHEAD 64

uint64_t synth_rnd(struct cpu *c)
{
	/* xorshift64*: deterministic per seed, fast. */
	*c->rng ^= *c->rng >> 12;
	*c->rng ^= *c->rng << 25;
	*c->rng ^= *c->rng >> 27;
	return *c->rng * 0x2545f4914f6cdd1dull;
}

/* Uniform in [mean/2, 3*mean/2]: the given mean, never 0 for mean > 1. */
uint64_t synth_rnd_period(struct cpu *c, uint64_t mean)
{
	return mean / 2 + synth_rnd(c) % (mean + 1);
}

#define rnd synth_rnd
#define rnd_period synth_rnd_period

static void push(struct cpu *c, struct stack *s, uint64_t v)
{
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 256;
		uint64_t *nv = realloc(s->v, ncap * sizeof(*nv));

		if (!nv) {
			c->oom = 1;
			return;
		}
		s->v = nv;
		s->cap = ncap;
	}
	s->v[s->n++] = v;
}

static struct synth_vcpu *cur_vcpu(struct cpu *c)
{
	return &c->cfg->vcpus[c->vcpu];
}

static struct stack *arch_stack(struct cpu *c)
{
	switch (c->ctx) {
	case CTX_USER: return &c->ustack;
	case CTX_KERNEL: return &c->kstack;
	case CTX_GUEST_USER: return &c->gtask->ustack;
	case CTX_GUEST: default:
		return c->gtask ? &c->gtask->kstack : &c->gstack[c->vcpu];
	}
}

/* The code at ip in the current context (user space: --exec's libc). */
static struct synth_image *image_at(const struct cpu *c, uint64_t ip)
{
	switch (c->ctx) {
	case CTX_USER: return synth_exec_user_image(c, ip);
	case CTX_KERNEL: return c->cfg->kernel;
	case CTX_GUEST: default: return c->cfg->guest;
	}
}

struct synth_image *synth_cpu_image(struct cpu *c)
{
	return image_at(c, c->ip);
}

static struct synth_insn_cache *cur_cache(struct cpu *c)
{
	switch (c->ctx) {
	case CTX_USER: return c->cache_user;
	case CTX_KERNEL: return c->cache_kernel;
	case CTX_GUEST: default: return c->cache_guest;
	}
}

const struct synth_insn *synth_cpu_insn(struct cpu *c, uint64_t ip)
{
	if (c->ctx == CTX_GUEST_USER)
		return synth_grec_insn(c->cfg->grec, c->gtask, c->pt->tsc, ip);
	return synth_insn_get(cur_cache(c), image_at(c, ip), ip);
}

#define insn_at synth_cpu_insn

const uint8_t *synth_cpu_code(struct cpu *c, uint64_t ip, size_t *avail)
{
	if (c->ctx == CTX_GUEST_USER)
		return synth_grec_code(c->cfg->grec, c->gtask, c->pt->tsc, ip, avail);
	return synth_image_code(image_at(c, ip), ip, avail);
}

int synth_cpu_in_filter(const struct cpu *c, uint64_t ip)
{
	return !c->cfg->filter_hi ||
	       (ip >= c->cfg->filter_lo && ip < c->cfg->filter_hi);
}

#define in_filter synth_cpu_in_filter

int synth_cpu_guest(const struct cpu *c)
{
	return c->ctx == CTX_GUEST || c->ctx == CTX_GUEST_USER;
}

#define guest(c) synth_cpu_guest(c)

static uint64_t random_func(struct cpu *c)
{
	struct synth_image *img = synth_cpu_image(c);

	if (c->ctx == CTX_GUEST_USER)
		return synth_grec_random_func(c->cfg->grec, c->gtask, c->pt->tsc,
					      c->ip, rnd(c));
	return img->funcs[rnd(c) % img->n_funcs];
}

int synth_cpu_in_eptw(const struct cpu *c)
{
	return c->eptw_bits && c->ip >= c->eptw_lo && c->ip < c->eptw_hi;
}

int synth_cpu_losing(const struct cpu *c)
{
	return c->s->ovf_end != 0;
}

#define losing synth_cpu_losing

void synth_cpu_branch(struct cpu *c, uint64_t from, uint64_t to, unsigned flags)
{
	c->st->branches++;
	synth_truth_branch(c->truth, from, to, flags, c->pt->tsc, guest(c));
}

#define branch synth_cpu_branch

/* The instruction being executed needs a packet; while the buffer is
 * overflowing, the first such one is where decoding must stop.
 */
void synth_cpu_needs_packet(struct cpu *c)
{
	if (losing(c) && !c->s->lost_from) {
		c->s->lost_from = c->st->insns;
		c->s->lost_block = c->block_start;
	}
}

#define needs_packet synth_cpu_needs_packet

/* Event Trace: an interrupt or exception (vector) at c->ip, whose CFE
 * binds to the FUP of its compound packet. */
static void cfe_intr(struct cpu *c, unsigned vector)
{
	if (!c->pt->cfg.event)
		return;
	synth_pt_cfe(c->pt, SYNTH_CFE_INTR, vector, 0);
	synth_truth_event(c->truth, c->pt->tsc, "cfe", 1, c->ip, losing(c),
			  "INTR vector: %u", vector);
	c->st->events++;
}

static void tnt(struct cpu *c, int taken)
{
	if (!c->pt->tnt_count) {
		c->s->tnt_first = c->st->insns;
		c->s->tnt_block = c->block_start;
	}
	needs_packet(c);
	synth_pt_tnt(c->pt, taken);
	c->st->tnt_bits++;
}

/* Tracing stops here (an event with no traced target). */
void synth_cpu_disable(struct cpu *c)
{
	needs_packet(c);
	synth_pt_ip(c->pt, VMPT_PKT_FUP, c->ip);
	synth_pt_ip_suppressed(c->pt, VMPT_PKT_TIP_PGD);
	c->pt->packet_en = 0;
	synth_truth_branch(c->truth, c->ip, 0, SF_ASYNC | SF_TRACE_END,
			   c->pt->tsc, guest(c));
}

/* Tracing (re)starts at c->ip. */
void synth_cpu_enable(struct cpu *c, unsigned flags)
{
	/* SDM: MODE.Exec goes with any TIP.PGE (the mode may have changed
	 * while tracing was off); TSC only comes with PSB+ and TraceEn. */
	c->pt->packet_en = 1;
	synth_pt_mode_exec(c->pt);
	synth_pt_ip(c->pt, VMPT_PKT_TIP_PGE, c->ip);
	synth_truth_branch(c->truth, 0, c->ip, SF_TRACE_BEGIN | flags,
			   c->pt->tsc, guest(c));
}

/* Time in an untraced context: only the clock moves. */
void synth_cpu_untraced(struct cpu *c, uint64_t mean)
{
	synth_pt_idle(c->pt, rnd_period(c, mean));
}

#define disable_async synth_cpu_disable
#define enable synth_cpu_enable
#define untraced_time synth_cpu_untraced

/* User space entered the traced kernel: --kernel-period sets when an
 * interrupt takes it back (a random walk's call depth never unwinds).
 */
static void kernel_visit(struct cpu *c, int by_irq)
{
	c->kernel_by_irq = by_irq;
	if (c->cfg->kernel_period)
		c->kernel_exit_at = c->st->insns + rnd_period(c, c->cfg->kernel_period);
}

/* Vectors of the model's events: an interrupt (the local timer), and an
 * instruction it cannot execute (taken for an invalid opcode). */
#define VECTOR_TIMER 0xec
#define VECTOR_UD 6

/* A user-mode interrupt or an instruction the model cannot execute: the
 * kernel runs (untraced) and user code resumes at resume_ip.
 */
static void user_event(struct cpu *c, uint64_t resume_ip, unsigned vector)
{
	if (c->pt->packet_en)
		cfe_intr(c, vector);
	if (c->cfg->trace_kernel && c->pt->packet_en) {
		/* the kernel is traced: FUP + TIP to the handler, IRET back */
		uint64_t handler = synth_image_symbol(c->cfg->kernel,
						      "asm_common_interrupt", NULL);

		needs_packet(c);
		synth_pt_ip(c->pt, VMPT_PKT_FUP, c->ip);
		synth_pt_ip(c->pt, VMPT_PKT_TIP, handler);
		branch(c, c->ip, handler, SF_ASYNC | SF_INTERRUPT);
		c->st->irqs++;
		c->irq_ret = resume_ip;
		c->ctx = CTX_KERNEL;
		c->kstack.n = 0;
		c->ip = handler;
		kernel_visit(c, 1);
		return;
	}
	if (c->pt->packet_en)
		disable_async(c);
	c->st->irqs++;
	untraced_time(c, 2000);
	c->ip = resume_ip;
	if (in_filter(c, c->ip))
		enable(c, 0);
}

/* The host kernel is entered by a system call from the VMM (KVM_RUN). */
void synth_cpu_syscall_entry(struct cpu *c)
{
	c->ctx = CTX_KERNEL;
	c->kstack.n = 0;
	c->ip = synth_image_symbol(c->cfg->kernel, "entry_SYSCALL_64", NULL);
	enable(c, 0);
}

/* The host kernel returns to user space (the VMM), which comes back with
 * a system call; with vCPU threads the machine decides what runs first.
 */
static void kernel_to_user_and_back(struct cpu *c)
{
	needs_packet(c);
	synth_pt_ip_suppressed(c->pt, VMPT_PKT_TIP_PGD);
	c->pt->packet_en = 0;
	synth_truth_branch(c->truth, c->ip, 0, SF_SYSCALLRET | SF_TRACE_END,
			   c->pt->tsc, 0);
	c->st->branches++;
	c->st->syscalls++;
	if (c->cfg->threads) {
		c->in_user = 1;
		return;
	}
	untraced_time(c, 5000);
	synth_cpu_syscall_entry(c);
}

static void overflow_begin(struct cpu *c)
{
	struct synth_stream *s = c->s;

	s->ovf_len = c->pt->len;
	s->ovf_end = c->st->insns + c->cfg->ovf_lost;
	s->ovf_guest = guest(c);
	s->ovf_entries = c->st->vmentries;
	s->ovf_exits = c->st->vmexits;
	/* Branches still waiting in a TNT packet are lost with it. */
	s->lost_from = c->pt->tnt_count ? s->tnt_first : 0;
	s->lost_block = s->tnt_block;
}

void synth_cpu_overflow_end(struct cpu *c)
{
	struct synth_stream *s = c->s;

	/* Everything generated while the buffer was full is gone; the
	 * hardware then reports OVF and where it resumed (full IP: the
	 * decoder's last IP is unknown), and return compression restarts.
	 */
	synth_pt_truncate(c->pt, s->ovf_len);
	s->ovf_end = 0;
	c->st->lost += c->cfg->ovf_lost;
	if (!s->lost_from) {
		s->lost_from = c->st->insns + 1;
		s->lost_block = c->block_start;
	}
	synth_truth_lost(c->truth, s->lost_from, s->lost_block);
	if (c->cfg->vm)
		synth_truth_lost_vm(c->truth, s->ovf_guest, guest(c),
				    c->st->vmexits - s->ovf_exits,
				    c->st->vmentries - s->ovf_entries);
	synth_pt_ovf(c->pt);
	vmpt_last_ip_init(&c->pt->lip);
	c->pt->rcount = 0;
	if (c->pt->packet_en) {
		/* tracing starts again here, as a decoder reports it */
		synth_pt_ip(c->pt, VMPT_PKT_FUP, c->ip);
		synth_truth_branch(c->truth, 0, c->ip, SF_TRACE_BEGIN, c->pt->tsc,
				   guest(c));
	}
}

/* Where an indirect branch goes: to libc's execve when a dynamically
 * linked program is about to exec (through its PLT or a pointer). */
static uint64_t indirect_target(struct cpu *c)
{
	uint64_t execve = synth_exec_call(c);

	return execve ? execve : random_func(c);
}

/* What a traced branch reports, unless it leaves the filter region. */
enum report { R_NONE, R_TNT_TAKEN, R_TNT_NOT_TAKEN, R_TIP };

static void report(struct cpu *c, const struct synth_insn *in, uint64_t to,
		   enum report r, unsigned flags)
{
	int taken = r != R_TNT_NOT_TAKEN;

	if (!c->pt->packet_en) {	/* outside the filter region */
		c->st->branches++;
		return;
	}
	if (!in_filter(c, to)) {
		/* Leaving the region: TIP.PGD with the target replaces the
		 * branch's own packet (SDM: FilterEn 1 -> 0 on a branch). */
		needs_packet(c);
		synth_pt_ip(c->pt, VMPT_PKT_TIP_PGD, to);
		c->pt->packet_en = 0;
		branch(c, in->ip, to, flags | SF_TRACE_END);
		return;
	}
	switch (r) {
	case R_TNT_TAKEN:
	case R_TNT_NOT_TAKEN:
		tnt(c, taken);
		break;
	case R_TIP:
		needs_packet(c);
		/* An uncompressed return's TIP is never deferred: a return
		 * meeting TNT bits is a compressed one.
		 */
		if (flags & SF_RETURN)
			synth_pt_ip(c->pt, VMPT_PKT_TIP, to);
		else
			synth_pt_tip_indirect(c->pt, to);
		c->st->tips++;
		break;
	case R_NONE:
		break;
	}
	if (taken)
		branch(c, in->ip, to, flags);
	else
		c->st->branches++;
}

static int jcc_outcome(struct cpu *c, const struct synth_insn *in)
{
	const struct synth_insn *p;
	struct synth_insn t, f;
	int taken;

	/* perf's emulated PTWRITE: its jumps give the payload's bits */
	if (synth_cpu_in_eptw(c))
		return (int)((c->eptw_payload >> --c->eptw_bits) & 1);
	/* vmx_vmenter: VMRESUME once the VMCS is launched, else VMLAUNCH.
	 * (Copies: a lookup may move the cache's entries.) */
	if (c->ctx == CTX_KERNEL && c->cfg->vm) {
		p = synth_insn_get(cur_cache(c), synth_cpu_image(c), in->ip + in->size);
		f = p ? *p : (struct synth_insn){ 0 };
		p = synth_insn_get(cur_cache(c), synth_cpu_image(c), in->target);
		t = p ? *p : (struct synth_insn){ 0 };
		if (f.kind == SK_VMENTRY && t.kind == SK_VMENTRY)
			return t.vmlaunch != !cur_vcpu(c)->launched ? 0 : 1;
		/* KVM's way after an exit follows its reason */
		if (synth_vmx_host_jcc(c, in, &taken))
			return taken;
	}
	return (int)(rnd(c) & 1);
}

/* Does this direct jump enter a loop that makes no packet (a kernel's
 * `for (;;) cpu_relax();`)?  Only an interrupt ends one, and it must come
 * before the loop's first round: a FUP names an IP, and a decoder stops
 * the first time it gets there.
 */
static int endless_loop(struct cpu *c, const struct synth_insn *jmp)
{
	uint64_t seen[SYNTH_LOOP_LOOKAHEAD];
	uint64_t ip = jmp->target;
	size_t n = 0;

	seen[n++] = jmp->ip;
	while (n < SYNTH_LOOP_LOOKAHEAD) {
		const struct synth_insn *p;

		for (size_t i = 0; i < n; i++)
			if (seen[i] == ip)
				return 1;
		p = insn_at(c, ip);
		if (!p)
			return 0;
		seen[n++] = ip;
		if (p->kind == SK_JMP)
			ip = p->target;
		else if (p->kind == SK_OTHER || p->kind == SK_RETSLOT ||
			 (p->kind == SK_EXITING && c->ctx == CTX_KERNEL))
			ip += p->size;
		else
			return 0;
	}
	return 0;
}

/* kvm_vmx_exit_handlers[reason](vcpu): the exit's handler. */
static int host_indirect(struct cpu *c, const struct synth_insn *in)
{
	uint64_t to;

	if (c->ctx != CTX_KERNEL || !c->cfg->vm || !synth_vmx_host_indirect(c, in, &to))
		return 0;
	c->ip = to;
	return 1;
}

/* Execute one instruction (c->ip is traced and mapped). */
static void step(struct cpu *c, const struct synth_insn *in)
{
	struct stack *s = arch_stack(c);
	uint64_t next = in->ip + in->size;
	int taken, compressed;

	switch (in->kind) {
	case SK_OTHER:
		c->ip = next;
		break;
	case SK_JCC:
		taken = jcc_outcome(c, in);
		c->ip = taken ? in->target : next;
		report(c, in, c->ip, taken ? R_TNT_TAKEN : R_TNT_NOT_TAKEN,
		       SF_CONDITIONAL);
		break;
	case SK_JMP:
		synth_ptw_emulated(c, in);
		c->ip = in->target;
		report(c, in, c->ip, R_NONE, 0);
		break;
	case SK_CALL:
		/* call next-instruction is the get-IP idiom: its return
		 * address is popped as data, and no decoder stacks it. */
		if (in->target != next) {
			push(c, s, next);
			if (c->pt->packet_en)
				synth_pt_call(c->pt, next);
		}
		c->ip = in->target;
		report(c, in, c->ip, R_NONE, SF_CALL);
		break;
	case SK_CALL_IND:
		push(c, s, next);
		if (c->pt->packet_en)
			synth_pt_call(c->pt, next);
		if (!host_indirect(c, in))
			c->ip = indirect_target(c);
		report(c, in, c->ip, R_TIP, SF_CALL);
		break;
	case SK_JMP_IND:
		if (!host_indirect(c, in))
			c->ip = indirect_target(c);
		report(c, in, c->ip, R_TIP, 0);
		break;
	case SK_RETSLOT:
		c->retslot = 1;
		c->ip = next;
		break;
	case SK_RET:
		/* After a retpoline's store, RET goes where the register
		 * pointed: an indirect target (the pushed address is gone). */
		c->ip = s->n ? s->v[--s->n] : random_func(c);
		if (c->retslot)
			c->ip = random_func(c);
		c->retslot = 0;
		compressed = c->pt->packet_en && synth_pt_ret(c->pt, c->ip);
		report(c, in, c->ip, compressed ? R_TNT_TAKEN : R_TIP, SF_RETURN);
		break;
	case SK_SYSCALL:
		c->st->syscalls++;
		if (c->ctx == CTX_GUEST_USER) {
			/* the guest's system call: both rings traced */
			c->gtask->user_ret = next;
			c->ip = c->cfg->grec->k_syscall;
			needs_packet(c);
			synth_pt_ip(c->pt, VMPT_PKT_TIP, c->ip);
			c->st->tips++;
			branch(c, in->ip, c->ip, SF_SYSCALLRET | SF_CALL);
			c->ctx = CTX_GUEST;
			c->gtask->kstack.n = 0;
			kernel_visit(c, 0);
			break;
		}
		if (c->cfg->trace_kernel && c->pt->packet_en) {
			/* user and kernel traced: a far branch, TIP */
			c->user_ret = next;
			c->ctx = CTX_KERNEL;
			c->kstack.n = 0;
			c->ip = synth_image_symbol(c->cfg->kernel,
						   "entry_SYSCALL_64", NULL);
			needs_packet(c);
			synth_pt_ip(c->pt, VMPT_PKT_TIP, c->ip);
			c->st->tips++;
			c->ctx = CTX_USER;
			branch(c, in->ip, c->ip, SF_SYSCALLRET | SF_CALL);
			c->ctx = CTX_KERNEL;
			kernel_visit(c, 0);
			break;
		}
		/* User-only tracing: the kernel is not traced. */
		if (!c->pt->packet_en) {	/* outside the filter region */
			c->st->branches++;
			untraced_time(c, 3000);
			c->ip = next;
			break;
		}
		needs_packet(c);
		synth_pt_ip_suppressed(c->pt, VMPT_PKT_TIP_PGD);
		c->pt->packet_en = 0;
		branch(c, in->ip, 0, SF_SYSCALLRET | SF_CALL | SF_TRACE_END);
		if (synth_exec_due(c)) {
			synth_exec_run(c);
			break;
		}
		untraced_time(c, 3000);
		c->ip = next;
		if (in_filter(c, c->ip))
			enable(c, 0);
		break;
	case SK_SYSRET:
		if (c->ctx == CTX_GUEST) {
			/* back to the guest task's user space */
			c->ip = c->gtask->user_ret;
			c->gtask->user_ret = 0;
			c->kernel_exit_at = 0;
			needs_packet(c);
			synth_pt_ip(c->pt, VMPT_PKT_TIP, c->ip);
			c->st->tips++;
			branch(c, in->ip, c->ip, SF_SYSCALLRET);
			c->ctx = CTX_GUEST_USER;
			break;
		}
		if (c->cfg->vm) {
			kernel_to_user_and_back(c);
			break;
		}
		c->ip = c->user_ret;
		needs_packet(c);
		synth_pt_ip(c->pt, VMPT_PKT_TIP, c->ip);
		c->st->tips++;
		branch(c, in->ip, c->ip, SF_SYSCALLRET);
		c->ctx = CTX_USER;
		break;
	case SK_IRET:
		needs_packet(c);
		if (c->pt->cfg.event) {
			/* a far branch without a FUP of its own: the CFE has
			 * the IP bit and a FUP naming the IRET */
			synth_pt_cfe(c->pt, SYNTH_CFE_IRET, 0, 1);
			synth_pt_ip(c->pt, VMPT_PKT_FUP, in->ip);
			synth_truth_event(c->truth, c->pt->tsc, "cfe", 1, in->ip,
					  losing(c), "IRET vector: 0");
			c->st->events++;
		}
		c->ip = c->irq_ret;
		c->irq_ret = 0;
		synth_pt_ip(c->pt, VMPT_PKT_TIP, c->ip);
		c->st->tips++;
		branch(c, in->ip, c->ip, SF_RETURN | SF_INTERRUPT);
		c->ctx = CTX_USER;
		break;
	case SK_VMENTRY:
		synth_vmx_entry(c, in);
		break;
	case SK_VMPTRLD:
		synth_vmx_vmptrld(c);
		c->ip = next;
		break;
	case SK_EXITING:
		c->ip = next;	/* the host runs it (ring 0 model code) */
		if (guest(c))	/* HLT without HLT exiting (cpu-pm) */
			synth_power_idle(c, 0);
		break;
	case SK_PTWRITE:
		synth_ptw_exec(c, in);
		c->ip = next;
		break;
	case SK_MWAIT:
		c->ip = next;
		synth_power_idle(c, 1);
		break;
	default:
		break;
	}
}

/* ring 0: an interrupt whose handler is traced */
static void kernel_async(struct cpu *c, uint64_t to, unsigned vector)
{
	cfe_intr(c, vector);
	needs_packet(c);
	synth_pt_ip(c->pt, VMPT_PKT_FUP, c->ip);
	synth_pt_ip(c->pt, VMPT_PKT_TIP, to);
	branch(c, c->ip, to, SF_ASYNC);
	c->ip = to;
}

/* Instructions the model cannot execute end up here (fault: taken for an
 * invalid opcode; else an interrupt): an asynchronous event that leaves for
 * a real function entry.
 */
static void cannot_execute(struct cpu *c, int fault)
{
	uint64_t to = random_func(c);

	if (guest(c)) {
		struct gtask *t = c->gtask;

		if (!to) {
			/* a guest task with no code to run in user space (no
			 * binary): it goes on in its kernel */
			struct synth_image *k = c->cfg->guest;

			to = k->funcs[rnd(c) % k->n_funcs];
			c->ctx = CTX_GUEST;
			t->user_ret = 0;
		}
		synth_vmx_async_exit(c, to, fault);
		return;
	}
	if (c->ctx == CTX_USER) {
		user_event(c, to, fault ? VECTOR_UD : VECTOR_TIMER);
		return;
	}
	kernel_async(c, to, fault ? VECTOR_UD : VECTOR_TIMER);
}

/* The kernel's time is up: an interrupt whose handler is the kernel's own
 * way back to user space (Linux: the SYSRET tail of the system call path,
 * or the IRET path of interrupts), which the walk then executes.
 */
static void kernel_exit(struct cpu *c)
{
	uint64_t to = c->ctx == CTX_GUEST ? c->cfg->grec->k_sysret :
		synth_image_symbol(c->cfg->kernel, c->kernel_by_irq ?
		"swapgs_restore_regs_and_return_to_usermode" :
		"syscall_return_via_sysret", NULL);

	c->kernel_exit_at = 0;
	if (to)
		kernel_async(c, to, VECTOR_TIMER);
}

static void timed_events(struct cpu *c)
{
	struct synth_walk_config *cfg = c->cfg;

	for (unsigned i = 0; cfg->vm && i < cfg->n_vcpus; i++) {
		struct synth_vcpu *v = &cfg->vcpus[i];

		if (v->change_at_insn && c->st->insns >= v->change_at_insn) {
			v->tsc_offset = v->new_offset;
			v->changed_at_insn = c->st->insns;
			v->change_at_insn = 0;
			if (i == c->vcpu)
				c->pt->tsc_offset = v->tsc_offset;
		}
	}
	if (cfg->freq_period && c->st->insns >= c->next_freq) {
		if (c->next_freq)
			synth_power_freq(c);
		c->next_freq = c->st->insns + rnd_period(c, cfg->freq_period);
	}
	if (cfg->ovf_at && c->st->insns == cfg->ovf_at && !losing(c))
		overflow_begin(c);
	if (losing(c) && c->st->insns >= c->s->ovf_end)
		synth_cpu_overflow_end(c);
}

/* One step of the walk: an event, or the instruction at c->ip. */
void synth_cpu_step(struct cpu *c)
{
	struct synth_walk_config *cfg = c->cfg;
	struct synth_pt *pt = c->pt;
	struct synth_stats *st = c->st;
	const struct synth_insn *p;
	struct synth_insn insn, *in = &insn;
	uint64_t psbs = pt->psb_count;
	size_t before = pt->len;
	int was_guest;

	if (c->ctx == CTX_USER && cfg->filter_hi &&
	    pt->packet_en != in_filter(c, c->ip)) {
		/* linear flow across a filter boundary */
		if (pt->packet_en) {
			synth_pt_ip(pt, VMPT_PKT_TIP_PGD, c->ip);
			pt->packet_en = 0;
		} else {
			enable(c, 0);
		}
	}
	if (pt->packet_en)
		synth_pt_maybe_psb(pt, c->ip);
	if (pt->psb_count != psbs && !losing(c))
		synth_truth_psb(c->truth, before, st->insns + 1);
	timed_events(c);
	/* perf decodes an emulated PTWRITE only from its 64 bits in a row,
	 * without a TIP between them: no interrupt in one */
	if (synth_cpu_in_eptw(c))
		goto insn;
	if (c->ctx == CTX_USER && cfg->irq_period && st->insns >= c->next_irq) {
		c->next_irq = st->insns + rnd_period(c, cfg->irq_period);
		user_event(c, c->ip, VECTOR_TIMER);
		c->block_start = st->insns + 1;
		return;
	}
	if ((c->ctx == CTX_KERNEL || c->ctx == CTX_GUEST) && c->kernel_exit_at &&
	    st->insns >= c->kernel_exit_at) {
		kernel_exit(c);
		c->block_start = st->insns + 1;
		return;
	}
	if (guest(c) && (st->insns >= c->guest_exit_at ||
			 (c->slice && (pt->tsc >= c->slice->to ||
				       c->slice_used >= c->slice_budget)))) {
		synth_vmx_async_exit(c, c->ip, 0);	/* external interrupt */
		c->block_start = st->insns + 1;
		return;
	}
insn:
	/* a copy: looking up the target may move the cache's entries */
	p = insn_at(c, c->ip);
	if (p)
		insn = *p;
	if (!p || in->kind == SK_STOP || (in->vmx && !cfg->vm) ||
	    (in->kind == SK_EXITING && c->ctx == CTX_USER) ||
	    (in->kind == SK_MWAIT && (c->ctx == CTX_USER || c->ctx == CTX_GUEST_USER)) ||
	    (in->kind == SK_EXITING && c->ctx == CTX_GUEST_USER && !synth_grec_user_cpuid(c)) ||
	    ((in->kind == SK_VMENTRY || in->kind == SK_VMPTRLD) &&
	     c->ctx != CTX_KERNEL) ||
	    (in->kind == SK_SYSCALL && c->ctx != CTX_USER &&
	     c->ctx != CTX_GUEST_USER) ||
	    (in->kind == SK_SYSRET && c->ctx != CTX_KERNEL &&
	     !(c->ctx == CTX_GUEST && c->gtask && c->gtask->user_ret)) ||
	    (in->kind == SK_SYSRET && !cfg->vm && !c->user_ret) ||
	    (in->kind == SK_IRET && !c->irq_ret) ||
	    ((in->kind == SK_JCC || in->kind == SK_JMP || in->kind == SK_CALL) &&
	     !insn_at(c, in->target))) {
		cannot_execute(c, 1);
		c->block_start = st->insns + 1;
		return;
	}
	if (in->kind == SK_VMENTRY && c->ctx == CTX_KERNEL && cfg->grec &&
	    synth_grec_wait(c))
		return;	/* the vCPU thread sleeps until its guest CPU runs a task */
	if (in->kind == SK_JMP && endless_loop(c, in)) {
		cannot_execute(c, 0);
		c->block_start = st->insns + 1;
		return;
	}
	if (guest(c) && (in->kind == SK_EXITING || in->kind == SK_MWAIT) &&
	    !(cfg->guest_pm && (in->kind == SK_MWAIT || in->exit_reason == SYNTH_EXIT_HLT))) {
		/* an instruction that exits (HLT and MWAIT run in a guest
		 * with cpu-pm) */
		synth_vmx_insn_exit(c, in);
		c->block_start = st->insns + 1;
		return;
	}
	if (guest(c) && synth_vmx_ept(c, in)) {
		c->block_start = st->insns + 1;
		return;
	}
	if (pt->packet_en) {
		synth_truth_insn(c->truth, in->ip);
		if (c->truth->gtruth)
			synth_grec_truth(cfg->grec, c->truth->gtruth, c, in->ip);
	}
	was_guest = guest(c);
	if (was_guest)
		c->slice_used++;
	st->insns++;
	synth_pt_tick(pt, 1 + (rnd(c) & 1));
	step(c, in);
	/* a block ends at a branch, and where a guest stopped (cpu-pm's
	 * HLT or MWAIT, then an interrupt) */
	if ((in->kind != SK_OTHER && in->kind != SK_VMPTRLD &&
	     in->kind != SK_EXITING && in->kind != SK_RETSLOT &&
	     in->kind != SK_PTWRITE && in->kind != SK_MWAIT) ||
	    (was_guest && (in->kind == SK_EXITING || in->kind == SK_MWAIT)))
		c->block_start = st->insns + 1;
	/* the retpoline pattern: store, direct jumps, RET */
	if (in->kind != SK_RETSLOT && in->kind != SK_JMP)
		c->retslot = 0;
}
