/* SPDX-License-Identifier: MIT */
/* The host side of the VM scenario: a model of the path KVM takes through
 * the host kernel to run a guest (Linux 6.1, arch/x86/kvm/x86.c and
 * vmx/vmx.c, vmx/vmenter.S), linked where a kernel lives.  vmpt-synth
 * walks it: a system call enters at entry_SYSCALL_64, KVM_RUN loads the
 * vCPU's VMCS (VMPTRLD), enters the guest with VMLAUNCH/VMRESUME in
 * vmx_vmenter, and every VM exit lands at vmx_vmexit (the VMCS host RIP).
 * After it, KVM's way goes by the exit's reason as in vmx.c: the
 * IRQ-off part (an external interrupt's host handler), then
 * __vmx_handle_exit, which calls the reason's handler (a few directly,
 * the rest through kvm_vmx_exit_handlers[]); an I/O exit for a device the
 * VMM emulates returns from KVM_RUN to the VMM.  The walk takes those
 * decisions from the exit (tools/synth/synth_vmx.c): the conditional
 * jumps of __vmx_handle_exit and vmx_handle_exit_irqoff go to a jump to
 * the function they test for, the KVM_RUN loop leaves forward for the VMM
 * and goes back to enter again.  Loops elsewhere take their outcomes from
 * the seed, so each handler's time varies.
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

	/* KVM_RUN (vcpu_run): enter the guest until an exit needs the VMM
	 * or the VMM has kicked the thread (a pending signal: -EINTR) */
	.globl kvm_vcpu_ioctl
	.type kvm_vcpu_ioctl, @function
kvm_vcpu_ioctl:
	endbr64
	pushq %rbx
	movq %rdi, %rbx
	call vmx_vcpu_load
1:	call vcpu_enter_guest
	testl %eax, %eax
	jz 2f				/* to the VMM (KVM_EXIT_IO) */
	cmpb $0, signal_pending(%rip)
	je 1b				/* handled in the kernel: enter again */
2:	popq %rbx
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
	call vmx_handle_exit_irqoff
	call vmx_handle_exit
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

	/* with interrupts still off: an external interrupt's host handler */
	.globl vmx_handle_exit_irqoff
	.type vmx_handle_exit_irqoff, @function
vmx_handle_exit_irqoff:
	endbr64
	movl exit_reason(%rip), %eax
	cmpl $1, %eax			/* EXIT_REASON_EXTERNAL_INTERRUPT */
	je 1f
	ret
1:	jmp handle_external_interrupt_irqoff
	.size vmx_handle_exit_irqoff, . - vmx_handle_exit_irqoff

	.globl handle_external_interrupt_irqoff
	.type handle_external_interrupt_irqoff, @function
handle_external_interrupt_irqoff:
	endbr64
	movl exit_intr_info(%rip), %edi
	call common_interrupt
	ret
	.size handle_external_interrupt_irqoff, . - handle_external_interrupt_irqoff

	/* the host's interrupt handler: its work varies */
	.globl common_interrupt
	.type common_interrupt, @function
common_interrupt:
	endbr64
	pushq %rbx
	movl $4, %ebx
1:	incq irq_count(%rip)
	testq $1, irq_count(%rip)
	jz 2f
	call irq_work_run
2:	decl %ebx
	jnz 1b
	popq %rbx
	ret
	.size common_interrupt, . - common_interrupt

	.globl irq_work_run
	.type irq_work_run, @function
irq_work_run:
	endbr64
	addq $3, irq_count(%rip)
	ret
	.size irq_work_run, . - irq_work_run

	.globl vmx_handle_exit
	.type vmx_handle_exit, @function
vmx_handle_exit:
	endbr64
	call __vmx_handle_exit
	ret
	.size vmx_handle_exit, . - vmx_handle_exit

	/* The reason's handler: a few directly (CONFIG_RETPOLINE), the rest
	 * through the table; each returns 1 (handled, enter again) or 0
	 * (to the VMM). */
	.globl __vmx_handle_exit
	.type __vmx_handle_exit, @function
__vmx_handle_exit:
	endbr64
	movl exit_reason(%rip), %eax
	cmpl $32, %eax			/* EXIT_REASON_MSR_WRITE */
	je 1f
	cmpl $1, %eax			/* EXIT_REASON_EXTERNAL_INTERRUPT */
	je 2f
	cmpl $12, %eax			/* EXIT_REASON_HLT */
	je 3f
	cmpl $75, %eax			/* kvm_vmx_max_exit_handlers */
	jae 4f
	jmp *kvm_vmx_exit_handlers(, %rax, 8)
