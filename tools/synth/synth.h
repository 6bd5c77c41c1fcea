/* SPDX-License-Identifier: MIT */
/* vmpt-synth: an Intel PT "processor" in software.  It walks real machine
 * code and emits the packets the hardware would (Intel SDM Vol. 3C,
 * "Intel Processor Trace"), with the ground truth of what ran.
 *
 * synth_image.c  code images (ELF segments, function symbols)
 * synth_insn.c   instruction classes from capstone, cached per address
 * synth_pt.c     the trace unit: TNT, IP compression, PSB+, timing packets
 * synth_walk.c   the CPU: branch outcomes, calls/returns, rings
 * synth_vmx.c    VMX: exit reasons, the host's way through KVM, exits truth
 * synth_power.c  power: C-states (MWAIT, HLT) and frequency changes
 * synth_ptw.c    PTWRITE and perf's emulated PTWRITE
 * synth_sched.c  the machine: vCPU threads on host CPUs, trace streams
 * synth_exec.c   an exec in the user scenario
 * synth_truth.c  the ground truth files
 * synth_perf.c   perf.data output
 */
#ifndef VMPT_SYNTH_H
#define VMPT_SYNTH_H

#include "vmpt/packet.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- images ---- */

struct synth_seg {
	uint64_t vaddr, size;
	uint8_t *data;
	uint64_t file_offset;	/* for perf's MMAP2 pgoff */
};

/* A function symbol: [addr, addr + size). */
struct synth_sym {
	uint64_t addr, size;
	const char *name;
	uint8_t bind;		/* STB_LOCAL, STB_GLOBAL, STB_WEAK */
};

struct synth_image {
	char *path;
	uint64_t base;		/* load bias added to the file's addresses */
	uint64_t lo, hi;	/* extent of the executable segments */
	struct synth_seg *segs;
	size_t n_segs;
	uint64_t *funcs;	/* function entries inside executable code */
	size_t n_funcs;
	uint64_t entry;
	int is_dyn;		/* ET_DYN: placed at base */
	int interp;		/* PT_INTERP: linked dynamically (system calls in libc) */
	/* function symbols by address (names in strtab) */
	struct synth_sym *syms;
	size_t n_syms;
	char *strtab;
	size_t strtab_len, strtab_cap;
};

/* Load the executable PT_LOAD segments of an ELF.  base is where a PIE
 * (ET_DYN) is placed; it is ignored for ET_EXEC.  Errors go to err (a
 * message naming the file) and return a negative vmpt_err.
 */
int synth_image_load(struct synth_image *img, const char *path, uint64_t base,
		     char *err, size_t errlen);
void synth_image_free(struct synth_image *img);

/* A kernel's text from an ELF core (perf's kcore_dir/kcore, the guest
 * agent's) with its function symbols from kallsyms.
 */
int synth_image_load_kcore(struct synth_image *img, const char *kcore,
			   const char *kallsyms, char *err, size_t errlen);

/* An ELF mapped as an MMAP2 record says: file offset pgoff at start. */
int synth_image_load_mapped(struct synth_image *img, const char *path,
			    uint64_t start, uint64_t pgoff, char *err,
			    size_t errlen);

/* The function symbol containing va, or NULL. */
const struct synth_sym *synth_image_sym_at(const struct synth_image *img,
					   uint64_t va);

/* Code bytes at va (up to *avail bytes), or NULL when unmapped. */
const uint8_t *synth_image_code(const struct synth_image *img, uint64_t va,
				size_t *avail);

/* The address of a symbol by name, or 0; its size in *size if asked. */
uint64_t synth_image_symbol(const struct synth_image *img, const char *name,
			    uint64_t *size);

/* ---- instructions ---- */

