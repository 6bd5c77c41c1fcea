/* SPDX-License-Identifier: MIT */
/* An exec in the user scenario (--exec): after so many branches the
 * traced program's next system call is an execve, and the new program
 * runs at the same addresses.  With only user space traced the system
 * call leaves the trace (TIP.PGD, IP suppressed, as any other) and the
 * new program enters it (TIP.PGE at its entry).  A dynamically linked
 * program has no SYSCALL of its own: it calls libc's execve, mapped
 * beside it.
 */
#include "synth_walk.h"

/* The program's next system call is its execve. */
int synth_exec_due(const struct cpu *c)
{
	return c->cfg->exec && !c->execed && c->ctx == CTX_USER &&
	       c->st->branches >= c->cfg->exec_after;
}

/* Ring 3 code at ip: the program (the exec's after the exec), or libc. */
struct synth_image *synth_exec_user_image(const struct cpu *c, uint64_t ip)
{
	struct synth_image *lib = c->cfg->libc;

	if (c->execed)
		return c->cfg->exec;
	return lib && ip >= lib->lo && ip < lib->hi ? lib : c->cfg->user;
}

/* libc's execve, where a dynamically linked program about to exec calls
 * (0: not now, or the program has no libc). */
uint64_t synth_exec_call(const struct cpu *c)
{
	if (!synth_exec_due(c) || !c->cfg->libc)
		return 0;
	return synth_image_symbol(c->cfg->libc, "execve", NULL);
}

/* The kernel, not traced, replaces the program; user space resumes at the
 * new one's entry with a stack of its own.  The interpreter (ld.so) is
 * not modelled.  An exec takes hundreds of microseconds (here about 1M
 * ticks): a decoder knows which program's code it walks only from the
 * timing packets (MTC) of that gap, which put the exec's COMM and MMAP2
 * records between the two programs.
 */
void synth_exec_run(struct cpu *c)
{
	c->cfg->exec_syscall_tsc = c->pt->tsc;
	synth_cpu_untraced(c, 1000000);
	c->execed = 1;
	c->cache_user = c->cache_exec;
	c->ustack.n = 0;
	c->ip = c->cfg->exec->entry;
	c->cfg->exec_start_tsc = c->pt->tsc;
	synth_truth_exec(c->truth, c->cfg->exec->path);
	synth_cpu_enable(c, 0);
}