1:	jmp kvm_emulate_wrmsr
2:	jmp handle_external_interrupt
3:	jmp kvm_emulate_halt
4:	jmp vmx_unexpected_exit
	.size __vmx_handle_exit, . - __vmx_handle_exit

	.globl vmx_unexpected_exit
	.type vmx_unexpected_exit, @function
vmx_unexpected_exit:
	endbr64
	xorl %eax, %eax
	ret
	.size vmx_unexpected_exit, . - vmx_unexpected_exit

	.globl handle_exception_nmi
	.type handle_exception_nmi, @function
handle_exception_nmi:
	endbr64
	call kvm_queue_exception
	movl $1, %eax
	ret
	.size handle_exception_nmi, . - handle_exception_nmi

	.globl kvm_queue_exception
	.type kvm_queue_exception, @function
kvm_queue_exception:
	endbr64
	movb $1, pending_event(%rip)
	ret
	.size kvm_queue_exception, . - kvm_queue_exception

	.globl handle_external_interrupt
	.type handle_external_interrupt, @function
handle_external_interrupt:
	endbr64
	incq irq_exits(%rip)
	movl $1, %eax
	ret
	.size handle_external_interrupt, . - handle_external_interrupt

	.globl kvm_emulate_cpuid
	.type kvm_emulate_cpuid, @function
kvm_emulate_cpuid:
	endbr64
	call kvm_cpuid
	jmp kvm_skip_emulated_instruction
	.size kvm_emulate_cpuid, . - kvm_emulate_cpuid

	/* the guest's CPUID entries, searched */
	.globl kvm_cpuid
	.type kvm_cpuid, @function
kvm_cpuid:
	endbr64
	leaq cpuid_entries(%rip), %rdi
	movl $12, %ecx
1:	cmpl %eax, (%rdi)
	je 2f
	addq $40, %rdi
	decl %ecx
	jnz 1b
2:	ret
	.size kvm_cpuid, . - kvm_cpuid

	.globl kvm_skip_emulated_instruction
	.type kvm_skip_emulated_instruction, @function
kvm_skip_emulated_instruction:
	endbr64
	addq $2, guest_rip(%rip)
	movl $1, %eax
	ret
	.size kvm_skip_emulated_instruction, . - kvm_skip_emulated_instruction

	.globl kvm_emulate_halt
	.type kvm_emulate_halt, @function
kvm_emulate_halt:
	endbr64
	call kvm_skip_emulated_instruction
	call kvm_vcpu_halt
	movl $1, %eax
	ret
	.size kvm_emulate_halt, . - kvm_emulate_halt

	/* halt polling, then the thread blocks until the vCPU is woken */
	.globl kvm_vcpu_halt
	.type kvm_vcpu_halt, @function
kvm_vcpu_halt:
	endbr64
	pushq %rbx
	movl $16, %ebx
1:	call kvm_vcpu_check_block
	testl %eax, %eax
	jnz 2f				/* woken while polling */
	pause
	decl %ebx
	jnz 1b
	call kvm_vcpu_block
2:	popq %rbx
	ret
	.size kvm_vcpu_halt, . - kvm_vcpu_halt

	.globl kvm_vcpu_check_block
	.type kvm_vcpu_check_block, @function
kvm_vcpu_check_block:
	endbr64
	cmpb $0, pending_event(%rip)
	jne 1f
	xorl %eax, %eax
	ret
1:	movl $1, %eax
	ret
	.size kvm_vcpu_check_block, . - kvm_vcpu_check_block

	.globl kvm_vcpu_block
	.type kvm_vcpu_block, @function
kvm_vcpu_block:
	endbr64
	call schedule
	ret
	.size kvm_vcpu_block, . - kvm_vcpu_block

	/* The model has no context switch: the CPU's idle loop runs here,
	 * as a per-CPU trace shows it, until the vCPU thread is woken. */
	.globl schedule
	.type schedule, @function
schedule:
	endbr64
	call do_idle
	ret
	.size schedule, . - schedule

	.globl do_idle
	.type do_idle, @function
do_idle:
	endbr64
	call intel_idle
	ret
	.size do_idle, . - do_idle

	.globl intel_idle
	.type intel_idle, @function
intel_idle:
	endbr64
	leaq idle_flags(%rip), %rax
	xorl %ecx, %ecx
	xorl %edx, %edx
	monitor
	movl $0x20, %eax		/* MWAIT hint (the walk chooses the C-state) */
	movl $1, %ecx			/* break on interrupt */
	mwait
	ret
	.size intel_idle, . - intel_idle

	.globl kvm_emulate_hypercall
	.type kvm_emulate_hypercall, @function