enum synth_kind {
	SK_OTHER,	/* no control flow */
	SK_JCC,		/* conditional: jcc, loop, jrcxz (TNT) */
	SK_JMP,		/* direct jump */
	SK_JMP_IND,	/* indirect jump (TIP) */
	SK_CALL,	/* direct call */
	SK_CALL_IND,	/* indirect call (TIP) */
	SK_RET,		/* near return (TNT when compressed, else TIP) */
	SK_SYSCALL,	/* to the kernel */
	SK_SYSRET,	/* sysret: back to user */
	SK_IRET,	/* iret: back from an interrupt */
	SK_VMENTRY,	/* vmlaunch/vmresume */
	SK_VMPTRLD,	/* loads a VMCS: a VMCS packet */
	SK_EXITING,	/* in a guest, exits to the host: cpuid, hlt, in/out, vmcall, rdmsr, wrmsr */
	SK_STOP,	/* cannot be modelled (ud2, int3, far jumps, undecodable) */
	SK_RETSLOT,	/* mov REG, [rsp]: a retpoline replaces the return address */
	SK_PTWRITE,	/* ptwrite: a PTW packet (PTWEn) */
	SK_MWAIT,	/* mwait: a C-state (PwrEvtEn: MWAIT, PWRE, EXSTOP, PWRX) */
};

/* SK_EXITING: the basic VM exit reason (SDM Vol. 3D, Appendix C). */
enum synth_exit_reason {
	SYNTH_EXIT_EXCEPTION_NMI = 0,
	SYNTH_EXIT_EXTERNAL_INTERRUPT = 1,
	SYNTH_EXIT_CPUID = 10,
	SYNTH_EXIT_HLT = 12,
	SYNTH_EXIT_VMCALL = 18,
	SYNTH_EXIT_IO = 30,
	SYNTH_EXIT_MSR_READ = 31,
	SYNTH_EXIT_MSR_WRITE = 32,
	SYNTH_EXIT_MWAIT = 36,
	SYNTH_EXIT_EPT_VIOLATION = 48,
};

/* Memory access of an instruction (EPT violations): none, read, write. */
enum synth_mem { SM_NONE, SM_READ, SM_WRITE };

struct synth_insn {
	uint64_t ip;
	uint64_t target;	/* direct branches */
	uint8_t size;
	uint8_t kind;		/* enum synth_kind */
	uint8_t vmlaunch;	/* SK_VMENTRY: 1 = vmlaunch, 0 = vmresume */
	uint8_t vmx;		/* a VMX instruction: #UD outside VMX operation */
	uint8_t valid;
	uint8_t exit_reason;	/* SK_EXITING: enum synth_exit_reason */
	uint8_t mem;		/* enum synth_mem (explicit memory operand) */
	uint8_t opsize;		/* SK_PTWRITE: payload bytes (4, 8); I/O: 1, 2, 4 */
	/* I/O: the exit qualification's bits 6:0 (size - 1, IN, string,
	 * REP, immediate port) and the port when immediate (bits 31:16) */
	uint32_t io_qual;
};

struct synth_insn_cache;

struct synth_insn_cache *synth_insn_cache_new(void);
void synth_insn_cache_free(struct synth_insn_cache *c);

/* Decode (once) the instruction at ip in img.  Returns NULL when ip is not
 * in img's code.  An undecodable instruction comes back as SK_STOP.
 */
const struct synth_insn *synth_insn_get(struct synth_insn_cache *c,
					const struct synth_image *img,
					uint64_t ip);

/* ---- the trace unit ---- */

struct synth_pt_config {
	unsigned retcomp : 1;	/* return compression (not noretcomp) */
	unsigned tsc : 1;	/* TSCEn */
	unsigned mtc : 1;	/* MTCEn */
	unsigned cyc : 1;	/* CYCEn */
	unsigned tnt64 : 1;	/* pack TNT-64 packets (else TNT-8) */
	unsigned psb_period;	/* bytes between PSBs */
	unsigned mtc_freq;	/* MTC every 2^mtc_freq CTC ticks */
	unsigned cyc_thresh;	/* CYC threshold (0: every packet) */
	uint32_t tsc_ctc_n, tsc_ctc_d;	/* TSC/CTC ratio (CPUID.15H) */
	unsigned cbr;		/* core:bus ratio, also max non-turbo */
	unsigned event : 1;	/* EventEn: CFE and EVD packets */
	unsigned ptw : 1;	/* PTWEn: PTW packets */
	unsigned fup_on_ptw : 1;	/* FUPonPTW: a FUP after each PTW */
	unsigned pwr_evt : 1;	/* PwrEvtEn: MWAIT, PWRE, EXSTOP, PWRX */
	/* Defer the TIPs of indirect jumps and calls while the TNT fills
	 * (SDM "Deferred TIPs"): the TNT goes out with the bits of branches
	 * after them, then the TIPs.
	 */
	unsigned defer_tips : 1;
};

