/* SPDX-License-Identifier: MIT */
/* VMX in the synthetic CPU: VM entries and exits with their packets
 * (Intel SDM Vol. 3C, "Intel Processor Trace": PIP/TIP across the
 * transition, and with EventEn the Event Trace CFE/EVD of each), the
 * reason of every exit (SDM Vol. 3D, Appendix C, "VMX Basic Exit
 * Reasons") with its qualification, and the host's way through KVM after
 * vmx_vmexit, which depends on that reason as KVM's does (Linux 6.1,
 * arch/x86/kvm/vmx/vmx.c): __vmx_handle_exit calls the reason's handler,
 * an I/O exit for a device the VMM emulates returns from KVM_RUN.  The
 * host kernel model (vmm/vmx-kernel.S) holds the code; this file steers
 * the walk through it and writes each exit's truth (P.exits).
 */
#include "synth_guest.h"
#include "synth_walk.h"
#include "vmpt/error.h"

#include <string.h>

/* EPT: the guest's data pages (one bit each), and how often a host
 * interrupt makes the host take one back (1 in EPT_RECLAIM). */
#define EPT_PAGES 64
#define EPT_RECLAIM 2

/* KVM's exit handlers (Linux 6.1: kvm_vmx_exit_handlers[]). */
static const char *const handler_names[64] = {
	[SYNTH_EXIT_EXCEPTION_NMI] = "handle_exception_nmi",
	[SYNTH_EXIT_EXTERNAL_INTERRUPT] = "handle_external_interrupt",
	[SYNTH_EXIT_CPUID] = "kvm_emulate_cpuid",
	[SYNTH_EXIT_HLT] = "kvm_emulate_halt",
	[SYNTH_EXIT_VMCALL] = "kvm_emulate_hypercall",
	[SYNTH_EXIT_IO] = "handle_io",
	[SYNTH_EXIT_MSR_READ] = "kvm_emulate_rdmsr",
	[SYNTH_EXIT_MSR_WRITE] = "kvm_emulate_wrmsr",
	[SYNTH_EXIT_MWAIT] = "kvm_emulate_mwait",
	[SYNTH_EXIT_EPT_VIOLATION] = "handle_ept_violation",
};

const char *synth_exit_handler_name(unsigned reason)
{
	return reason < 64 && handler_names[reason] ? handler_names[reason] : "?";
}

static int range(const struct synth_image *k, const char *name,
		 struct synth_range *r)
{
	uint64_t size = 0;

	r->lo = synth_image_symbol(k, name, &size);
	r->hi = r->lo + size;
	return r->lo && size ? 0 : -1;
}

int synth_host_init(struct synth_host *h, const struct synth_image *kernel,
		    char *err, size_t errlen)
{
	static const char *const names[] = { "do_syscall_64", "kvm_vcpu_ioctl",
		"vmx_vcpu_load", "__vmx_handle_exit", "vmx_handle_exit_irqoff",
		"kvm_fast_pio" };
	struct synth_range *r[] = { &h->sys, &h->ioctl, &h->vcpu_load,
		&h->dispatch[0], &h->dispatch[1], &h->fast_pio };

	memset(h, 0, sizeof(*h));
	h->vmexit = synth_image_symbol(kernel, "vmx_vmexit", NULL);
	h->irqoff = synth_image_symbol(kernel, "handle_external_interrupt_irqoff", NULL);
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		if (range(kernel, names[i], r[i])) {
			snprintf(err, errlen, "%s: no %s symbol (not a VMM model)",
				 kernel->path, names[i]);
			return -VMPT_ERR_INVAL;
		}
	}
	for (unsigned i = 0; i < 64; i++) {
		if (!handler_names[i])
			continue;
		h->handler[i] = synth_image_symbol(kernel, handler_names[i], NULL);
		if (!h->handler[i]) {
			snprintf(err, errlen, "%s: no %s symbol (not a VMM model)",
				 kernel->path, handler_names[i]);
			return -VMPT_ERR_INVAL;
		}
	}
	if (!h->vmexit || !h->irqoff) {
		snprintf(err, errlen, "%s: no vmx_vmexit/handle_external_interrupt_irqoff "
			 "symbols (not a VMM model)", kernel->path);
		return -VMPT_ERR_INVAL;
	}
	return 0;
}

