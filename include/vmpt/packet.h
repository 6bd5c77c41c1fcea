/* SPDX-License-Identifier: MIT */
/* Intel PT packets (Intel SDM Vol. 3C, "Intel Processor Trace"): decoding,
 * encoding, last-IP reconstruction and a stream decoder with PSB sync.
 */
#ifndef VMPT_PACKET_H
#define VMPT_PACKET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vmpt_pkt_type {
	VMPT_PKT_PAD,
	VMPT_PKT_PSB,
	VMPT_PKT_PSBEND,
	VMPT_PKT_TNT8,
	VMPT_PKT_TNT64,
	VMPT_PKT_TIP,
	VMPT_PKT_TIP_PGE,
	VMPT_PKT_TIP_PGD,
	VMPT_PKT_FUP,
	VMPT_PKT_MODE_EXEC,
	VMPT_PKT_MODE_TSX,
	VMPT_PKT_PIP,
	VMPT_PKT_VMCS,
	VMPT_PKT_TSC,
	VMPT_PKT_MTC,
	VMPT_PKT_TMA,
	VMPT_PKT_CYC,
	VMPT_PKT_CBR,
	VMPT_PKT_OVF,
	VMPT_PKT_STOP,
	VMPT_PKT_MNT,
	VMPT_PKT_EXSTOP,
	VMPT_PKT_MWAIT,
	VMPT_PKT_PWRE,
	VMPT_PKT_PWRX,
	VMPT_PKT_PTW,
	VMPT_PKT_CFE,
	VMPT_PKT_EVD,
	VMPT_PKT_BBP,
	VMPT_PKT_BIP,
	VMPT_PKT_BEP,
	VMPT_PKT_TYPE_COUNT
};

/* IP compression of TIP/TIP.PGE/TIP.PGD/FUP: the IPBytes field. */
enum vmpt_ipc {
	VMPT_IPC_SUPPRESSED = 0,
	VMPT_IPC_UPDATE_16 = 1,
	VMPT_IPC_UPDATE_32 = 2,
	VMPT_IPC_SEXT_48 = 3,
	VMPT_IPC_UPDATE_48 = 4,
	VMPT_IPC_FULL = 6,
};

/* Block-packet context: a BIP header only means BIP after a BBP. */
enum vmpt_pkt_ctx {
	VMPT_CTX_NONE = 0,
	VMPT_CTX_BLK4,		/* BBP.SZ=1: 4-byte BIP payloads */
	VMPT_CTX_BLK8,		/* BBP.SZ=0: 8-byte BIP payloads */
};

struct vmpt_packet {
	uint8_t type;		/* enum vmpt_pkt_type */
	uint8_t size;		/* bytes in the stream */
	union {
		/* TNT-8/TNT-64: count bits, the oldest branch in bit count-1. */
		struct { uint64_t bits; uint8_t count; } tnt;
		/* TIP, TIP.PGE, TIP.PGD, FUP: the payload bytes as in the
		 * stream (see vmpt_last_ip_update for the full IP). */
		struct { uint64_t ip; uint8_t ipc; } ip;
		struct { uint8_t csl, csd, iflag; } exec;
		struct { uint8_t intx, abrt; } tsx;
		struct { uint64_t cr3; uint8_t nr; } pip;
		uint64_t vmcs;		/* VMCS base address */
		uint64_t tsc;		/* 56-bit TSC */
		uint8_t mtc;		/* CTC[N+7:N] */
		struct { uint16_t ctc; uint16_t fc; } tma;
		uint64_t cyc;		/* cycles since the last CYC */
		uint8_t cbr;		/* core:bus ratio */
		uint64_t mnt;
		struct { uint8_t ip; } exstop;
		struct { uint32_t hints, ext; } mwait;
		struct { uint8_t state, sub_state, hw; } pwre;
		/* wake: bit 0 interrupt, bit 2 store, bit 3 autonomous */
		struct { uint8_t last, deepest, wake; } pwrx;
		struct { uint64_t payload; uint8_t plc, ip; } ptw;
		struct { uint8_t type, vector, ip; } cfe;
		struct { uint64_t payload; uint8_t type; } evd;
		struct { uint8_t sz, type; } bbp;
		struct { uint64_t value; uint8_t id; } bip;
		struct { uint8_t ip; } bep;
	};
};

/* Longest packet (PSB). */
#define VMPT_PKT_MAX_SIZE 16

/* Decode the packet at pos (end bounds the buffer).  Returns its size, or
 * -VMPT_ERR_BAD_OPC / -VMPT_ERR_BAD_PACKET / -VMPT_ERR_TRUNCATED /
 * -VMPT_ERR_EOS (pos == end).  ctx is the block context (enum vmpt_pkt_ctx).
 */
int vmpt_pkt_decode(const uint8_t *pos, const uint8_t *end, unsigned ctx,
		    struct vmpt_packet *pkt);

/* The block context after pkt (BBP opens one, most packets close it). */
unsigned vmpt_pkt_next_ctx(unsigned ctx, const struct vmpt_packet *pkt);