/* TIPs held back at most (then the TNT goes out). */
#define SYNTH_DEFERRED_MAX 8

/* Hardware return-compression stack depth (the SDM leaves it to the
 * implementation; entries beyond it are dropped oldest first).
 */
#define SYNTH_RETCOMP_DEPTH 64

/* Snapshot mode: where a PSB starts and the truth line decodable after it. */
struct synth_psb_mark {
	uint64_t off, next_line, next_bline;
};

struct synth_pt {
	struct synth_pt_config cfg;
	uint8_t *buf;
	size_t len, cap;
	int oom;
	struct vmpt_last_ip lip;
	uint64_t tnt_bits;	/* pending branches, oldest in the highest bit */
	unsigned tnt_count;
	struct vmpt_packet deferred[SYNTH_DEFERRED_MAX];	/* TIPs after the TNT */
	unsigned n_deferred;
	uint64_t next_psb;	/* emit PSB+ once len reaches this */
	/* time: TSC ticks (host); the core runs cbr/max_non_turbo cycles
	 * per tick (cycles are what CYC counts) */
	uint64_t tsc;
	uint64_t cycles;	/* core cycles so far */
	uint64_t cyc_last;	/* cycles at the last CYC */
	uint64_t tick_rem;	/* cycles * max_non_turbo not yet a tick */
	unsigned cbr;		/* the current core:bus ratio */
	int asleep;		/* in a C-state: no packets, not even MTC */
	uint64_t mtc_last;	/* CTC >> mtc_freq at the last MTC */
	/* the hardware's return compression stack */
	uint64_t rstack[SYNTH_RETCOMP_DEPTH];
	unsigned rtop, rcount;
	/* state for PSB+ */
	int packet_en;		/* tracing is on for the current context */
	int vmx;		/* in VMX operation: VMCS goes into PSB+ */
	int os;			/* ring 0 is traced: PIP goes into PSB+ */
	uint64_t vmcs;		/* current VMCS base */
	uint64_t cr3;
	int nr;			/* in VMX non-root operation (guest) */
	int64_t tsc_offset;	/* guest TSC offset, applied to TSC packets in non-root */
	uint64_t tsc_mult;	/* TSC scaling (VMX): 48.16 fixed point, 1<<48 = 1.0 */
	uint64_t psb_count;
	/* snapshot mode: every PSB's mark, lines and blines counting the
	 * truth's instruction and branch lines */
	const uint64_t *lines, *blines;
	struct synth_psb_mark *marks;
	size_t n_marks, cap_marks;
};

void synth_pt_init(struct synth_pt *pt, const struct synth_pt_config *cfg,
		   uint64_t tsc0);
void synth_pt_fini(struct synth_pt *pt);

/* Advance time by core cycles (max_non_turbo/cbr TSC ticks each: one at
 * the default ratio), or by TSC ticks when the core does not run code. */
void synth_pt_tick(struct synth_pt *pt, uint64_t cycles);
void synth_pt_idle(struct synth_pt *pt, uint64_t ticks);

/* PSB+ if psb_period bytes have gone by; ip is the next instruction. */
void synth_pt_maybe_psb(struct synth_pt *pt, uint64_t ip);

void synth_pt_tnt(struct synth_pt *pt, int taken);
void synth_pt_flush_tnt(struct synth_pt *pt);
void synth_pt_ip(struct synth_pt *pt, unsigned type, uint64_t ip);
/* The TIP of an indirect jump or call: deferred with defer_tips while TNT
 * bits are pending.
 */
void synth_pt_tip_indirect(struct synth_pt *pt, uint64_t ip);
void synth_pt_ip_suppressed(struct synth_pt *pt, unsigned type);
void synth_pt_pip(struct synth_pt *pt, uint64_t cr3, int nr);
void synth_pt_mode_exec(struct synth_pt *pt);
void synth_pt_vmcs(struct synth_pt *pt, uint64_t vmcs);
void synth_pt_tsc(struct synth_pt *pt);
void synth_pt_ovf(struct synth_pt *pt);

