/* SPDX-License-Identifier: MIT */
#ifndef VMPT_VM_TESTS_KVM_VM_H
#define VMPT_VM_TESTS_KVM_VM_H

/* A tiny KVM selftest-style harness: the guest runs code of this very
 * (non-PIE) binary at the same addresses, in 64-bit long mode set up by
 * hand, and calls the host with port I/O ("ucall").
 */

#include <linux/kvm.h>
#include <stdint.h>

#define KVM_VM_SKIP 77		/* meson's "skipped" exit status */
#define UCALL_PORT 0xe0

enum ucall_cmd { UCALL_SYNC = 1, UCALL_DONE, UCALL_ABORT };

struct kvm_vm {
	int kvm_fd, vm_fd;
	int run_size;
	uint8_t *image;		/* copy of this binary, slot 0 */
	uint64_t image_gpa, image_size;
	uint8_t *sys;		/* page tables and stacks, slot 1 */
	struct kvm_cpuid2 *cpuid;
};

struct kvm_vcpu {
	struct kvm_vm *vm;
	int id, fd;
	struct kvm_run *run;
};

struct ucall {
	uint64_t cmd, arg0, arg1;
};

/* Guest side: must not be instrumented (no sanitizers, no stack guard), nor
 * vectorized (GCC; clang has no optimize attribute).
 */
#ifdef __clang__
#define GUEST_CODE __attribute__((noinline, no_sanitize("address", "undefined"), \
				  no_stack_protector))
#else
#define GUEST_CODE __attribute__((noinline, no_sanitize("address", "undefined"), \
				  no_stack_protector, optimize("no-tree-vectorize")))
#endif

static inline __attribute__((always_inline)) void
guest_ucall(uint64_t cmd, uint64_t arg0, uint64_t arg1)
{
	__asm__ volatile("outb %%al, %w[port]"
			 : : "a"(0), [port] "Nd"(UCALL_PORT), "D"(cmd), "S"(arg0),
			   "d"(arg1)
			 : "memory");
}

/* Returns 0, KVM_VM_SKIP with the reason printed, or -1. */
int kvm_vm_create(struct kvm_vm *vm);
int kvm_vcpu_create(struct kvm_vm *vm, struct kvm_vcpu *vcpu, int id,
		    void (*entry)(uint64_t id));
/* Run until the next ucall; -1 on any other exit (printed). */
int kvm_vcpu_run(struct kvm_vcpu *vcpu, struct ucall *uc);
void kvm_vcpu_destroy(struct kvm_vcpu *vcpu);
void kvm_vm_destroy(struct kvm_vm *vm);

#endif