/* Encode pkt into buf (cap bytes); returns the size or a negative error.
 * pkt->size is ignored except for BIP, where it says 5 or 9 bytes (as the
 * BBP before it does).
 */
int vmpt_pkt_encode(uint8_t *buf, size_t cap, const struct vmpt_packet *pkt);

/* The packet's name as libipt's ptdump prints it ("tnt.8", "tip.pge"...). */
const char *vmpt_pkt_name(unsigned type);

/* Look a name up; returns the type or -VMPT_ERR_NOT_FOUND. */
int vmpt_pkt_type_from_name(const char *name);

/* Format the payload the way ptdump does ("3: 00007fffe4a0b1c0", "!!.",
 * "cs.l").  Returns the length written (snprintf-like, NUL-terminated).
 */
int vmpt_pkt_format_payload(char *buf, size_t cap, const struct vmpt_packet *pkt);

/* Is this an IP-carrying packet (TIP, TIP.PGE, TIP.PGD, FUP)? */
static inline int vmpt_pkt_has_ip(unsigned type)
{
	return type == VMPT_PKT_TIP || type == VMPT_PKT_TIP_PGE ||
	       type == VMPT_PKT_TIP_PGD || type == VMPT_PKT_FUP;
}

/* The last-IP register the hardware compresses IPs against. */
struct vmpt_last_ip {
	uint64_t ip;
	uint8_t have_ip;
	uint8_t suppressed;
};

void vmpt_last_ip_init(struct vmpt_last_ip *lip);

/* Apply an IP packet.  Returns 0 or -VMPT_ERR_BAD_PACKET for a reserved
 * IPBytes value.
 */
int vmpt_last_ip_update(struct vmpt_last_ip *lip, const struct vmpt_packet *pkt);

/* The current IP: 0, -VMPT_ERR_IP_SUPPRESSED or -VMPT_ERR_NO_LAST_IP. */
int vmpt_last_ip_query(const struct vmpt_last_ip *lip, uint64_t *ip);

/* Pick the shortest compression the hardware would use for ip given the
 * last IP (for encoders and the synthesizer).
 */
enum vmpt_ipc vmpt_last_ip_compress(const struct vmpt_last_ip *lip, uint64_t ip,
				    uint64_t *payload);

/* A trace in parts: a queue's consecutive buffers, one stream of packets
 * (a packet cut at a part's end goes on in the next).
 */
struct vmpt_pkt_part {
	const uint8_t *begin, *end;
};

/* A stream decoder: walks packets of one buffer, or of a trace in parts,
 * with sync to PSBs.  Offsets count from the stream's first byte.
 */
struct vmpt_pkt_decoder {
	/* The bytes at hand: a part, or the seam (the last bytes of a part
	 * and the first of the next, copied together); base is the stream
	 * offset of begin.  Packets at limit and on are read after moving
	 * on (vmpt_pkt_next does): the seam, or the next part.
	 */
	const uint8_t *begin, *end, *pos, *limit;
	uint64_t base;
	uint64_t sync;		/* offset of the PSB we last synced to, or UINT64_MAX */
	unsigned ctx;		/* enum vmpt_pkt_ctx */
	/* In parts (n_parts 0: one buffer): the part at hand (the one the
	 * seam's first bytes are of), and its offset.
	 */
	const struct vmpt_pkt_part *parts;
	size_t n_parts, part;
	uint64_t part_base;
	uint8_t seam[2 * VMPT_PKT_MAX_SIZE];
};

void vmpt_pkt_decoder_init(struct vmpt_pkt_decoder *dec, const uint8_t *buf,
			   size_t size);
/* The same over n parts (kept by the caller). */
void vmpt_pkt_decoder_init_parts(struct vmpt_pkt_decoder *dec,
				 const struct vmpt_pkt_part *parts, size_t n);

/* Go on past limit: to the seam or the next part (inline callers that
 * read dec->pos themselves call it when pos >= limit).
 */
void vmpt_pkt_move_on(struct vmpt_pkt_decoder *dec);

/* Move to the next PSB at or after the current position (past the one we
 * are synced to).  Returns 0 or -VMPT_ERR_EOS when there is none.
 */
int vmpt_pkt_sync_forward(struct vmpt_pkt_decoder *dec);

/* Move to an offset without syncing (the caller knows it is a packet start);
 * 0, or -VMPT_ERR_INVAL past the end.
 */
int vmpt_pkt_seek(struct vmpt_pkt_decoder *dec, uint64_t offset);

/* Decode the packet at the current position and step past it.  Returns the
 * packet size, or a negative error with the position left on the bad packet.
 */
int vmpt_pkt_next(struct vmpt_pkt_decoder *dec, struct vmpt_packet *pkt);

static inline uint64_t vmpt_pkt_offset(const struct vmpt_pkt_decoder *dec)
{
	return dec->base + (uint64_t)(dec->pos - dec->begin);
}

/* Find the first PSB at or after pos; NULL if none. */
const uint8_t *vmpt_pkt_find_psb(const uint8_t *pos, const uint8_t *end);

#ifdef __cplusplus
}
#endif

#endif
