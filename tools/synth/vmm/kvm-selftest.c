/* SPDX-License-Identifier: MIT */
/* A program shaped like a KVM selftest: the host side (main) would create
 * a VM and run guest_code, which is this program's own code loaded at the
 * same addresses in the guest.  vmpt-synth's --guest-code scenario runs
 * guest_code in VMX non-root operation; ucall() exits to the host with
 * port I/O, the way the selftests' ucall does; RDMSR and VMCALL exit too.
 * Trace points: PTWRITE and perf's emulated PTWRITE (also when the program
 * runs as a user program).
 */
#include <stdint.h>
#include <stdio.h>

#define UCALL_PIO_PORT 0xe000

struct ucall {
	uint64_t cmd;
	uint64_t args[4];
};

static volatile uint64_t guest_data[64];

__attribute__((noinline)) void ucall(uint64_t cmd, uint64_t arg)
{
	struct ucall uc = { .cmd = cmd, .args = { arg } };

	for (int i = 1; i < 4; i++)
		uc.args[i] = uc.args[i - 1] * 3 + 1;
	__asm__ volatile("in %[port], %%al"
			 : : [port] "d"((uint16_t)UCALL_PIO_PORT), "D"(&uc)
			 : "rax", "memory");
}

__attribute__((noinline)) uint64_t guest_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

__attribute__((noinline)) uint64_t guest_sum(unsigned n)
{
	uint64_t s = 0;

	for (unsigned i = 0; i < n && i < 64; i++) {
		s += guest_data[i];
		if (s & 1)
			s = s * 3 + 1;
	}
	return s;
}

/* perf's emulated PTWRITE (man perf-intel-pt): the payload's 64 bits as
 * conditional jumps behind a magic perf recognizes. */
#define EPTW_8_BITS "1: shl %rax\n jc 1f\n 1: shl %rax\n jc 1f\n" \
		    "1: shl %rax\n jc 1f\n 1: shl %rax\n jc 1f\n" \
		    "1: shl %rax\n jc 1f\n 1: shl %rax\n jc 1f\n" \
		    "1: shl %rax\n jc 1f\n 1: shl %rax\n jc 1f\n"
__attribute__((naked, noinline)) void perf_emulate_ptwrite(uint64_t x __attribute__((unused)))
{
	__asm__ volatile("jmp 1f\n"
			 ".byte 0x0f, 0x0b\n .ascii \"perf,ptwrite  \"\n"
			 "1: mov %rdi, %rax\n"
			 EPTW_8_BITS EPTW_8_BITS EPTW_8_BITS EPTW_8_BITS
			 EPTW_8_BITS EPTW_8_BITS EPTW_8_BITS EPTW_8_BITS
			 "1: ret\n");
}

__attribute__((noinline)) void trace_point(uint64_t v)
{
	__asm__ volatile("ptwriteq %0" : : "r"(v));
	if (v & 4)
		perf_emulate_ptwrite(v);
}

__attribute__((noinline)) uint64_t guest_rdmsr(uint32_t msr)
{
	uint32_t lo, hi;

	__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}

__attribute__((noinline)) long guest_hypercall(uint64_t arg)
{
	long ret;

	__asm__ volatile("vmcall" : "=a"(ret) : "a"(5ul), "b"(arg) : "memory");
	return ret;
}

__attribute__((noinline)) void guest_cpuid(void)
{
	uint32_t a = 0x40000000, b, c = 0, d;

	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	guest_data[a & 63] = b;
}

__attribute__((noinline)) void guest_code(void)
{
	for (uint64_t stage = 0;; stage++) {
		uint64_t t = guest_rdtsc();

		guest_data[stage & 63] = t;
		trace_point(t ^ stage);
		if (stage & 1)
			guest_cpuid();
		else if (stage & 2)
			guest_data[1] = guest_rdmsr(0x10);	/* the TSC */
		else if (stage & 4)
			guest_hypercall(t);
		ucall(stage & 3, guest_sum((unsigned)(t & 63)));
	}
}

int main(int argc, char **argv)
{
	(void)argv;
	/* The host side: only the address of guest_code matters here. */
	printf("guest_code at %p\n", (void *)guest_code);
	if (argc > 1)
		guest_code();
	return 0;
}
