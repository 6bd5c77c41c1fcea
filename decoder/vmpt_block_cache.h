/* SPDX-License-Identifier: MIT */
/* Decoded basic blocks, cached per (section, address, mode): straight-line
 * instructions ending at the first branch.  Internal to the flow decoder.
 */
#ifndef VMPT_BLOCK_CACHE_H
#define VMPT_BLOCK_CACHE_H

#include "vmpt/flow.h"
#include "vmpt/image.h"

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
	struct vmpt_block *hnext;
	/* The blocks last seen after this one (fall-through, branch), valid
	 * while the decoder's address space generation is succ_gen: most
	 * blocks have one or two successors, so a walk rarely hashes.
	 */
	const struct vmpt_block *succ[2];
	uint64_t succ_gen;
};

struct vmpt_bcache;

struct vmpt_bcache *vmpt_bcache_new(void);
void vmpt_bcache_free(struct vmpt_bcache *bc);

/* The block at ip in mode, decoding it on first use.  Returns 0,
 * -VMPT_ERR_NO_IMAGE (no code at ip) or -VMPT_ERR_NO_MATCH (the bytes at
 * ip are no instruction).
 */
int vmpt_bcache_get(struct vmpt_bcache *bc, const struct vmpt_image *img,
		    const struct vmpt_section *sec, const struct vmpt_asid *asid,
		    uint64_t ip, unsigned mode, struct vmpt_block **out);

#endif
