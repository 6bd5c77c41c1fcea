/* SPDX-License-Identifier: MIT */
/* Memoized TNT runs.  Internal to the flow decoder.
 *
 * Traced code loops, so the walk from a block with the same TNT bits
 * pending comes again and again, and it always takes the same blocks: a
 * conditional branch takes the next bit, a direct one no trace.  A run is
 * that walk recorded once, up to the branch that takes its last bit,
 * while it stays in the first block's section (where the code at an
 * address does not depend on the address space); played back, it gives
 * the same items without following links or dispatching on each block.
 */
#ifndef VMPT_TNT_MEMO_H
#define VMPT_TNT_MEMO_H

#include "vmpt_block_cache.h"

#include <stdint.h>

/* Blocks in one run at most (a TNT-64 packet's bits take several runs). */
#define VMPT_RUN_MAX 32
/* Runs played back to back, each taking all the bits of one TNT-8 packet
 * (only PADs between them), are kept as a chain of this many packets and
 * played back as one run: a loop's packets come back in the same order.
 */
#define VMPT_CHAIN_PKTS 6
_Static_assert(9 * VMPT_CHAIN_PKTS <= 63, "a chain's key holds 9 bits a packet");

struct vmpt_run_step {
	struct vmpt_block *block;
	uint8_t bit;			/* takes a TNT bit (a conditional branch) */
	uint8_t push;			/* a call: pushes block->next_ip */
};

/* The items are contiguous so that a run is handed out as one array
 * (vmpt_flow_next_items); their time, offset and cycle count are set at
 * playback (the count is 0 but at the first bit, the only place a count
 * can be new).
 */
struct vmpt_run {
	const struct vmpt_block *first;
	uint64_t key;			/* vmpt_tnt_key() of the bits pending */
	uint32_t nsteps;
	uint32_t ninsn;			/* of all steps */
	uint32_t nbits;			/* steps that take a TNT bit (>= 1, the last) */
	uint32_t first_bit;		/* the first of them */
	uint32_t pushes;		/* steps that push a return address */
	/* A chain: the packets it takes and the first step of each one's
	 * run (a run: 1 and 0).
	 */
	uint32_t npkts;
	uint32_t seg[VMPT_CHAIN_PKTS];
	/* A run a chain was kept from: worth looking for one where it plays. */
	uint32_t chain_head;
	struct vmpt_run_step *step;	/* nsteps, after the items */
	struct vmpt_flow_item item[];
};

/* The TNT bits pending as a key: their count above the bits. */
static inline uint64_t vmpt_tnt_key(uint64_t bits, unsigned n)
{
	return (bits & ((1ull << n) - 1)) | (uint64_t)n << 56;
}

/* A chain's key: the bits of each packet (the first one's pending) with
 * their count, 9 bits a packet; the top bit keeps it apart from a run's.
 */
static inline uint64_t vmpt_chain_key_add(uint64_t key, unsigned k, uint64_t bits,
					  unsigned n)
{
	return key | ((bits & ((1ull << n) - 1)) | (uint64_t)n << 6) << (9 * k) |
	       1ull << 63;
}

struct vmpt_tnt_memo;

/* One memo per decoder (no locks); NULL: no memory. */
struct vmpt_tnt_memo *vmpt_tnt_memo_new(void);
void vmpt_tnt_memo_free(struct vmpt_tnt_memo *m);

/* The run recorded from first with key pending, or NULL (also while the
 * memo rests because it hit too rarely).
 */
struct vmpt_run *vmpt_tnt_memo_find(struct vmpt_tnt_memo *m,
				    const struct vmpt_block *first, uint64_t key);

/* Start recording the run from first (NULL: not yet, it was not seen
 * before): steps and items are appended to the returned scratch run
 * (nsteps < VMPT_RUN_MAX), which stays valid until the next start or
 * commit.
 */
struct vmpt_run *vmpt_tnt_memo_start(struct vmpt_tnt_memo *m,
				     const struct vmpt_block *first,
				     uint64_t key);

/* Keep the scratch run (it replaces whatever ran in its slot).  Without
 * memory it is just not kept.
 */
void vmpt_tnt_memo_commit(struct vmpt_tnt_memo *m);

/* The chain kept from first under key, or NULL; a miss does not count
 * against the memo (see vmpt_tnt_memo_find).
 */
struct vmpt_run *vmpt_tnt_memo_find_chain(struct vmpt_tnt_memo *m,
					  const struct vmpt_block *first,
					  uint64_t key);

/* runs[0..n-1], played back to back, as one chain under key, kept the
 * second time it is offered (runs[0] becomes a chain head); not when it
 * would replace one of them (the last one's items are being handed out).
 */
void vmpt_tnt_memo_chain(struct vmpt_tnt_memo *m, struct vmpt_run *const runs[],
			 unsigned n, uint64_t key);

#endif