/* Event Trace (EventEn): EVD data, then CFE (ip: a FUP of its own follows). */
void synth_pt_evd(struct synth_pt *pt, unsigned type, uint64_t payload);
void synth_pt_cfe(struct synth_pt *pt, unsigned type, unsigned vector, int ip);
/* PTWRITE (PTWEn): bytes 4 or 8; ip: FUPonPTW, the FUP follows. */
void synth_pt_ptw(struct synth_pt *pt, uint64_t payload, unsigned bytes, int ip);
/* Power events (PwrEvtEn). */
void synth_pt_mwait(struct synth_pt *pt, uint32_t hints, uint32_t ext);
void synth_pt_pwre(struct synth_pt *pt, unsigned state, unsigned sub, int hw);
void synth_pt_exstop(struct synth_pt *pt, int ip);
void synth_pt_pwrx(struct synth_pt *pt, unsigned last, unsigned deepest,
		   unsigned wake);
/* The core's frequency changes (or the core wakes from a C-state): CBR,
 * then TSC and TMA (SDM: the time is resynchronized after both). */
void synth_pt_set_cbr(struct synth_pt *pt, unsigned cbr);

/* Event Trace types (CFE) and data (EVD), SDM "Event Trace". */
enum synth_cfe {
	SYNTH_CFE_INTR = 1,
	SYNTH_CFE_IRET = 2,
	SYNTH_CFE_VMENTRY = 7,
	SYNTH_CFE_VMEXIT = 8,
	SYNTH_CFE_VMEXIT_INTR = 9,
};
enum synth_evd { SYNTH_EVD_PFA = 0, SYNTH_EVD_VMXQ = 1, SYNTH_EVD_VMXR = 2 };

/* Packets from len on are lost (an internal buffer overflow). */
void synth_pt_truncate(struct synth_pt *pt, size_t len);

/* TraceEn goes 1 again at tsc after a pause (a thread scheduled in):
 * PSB+ the first time, else TSC, TMA and CBR.
 */
void synth_pt_resume(struct synth_pt *pt, uint64_t tsc, int first);

/* Return compression: push at a call, and at a return ask whether the
 * hardware compresses it (and pop either way).
 */
void synth_pt_call(struct synth_pt *pt, uint64_t ret_ip);
int synth_pt_ret(struct synth_pt *pt, uint64_t target);

/* The guest's view of the TSC now (offset and scaling applied). */
uint64_t synth_pt_guest_tsc(const struct synth_pt *pt);

/* ---- ground truth ---- */

/* perf's branch flags (the letters of perf script -F flags). */
enum synth_flag {
	SF_CALL = 1 << 0,
	SF_RETURN = 1 << 1,
	SF_CONDITIONAL = 1 << 2,
	SF_SYSCALLRET = 1 << 3,
	SF_ASYNC = 1 << 4,
	SF_INTERRUPT = 1 << 5,
	SF_TRACE_BEGIN = 1 << 6,
	SF_TRACE_END = 1 << 7,
	SF_VMENTRY = 1 << 8,
	SF_VMEXIT = 1 << 9,
};

struct synth_truth {
	FILE *insn;		/* one IP per executed (and traced) instruction */
	FILE *branch;		/* FROM TO TSC MACHINE FLAGS per branch */
	uint64_t n_insn;	/* instruction lines written */
	uint64_t n_branch;	/* branch lines written */
	/* vCPU threads (--per-thread, --cpus): lines say where they ran */
	int threaded;
	int32_t tid, cpu;
	FILE *gtruth;		/* guest recording: a line per instruction */
	FILE *events;		/* Event Trace, PTWRITE and power events */
	FILE *exits;		/* VM exits */
	/* perf's TSC to time conversion (TIME_CONV), for the exits' ns */
	uint64_t time_mult, time_shift;
};

void synth_truth_insn(struct synth_truth *t, uint64_t ip);
void synth_truth_branch(struct synth_truth *t, uint64_t from, uint64_t to,
			unsigned flags, uint64_t tsc, int guest);
void synth_truth_lost(struct synth_truth *t, uint64_t from, uint64_t block);
void synth_truth_lost_vm(struct synth_truth *t, int began_guest,
			 int resumed_guest, uint64_t exits, uint64_t entries);
void synth_truth_psb(struct synth_truth *t, uint64_t offset,
		     uint64_t next_insn);
