/* SPDX-License-Identifier: MIT */
/* A small kernel image: real compiled code (loops, calls, returns,
 * indirect calls through an ops table, a switch) at a kernel address, with
 * the instructions that exit to a hypervisor: CPUID, HLT, port I/O (to
 * devices KVM emulates and to the VMM's), RDMSR/WRMSR, VMCALL; an idle
 * loop with MONITOR/MWAIT (which a guest runs itself with KVM's cpu-pm);
 * PTWRITE (trace points).  vmpt-synth runs it
 * as a guest kernel (VM scenario) or as the kernel under a traced user
 * program (entry_SYSCALL_64 and asm_common_interrupt below).  It is never
 * executed natively.
 */
#include <stdint.h>

struct task {
	uint64_t vruntime;
	uint32_t prio;
	struct task *next;
};

struct sched_ops {
	void (*enqueue)(struct task *t);
	struct task *(*pick)(void);
	void (*tick)(struct task *t);
};

static struct task tasks[8];
static struct task *runqueue;
static volatile uint64_t jiffies;
static volatile uint32_t shared_counter;
/* device and timer state: each test is a branch of its own */
static volatile uint32_t pic_pending, deadline_armed, deadline_due;

static inline void cpuid(uint32_t leaf, uint32_t *a, uint32_t *b)
{
	uint32_t c = 0, d;

	__asm__ volatile("cpuid" : "+a"(leaf), "=b"(*b), "+c"(c), "=d"(d));
	*a = leaf;
}

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;

	__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	__asm__ volatile("inb %w1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ volatile("wrmsr" : : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

static inline long kvm_hypercall1(unsigned long nr, unsigned long p1)
{
	long ret;

	__asm__ volatile("vmcall" : "=a"(ret) : "a"(nr), "b"(p1) : "memory");
	return ret;
}

static inline void hlt(void)
{
	__asm__ volatile("hlt");
}

/* A trace point: the value goes into the trace as a PTW packet. */
static inline void ptwrite64(uint64_t v)
{
	__asm__ volatile("ptwriteq %0" : : "r"(v));
}

static inline void ptwrite32(uint32_t v)
{
	__asm__ volatile("ptwritel %0" : : "r"(v));
}

static volatile uint64_t idle_flags;

/* The idle loop: MWAIT in a C-state until an interrupt (mwait_idle). */
static inline void mwait_idle(uint32_t hint)
{
	__asm__ volatile("monitor" : : "a"(&idle_flags), "c"(0), "d"(0));
	__asm__ volatile("mwait" : : "a"(hint), "c"(1));
}

__attribute__((noinline)) void fair_enqueue(struct task *t)
{
	struct task **p = &runqueue;

	while (*p && (*p)->vruntime <= t->vruntime)
		p = &(*p)->next;
	t->next = *p;
	*p = t;
}

__attribute__((noinline)) struct task *fair_pick(void)
{
	struct task *t = runqueue;

	if (t)
		runqueue = t->next;
	return t;
}

__attribute__((noinline)) void fair_tick(struct task *t)
{
	t->vruntime += 1024 / (t->prio + 1);
	if (t->vruntime & 0x100)
		shared_counter++;
}

__attribute__((noinline)) void rt_enqueue(struct task *t)
{
	t->next = runqueue;
	runqueue = t;
}

__attribute__((noinline)) void rt_tick(struct task *t)
{
	if (t->prio)
		t->prio--;
}

static const struct sched_ops fair_ops = { fair_enqueue, fair_pick, fair_tick };
static const struct sched_ops rt_ops = { rt_enqueue, fair_pick, rt_tick };

__attribute__((noinline)) uint64_t checksum(const uint8_t *p, uint32_t n)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < n; i++) {
		sum += p[i];
		if (sum & 0x8000)
			sum ^= 0x1021;
	}
	return sum;
}

__attribute__((noinline)) void timer_interrupt(void)
{
	jiffies++;
	ptwrite64(jiffies);
	if ((jiffies & 7) == 0 && pic_pending)
		outb(0x20, 0x20);	/* EOI to the PIC: an I/O exit */
	else if (deadline_armed && deadline_due && (jiffies & 1))
		wrmsr(0x6e0, jiffies << 10);	/* the next TSC deadline */
}

static inline uint8_t rtc_read(uint8_t reg)
{
	outb(0x70, reg);		/* the RTC: the VMM's device */
	return inb(0x71);
}

static inline void idle(void)
{
	ptwrite32((uint32_t)jiffies);
	if (jiffies & 1)
		mwait_idle(0x20);
	else
		hlt();
}

__attribute__((noinline)) uint32_t cpu_features(void)
{
	uint32_t a, b;

	cpuid(1, &a, &b);
	return a ^ b;
}

__attribute__((noinline)) void schedule(const struct sched_ops *ops)
{
	struct task *t = ops->pick();

	if (!t)
		return;
	ops->tick(t);
	ops->enqueue(t);
}

__attribute__((noinline)) int handle_syscall(int nr, uint64_t arg)
{
	switch (nr) {
	case 0: return (int)checksum((const uint8_t *)tasks, (uint32_t)(arg & 63));
	case 1: return (int)cpu_features();
	case 2: return (int)(rdmsr(0x10) >> 3);
	case 3: timer_interrupt(); return 0;
	case 4: idle(); return 0;
	case 5: return (int)kvm_hypercall1(5, arg);	/* KVM_HC_KICK_CPU */
	case 6: return arg & 1 ? rtc_read(0) : 0;
	default: return -38;
	}
}

__attribute__((noinline)) long do_syscall_64(long nr, long arg)
{
	if (nr < 0 || nr > 6)
		return -38;
	return handle_syscall((int)nr, (uint64_t)arg);
}

/* The entry points: SYSCALL lands in entry_SYSCALL_64, which returns with
 * SYSRET; an interrupt lands in asm_common_interrupt, which returns with
 * IRET.
 */
__asm__(".text\n"
	".globl entry_SYSCALL_64\n"
	".type entry_SYSCALL_64, @function\n"
	"entry_SYSCALL_64:\n"
	"	pushq %rcx\n"
	"	pushq %r11\n"
	"	movq %rax, %rdi\n"
	"	call do_syscall_64\n"
	"	popq %r11\n"
	"	popq %rcx\n"
	"	sysretq\n"
	".size entry_SYSCALL_64, . - entry_SYSCALL_64\n"
	".globl asm_common_interrupt\n"
	".type asm_common_interrupt, @function\n"
	"asm_common_interrupt:\n"
	"	pushq %rax\n"
	"	call timer_interrupt\n"
	"	popq %rax\n"
	"	iretq\n"
	".size asm_common_interrupt, . - asm_common_interrupt\n");

void start_kernel(void)
{
	for (unsigned i = 0; i < 8; i++) {
		tasks[i].prio = i;
		fair_enqueue(&tasks[i]);
	}
	for (;;) {
		const struct sched_ops *ops = (jiffies & 3) ? &fair_ops : &rt_ops;

		schedule(ops);
		handle_syscall((int)(jiffies % 7), jiffies);
		timer_interrupt();
		/* nothing to run: the idle loop */
		if (!runqueue && !pic_pending && !deadline_due)
			idle();
	}
}
