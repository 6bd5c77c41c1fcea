/* SPDX-License-Identifier: MIT */
/* The instruction flow decoder: Intel PT packets + a memory image ->
 * the executed instructions, as runs of straight-line code ("blocks") and
 * events in between.
 *
 * Code is disassembled once per (section, address, mode) into a cached
 * block ending at the first branch; the trace then only picks the way out of
 * each block (a TNT bit, a TIP target), so decoding costs cache lookups.
 */
#ifndef VMPT_FLOW_H
#define VMPT_FLOW_H

#include "vmpt/image.h"
#include "vmpt/packet.h"
#include "vmpt/tsc_patch.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vmpt_exec_mode {
	VMPT_MODE_64,
	VMPT_MODE_32,
	VMPT_MODE_16,
};

/* How the last instruction of a block leaves it. */
enum vmpt_iclass {
	VMPT_IC_OTHER,		/* no branch: the block was cut (size, section end) */
	VMPT_IC_JCC,		/* conditional jump, loop, jcxz: a TNT bit */
	VMPT_IC_JMP,		/* direct jump: no trace */
	VMPT_IC_JMP_IND,	/* indirect jump: TIP */
	VMPT_IC_CALL,		/* direct call: no trace */
	VMPT_IC_CALL_IND,	/* indirect call: TIP */
	VMPT_IC_RET,		/* near return: TIP, or a TNT bit compressed */
	VMPT_IC_FAR_CALL,	/* far call, vmcall: TIP */
	VMPT_IC_FAR_RET,	/* far ret: TIP */
	VMPT_IC_FAR_JMP,	/* far jmp: TIP */
	/* Far transfers perf names apart ("int", "syscall", "iret",
	 * "sysret"); all take a TIP. */
	VMPT_IC_INT,		/* int n, int1, int3, into */
	VMPT_IC_SYSCALL,	/* syscall, sysenter */
	VMPT_IC_IRET,		/* iret */
	VMPT_IC_SYSRET,		/* sysret, sysexit */
	VMPT_IC_VMENTRY,	/* vmlaunch, vmresume */
};

enum vmpt_flow_kind {
	VMPT_FLOW_BLOCK,
	VMPT_FLOW_EVENT,
	/* Blocks a consumer folded into one item on a decoding thread
	 * (vmpt_consumer_ops.fold): only that consumer sees it, and only
	 * time and offset (its last block's) mean the same as a block's.
	 */
	VMPT_FLOW_FOLDED,
};

enum vmpt_event {
	VMPT_EV_ENABLED,	/* tracing (re)starts at ip */
	VMPT_EV_DISABLED,	/* tracing stops after the last block */
	VMPT_EV_ASYNC_DISABLED,	/* stops before ip (VM exit, interrupt out of range) */
	VMPT_EV_ASYNC_BRANCH,	/* interrupt/exception at ip, to `to` */
	VMPT_EV_OVERFLOW,	/* trace lost; resumes at ip when ip_valid */
	VMPT_EV_EXEC_MODE,	/* payload: enum vmpt_exec_mode */
	VMPT_EV_PAGING,		/* payload: CR3; nr: non-root */
	VMPT_EV_VMCS,		/* payload: VMCS base */
	VMPT_EV_TSX,		/* payload: bit 0 in transaction, bit 1 abort */
	VMPT_EV_PTWRITE,	/* payload: the value written */
	VMPT_EV_CBR,		/* payload: core:bus ratio */
	VMPT_EV_PWRE,		/* payload: C-state, sub-state << 8, HW << 16 */
	VMPT_EV_PWRX,		/* payload: last C-state, deepest << 8, wake reason << 16 */
	VMPT_EV_EXSTOP,
	VMPT_EV_MWAIT,		/* payload: hints, extensions << 32 */
	VMPT_EV_ERROR,		/* err; decoding resumes at the next PSB */
	VMPT_EV_PSB,		/* a PSB+ (status) was read: payload its offset,
				 * ip the FUP in it (ip_valid), to the core:bus
				 * ratio as of its end (0: none seen yet) */
	VMPT_EV_CFE,		/* Event Trace (below): payload type, vector << 8,
				 * the packet's IP bit << 16; evd: its ninsn EVDs */
	VMPT_EV_COUNT
};