static struct synth_vcpu *cur_vcpu(struct cpu *c)
{
	return &c->cfg->vcpus[c->vcpu];
}

static int in_range(const struct synth_range *r, uint64_t ip)
{
	return ip >= r->lo && ip < r->hi;
}

/* Ports of the devices KVM emulates itself (the PIC, the PIT); the VMM
 * (QEMU) emulates the others, so KVM_RUN returns for them. */
static int kernel_port(unsigned port)
{
	return (port >= 0x20 && port <= 0x21) || (port >= 0xa0 && port <= 0xa1) ||
	       (port >= 0x40 && port <= 0x43);
}

void synth_vmx_exit(struct cpu *c, uint64_t resume_ip,
		    const struct synth_exit_cause *x)
{
	struct synth_vcpu *v = cur_vcpu(c);
	struct synth_pt *pt = c->pt;
	struct synth_exit *e = &v->exit;
	uint64_t host_rip = c->host->vmexit;
	int grec = c->cfg->grec != NULL;

	v->guest_ip = resume_ip;
	if (c->gtask) {
		/* the guest task resumes there, in its ring */
		c->gtask->ip = resume_ip;
		c->gtask->user = c->ctx == CTX_GUEST_USER;
		c->gtask->kexit_at = c->kernel_exit_at;
		c->kernel_exit_at = 0;
	}
	synth_cpu_needs_packet(c);
	if (pt->cfg.event) {
		/* SDM "Event Trace": the exit's reason and qualification as
		 * EVD packets, then the CFE, which binds to the FUP of the
		 * exit's compound packet (packet generation is on). */
		synth_pt_evd(pt, SYNTH_EVD_VMXQ, x->qual);
		synth_pt_evd(pt, SYNTH_EVD_VMXR, x->reason);
		synth_pt_cfe(pt, x->cfe, x->vector, 0);
		synth_truth_event(c->truth, pt->tsc, "cfe", 1, c->ip, synth_cpu_losing(c),
				  "%s vector: %u VMXQ: %#llx VMXR: %#x",
				  synth_cfe_name(x->cfe), x->vector,
				  (unsigned long long)x->qual, x->reason);
		c->st->events++;
	}
	/* SDM compound packets: FUP, then PIP (CR3 and NR change), TIP;
	 * no MODE.Exec, the host and guest both run 64-bit code. */
	synth_pt_ip(pt, VMPT_PKT_FUP, c->ip);
	synth_pt_pip(pt, c->cfg->kernel_cr3, 0);
	synth_pt_ip(pt, VMPT_PKT_TIP, host_rip);
	synth_cpu_branch(c, c->ip, host_rip, SF_VMEXIT);
	c->st->vmexits++;

	memset(e, 0, sizeof(*e));
	e->tsc = pt->tsc;
	e->guest_ticks = pt->tsc - v->entry_tsc;
	e->rip = c->ip;
	e->qual = x->qual;
	e->tid = c->truth->threaded ? (uint32_t)c->truth->tid : c->cfg->pid;
	e->reason = x->reason;
	e->vector = x->vector;
	e->cfe = x->cfe;
	e->lost = (uint8_t)synth_cpu_losing(c);
	e->pending = 1;
	e->handler = synth_exit_handler_name(x->reason);
	/* KVM_RUN returns to the VMM for the VMM's devices, and when the
	 * VMM has kicked the thread (a slice is over, another vCPU is due);
	 * a guest recording's KVM_RUN never returns. */
	e->to_user = !grec && x->reason == SYNTH_EXIT_IO &&
		     !kernel_port((unsigned)(x->qual >> 16) & 0xffff);
	c->to_user = e->to_user;
	c->kick = !grec && c->entries_on_vcpu >= c->cfg->entries_per_vcpu;

	c->ctx = CTX_KERNEL;
	c->ip = host_rip;
	c->gtask = NULL;
}

