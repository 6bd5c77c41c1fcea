/* SPDX-License-Identifier: MIT */
/* Decoded basic blocks, cached per (section, address, mode): straight-line
 * instructions ending at the first branch.  Internal to the flow decoder.
 *
 * One cache (struct vmpt_bcache, declared in vmpt/flow.h) serves every
 * decoder of an image, on any number of threads: a block is published once
 * with an atomic pointer and never changes after, so readers take no lock
 * and nothing is decoded twice.  Each decoder brings its own memory
 * arena (struct vmpt_bdisasm) for the blocks it misses; instructions are
 * decoded by vmpt_insn.c.
 */
#ifndef VMPT_BLOCK_CACHE_H
#define VMPT_BLOCK_CACHE_H

#include "vmpt/flow.h"
#include "vmpt/image.h"

#include <stdatomic.h>
#include <stdint.h>

struct vmpt_block {
	uint64_t ip;		/* first instruction */
	uint64_t end_ip;	/* last instruction */
	uint64_t next_ip;	/* after the last instruction */
	uint64_t target;	/* direct JMP/CALL/JCC target */
	const struct vmpt_section *sec;
	uint8_t *isize;		/* ninsn instruction sizes */
	uint32_t ninsn;
	uint8_t iclass;		/* enum vmpt_iclass of the last instruction */
	uint8_t mode;		/* enum vmpt_exec_mode */
	uint8_t zero_call;	/* a call to the next instruction (reads IP) */
	struct vmpt_block *hnext;	/* set before the block is published */
	/* The blocks of the same section seen after this one (fall-through,
	 * branch), so a walk rarely hashes.  Within a section the block at an
	 * address does not depend on the address space, so any thread may
	 * set them; they only ever point at published blocks.
	 */
	_Atomic(struct vmpt_block *) succ[2];
};

struct vmpt_bdisasm;

/* A decoder's block maker for bc (its own arena).
 * NULL: no memory.
 */
struct vmpt_bdisasm *vmpt_bdisasm_new(struct vmpt_bcache *bc);
void vmpt_bdisasm_free(struct vmpt_bdisasm *d);

/* The block at ip in mode in section sec, decoding it on first use.
 * Returns 0, -VMPT_ERR_NO_IMAGE (no code at ip), -VMPT_ERR_NO_MATCH (the
 * bytes at ip are no instruction) or -VMPT_ERR_NOMEM.
 */
int vmpt_bcache_get(struct vmpt_bdisasm *d, const struct vmpt_image *img,
		    const struct vmpt_section *sec, const struct vmpt_asid *asid,
		    uint64_t ip, unsigned mode, struct vmpt_block **out);

#endif
