/* SPDX-License-Identifier: MIT */
/* VM exit reasons: their names (Intel SDM Vol. 3D, appendix C, "VMX Basic
 * Exit Reasons") and the KVM handlers that stand for them, by kernel
 * symbol (arch/x86/kvm/vmx/vmx.c's kvm_vmx_exit_handlers[] of Linux 6.1,
 * and the names before 5.13), so a trace without Event Trace still tells
 * why a guest exited from the host code that ran.
 */
#include "vmpt/report.h"

#include <string.h>

static const char *const reason_names[] = {
	[0] = "EXCEPTION_NMI", [1] = "EXTERNAL_INTERRUPT", [2] = "TRIPLE_FAULT",
	[3] = "INIT_SIGNAL", [4] = "SIPI_SIGNAL", [7] = "INTERRUPT_WINDOW",
	[8] = "NMI_WINDOW", [9] = "TASK_SWITCH", [10] = "CPUID", [12] = "HLT",
	[13] = "INVD", [14] = "INVLPG", [15] = "RDPMC", [16] = "RDTSC",
	[18] = "VMCALL", [19] = "VMCLEAR", [20] = "VMLAUNCH", [21] = "VMPTRLD",
	[22] = "VMPTRST", [23] = "VMREAD", [24] = "VMRESUME", [25] = "VMWRITE",
	[26] = "VMOFF", [27] = "VMON", [28] = "CR_ACCESS", [29] = "DR_ACCESS",
	[30] = "IO_INSTRUCTION", [31] = "MSR_READ", [32] = "MSR_WRITE",
	[33] = "INVALID_STATE", [34] = "MSR_LOAD_FAIL", [36] = "MWAIT_INSTRUCTION",
	[37] = "MONITOR_TRAP_FLAG", [39] = "MONITOR_INSTRUCTION",
	[40] = "PAUSE_INSTRUCTION", [41] = "MCE_DURING_VMENTRY",
	[43] = "TPR_BELOW_THRESHOLD", [44] = "APIC_ACCESS", [45] = "EOI_INDUCED",
	[46] = "GDTR_IDTR", [47] = "LDTR_TR", [48] = "EPT_VIOLATION",
	[49] = "EPT_MISCONFIG", [50] = "INVEPT", [51] = "RDTSCP",
	[52] = "PREEMPTION_TIMER", [53] = "INVVPID", [54] = "WBINVD", [55] = "XSETBV",
	[56] = "APIC_WRITE", [57] = "RDRAND", [58] = "INVPCID", [59] = "VMFUNC",
	[60] = "ENCLS", [61] = "RDSEED", [62] = "PML_FULL", [63] = "XSAVES",
	[64] = "XRSTORS", [67] = "UMWAIT", [68] = "TPAUSE", [74] = "BUS_LOCK",
	[75] = "NOTIFY",
};

const char *vmpt_exit_reason_name(int reason)
{
	if (reason < 0 || (size_t)reason >= sizeof(reason_names) / sizeof(reason_names[0]) ||
	    !reason_names[reason])
		return "";
	return reason_names[reason];
}

static const struct {
	const char *sym;
	int reason;
} handlers[] = {
	{ "handle_exception_nmi", 0 }, { "handle_external_interrupt", 1 },
	{ "handle_triple_fault", 2 }, { "handle_nmi_window", 8 },
	{ "handle_interrupt_window", 7 }, { "handle_task_switch", 9 },
	{ "kvm_emulate_cpuid", 10 }, { "handle_cpuid", 10 },
	{ "kvm_emulate_halt", 12 }, { "handle_halt", 12 },
	{ "kvm_emulate_invd", 13 }, { "handle_invd", 13 }, { "handle_invlpg", 14 },
	{ "kvm_emulate_rdpmc", 15 }, { "handle_rdpmc", 15 },
	{ "kvm_emulate_hypercall", 18 }, { "handle_vmcall", 18 },
	{ "handle_cr", 28 }, { "handle_dr", 29 }, { "handle_io", 30 },
	{ "kvm_emulate_rdmsr", 31 }, { "handle_rdmsr", 31 },
	{ "kvm_emulate_wrmsr", 32 }, { "handle_wrmsr", 32 },
	{ "kvm_emulate_mwait", 36 }, { "handle_mwait", 36 },
	{ "handle_monitor_trap", 37 }, { "kvm_emulate_monitor", 39 },
	{ "handle_monitor", 39 }, { "handle_pause", 40 },
	{ "handle_tpr_below_threshold", 43 }, { "handle_apic_access", 44 },
	{ "handle_apic_eoi_induced", 45 }, { "handle_desc", 46 },
	{ "handle_ept_violation", 48 }, { "handle_ept_misconfig", 49 },
	{ "handle_preemption_timer", 52 }, { "kvm_emulate_wbinvd", 54 },
	{ "handle_wbinvd", 54 }, { "kvm_emulate_xsetbv", 55 }, { "handle_xsetbv", 55 },
	{ "handle_apic_write", 56 }, { "handle_invpcid", 58 }, { "handle_vmx_instruction", 19 },
	{ "handle_pml_full", 62 }, { "handle_bus_lock_vmexit", 74 },
	{ "handle_notify", 75 }, { "handle_encls", 60 },
};

int vmpt_exit_reason_of_handler(const char *sym)
{
	for (size_t i = 0; sym && i < sizeof(handlers) / sizeof(handlers[0]); i++)
		if (!strcmp(handlers[i].sym, sym))
			return handlers[i].reason;
	return -1;
}