void synth_truth_exec(struct synth_truth *t, const char *path);
/* One event: "TSC KIND IP DETAIL" (IP "-" when it binds to none), with
 * " lost" when its packets were lost in an overflow. */
void synth_truth_event(struct synth_truth *t, uint64_t tsc, const char *kind,
		       int has_ip, uint64_t ip, int lost, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));
const char *synth_cfe_name(unsigned type);
const char *synth_flags_name(unsigned flags);

/* ---- the walk ---- */

#define SYNTH_MAX_VCPUS 16

struct synth_grec;

/* A VM exit as the truth has it (docs/synthesizer.md, P.exits). */
struct synth_exit {
	uint64_t tsc;		/* host TSC of the exit (its FUP) */
	uint64_t guest_ticks;	/* since the VM entry before it */
	uint64_t rip, qual;
	uint32_t tid;
	uint8_t reason, vector, cfe;
	uint8_t lost;		/* its packets were lost in an overflow */
	uint8_t pending;	/* not yet followed by a VM entry */
	uint8_t to_user;	/* handled by the VMM (KVM_RUN returns) */
	const char *handler;	/* KVM's handler function */
};

void synth_truth_exit(struct synth_truth *t, unsigned vcpu,
		      const struct synth_exit *x, int entered, uint64_t entry_tsc);

struct synth_vcpu {
	uint64_t vmcs;		/* VMCS base (4 KiB aligned) */
	int64_t tsc_offset;
	int64_t initial_offset;
	uint64_t tsc_mult;	/* 48.16 fixed point */
	uint64_t guest_ip;	/* where the guest resumes */
	uint64_t guest_cr3;
	int launched;
	/* a mid-trace TSC offset change (KVM writes the VMCS field) */
	uint64_t change_at_insn;
	uint64_t changed_at_insn;	/* where it happened (truth) */
	int64_t new_offset;
	uint64_t entry_tsc;	/* host TSC of its last VM entry */
	struct synth_exit exit;	/* the last exit */
};

struct synth_walk_config {
	uint64_t seed;
	uint64_t max_branches;	/* stop after this many branches */
	uint64_t start;		/* first IP (0: a function of the code image) */
	struct synth_image *user;	/* ring 3 code (may be NULL) */
	struct synth_image *kernel;	/* ring 0 code of the host (may be NULL) */
	int trace_user, trace_kernel;
	uint64_t kernel_cr3;
	uint64_t filter_lo, filter_hi;	/* IP filter region (user), 0 none */
	uint64_t irq_period;	/* mean instructions between interrupts, 0 none */
	uint64_t kernel_period;	/* mean kernel instructions per visit, 0 none */
	uint64_t ovf_at;	/* instruction at which the buffer overflows, 0 none */
	uint64_t ovf_lost;	/* instructions whose packets it loses */
	/* virtualization */
	int vm;
	struct synth_image *guest;	/* the guest's code */
	unsigned n_vcpus;
	struct synth_vcpu vcpus[SYNTH_MAX_VCPUS];
	uint64_t guest_period;	/* mean guest instructions before an async exit */
	uint64_t entries_per_vcpu;	/* VM entries before switching vCPU */
	uint64_t guest_start;	/* guest entry point */
	/* vCPU threads of the VMM process (pid; vCPU i is tid pid + 1 + i)
	 * scheduled on n_cpus host CPUs, recorded per thread or per CPU */
	int threads;
	int per_thread;
	unsigned n_cpus;
	uint32_t pid;
	/* snapshot mode: the AUX area's size and instructions between
	 * snapshots (one more at the end) */
	size_t snapshot_size;
	uint64_t snapshot_every;
	/* a real guest recording as the guest (synth_guest.c) */
	struct synth_grec *grec;
	/* EPT: the guest's data pages that are mapped (bit per page; an
	 * access to another one is an EPT violation, which maps it) */
	uint64_t ept_mapped;
	/* power: C-states in the guest without HLT/MWAIT exiting (KVM's
	 * disabled exits, "cpu-pm=on"), frequency changes every so many
	 * instructions (mean, 0 none) */
	int guest_pm;
	uint64_t freq_period;
	/* an exec (user scenario): after exec_after branches, the program's
	 * next system call is an execve of exec, which runs where user ran.
	 * A dynamically linked program calls libc's execve (libc mapped
	 * beside it, else NULL).  The walk says when it happened: the TSC
	 * of the system call and of exec's first instruction. */
	struct synth_image *exec, *libc;
	uint64_t exec_after;
	uint64_t exec_syscall_tsc, exec_start_tsc;
};

