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
	uint64_t *rng;		/* shared by all threads: one seed */
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
	uint64_t vmx_vcpu_load;	/* threads: vmx_vcpu_load's extent, to decide */
	uint64_t vmx_vcpu_load_end;	/* its "already loaded" branch */
	/* guest recording: the guest task on the vCPU, its slice of the
	 * guest CPU, and the host TSC the thread sleeps until (0: runs) */
	struct gtask *gtask;
	const struct gslice *slice;
	uint64_t slice_used, slice_budget;
	uint64_t block_until;
	uint64_t ioctl_lo, ioctl_hi;	/* kvm_vcpu_ioctl: KVM_RUN never returns */
	uint64_t sys_lo, sys_hi;	/* do_syscall_64: the system call is KVM_RUN */
	/* first instruction after the last branch (1-based, as in the truth) */
	uint64_t block_start;
	int oom;
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

/* Is ip inside the IP filter region (or is there none)? */
int synth_cpu_in_filter(const struct cpu *c, uint64_t ip);

#endif