kvm_emulate_hypercall:
	endbr64
	cmpq $12, %rax			/* KVM_HC_* */
	ja 1f
	call kvm_pv_kick_cpu_op
1:	jmp kvm_skip_emulated_instruction
	.size kvm_emulate_hypercall, . - kvm_emulate_hypercall

	.globl kvm_pv_kick_cpu_op
	.type kvm_pv_kick_cpu_op, @function
kvm_pv_kick_cpu_op:
	endbr64
	movb $1, pending_event(%rip)
	ret
	.size kvm_pv_kick_cpu_op, . - kvm_pv_kick_cpu_op

	.globl handle_io
	.type handle_io, @function
handle_io:
	endbr64
	movq exit_qualification(%rip), %rsi
	jmp kvm_fast_pio
	.size handle_io, . - handle_io

	/* a device KVM emulates, or the VMM's (KVM_RUN returns) */
	.globl kvm_fast_pio
	.type kvm_fast_pio, @function
kvm_fast_pio:
	endbr64
	call kvm_skip_emulated_instruction
	call kvm_io_bus_find
	testl %eax, %eax
	jnz 1f				/* none in the kernel: to the VMM */
	call kernel_pio
	movl $1, %eax
	ret
1:	movl $2, kvm_run_exit_reason(%rip)	/* KVM_EXIT_IO */
	xorl %eax, %eax
	ret
	.size kvm_fast_pio, . - kvm_fast_pio

	.globl kvm_io_bus_find
	.type kvm_io_bus_find, @function
kvm_io_bus_find:
	endbr64
	leaq io_bus(%rip), %rdi
	movl $6, %ecx
1:	cmpq %rsi, (%rdi)
	je 2f
	addq $16, %rdi
	decl %ecx
	jnz 1b
2:	ret
	.size kvm_io_bus_find, . - kvm_io_bus_find

	/* the in-kernel PIC and PIT */
	.globl kernel_pio
	.type kernel_pio, @function
kernel_pio:
	endbr64
	pushq %rbx
	movl $2, %ebx
1:	call pic_update_irq
	decl %ebx
	jnz 1b
	popq %rbx
	ret
	.size kernel_pio, . - kernel_pio

	.globl pic_update_irq
	.type pic_update_irq, @function
pic_update_irq:
	endbr64
	testb $1, pic_irr(%rip)
	jz 1f
	movb $1, pending_event(%rip)
1:	ret
	.size pic_update_irq, . - pic_update_irq

	.globl kvm_emulate_rdmsr
	.type kvm_emulate_rdmsr, @function
kvm_emulate_rdmsr:
	endbr64
	call kvm_get_msr_common
	jmp kvm_skip_emulated_instruction
	.size kvm_emulate_rdmsr, . - kvm_emulate_rdmsr

	.globl kvm_get_msr_common
	.type kvm_get_msr_common, @function
kvm_get_msr_common:
	endbr64
	cmpl $0x10, %ecx		/* MSR_IA32_TSC */
	je 1f
	cmpl $0x1b, %ecx		/* MSR_IA32_APICBASE */
	je 2f
	call kvm_pmu_get_msr
	ret
1:	call kvm_read_l1_tsc
	ret
2:	movq apic_base(%rip), %rax
	ret
	.size kvm_get_msr_common, . - kvm_get_msr_common

	.globl kvm_read_l1_tsc
	.type kvm_read_l1_tsc, @function
kvm_read_l1_tsc:
	endbr64
	rdtsc
	addq tsc_offset(%rip), %rax
	ret
	.size kvm_read_l1_tsc, . - kvm_read_l1_tsc

	.globl kvm_pmu_get_msr
	.type kvm_pmu_get_msr, @function
kvm_pmu_get_msr:
	endbr64
	movl $8, %edx
1:	cmpl %ecx, pmu_msrs(%rip)
	je 2f
	decl %edx
	jnz 1b
2:	ret
	.size kvm_pmu_get_msr, . - kvm_pmu_get_msr

	.globl kvm_emulate_wrmsr
	.type kvm_emulate_wrmsr, @function
kvm_emulate_wrmsr:
	endbr64
	call kvm_set_msr_common
	jmp kvm_skip_emulated_instruction
	.size kvm_emulate_wrmsr, . - kvm_emulate_wrmsr

	.globl kvm_set_msr_common
	.type kvm_set_msr_common, @function
kvm_set_msr_common:
	endbr64
	cmpl $0x6e0, %ecx		/* MSR_IA32_TSC_DEADLINE */
	je 1f
	cmpl $0x830, %ecx		/* x2APIC ICR */
	je 2f
	call kvm_pmu_get_msr
	ret