void synth_vmx_entry(struct cpu *c, const struct synth_insn *in)
{
	struct synth_vcpu *v = cur_vcpu(c);
	struct synth_pt *pt = c->pt;

	if (in->vmlaunch == v->launched) {
		/* VMfailValid: VMLAUNCH of a launched VMCS (or the reverse)
		 * falls through to the next instruction. */
		c->ip += in->size;
		return;
	}
	v->launched = 1;
	if (c->cfg->grec)
		synth_grec_enter(c, v);
	if (c->cfg->threads) {
		/* the thread's VMCS is current: its offset (it may have
		 * changed while another CPU or thread ran) */
		pt->tsc_offset = v->tsc_offset;
		pt->tsc_mult = v->tsc_mult;
	}
	synth_cpu_needs_packet(c);
	if (pt->cfg.event) {
		/* A VM entry is a far branch without a FUP of its own: its
		 * CFE has the IP bit, and a FUP (the VMLAUNCH/VMRESUME). */
		synth_pt_cfe(pt, SYNTH_CFE_VMENTRY, 0, 1);
		synth_pt_ip(pt, VMPT_PKT_FUP, c->ip);
		synth_truth_event(c->truth, pt->tsc, "cfe", 1, c->ip, synth_cpu_losing(c),
				  "VMENTRY vector: 0");
		c->st->events++;
	}
	synth_pt_pip(pt, v->guest_cr3, 1);
	synth_pt_ip(pt, VMPT_PKT_TIP, v->guest_ip);
	synth_cpu_branch(c, c->ip, v->guest_ip, SF_VMENTRY);
	c->st->vmentries++;
	c->entries_on_vcpu++;
	if (v->exit.pending) {
		synth_truth_exit(c->truth, c->vcpu, &v->exit, 1, pt->tsc);
		v->exit.pending = 0;
	}
	v->entry_tsc = pt->tsc;
	c->ctx = c->gtask && c->gtask->user ? CTX_GUEST_USER : CTX_GUEST;
	c->ip = v->guest_ip;
	c->guest_exit_at = c->st->insns + synth_rnd_period(c, c->cfg->guest_period);
}

void synth_vmx_vmptrld(struct cpu *c)
{
	if (c->cfg->threads) {
		/* a vCPU thread loads its own VMCS on this CPU */
		c->hcpu->loaded_vmcs = cur_vcpu(c)->vmcs;
	} else if (c->entries_on_vcpu >= c->cfg->entries_per_vcpu) {
		c->vcpu = (c->vcpu + 1) % c->cfg->n_vcpus;
		c->entries_on_vcpu = 0;
	}
	synth_pt_vmcs(c->pt, cur_vcpu(c)->vmcs);
	c->pt->tsc_offset = cur_vcpu(c)->tsc_offset;
	c->pt->tsc_mult = cur_vcpu(c)->tsc_mult;
}

void synth_vmx_insn_exit(struct cpu *c, const struct synth_insn *in)
{
	/* Port I/O through DX: the model has no registers, so the port is
	 * one of a PC's (the PIC and the PIT KVM emulates, the serial port,
	 * the RTC, PCI configuration, a KVM selftest's ucall port). */
	static const unsigned ports[] = { 0x20, 0x40, 0x3f8, 0x70, 0xcf8, 0xe000 };
	struct synth_exit_cause x = { .cfe = SYNTH_CFE_VMEXIT };

	if (in->kind == SK_MWAIT) {
		x.reason = SYNTH_EXIT_MWAIT;
	} else {
		x.reason = in->exit_reason;
		if (x.reason == SYNTH_EXIT_IO) {
			x.qual = in->io_qual;
			if (!(x.qual & (1u << 6)))
				x.qual |= (uint64_t)ports[synth_rnd(c) % 6] << 16;
		}
	}
	/* It does not complete in the guest: the FUP names it, the guest
	 * resumes after it (the host emulated it). */
	synth_vmx_exit(c, in->ip + in->size, &x);
}

