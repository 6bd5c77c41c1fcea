/* SPDX-License-Identifier: MIT */
/* A user stack unwound from a copy of it, as perf script unwinds the
 * samples of `perf record --call-graph dwarf`: the sampled registers, the
 * stack bytes from the stack pointer up, and the binaries mapped in the
 * process (their CFI, by elfutils' libdwfl).  x86_64.
 */
#ifndef VMPT_UNWIND_H
#define VMPT_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A mapping of the process: where, and its file (path NULL, data NULL:
 * memory with no file here, a stack, a heap: read as zeros).
 */
struct vmpt_unwind_map {
	uint64_t start, end, pgoff;
	const char *path;		/* the binary here, read for its CFI */
	const uint8_t *data;		/* its contents (size bytes), for reads */
	size_t size;			/* of its mapped memory off the stack */
};

/* The mapping at addr into *map: 0, else negative (none). */
typedef int (*vmpt_unwind_map_fn)(void *ctx, uint64_t addr, struct vmpt_unwind_map *map);

/* x86_64 registers in DWARF's numbering: rax, rdx, rcx, rbx, rsi, rdi,
 * rbp, rsp, r8-r15, rip.
 */
#define VMPT_UNWIND_NREGS 17
#define VMPT_UNWIND_SP 7
#define VMPT_UNWIND_IP 16

/* An unwinder: the binaries' CFI of the last few processes, kept. */
struct vmpt_unwinder;

/* NULL: no memory. */
struct vmpt_unwinder *vmpt_unwinder_new(void);
void vmpt_unwinder_free(struct vmpt_unwinder *uw);

/* Up to max return addresses of a stack of process pid, innermost first:
 * regs' ip, then each caller's address less one (inside its call, as perf
 * takes it) until the CFI ends the stack or unwinding fails.  Stack words
 * are read from stack (size bytes from regs' sp; the last word is not, as
 * perf's), other memory from the binary mapped there, zeros from other
 * mappings; memory in no mapping ends the stack.  Returns the count (at
 * least 1 with max > 0).
 */
size_t vmpt_unwind(struct vmpt_unwinder *uw, int pid, const uint64_t regs[VMPT_UNWIND_NREGS],
		   const uint8_t *stack, size_t size, vmpt_unwind_map_fn map_at, void *ctx,
		   uint64_t *ips, size_t max);

#ifdef __cplusplus
}
#endif

#endif