/* Why tracing (re)starts: VMPT_EV_ENABLED's payload.  perf shows a trace
 * start ("tr strt") where a TIP.PGE (or, after an overflow, a FUP) says
 * so, but not at a PSB+'s FUP, which is status.
 */
enum vmpt_enabled_cause {
	VMPT_ENABLED_PGE,	/* TIP.PGE, or the FUP after an overflow */
	VMPT_ENABLED_PSB,	/* the FUP in a PSB+ (synchronizing) */
	VMPT_ENABLED_RESYNC_END,/* after an error, a TIP.PGD naming where
				 * tracing was: it starts and ends there */
};

/* Event Trace (Intel SDM Vol. 3C, "Event Trace"): a CFE packet names an
 * asynchronous event, EVD packets before it give its data.  A CFE binds to
 * an IP (ip_valid) when its IP bit is set (a FUP of its own follows), or
 * when packet generation is on (the FUP of the event's compound packet, as
 * a VM exit's); an event item at that IP, before the event's branch.
 */
enum vmpt_cfe_type {
	VMPT_CFE_INTR = 1,	/* interrupt, exception, NMI */
	VMPT_CFE_IRET,
	VMPT_CFE_SMI,
	VMPT_CFE_RSM,
	VMPT_CFE_SIPI,
	VMPT_CFE_INIT,
	VMPT_CFE_VMENTRY,
	VMPT_CFE_VMEXIT,
	VMPT_CFE_VMEXIT_INTR,	/* a VM exit by an interrupt (vector) */
	VMPT_CFE_SHUTDOWN,
};

enum vmpt_evd_type {
	VMPT_EVD_PFA,		/* page fault linear address */
	VMPT_EVD_VMXQ,		/* VM exit qualification */
	VMPT_EVD_VMXR,		/* VM exit reason */
};

/* One EVD packet of a CFE event. */
struct vmpt_evd {
	uint64_t payload;
	uint8_t type;		/* enum vmpt_evd_type (6 bits) */
};

#define VMPT_CFE_TYPE(payload) ((unsigned)(payload) & 0x1f)
#define VMPT_CFE_VECTOR(payload) ((unsigned)((payload) >> 8) & 0xff)
#define VMPT_CFE_IP_BIT(payload) ((unsigned)((payload) >> 16) & 1)

/* One item of the flow: a block of executed instructions or an event. */
/* A block item holds at most this many instructions: straight-line code
 * longer than that comes as several blocks.
 */
#define VMPT_FLOW_BLOCK_MAX 1024

struct vmpt_flow_item {
	uint8_t kind;		/* enum vmpt_flow_kind */
	uint8_t mode;		/* enum vmpt_exec_mode of the block */
	uint8_t iclass;		/* block: enum vmpt_iclass of its last insn */
	uint8_t taken;		/* block: the last insn branched (to `to`) */
	uint8_t ev;		/* event: enum vmpt_event */
	uint8_t ip_valid;	/* event: ip is known */
	uint8_t nr;		/* paging: non-root (guest) */
	/* cyc is estimated (no CYC yet): perf then shows IPC at every
	 * sample, with the count as of the last IPC point (a nonzero cyc).
	 */
	uint8_t cyc_est;
	int err;		/* error event: negative vmpt_err */
	uint32_t ninsn;		/* block: instructions; CFE: EVD packets */
	union {
		const uint8_t *isize;	/* block: size of each instruction */
		const struct vmpt_evd *evd;	/* CFE: its EVD packets, in order */
		uint64_t folded;	/* VMPT_FLOW_FOLDED: the consumer's */
	};
	const struct vmpt_section *sec;	/* block: where the code came from */
	uint64_t ip;		/* block: first insn; event: where it happened */
	union {
		uint64_t end_ip;	/* block: last insn */
		/* PSB: the time before its TSC, perf's while it walks to the
		 * PSB+'s FUP (it reads the PSB+ after the walk).
		 */
		uint64_t time_before;
	};
	uint64_t to;		/* block: next ip; async branch: target */
	uint64_t payload;
	uint64_t offset;	/* trace offset of the packet behind it */
	uint64_t time;		/* TSC estimate; 0 without timing packets */
	/* For IPC, perf's cycle count (CYC packets while tracing is on, or
	 * estimated from MTC and CBR until a CYC comes) at an IPC point,
	 * where perf's decoder samples it (the packet that decided a block's
	 * last instruction, tracing starting or stopping, a PSB+, a new
	 * CBR), when a CYC (estimating: an MTC or TMA) came since the point
	 * before; 0 elsewhere.  An error or overflow has the count (perf
	 * takes it there too).
	 */
	uint64_t cyc;
};

