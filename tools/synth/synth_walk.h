/* SPDX-License-Identifier: MIT */
/* The walk's CPU state, shared by the instruction semantics (synth_walk.c)
 * and the machine that runs threads on host CPUs (synth_sched.c).
 */
#ifndef VMPT_SYNTH_WALK_H
#define VMPT_SYNTH_WALK_H

#include "synth.h"

/* host user, host kernel, guest kernel, guest user (guest recording) */
enum ctx { CTX_USER, CTX_KERNEL, CTX_GUEST, CTX_GUEST_USER };

struct stack {
	uint64_t *v;
	size_t n, cap;
};

/* The host kernel model's functions the walk steers by (VM scenario),
 * [lo, hi) each: KVM's way after a VM exit depends on its reason.
 */
struct synth_range {
	uint64_t lo, hi;
};

struct synth_host {
	uint64_t vmexit;		/* vmx_vmexit: the VMCS host RIP */
	struct synth_range sys;		/* do_syscall_64 */
	struct synth_range ioctl;	/* kvm_vcpu_ioctl: the KVM_RUN loop */
	struct synth_range vcpu_load;	/* vmx_vcpu_load */
	struct synth_range dispatch[2];	/* __vmx_handle_exit, vmx_handle_exit_irqoff */
	struct synth_range fast_pio;	/* kvm_fast_pio: in the kernel or the VMM */
	uint64_t handler[64];		/* by exit reason (0: none) */
	uint64_t irqoff;		/* handle_external_interrupt_irqoff */
};

/* Why a VM exits: its basic reason, qualification and Event Trace CFE. */
struct synth_exit_cause {
	uint8_t reason, cfe, vector;
	uint64_t qual;
};

/* A host CPU: what the walk needs of it across threads. */
struct hcpu {
	uint64_t loaded_vmcs;	/* the current VMCS (VMPTRLD), 0 none */
};

/* One thread of execution on the synthetic processor: a traced program,
 * or a vCPU thread of the VMM (its host kernel and its guest).
 */
struct cpu {
	struct synth_walk_config *cfg;
	struct synth_stream *s;	/* the trace buffer it writes now */
	struct synth_pt *pt;	/* &s->pt */
	struct synth_truth *truth;
	struct synth_stats *st;
	struct synth_insn_cache *cache_user, *cache_kernel, *cache_guest;
	/* --exec: the new program's code (at the old one's addresses) */
	struct synth_insn_cache *cache_exec;
	int execed;		/* the program is cfg->exec now */
	uint64_t *rng;		/* shared by all threads: one seed */
	const struct synth_host *host;	/* VM scenario */
	struct hcpu *hcpu;	/* threads: the host CPU it runs on */
	uint64_t ip;
	enum ctx ctx;
	struct stack ustack, kstack;
	struct stack gstack[SYNTH_MAX_VCPUS];	/* each vCPU's guest */
	unsigned vcpu;
	uint64_t entries_on_vcpu;
	uint64_t next_irq, guest_exit_at;
	uint64_t user_ret;	/* user and kernel traced: where SYSRET goes */
	uint64_t irq_ret;	/* ... and where IRET goes (0: no interrupt) */
	int retslot;		/* a retpoline replaced the return address */
	uint64_t kernel_exit_at;	/* --kernel-period: when to go back */
	int kernel_by_irq;	/* the kernel was entered by an interrupt */
	int in_user;		/* threads: KVM_RUN returned to the VMM */
	/* guest recording: the guest task on the vCPU, its slice of the
	 * guest CPU, and the host TSC the thread sleeps until (0: runs) */
	struct gtask *gtask;
	const struct gslice *slice;
	uint64_t slice_used, slice_budget;
	uint64_t block_until;
	/* first instruction after the last branch (1-based, as in the truth) */
	uint64_t block_start;
	int oom;
	/* the exit being handled: KVM_RUN returns to the VMM (to_user), or
	 * the VMM has kicked the thread (a pending signal) */
	int to_user, kick;
	/* perf's emulated PTWRITE being walked: its function and the
	 * payload bits its conditional jumps still give (MSB first) */
	uint64_t eptw_lo, eptw_hi, eptw_payload;
	unsigned eptw_bits;
	uint64_t next_freq;	/* --freq-period: the next frequency change */
};

uint64_t synth_rnd(struct cpu *c);
uint64_t synth_rnd_period(struct cpu *c, uint64_t mean);

/* One step: an instruction, or an event before it. */
void synth_cpu_step(struct cpu *c);

/* Tracing (re)starts at c->ip (MODE.Exec, TIP.PGE). */
void synth_cpu_enable(struct cpu *c, unsigned flags);