struct synth_stats {
	uint64_t insns, branches, tnt_bits, tips, psbs, syscalls, irqs;
	uint64_t vmentries, vmexits, lost, switches, migrations;
	uint64_t events, ptwrites, cstates, freq_changes;
};

/* One trace buffer (a perf AUX area) and its trace unit.  tid/cpu are
 * perf's for the buffer: per-thread (tid, -1), per-CPU (-1, cpu), or the
 * single traced thread (pid, -1).
 */
struct synth_stream {
	struct synth_pt pt;
	int32_t tid, cpu;
	int started;		/* TraceEn has been 1 (the first enable PSBs) */
	/* an internal buffer overflow in progress (instruction numbers,
	 * 1-based as in the truth) */
	uint64_t ovf_end;	/* where the lost window ends, 0 none */
	size_t ovf_len;		/* trace length when it overflowed */
	uint64_t tnt_first, tnt_block;	/* the oldest pending TNT bit's branch */
	uint64_t lost_from, lost_block;	/* the first branch whose packet was lost */
	int ovf_guest;		/* VM scenario: where the window began */
	uint64_t ovf_entries, ovf_exits;	/* ... and the counts then */
};

/* A context switch on a host CPU (PERF_RECORD_SWITCH_CPU_WIDE): tid 0 is
 * the idle task.
 */
struct synth_switch {
	uint64_t tsc;
	int32_t cpu;
	int32_t prev_tid, next_tid;
};

/* One snapshot of the AUX area as perf record -S writes it. */
struct synth_snapshot {
	uint8_t *data;		/* size bytes, oldest first */
	uint64_t size, offset;	/* perf's AUXTRACE size (no padding) and offset */
	uint64_t head;		/* the AUX head the kernel reported */
	uint64_t tsc;		/* when it was taken (the AUXTRACE reference) */
	/* truth: the stream's bytes [start, end) (start < 0: that many zero
	 * bytes first, never written), and instruction lines */
	int64_t start;
	uint64_t end;
	uint64_t first;		/* decodable from its first PSB+ (0: none) */
	uint64_t after;		/* the first after the previous snapshot */
	uint64_t last;		/* the last it holds */
	uint64_t bfirst, bafter, blast;	/* the same in branch lines */
	uint64_t psb_lo, psb_hi;	/* its first and last PSB+ (offset + 1) */
	int overlap;		/* with the previous one: enum synth_overlap */
};

enum synth_overlap {
	SO_NONE,		/* holds nothing of the previous snapshot */
	SO_TAIL,		/* only bytes after its last PSB+ */
	SO_LAST_PSB,		/* its last PSB+, but starts before its first */
	SO_FIRST_PSB,		/* its own first PSB+ is one of the previous one's */
};

struct synth_snapshots {
	size_t aux_size;	/* the AUX area (power of 2, 4-64 KiB) */
	uint64_t every;		/* instructions between snapshots */
	uint64_t prev;		/* perf's mm->prev */
	int wrapped;		/* perf's sticky wrapped flag */
	struct synth_snapshot *v;
	size_t n, cap;
};

/* Take a snapshot of pt's AUX area now (lines: the truth's line count). */
int synth_snapshot_take(struct synth_snapshots *ss, const struct synth_pt *pt,
			uint64_t lines, uint64_t blines);
void synth_snapshots_free(struct synth_snapshots *ss);

/* What the walk produced besides the truth. */
struct synth_out {
	struct synth_stream *streams;
	size_t n_streams;
	struct synth_switch *switches;
	size_t n_switches, cap_switches;
	uint64_t tsc_end;	/* the last stream's end */
	struct synth_snapshots snap;	/* snapshot mode (aux_size != 0) */
};

void synth_out_free(struct synth_out *out);

/* Walk and trace.  Returns 0 or a negative vmpt_err (err says why). */
int synth_walk(struct synth_walk_config *cfg, const struct synth_pt_config *ptc,
	       uint64_t tsc0, struct synth_out *out, struct synth_truth *truth,
	       struct synth_stats *st, char *err, size_t errlen);

#endif
