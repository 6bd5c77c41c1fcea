/* SPDX-License-Identifier: MIT */
/* The host side of the VM scenario: a model of the path KVM takes through
 * the host kernel to run a guest (arch/x86/kvm/vmx/vmenter.S and its
 * callers), linked where a kernel lives.  vmpt-synth walks it: a system
 * call enters at entry_SYSCALL_64, KVM_RUN loads the vCPU's VMCS
 * (VMPTRLD), enters the guest with VMLAUNCH/VMRESUME in vmx_vmenter, and
 * every VM exit lands at vmx_vmexit (the VMCS host RIP).
 */
	.text
	.globl entry_SYSCALL_64
	.type entry_SYSCALL_64, @function
entry_SYSCALL_64:
	endbr64
	pushq %rcx
	pushq %r11
	call do_syscall_64
	popq %r11
	popq %rcx
	sysretq
	.size entry_SYSCALL_64, . - entry_SYSCALL_64

	.globl do_syscall_64
	.type do_syscall_64, @function
do_syscall_64:
	endbr64
	cmpq $16, %rax			/* __NR_ioctl */
	jne 1f
	call kvm_vcpu_ioctl
1:	ret
	.size do_syscall_64, . - do_syscall_64

	.globl kvm_vcpu_ioctl
	.type kvm_vcpu_ioctl, @function
kvm_vcpu_ioctl:
	endbr64
	pushq %rbx
	movq %rdi, %rbx
	call vmx_vcpu_load
2:	call vcpu_enter_guest
	call vmx_handle_exit
	testl %eax, %eax
	jnz 2b				/* exit handled in the kernel: enter again */
	popq %rbx
	ret
	.size kvm_vcpu_ioctl, . - kvm_vcpu_ioctl

	.globl vmx_vcpu_load
	.type vmx_vcpu_load, @function
vmx_vcpu_load:
	endbr64
	cmpq %rdi, loaded_vmcs(%rip)
	je 1f				/* already current on this CPU */
	movq %rdi, loaded_vmcs(%rip)
	vmptrld (%rdi)
1:	ret
	.size vmx_vcpu_load, . - vmx_vcpu_load

	.globl vcpu_enter_guest
	.type vcpu_enter_guest, @function
vcpu_enter_guest:
	endbr64
	pushq %rbp
	movq %rsp, %rbp
	cmpb $0, pending_event(%rip)
	je 1f
	call vmx_inject_irq
1:	call __vmx_vcpu_run
	popq %rbp
	ret
	.size vcpu_enter_guest, . - vcpu_enter_guest

	.globl vmx_inject_irq
	.type vmx_inject_irq, @function
vmx_inject_irq:
	endbr64
	movb $0, pending_event(%rip)
	ret
	.size vmx_inject_irq, . - vmx_inject_irq

	.globl __vmx_vcpu_run
	.type __vmx_vcpu_run, @function
__vmx_vcpu_run:
	endbr64
	pushq %rbp
	movq %rsp, %rbp
	pushq %r15
	pushq %r14
	pushq %r13
	pushq %r12
	pushq %rbx
	call vmx_update_host_rsp
	testb $1, launched(%rip)	/* ZF=1: first entry, VMLAUNCH */
	call vmx_vmenter
	/* back here from vmx_vmexit */
	popq %rbx
	popq %r12
	popq %r13
	popq %r14
	popq %r15
	popq %rbp
	ret
	.size __vmx_vcpu_run, . - __vmx_vcpu_run

	.globl vmx_update_host_rsp
	.type vmx_update_host_rsp, @function
vmx_update_host_rsp:
	endbr64
	cmpq %rsp, host_rsp(%rip)
	je 1f
	movq %rsp, host_rsp(%rip)
1:	ret
	.size vmx_update_host_rsp, . - vmx_update_host_rsp

	.globl vmx_vmenter
	.type vmx_vmenter, @function
vmx_vmenter:
	jz 2f
	vmresume
	jmp vmx_vmfail
2:	vmlaunch
	jmp vmx_vmfail
	.size vmx_vmenter, . - vmx_vmenter

	.globl vmx_vmexit
	.type vmx_vmexit, @function
vmx_vmexit:
	/* the VMCS host RIP: the host continues here after a VM exit */
	endbr64
	movb $1, launched(%rip)
	ret
	.size vmx_vmexit, . - vmx_vmexit

	.globl vmx_vmfail
	.type vmx_vmfail, @function
vmx_vmfail:
	movl $1, %eax
	ret
	.size vmx_vmfail, . - vmx_vmfail

	.globl vmx_handle_exit
	.type vmx_handle_exit, @function
vmx_handle_exit:
	endbr64
	movl exit_reason(%rip), %eax
	cmpl $10, %eax			/* EXIT_REASON_CPUID */
	je handle_cpuid
	cmpl $30, %eax			/* EXIT_REASON_IO_INSTRUCTION */
	je handle_io
	cmpl $1, %eax			/* EXIT_REASON_EXTERNAL_INTERRUPT */
	jne 1f
	movb $1, pending_event(%rip)
1:	movl $1, %eax
	ret
	.size vmx_handle_exit, . - vmx_handle_exit

	.globl handle_cpuid
	.type handle_cpuid, @function
handle_cpuid:
	endbr64
	call kvm_skip_emulated_instruction
	movl $1, %eax
	ret
	.size handle_cpuid, . - handle_cpuid

	.globl handle_io
	.type handle_io, @function
handle_io:
	endbr64
	call kvm_skip_emulated_instruction
	xorl %eax, %eax			/* to user space (the VMM) */
	ret
	.size handle_io, . - handle_io

	.globl kvm_skip_emulated_instruction
	.type kvm_skip_emulated_instruction, @function
kvm_skip_emulated_instruction:
	endbr64
	addq $2, guest_rip(%rip)
	ret
	.size kvm_skip_emulated_instruction, . - kvm_skip_emulated_instruction

	.data
loaded_vmcs:	.quad 0
host_rsp:	.quad 0
guest_rip:	.quad 0
exit_reason:	.long 0
launched:	.byte 0
pending_event:	.byte 0
	.section .note.GNU-stack, "", @progbits
