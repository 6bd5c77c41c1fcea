/* SPDX-License-Identifier: MIT */
#include "kvm_vm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

extern char __executable_start[], _end[];

/* Slot 1: page tables at SYS_GPA, then one stack per vCPU.  Everything
 * below 1 GiB is identity mapped with 2 MiB pages. */
#define SYS_GPA 0x20000000ULL
#define SYS_SIZE 0x200000ULL
#define STACK_SIZE 0x4000ULL
#define PTE_P 1ULL
#define PTE_RW 2ULL
#define PTE_PS 0x80ULL

/* The image spans every global, redzones included: copy it byte by byte
 * where the sanitizers do not look. */
__attribute__((no_sanitize("address", "undefined")))
static void copy_image(uint8_t *dst, const uint8_t *src, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++)
		((volatile uint8_t *)dst)[i] = src[i];
}

int kvm_vm_create(struct kvm_vm *vm)
{
	memset(vm, 0, sizeof(*vm));
	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0) {
		printf("SKIP: /dev/kvm: %s\n", strerror(errno));
		return KVM_VM_SKIP;
	}
	if (ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION) {
		printf("SKIP: unexpected KVM API version\n");
		return KVM_VM_SKIP;
	}
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0) {
		printf("SKIP: KVM_CREATE_VM: %s\n", strerror(errno));
		return KVM_VM_SKIP;
	}
	vm->run_size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);

	/* The guest sees a copy of this binary at the addresses it has here. */
	uint64_t start = (uint64_t)__executable_start & ~0xfffULL;
	uint64_t end = ((uint64_t)_end + 0xfff) & ~0xfffULL;
	vm->image_gpa = start;
	vm->image_size = end - start;
	if (end > SYS_GPA) {
		printf("FAIL: image at 0x%llx-0x%llx: not a non-PIE binary?\n",
		       (unsigned long long)start, (unsigned long long)end);
		return -1;
	}
	vm->image = mmap(NULL, vm->image_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	vm->sys = mmap(NULL, SYS_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vm->image == MAP_FAILED || vm->sys == MAP_FAILED)
		return -1;
	copy_image(vm->image, (const uint8_t *)start, vm->image_size);

	struct kvm_userspace_memory_region slot0 = {
		.slot = 0, .guest_phys_addr = start, .memory_size = vm->image_size,
		.userspace_addr = (uint64_t)vm->image,
	};
	struct kvm_userspace_memory_region slot1 = {
		.slot = 1, .guest_phys_addr = SYS_GPA, .memory_size = SYS_SIZE,
		.userspace_addr = (uint64_t)vm->sys,
	};
	if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &slot0) ||
	    ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &slot1)) {
		printf("FAIL: KVM_SET_USER_MEMORY_REGION: %s\n", strerror(errno));
		return -1;
	}
	uint64_t *pml4 = (uint64_t *)vm->sys;
	uint64_t *pdpt = (uint64_t *)(vm->sys + 0x1000);
	uint64_t *pd = (uint64_t *)(vm->sys + 0x2000);
	pml4[0] = (SYS_GPA + 0x1000) | PTE_P | PTE_RW;
	pdpt[0] = (SYS_GPA + 0x2000) | PTE_P | PTE_RW;
	for (uint64_t i = 0; i < 512; i++)
		pd[i] = (i << 21) | PTE_P | PTE_RW | PTE_PS;

	int nent = 256;
	vm->cpuid = calloc(1, sizeof(*vm->cpuid) + nent * sizeof(struct kvm_cpuid_entry2));
	vm->cpuid->nent = nent;
	if (ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, vm->cpuid)) {
		printf("FAIL: KVM_GET_SUPPORTED_CPUID: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

static void segment(struct kvm_segment *s, uint16_t sel, uint8_t type, int code)
{
	memset(s, 0, sizeof(*s));
	s->base = 0;
	s->limit = 0xffffffff;
	s->selector = sel;
	s->type = type;
	s->present = 1;
	s->s = 1;
	s->g = 1;
	s->l = code;
	s->db = !code;
}

int kvm_vcpu_create(struct kvm_vm *vm, struct kvm_vcpu *vcpu, int id,
		    void (*entry)(uint64_t id))
{
	vcpu->vm = vm;
	vcpu->id = id;
	vcpu->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, id);
	if (vcpu->fd < 0) {
		printf("FAIL: KVM_CREATE_VCPU %d: %s\n", id, strerror(errno));
		return -1;
	}
	vcpu->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 vcpu->fd, 0);
	if (vcpu->run == MAP_FAILED || ioctl(vcpu->fd, KVM_SET_CPUID2, vm->cpuid)) {
		printf("FAIL: vCPU %d setup: %s\n", id, strerror(errno));
		return -1;
	}
	struct kvm_sregs sregs;
	if (ioctl(vcpu->fd, KVM_GET_SREGS, &sregs))
		return -1;
	segment(&sregs.cs, 8, 11, 1);
	segment(&sregs.ds, 16, 3, 0);
	sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
	memset(&sregs.tr, 0, sizeof(sregs.tr));
	sregs.tr.selector = 24;
	sregs.tr.limit = 0x67;
	sregs.tr.type = 11;	/* busy 64-bit TSS */
	sregs.tr.present = 1;
	sregs.ldt.unusable = 1;
	sregs.gdt.limit = 0xffff;
	sregs.idt.limit = 0;
	sregs.cr0 = 0x80000033;	/* PG | NE | ET | MP | PE */
	sregs.cr3 = SYS_GPA;
	sregs.cr4 = 0x620;	/* OSXMMEXCPT | OSFXSR | PAE */
	sregs.efer = 0x500;	/* LMA | LME */
	if (ioctl(vcpu->fd, KVM_SET_SREGS, &sregs)) {
		printf("FAIL: KVM_SET_SREGS: %s\n", strerror(errno));
		return -1;
	}
	struct kvm_regs regs = {
		.rip = (uint64_t)entry,
		.rdi = (uint64_t)id,
		/* 16-byte aligned minus 8: as if called */
		.rsp = SYS_GPA + SYS_SIZE - (uint64_t)id * STACK_SIZE - 8,
		.rflags = 2,
	};
	if (ioctl(vcpu->fd, KVM_SET_REGS, &regs)) {
		printf("FAIL: KVM_SET_REGS: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

int kvm_vcpu_run(struct kvm_vcpu *vcpu, struct ucall *uc)
{
	for (;;) {
		if (ioctl(vcpu->fd, KVM_RUN, 0)) {
			if (errno == EINTR)
				continue;
			printf("FAIL: vCPU %d KVM_RUN: %s\n", vcpu->id, strerror(errno));
			return -1;
		}
		struct kvm_run *run = vcpu->run;
		if (run->exit_reason == KVM_EXIT_IO && run->io.port == UCALL_PORT) {
			struct kvm_regs regs;
			if (ioctl(vcpu->fd, KVM_GET_REGS, &regs))
				return -1;
			uc->cmd = regs.rdi;
			uc->arg0 = regs.rsi;
			uc->arg1 = regs.rdx;
			return 0;
		}
		struct kvm_regs regs;
		ioctl(vcpu->fd, KVM_GET_REGS, &regs);
		printf("FAIL: vCPU %d: unexpected exit %u at rip 0x%llx\n", vcpu->id,
		       run->exit_reason, (unsigned long long)regs.rip);
		if (run->exit_reason == KVM_EXIT_FAIL_ENTRY)
			printf("  hardware_entry_failure_reason 0x%llx\n",
			       (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
		return -1;
	}
}

void kvm_vcpu_destroy(struct kvm_vcpu *vcpu)
{
	if (vcpu->run && vcpu->run != MAP_FAILED)
		munmap(vcpu->run, vcpu->vm->run_size);
	if (vcpu->fd >= 0)
		close(vcpu->fd);
}

void kvm_vm_destroy(struct kvm_vm *vm)
{
	free(vm->cpuid);
	if (vm->image && vm->image != MAP_FAILED)
		munmap(vm->image, vm->image_size);
	if (vm->sys && vm->sys != MAP_FAILED)
		munmap(vm->sys, SYS_SIZE);
	if (vm->vm_fd > 0)
		close(vm->vm_fd);
	if (vm->kvm_fd > 0)
		close(vm->kvm_fd);
}
