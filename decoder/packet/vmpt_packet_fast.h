/* SPDX-License-Identifier: MIT */
/* The decoder's fast path (internal to decoder/): most packets of a real
 * trace (PAD, TNT-8, TIP/FUP, short CYC, MTC, TSC) are fully described by
 * their first byte, so one table lookup and one unaligned 8-byte load
 * decode them, with one (predicted) branch for the one-byte packets.
 */
#ifndef VMPT_PACKET_FAST_H
#define VMPT_PACKET_FAST_H

#include "vmpt/packet.h"

#include <stddef.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the fast path stores payloads as little-endian words");

/* One 32-bit word per opcode byte: type, size (0: not a fast packet, take
 * the full decoder), TNT bit count or IPBytes, and the payload bits encoded
 * in the opcode itself (TNT-8 bits, one-byte CYC value: at most 6 bits).
 * Multi-byte packets take the bytes after the opcode, size - 1 of them.
 */
#define VMPT_PKT_FAST(type, size, aux, bits) \
	((uint32_t)(type) | (uint32_t)(size) << 8 | (uint32_t)(aux) << 16 | \
	 (uint32_t)(bits) << 24)

_Static_assert(offsetof(struct vmpt_packet, size) ==
	       offsetof(struct vmpt_packet, type) + 1,
	       "type and size are stored together");

/* Bytes the fast path may read from pos on (opcode + an 8-byte load). */
#define VMPT_PKT_FAST_READ 9

extern uint32_t vmpt_pkt_fast_table[256];

/* Decode a fast packet outside of a block context with at least
 * VMPT_PKT_FAST_READ bytes left.  Returns its size, or 0 if the byte at pos
 * needs the full decoder.  Every fast packet type keeps its payload in a
 * 64-bit first member and its count/ipc in the byte after it (the common
 * initial sequence of the tnt and ip structs; tsc, cyc and mtc alias the
 * first word), so one store pattern fits them all.
 */
static inline int vmpt_pkt_decode_fast(const uint8_t *pos, struct vmpt_packet *pkt)
{
	uint32_t e = vmpt_pkt_fast_table[pos[0]];
	uint16_t type_size = (uint16_t)e;
	unsigned size = (e >> 8) & 0xff;
	uint64_t word;

	memcpy((uint8_t *)pkt + offsetof(struct vmpt_packet, type), &type_size, 2);
	pkt->tnt.count = (uint8_t)(e >> 16);
	/* A separate, predicted branch for the one-byte packets (PAD, TNT-8,
	 * short CYC): the next position then does not wait for the table. */
	if (__builtin_expect(size == 1, 1)) {
		pkt->tnt.bits = e >> 24;
		return 1;
	}
	memcpy(&word, pos + 1, sizeof(word));
	pkt->tnt.bits = word & (~0ull >> ((72 - 8 * size) & 63));
	return (int)size;
}

#endif