enum vmpt_retcomp {
	VMPT_RETCOMP_AUTO,	/* from the trace: TNT bit compressed, TIP not */
	VMPT_RETCOMP_ON,	/* recorded with it: read as AUTO */
	VMPT_RETCOMP_OFF,	/* recorded without it: a TNT bit at a RET is an error */
};

struct vmpt_flow_config {
	const uint8_t *begin, *end;	/* the trace */
	/* Or the trace in n_parts > 0 parts (a queue's consecutive buffers,
	 * kept by the caller): one stream, a packet cut at a part's end
	 * goes on in the next; offsets (items', stop_offset, tsc_patches)
	 * count from the first part's first byte.
	 */
	const struct vmpt_pkt_part *parts;
	size_t n_parts;
	const struct vmpt_image *image;
	/* Return compression (enum vmpt_retcomp).  The trace itself tells a
	 * compressed RET (a TNT bit pending when the walk meets it) from one
	 * with a TIP, as libipt reads it, so AUTO needs no hint; OFF (the
	 * recording's noretcomp, or the user's override) makes a TNT bit at
	 * a RET an error, as perf's decoder does.
	 */
	int retcomp;
	/* IP filter ranges the trace was recorded with ([a, b], inclusive),
	 * n_filters 0: none.  They tell which branch a suppressed TIP.PGD
	 * left on.
	 */
	uint64_t filter_a[4], filter_b[4];
	unsigned n_filters;
	/* Timing (from CPUID 0x15 / perf's AUXTRACE_INFO); 0 = unknown, then
	 * only TSC packets give time.
	 */
	uint32_t tsc_ctc_ratio_n, tsc_ctc_ratio_d;
	uint8_t mtc_period;	/* MTCFreq, 0..15 (more is taken as 15) */
	uint32_t max_nonturbo_ratio;
	/* The CYC threshold it was recorded with (IPC then takes a CYC only
	 * for the packet right after it); 0: none, or no CYC.
	 */
	uint8_t cyc_thresh;
	/* Stop at this offset (for segment-parallel decoding); 0: end. */
	uint64_t stop_offset;
	/* After a decoding error (trace and code disagree, no code, an
	 * overflow), go on at the next IP packet as perf's decoder does: a
	 * TIP, TIP.PGE or FUP starts the trace there, a TIP.PGD starts and
	 * ends it (VMPT_ENABLED_RESYNC_END), keeping the IP of the error
	 * when the packet has none (not after missing code).  0: at the next
	 * PSB, as libipt.  Packet errors always go to the next PSB.
	 */
	int perf_resync;
	/* The block cache of this image to share (see vmpt_bcache_new);
	 * NULL: the decoder keeps its own.
	 */
	struct vmpt_bcache *cache;
	/* TSC packets of this buffer to read as other values (a guest's TSC
	 * as the host's: the correlator's patches); NULL: as they are.
	 */
	const struct vmpt_tsc_patches *tsc_patches;
	/* The trace is part of a read-only file mapping: the pages the
	 * decoder has gone past are dropped from the process as it goes
	 * (the file gives them back if read again), so a trace of any size
	 * decodes in bounded memory.  0: keep them (a trace in malloc'd
	 * memory, which dropping would zero).
	 */
	int release;
};

/* A block cache: the image's code as decoded blocks, for any number of
 * decoders of one image, on any number of threads, so that nothing is
 * disassembled twice.  Free it after the decoders.  NULL: no memory.
 */
struct vmpt_bcache;
struct vmpt_bcache *vmpt_bcache_new(void);
void vmpt_bcache_free(struct vmpt_bcache *bc);

struct vmpt_flow;

/* Allocate a decoder; it shares config->image (read only).  NULL: no memory. */
struct vmpt_flow *vmpt_flow_new(const struct vmpt_flow_config *config);
void vmpt_flow_free(struct vmpt_flow *dec);

