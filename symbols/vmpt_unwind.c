/* SPDX-License-Identifier: MIT */
/* User stacks unwound from their copies in samples (vmpt/unwind.h): a
 * libdwfl session per process, kept for its next stacks (the binaries'
 * CFI read once), whose one thread's registers and memory are those of
 * the stack being unwound.  Binaries are reported as the frames reach
 * them, at their load bias (mapping start less offset, as perf reports
 * them); a mapping that no longer matches its module (an exec) starts the
 * process's session anew.
 */
#include "vmpt/unwind.h"

#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The processes whose sessions are kept (the least recently used goes). */
#define UNWIND_PROCS 8

struct unwind {
	const uint64_t *regs;
	const uint8_t *stack;
	size_t size;
	vmpt_unwind_map_fn map_at;
	void *ctx;
	uint64_t *ips;
	size_t n, max;
	int zeros;	/* this step read a mapping it cannot read */
	int stale;	/* a module is not what is mapped there now */
};

struct vmpt_unwinder {
	struct unwind_proc {
		int pid;
		Dwfl *dwfl;	/* NULL: a free slot */
		uint64_t used;
	} procs[UNWIND_PROCS];
	uint64_t clock;
	struct unwind cur;	/* the stack being unwound: the callbacks' */
};

/* perf's own CFI only: no search for separate debug files. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			Dwarf_Addr base, const char *file_name, const char *debuglink,
			GElf_Word crc, char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink, (void)crc, (void)debuginfo_file_name;
	return -1;
}

static const Dwfl_Callbacks offline = {
	.find_debuginfo = no_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* The binary at addr reported to dwfl once; a module of another load
 * bias or file there marks the session stale.
 */
static void report(Dwfl *dwfl, struct unwind *u, uint64_t addr)
{
	struct vmpt_unwind_map m;
	Dwfl_Module *mod;
	const char *base, *file;
	Dwarf_Addr start;

	if (u->map_at(u->ctx, addr, &m) < 0 || !m.path)
		return;
	mod = dwfl_addrmodule(dwfl, addr);
	if (mod) {
		dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, &file, NULL);
		if (start != m.start - m.pgoff || !file || strcmp(file, m.path))
			u->stale = 1;
		return;
	}
	base = strrchr(m.path, '/');
	dwfl_report_elf(dwfl, base ? base + 1 : m.path, m.path, -1, m.start - m.pgoff, false);
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_arg)
{
	if (*thread_arg)
		return 0;
	*thread_arg = arg;
	return dwfl_pid(dwfl);
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct unwind *u = arg;
	uint64_t sp = u->regs[VMPT_UNWIND_SP];
	struct vmpt_unwind_map m;
	uint64_t off;

	(void)dwfl;
	if (addr + 8 < addr)
		return false;
	/* As perf's: in the copy short of its last word. */
	if (addr >= sp && addr + 8 < sp + u->size) {
		memcpy(result, u->stack + (addr - sp), 8);
		return true;
	}
	if (u->map_at(u->ctx, addr, &m) < 0)
		return false;
	/* perf reads a mapping it cannot read (the stack past its copy, a
	 * heap) as zeros and goes on, where its unwinder then ends.
	 */
	*result = 0;
	off = m.pgoff + (addr - m.start);
	if (m.data && addr + 8 <= m.end && off <= m.size && m.size - off >= 8)
		memcpy(result, m.data + off, 8);
	else
		u->zeros = 1;
	return true;
}

static bool initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct unwind *u = arg;
	Dwarf_Word regs[VMPT_UNWIND_NREGS];

	for (int i = 0; i < VMPT_UNWIND_NREGS; i++)
		regs[i] = u->regs[i];
	return dwfl_thread_state_registers(thread, 0, VMPT_UNWIND_NREGS, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.memory_read = memory_read,
	.set_initial_registers = initial_registers,
};

static int frame(Dwfl_Frame *state, void *arg)
{
	struct unwind *u = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, NULL))
		return DWARF_CB_ABORT;
	/* Whether it is a signal frame needs the binary's CFI, and the
	 * caller unwound (the reads of this step).
	 */
	report(dwfl_thread_dwfl(dwfl_frame_thread(state)), u, pc);
	if (u->stale)
		return DWARF_CB_ABORT;
	u->zeros = 0;
	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	u->ips[u->n++] = activation ? pc : pc - 1;
	return u->n < u->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

struct vmpt_unwinder *vmpt_unwinder_new(void)
{
	return calloc(1, sizeof(struct vmpt_unwinder));
}

void vmpt_unwinder_free(struct vmpt_unwinder *uw)
{
	if (!uw)
		return;
	for (int i = 0; i < UNWIND_PROCS; i++)
		if (uw->procs[i].dwfl)
			dwfl_end(uw->procs[i].dwfl);
	free(uw);
}

/* Process pid's session, a new one when fresh (else its kept one), with
 * the stack's ip's binary reported; NULL: none could be made.
 */
static Dwfl *session_of(struct vmpt_unwinder *uw, int pid, int fresh)
{
	struct unwind_proc *p = &uw->procs[0];

	for (int i = 0; i < UNWIND_PROCS; i++) {
		if (uw->procs[i].dwfl && uw->procs[i].pid == pid) {
			p = &uw->procs[i];
			break;
		}
		if (!uw->procs[i].dwfl || uw->procs[i].used < p->used)
			p = &uw->procs[i];
	}
	p->used = ++uw->clock;
	if (p->dwfl && (p->pid != pid || fresh)) {
		dwfl_end(p->dwfl);
		p->dwfl = NULL;
	}
	if (!p->dwfl) {
		p->pid = pid;
		if (!(p->dwfl = dwfl_begin(&offline)))
			return NULL;
		report(p->dwfl, &uw->cur, uw->cur.regs[VMPT_UNWIND_IP]);
		/* The machine is the first binary's; the one thread is pid's. */
		if (!dwfl_attach_state(p->dwfl, NULL, pid > 0 ? pid : 1, &thread_callbacks,
				       &uw->cur)) {
			dwfl_end(p->dwfl);
			p->dwfl = NULL;
		}
		return p->dwfl;
	}
	report(p->dwfl, &uw->cur, uw->cur.regs[VMPT_UNWIND_IP]);
	return p->dwfl;
}

size_t vmpt_unwind(struct vmpt_unwinder *uw, int pid, const uint64_t regs[VMPT_UNWIND_NREGS],
		   const uint8_t *stack, size_t size, vmpt_unwind_map_fn map_at, void *ctx,
		   uint64_t *ips, size_t max)
{
	struct unwind *u = &uw->cur;

	if (!max)
		return 0;
	for (int fresh = 0; fresh < 2; fresh++) {
		Dwfl *dwfl;

		*u = (struct unwind){
			.regs = regs, .stack = stack, .size = size, .map_at = map_at,
			.ctx = ctx, .ips = ips, .max = max,
		};
		dwfl = session_of(uw, pid, fresh);
		if (!dwfl || u->stale)
			continue;
		dwfl_getthread_frames(dwfl, dwfl_pid(dwfl), frame, u);
		if (!u->stale)
			break;
	}
	if (u->stale)
		u->n = u->zeros = 0;
	/* A return address of zeros ends libdwfl's stack; perf's libunwind
	 * takes it for one more frame, at 0 less one.
	 */
	if (u->zeros && u->n && u->n < max)
		ips[u->n++] = (uint64_t)0 - 1;
	/* The sampled ip at least, as perf prints it with no CFI at all. */
	if (!u->n)
		ips[u->n++] = regs[VMPT_UNWIND_IP];
	return u->n;
}