1:	call kvm_set_lapic_tscdeadline_msr
	ret
2:	movb $1, pending_event(%rip)
	ret
	.size kvm_set_msr_common, . - kvm_set_msr_common

	.globl kvm_set_lapic_tscdeadline_msr
	.type kvm_set_lapic_tscdeadline_msr, @function
kvm_set_lapic_tscdeadline_msr:
	endbr64
	movq %rax, tsc_deadline(%rip)
	call kvm_read_l1_tsc
	ret
	.size kvm_set_lapic_tscdeadline_msr, . - kvm_set_lapic_tscdeadline_msr

	.globl kvm_emulate_mwait
	.type kvm_emulate_mwait, @function
kvm_emulate_mwait:
	endbr64
	jmp kvm_skip_emulated_instruction	/* as a NOP */
	.size kvm_emulate_mwait, . - kvm_emulate_mwait

	/* the guest touched an unmapped page: map it */
	.globl handle_ept_violation
	.type handle_ept_violation, @function
handle_ept_violation:
	endbr64
	movq exit_qualification(%rip), %rsi
	call kvm_mmu_page_fault
	ret
	.size handle_ept_violation, . - handle_ept_violation

	.globl kvm_mmu_page_fault
	.type kvm_mmu_page_fault, @function
kvm_mmu_page_fault:
	endbr64
	pushq %rbx
	movl $4, %ebx			/* the EPT's levels */
1:	call kvm_mmu_get_child_sp
	decl %ebx
	jnz 1b
	call mmu_set_spte
	popq %rbx
	movl $1, %eax
	ret
	.size kvm_mmu_page_fault, . - kvm_mmu_page_fault

	.globl kvm_mmu_get_child_sp
	.type kvm_mmu_get_child_sp, @function
kvm_mmu_get_child_sp:
	endbr64
	cmpq $0, (%rdi)
	jne 1f				/* present */
	call kvm_mmu_alloc_page
1:	ret
	.size kvm_mmu_get_child_sp, . - kvm_mmu_get_child_sp

	.globl kvm_mmu_alloc_page
	.type kvm_mmu_alloc_page, @function
kvm_mmu_alloc_page:
	endbr64
	movl $8, %ecx
1:	movq $0, (%rdi)
	addq $8, %rdi
	decl %ecx
	jnz 1b
	ret
	.size kvm_mmu_alloc_page, . - kvm_mmu_alloc_page

	.globl mmu_set_spte
	.type mmu_set_spte, @function
mmu_set_spte:
	endbr64
	movq %rsi, (%rdi)
	ret
	.size mmu_set_spte, . - mmu_set_spte

	.section .rodata
	.balign 8
	/* kvm_vmx_exit_handlers[], by basic exit reason */
kvm_vmx_exit_handlers:
	.quad handle_exception_nmi		/* 0 */
	.quad handle_external_interrupt		/* 1 */
	.rept 8
	.quad vmx_unexpected_exit
	.endr
	.quad kvm_emulate_cpuid			/* 10 */
	.quad vmx_unexpected_exit
	.quad kvm_emulate_halt			/* 12 */
	.rept 5
	.quad vmx_unexpected_exit
	.endr
	.quad kvm_emulate_hypercall		/* 18 */
	.rept 11
	.quad vmx_unexpected_exit
	.endr
	.quad handle_io				/* 30 */
	.quad kvm_emulate_rdmsr			/* 31 */
	.quad kvm_emulate_wrmsr			/* 32 */
	.rept 3
	.quad vmx_unexpected_exit
	.endr
	.quad kvm_emulate_mwait			/* 36 */
	.rept 11
	.quad vmx_unexpected_exit
	.endr
	.quad handle_ept_violation		/* 48 */
	.rept 26
	.quad vmx_unexpected_exit
	.endr

	.data
loaded_vmcs:	.quad 0
host_rsp:	.quad 0
guest_rip:	.quad 0
exit_qualification: .quad 0
irq_count:	.quad 0
irq_exits:	.quad 0
apic_base:	.quad 0xfee00900
tsc_offset:	.quad 0
tsc_deadline:	.quad 0
idle_flags:	.quad 0
cpuid_entries:	.fill 120, 4, 0
io_bus:		.fill 12, 8, 0
pmu_msrs:	.long 0
exit_reason:	.long 0
exit_intr_info:	.long 0
kvm_run_exit_reason: .long 0
launched:	.byte 0
pending_event:	.byte 0
signal_pending:	.byte 0
pic_irr:	.byte 0
	.section .note.GNU-stack, "", @progbits