void synth_vmx_async_exit(struct cpu *c, uint64_t resume_ip, int exception)
{
	/* the host's vectors: the local timer, a reschedule IPI, devices */
	static const uint8_t vectors[] = { 0xec, 0xfd, 0x22, 0x31 };
	struct synth_exit_cause x = { .cfe = SYNTH_CFE_VMEXIT_INTR };

	if (exception) {
		/* #UD of what the model cannot execute, intercepted */
		x.reason = SYNTH_EXIT_EXCEPTION_NMI;
		x.vector = 6;
	} else {
		x.reason = SYNTH_EXIT_EXTERNAL_INTERRUPT;
		x.vector = vectors[synth_rnd(c) % 4];
		/* the host takes a guest page back now and then (memory
		 * pressure): its next access is an EPT violation again */
		if (synth_rnd(c) % EPT_RECLAIM == 0)
			c->cfg->ept_mapped &= ~(1ull << (synth_rnd(c) % EPT_PAGES));
	}
	synth_vmx_exit(c, resume_ip, &x);
}

int synth_vmx_ept(struct cpu *c, const struct synth_insn *in)
{
	/* Each instruction touches one of the guest's data pages (its IP
	 * hashed); the first access to an unmapped one exits before the
	 * instruction, which runs again once the host has mapped it. */
	uint64_t bit = 1ull << ((in->ip * 0x9e3779b97f4a7c15ull) >> 58);
	struct synth_exit_cause x = {
		.reason = SYNTH_EXIT_EPT_VIOLATION, .cfe = SYNTH_CFE_VMEXIT,
	};

	/* a guest recording's memory is mapped (a VM long past its boot) */
	if (in->mem == SM_NONE || (c->cfg->ept_mapped & bit) || c->cfg->grec)
		return 0;
	c->cfg->ept_mapped |= bit;
	/* SDM "Exit Qualification for EPT Violations": read (bit 0) or
	 * write (1), EPT entry not present (5:3 = 0), the guest linear
	 * address valid (7) and translated (8) */
	x.qual = (in->mem == SM_WRITE ? 2u : 1u) | 0x80 | 0x100;
	synth_vmx_exit(c, in->ip, &x);
	return 1;
}

/* In __vmx_handle_exit or vmx_handle_exit_irqoff: a conditional jump to
 * a direct jump (or call) to the function this exit wants is taken. */
static int wanted(struct cpu *c, uint64_t fn)
{
	const struct synth_exit *e = &cur_vcpu(c)->exit;

	return fn == c->host->handler[e->reason & 63] ||
	       (e->reason == SYNTH_EXIT_EXTERNAL_INTERRUPT && fn == c->host->irqoff);
}

int synth_vmx_host_jcc(struct cpu *c, const struct synth_insn *in, int *taken)
{
	const struct synth_host *h = c->host;
	const struct synth_insn *t;

	if (in_range(&h->sys, in->ip) && c->cfg->grec) {
		*taken = 0;	/* the system call is KVM_RUN */
		return 1;
	}
	if (in_range(&h->ioctl, in->ip)) {
		/* back: enter again unless kicked; forward: to the VMM */
		*taken = in->target < in->ip ? !c->kick : c->to_user;
		return 1;
	}
	if (in_range(&h->fast_pio, in->ip)) {
		*taken = c->to_user;
		return 1;
	}
	if (c->cfg->threads && in_range(&h->vcpu_load, in->ip)) {
		/* "already loaded on this CPU" */
		*taken = c->hcpu->loaded_vmcs == cur_vcpu(c)->vmcs;
		return 1;
	}
	if (in_range(&h->dispatch[0], in->ip) || in_range(&h->dispatch[1], in->ip)) {
		t = synth_cpu_insn(c, in->target);
		*taken = t && (t->kind == SK_JMP || t->kind == SK_CALL) &&
			 wanted(c, t->target);
		return 1;
	}
	return 0;
}

int synth_vmx_host_indirect(struct cpu *c, const struct synth_insn *in,
			    uint64_t *to)
{
	const struct synth_exit *e = &cur_vcpu(c)->exit;

	/* kvm_vmx_exit_handlers[reason](vcpu) */
	if (!in_range(&c->host->dispatch[0], in->ip) || !c->host->handler[e->reason & 63])
		return 0;
	*to = c->host->handler[e->reason & 63];
	return 1;
}

void synth_vmx_finish(struct synth_walk_config *cfg, struct synth_truth *t)
{
	for (unsigned i = 0; i < cfg->n_vcpus; i++) {
		struct synth_exit *e = &cfg->vcpus[i].exit;

		if (e->pending)
			synth_truth_exit(t, i, e, 0, 0);
		e->pending = 0;
	}
}