/* An asynchronous event takes the CPU away from traced code. */
void synth_cpu_disable(struct cpu *c);

/* The host kernel was entered by a system call (KVM_RUN) from the VMM. */
void synth_cpu_syscall_entry(struct cpu *c);

/* Time in an untraced context: only the clock moves. */
void synth_cpu_untraced(struct cpu *c, uint64_t mean);

/* An internal buffer overflow in c's stream ends now. */
void synth_cpu_overflow_end(struct cpu *c);

int synth_cpu_losing(const struct cpu *c);

/* In perf's emulated PTWRITE, with payload bits still to give. */
int synth_cpu_in_eptw(const struct cpu *c);

/* The instruction at ip in the current context's code, or NULL; its
 * image; its bytes (up to *avail), or NULL. */
const struct synth_insn *synth_cpu_insn(struct cpu *c, uint64_t ip);
struct synth_image *synth_cpu_image(struct cpu *c);
const uint8_t *synth_cpu_code(struct cpu *c, uint64_t ip, size_t *avail);

/* A taken branch of the truth (and the statistics). */
void synth_cpu_branch(struct cpu *c, uint64_t from, uint64_t to, unsigned flags);

/* The instruction being executed needs a packet (overflow bookkeeping). */
void synth_cpu_needs_packet(struct cpu *c);

/* Is the CPU in the guest (kernel or user)? */
int synth_cpu_guest(const struct cpu *c);

/* ---- synth_vmx.c ---- */

/* Resolve the host model's functions; 0 or a negative vmpt_err. */
int synth_host_init(struct synth_host *h, const struct synth_image *kernel,
		    char *err, size_t errlen);
const char *synth_exit_handler_name(unsigned reason);

/* The guest exits to the host (resume_ip: where it goes on). */
void synth_vmx_exit(struct cpu *c, uint64_t resume_ip,
		    const struct synth_exit_cause *x);
/* VMLAUNCH/VMRESUME. */
void synth_vmx_entry(struct cpu *c, const struct synth_insn *in);
void synth_vmx_vmptrld(struct cpu *c);
/* An instruction exits (SK_EXITING in a guest, MWAIT without cpu-pm). */
void synth_vmx_insn_exit(struct cpu *c, const struct synth_insn *in);
/* An asynchronous exit: an external interrupt (or an exception, vector). */
void synth_vmx_async_exit(struct cpu *c, uint64_t resume_ip, int exception);
/* A guest instruction that touches an unmapped page exits first (EPT
 * violation); returns 1 if it did. */
int synth_vmx_ept(struct cpu *c, const struct synth_insn *in);
/* Host code the exit's reason steers: 1 and *taken when this jcc is one
 * of those, or the target of an indirect branch in *to. */
int synth_vmx_host_jcc(struct cpu *c, const struct synth_insn *in, int *taken);
int synth_vmx_host_indirect(struct cpu *c, const struct synth_insn *in,
			    uint64_t *to);
/* The trace ends: exits not followed by an entry go to the truth. */
void synth_vmx_finish(struct synth_walk_config *cfg, struct synth_truth *t);

/* ---- synth_ptw.c ---- */

/* A PTWRITE executes (PTW, FUP); a direct jump that may start perf's
 * emulated PTWRITE. */
void synth_ptw_exec(struct cpu *c, const struct synth_insn *in);
void synth_ptw_emulated(struct cpu *c, const struct synth_insn *jmp);

/* ---- synth_power.c ---- */

/* MWAIT executed (mwait), or HLT in a guest that runs it: a C-state. */
void synth_power_idle(struct cpu *c, int mwait);

/* MWAIT (hints, ext) or HLT at c->ip (the instruction after it): the core
 * sleeps ticks in a C-state, woken for wake (PWRX's reason bits). */
void synth_power_cstate(struct cpu *c, int mwait, uint32_t hints,
			uint32_t ext, uint64_t ticks, unsigned wake);
/* A frequency change is due (--freq-period). */
void synth_power_freq(struct cpu *c);

/* ---- synth_exec.c ---- */

/* --exec: the program's next system call is its execve. */
int synth_exec_due(const struct cpu *c);
/* Ring 3 code at ip: the program (the exec's after the exec), or libc. */
struct synth_image *synth_exec_user_image(const struct cpu *c, uint64_t ip);
/* libc's execve when an indirect branch of the program goes there to
 * exec, else 0. */
uint64_t synth_exec_call(const struct cpu *c);
/* The execve system call has left user space: the exec, then TIP.PGE at
 * the new program's entry. */
void synth_exec_run(struct cpu *c);

/* Is ip inside the IP filter region (or is there none)? */
int synth_cpu_in_filter(const struct cpu *c, uint64_t ip);

#endif