/* Start at the PSB at or after offset and end at the PSB at stop (0: the
 * end of the trace), as config->stop_offset does.  The block cache stays:
 * one decoder can take piece after piece.  0 or -VMPT_ERR_EOS.
 */
int vmpt_flow_sync_at(struct vmpt_flow *dec, uint64_t offset, uint64_t stop);

/* Sideband (perf's context switches) says which host process runs from
 * now on: host code is then looked up under asid cr3 = space (e.g.
 * vmpt_pid_space()) instead of the CR3 from PIP packets; 0 goes back
 * to PIP's CR3.  Guest code is unaffected.
 */
void vmpt_flow_set_host_space(struct vmpt_flow *dec, uint64_t space);

/* The same for guest code (PIP.NR set): the guest task the guest's own
 * sideband says runs (vmpt/guest_tasks.h) looks its user code up under
 * cr3 = space (vmpt_guest_space()); 0 goes back to PIP's CR3.  Host code
 * is unaffected.  Set it at a guest context switch, before the items
 * after it are decoded.
 */
void vmpt_flow_set_guest_space(struct vmpt_flow *dec, uint64_t space);

/* Count cycles for IPC on from where from's count is, as perf's decoder
 * does over the buffers of one queue (a CPU's, a thread's).
 */
void vmpt_flow_count_on(struct vmpt_flow *dec, const struct vmpt_flow *from);

/* The next item.  Returns 0, or -VMPT_ERR_EOS at the end of the trace.
 * Errors in the trace come as VMPT_EV_ERROR items, never as return values.
 * The item's isize (and a CFE's evd) stays valid until the decoder is freed.
 */
int vmpt_flow_next(struct vmpt_flow *dec, struct vmpt_flow_item *item);

/* The next items at once, the same as from vmpt_flow_next one by one:
 * *items points at *n >= 1 of them, valid until the next call.  Where the
 * walk repeats itself (loops), a TNT run recorded before comes back whole,
 * many blocks in one call without walking them: the fastest way to take a
 * trace.  0, or -VMPT_ERR_EOS at the end.
 */
int vmpt_flow_next_items(struct vmpt_flow *dec, const struct vmpt_flow_item **items,
			 size_t *n);

/* Tracing is on where the decoder stands (after its last item): a
 * piece decoded apart (vmpt/jobs.h) says so at its end.
 */
int vmpt_flow_enabled(const struct vmpt_flow *dec);

/* What a piece of a trace decoded apart (vmpt/jobs.h) takes over from
 * the decoder of the piece before: the machine (PIP, VMCS) and execution
 * mode, which a PSB+ restores only while tracing is on, and the time
 * (a PSB+'s TSC is read against the estimate before it: its wraps, and
 * a TSC a little behind a CYC estimate).  Opaque.
 */
struct vmpt_flow_carry {
	uint64_t opaque[24];
};
void vmpt_flow_carry_get(const struct vmpt_flow *dec, struct vmpt_flow_carry *c);
/* Take c over (no event: the trace says nothing new). */
void vmpt_flow_carry_set(struct vmpt_flow *dec, const struct vmpt_flow_carry *c);
int vmpt_flow_carry_equal(const struct vmpt_flow_carry *a, const struct vmpt_flow_carry *b);
/* A piece decoded apart from start (its state after its first PSB+) to
 * end: 1 when it decodes as it would have from before (the state the
 * piece before left), all the state its items depend on being equal;
 * *end is then made the one decoder's.  0: decode it again from before.
 */
int vmpt_flow_carry_settle(const struct vmpt_flow_carry *before,
			   const struct vmpt_flow_carry *start, struct vmpt_flow_carry *end);

/* Instruction i of a block item. */
static inline uint64_t vmpt_block_insn_ip(const struct vmpt_flow_item *b, uint32_t i)
{
	uint64_t ip = b->ip;

	for (uint32_t k = 0; k < i; k++)
		ip += b->isize[k];
	return ip;
}

const char *vmpt_event_name(unsigned ev);

/* Offsets of all PSBs in a trace (for splitting into segments). */
int vmpt_flow_psb_offsets(const uint8_t *begin, const uint8_t *end,
			  uint64_t **offsets, size_t *n);

#ifdef __cplusplus
}
#endif

#endif
