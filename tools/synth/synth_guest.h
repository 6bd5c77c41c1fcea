/* SPDX-License-Identifier: MIT */
/* A real guest recording (what vmpt guest collects: docs/guest.md) as the
 * guest the VM scenario runs: its sideband says which task runs on which
 * guest CPU when, and where its binaries are mapped; its kcore_dir holds
 * the kernel's text and kallsyms; its root/ the binaries.
 */
#ifndef VMPT_SYNTH_GUEST_H
#define VMPT_SYNTH_GUEST_H

#include "synth_walk.h"

/* An executable mapping of a guest process, valid in [from, to) host TSC. */
struct gmap {
	uint64_t from, to;
	uint64_t start, len, pgoff;
	char *path;			/* as the guest named it */
	struct synth_image *img;	/* loaded on first use; NULL: no code */
	struct synth_insn_cache *cache;
	int tried;
};

struct gcomm {
	uint64_t from;			/* host TSC */
	char comm[64];
};

/* A guest thread: its names and, while off its vCPU, where it resumes. */
struct gtask {
	uint32_t pid, tid;
	struct gcomm *comms;
	size_t n_comms;
	int started;
	int user;			/* resumes in ring 3 */
	uint64_t ip;
	uint64_t user_ret;		/* in a system call: where SYSRET goes */
	uint64_t kexit_at;		/* ... and when the kernel goes back */
	struct stack ustack, kstack;
};

/* The non-idle task on a guest CPU in [from, to) host TSC. */
struct gslice {
	uint64_t from, to;
	struct gtask *task;
};

struct synth_grec {
	char *dir;			/* the guest directory */
	struct vmpt_perf_time_conv_synth {
		uint64_t shift, mult, zero;
	} tc;
	int64_t offset[SYNTH_MAX_VCPUS];	/* guest TSC = host TSC + offset */
	struct synth_image kernel;
	uint64_t k_syscall, k_sysret;	/* entry_SYSCALL_64, its SYSRET way */
	struct gtask **tasks;
	size_t n_tasks;
	struct gmap *maps;		/* all processes' (pid in maps_pid) */
	uint32_t *maps_pid;
	size_t n_maps;
	struct gslice *slices[SYNTH_MAX_VCPUS];
	size_t n_slices[SYNTH_MAX_VCPUS];
	unsigned n_cpus;
	unsigned guest_cpus;		/* CPUs its switch records name */
	uint64_t first_exec;		/* host TSC of the first exec seen */
	uint64_t slice_insns;		/* mean guest instructions per slice */
	uint64_t time_mult, time_shift;	/* the guest's TSC rate, for the host */
};

/* Read DIR (a recording holding guest/, or the guest directory itself).
 * offsets[i] is vCPU i's TSC offset.  Errors name the file in err. */
int synth_grec_open(struct synth_grec *g, const char *dir,
		    const int64_t *offsets, unsigned n_vcpus, char *err,
		    size_t errlen);
void synth_grec_close(struct synth_grec *g);

/* The slice of vCPU n at host TSC t (NULL: the guest CPU is idle), or the
 * next one after t in *next (NULL: none). */
const struct gslice *synth_grec_slice(const struct synth_grec *g, unsigned n,
				      uint64_t t, const struct gslice **next);

/* Host TSC of guest perf time ns on vCPU n. */
uint64_t synth_grec_host_tsc(const struct synth_grec *g, unsigned n, uint64_t ns);

/* The instruction at ip in task's address space at host TSC t. */
const struct synth_insn *synth_grec_insn(struct synth_grec *g,
					 const struct gtask *task, uint64_t t,
					 uint64_t ip);

/* The code bytes at ip in task's address space at t, or NULL. */
const uint8_t *synth_grec_code(struct synth_grec *g, const struct gtask *task,
			       uint64_t t, uint64_t ip, size_t *avail);

/* A function entry of the task's code at t (of the image holding ip when
 * asked, else any), for indirect branches; 0 when it has none. */
uint64_t synth_grec_random_func(struct synth_grec *g, const struct gtask *task,
				uint64_t t, uint64_t ip, uint64_t rnd);

/* The process's CR3 as the model gives it (PIP): kernel threads share one. */
uint64_t synth_grec_cr3(const struct synth_grec *g, const struct gtask *task,
			uint64_t t);

/* The walk's side (synth_walk.c calls them): before a VM entry, what the
 * guest CPU runs (0) or until when the vCPU thread sleeps (1, in
 * c->block_until); at the entry, that task's state; whether the exiting
 * instruction at c->ip in guest user space is CPUID. */
int synth_grec_wait(struct cpu *c);
void synth_grec_enter(struct cpu *c, struct synth_vcpu *v);
int synth_grec_user_cpuid(struct cpu *c);

/* One line of PREFIX.gtruth for the instruction at ip. */
void synth_grec_truth(struct synth_grec *g, FILE *f, const struct cpu *c,
		      uint64_t ip);

/* Copy the guest directory (regular files and directories) to dst. */
int synth_grec_copy(const struct synth_grec *g, const char *dst, char *err,
		    size_t errlen);

#endif
