/* SPDX-License-Identifier: MIT */
/* The packet layer against the Intel SDM (Vol. 3C, "Intel Processor Trace",
 * Packet Definitions): one test per packet type with the byte layouts of the
 * SDM's tables, their malformed and truncated variants, last-IP
 * reconstruction, PSB sync, block context, the encoder and the dump text.
 */
#include "vmpt/dump.h"
#include "vmpt/error.h"
#include "vmpt/packet.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Decode bytes[0..len) on its own and again followed by filler, so both the
 * bounds-checked path and the table fast path (which wants a few bytes of
 * slack) are exercised; the two must agree.
 */
static int decode_ctx(const uint8_t *bytes, size_t len, unsigned ctx,
		      struct vmpt_packet *pkt)
{
	uint8_t exact[64], padded[64 + 16];
	struct vmpt_packet other;
	int n, m;

	assert_true(len <= 64);
	memcpy(exact, bytes, len);
	memcpy(padded, bytes, len);
	memset(padded + len, 0x00, 16);
	memset(pkt, 0xa5, sizeof(*pkt));
	n = vmpt_pkt_decode(exact, exact + len, ctx, pkt);
	memset(&other, 0x5a, sizeof(other));
	m = vmpt_pkt_decode(padded, padded + len + 16, ctx, &other);
	if (n > 0) {
		char a[96], b[96];

		assert_int_equal(m, n);
		assert_int_equal(other.type, pkt->type);
		assert_int_equal(other.size, n);
		assert_int_equal(pkt->size, n);
		vmpt_pkt_format_payload(a, sizeof(a), pkt);
		vmpt_pkt_format_payload(b, sizeof(b), &other);
		assert_string_equal(a, b);
	} else if (n != -VMPT_ERR_TRUNCATED) {
		assert_int_equal(m, n);	/* more bytes cannot fix a bad packet */
	}
	return n;
}

static int decode(const uint8_t *bytes, size_t len, struct vmpt_packet *pkt)
{
	return decode_ctx(bytes, len, VMPT_CTX_NONE, pkt);
}

/* Every proper prefix of a packet is truncated. */
static void assert_prefixes_truncated(const uint8_t *bytes, size_t len)
{
	struct vmpt_packet pkt;

	for (size_t i = 1; i < len; i++)
		assert_int_equal(vmpt_pkt_decode(bytes, bytes + i, VMPT_CTX_NONE, &pkt),
				 -VMPT_ERR_TRUNCATED);
}

static void assert_payload(const struct vmpt_packet *pkt, const char *text)
{
	char buf[96];

	vmpt_pkt_format_payload(buf, sizeof(buf), pkt);
	assert_string_equal(buf, text);
}

#define DECODE(pkt, ...) do {						\
	static const uint8_t b_[] = { __VA_ARGS__ };			\
	assert_int_equal(decode(b_, sizeof(b_), (pkt)), (int)sizeof(b_)); \
	assert_prefixes_truncated(b_, sizeof(b_));			\
} while (0)

#define DECODE_ERR(err, ...) do {					\
	static const uint8_t b_[] = { __VA_ARGS__ };			\
	struct vmpt_packet p_;						\
	assert_int_equal(decode(b_, sizeof(b_), &p_), (err));		\
} while (0)

static void test_pad(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x00);
	assert_int_equal(pkt.type, VMPT_PKT_PAD);
	assert_string_equal(vmpt_pkt_name(pkt.type), "pad");
	assert_int_equal(vmpt_pkt_decode(NULL, NULL, VMPT_CTX_NONE, &pkt),
			 -VMPT_ERR_EOS);
}

static void test_psb(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
	       0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82);
	assert_int_equal(pkt.type, VMPT_PKT_PSB);
	/* One wrong byte anywhere in the pattern. */
	DECODE_ERR(-VMPT_ERR_BAD_PACKET, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
		   0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x83);
	DECODE_ERR(-VMPT_ERR_BAD_PACKET, 0x02, 0x82, 0x02, 0x82, 0x82, 0x02,
		   0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82);
}

static void test_psbend_ovf_stop(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x02, 0x23);
	assert_int_equal(pkt.type, VMPT_PKT_PSBEND);
	DECODE(&pkt, 0x02, 0xf3);
	assert_int_equal(pkt.type, VMPT_PKT_OVF);
	DECODE(&pkt, 0x02, 0x83);
	assert_int_equal(pkt.type, VMPT_PKT_STOP);
	assert_string_equal(vmpt_pkt_name(pkt.type), "stop");
	/* An extended opcode the SDM does not define; a lone 0x02. */
	DECODE_ERR(-VMPT_ERR_BAD_OPC, 0x02, 0x04);
	DECODE_ERR(-VMPT_ERR_BAD_OPC, 0x02, 0xff);
	DECODE_ERR(-VMPT_ERR_BAD_OPC, 0x02, 0x00);
	DECODE_ERR(-VMPT_ERR_TRUNCATED, 0x02);
}

/* TNT-8: 1 to 6 bits below the stop bit; B1 (the oldest) right under it. */
static void test_tnt8(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x4c);	/* 0 1 0 0 1 1 0 0: stop, N N T T N, 0 */
	assert_int_equal(pkt.type, VMPT_PKT_TNT8);
	assert_int_equal(pkt.tnt.count, 5);
	assert_int_equal(pkt.tnt.bits, 0x06);
	assert_payload(&pkt, "..!!.");
	DECODE(&pkt, 0x04);
	assert_int_equal(pkt.tnt.count, 1);
	assert_payload(&pkt, ".");
	DECODE(&pkt, 0x06);
	assert_int_equal(pkt.tnt.count, 1);
	assert_payload(&pkt, "!");
	DECODE(&pkt, 0xfe);
	assert_int_equal(pkt.tnt.count, 6);
	assert_int_equal(pkt.tnt.bits, 0x3f);
	assert_payload(&pkt, "!!!!!!");
	DECODE(&pkt, 0x82);	/* stop at bit 7, B1 = 0 ... B6 = 1 */
	assert_int_equal(pkt.tnt.count, 6);
	assert_payload(&pkt, ".....!");
	/* Every even byte but 0x00 (PAD) and 0x02 (extended) is a TNT-8
	 * whose bit count is the stop bit's position - 1. */
	for (unsigned b = 4; b < 256; b += 2) {
		uint8_t byte = (uint8_t)b;

		assert_int_equal(decode(&byte, 1, &pkt), 1);
		assert_int_equal(pkt.type, VMPT_PKT_TNT8);
		assert_int_equal(1u << (pkt.tnt.count + 1), b & (1u << (pkt.tnt.count + 1)));
		assert_true(b < (2u << (pkt.tnt.count + 1)));
		assert_int_equal(pkt.tnt.bits, (b >> 1) & ((1u << pkt.tnt.count) - 1));
	}
}

static void test_tnt64(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x02, 0xa3, 0x05, 0x01, 0x00, 0x00, 0x00, 0x00);
	assert_int_equal(pkt.type, VMPT_PKT_TNT64);
	assert_int_equal(pkt.tnt.count, 8);
	assert_int_equal(pkt.tnt.bits, 0x05);
	assert_payload(&pkt, ".....!.!");
	/* Stop bit at payload bit 47: 47 taken branches. */
	DECODE(&pkt, 0x02, 0xa3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
	assert_int_equal(pkt.tnt.count, 47);
	assert_int_equal(pkt.tnt.bits, 0x7fffffffffffull);
	/* The oldest bit is the highest: B1 taken, B2..B20 not. */
	DECODE(&pkt, 0x02, 0xa3, 0x00, 0x00, 0x18, 0x00, 0x00, 0x00);
	assert_int_equal(pkt.tnt.count, 20);
	assert_payload(&pkt, "!...................");
	/* No stop bit, or a stop bit with no branch before it. */
	DECODE_ERR(-VMPT_ERR_BAD_PACKET, 0x02, 0xa3, 0, 0, 0, 0, 0, 0);
	DECODE_ERR(-VMPT_ERR_BAD_PACKET, 0x02, 0xa3, 1, 0, 0, 0, 0, 0);
}

/* TIP, TIP.PGE, TIP.PGD and FUP share the layout: IPBytes in bits 7:5. */
static void check_ip_packet(uint8_t opcode, unsigned type)
{
	static const uint8_t payload[8] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 };
	static const struct { unsigned ipc, bytes; uint64_t ip; const char *text; } c[] = {
		{ 0, 0, 0, "0: ????????????????" },
		{ 1, 2, 0x2211, "1: ????????????2211" },
		{ 2, 4, 0x44332211, "2: ????????44332211" },
		{ 3, 6, 0x665544332211ull, "3: 0000665544332211" },
		{ 4, 6, 0x665544332211ull, "4: ????665544332211" },
		{ 6, 8, 0x8877665544332211ull, "6: 8877665544332211" },
	};
	uint8_t bytes[9];
	struct vmpt_packet pkt;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		bytes[0] = (uint8_t)(opcode | c[i].ipc << 5);
		memcpy(bytes + 1, payload, 8);
		assert_int_equal(decode(bytes, 1 + c[i].bytes, &pkt), 1 + (int)c[i].bytes);
		assert_int_equal(pkt.type, type);
		assert_int_equal(pkt.ip.ipc, c[i].ipc);
		assert_int_equal(pkt.ip.ip, c[i].ip);
		assert_payload(&pkt, c[i].text);
		assert_prefixes_truncated(bytes, 1 + c[i].bytes);
		assert_true(vmpt_pkt_has_ip(pkt.type));
	}
	/* IPBytes 101b and 111b are reserved. */
	for (unsigned ipc = 5; ipc <= 7; ipc += 2) {
		bytes[0] = (uint8_t)(opcode | ipc << 5);
		assert_int_equal(decode(bytes, 9, &pkt), -VMPT_ERR_BAD_PACKET);
	}
	/* Sign extension of a negative 48-bit payload. */
	bytes[0] = (uint8_t)(opcode | 3 << 5);
	memcpy(bytes + 1, (const uint8_t[]){ 0x00, 0x10, 0x00, 0x00, 0x00, 0x80 }, 6);
	assert_int_equal(decode(bytes, 7, &pkt), 7);
	assert_payload(&pkt, "3: ffff800000001000");
}

static void test_tip(void **state)
{
	(void)state;
	check_ip_packet(0x0d, VMPT_PKT_TIP);
}

static void test_tip_pge(void **state)
{
	(void)state;
	check_ip_packet(0x11, VMPT_PKT_TIP_PGE);
}

static void test_tip_pgd(void **state)
{
	(void)state;
	check_ip_packet(0x01, VMPT_PKT_TIP_PGD);
}

static void test_fup(void **state)
{
	(void)state;
	check_ip_packet(0x1d, VMPT_PKT_FUP);
}

/* Apply an IP packet given as bytes; return the query result. */
static int apply(struct vmpt_last_ip *lip, const uint8_t *bytes, size_t len,
		 uint64_t *ip)
{
	struct vmpt_packet pkt;

	assert_int_equal(decode(bytes, len, &pkt), (int)len);
	assert_int_equal(vmpt_last_ip_update(lip, &pkt), 0);
	return vmpt_last_ip_query(lip, ip);
}

#define APPLY(lip, ip, ...) \
	apply((lip), (const uint8_t[]){ __VA_ARGS__ }, \
	      sizeof((const uint8_t[]){ __VA_ARGS__ }), (ip))

static void test_last_ip(void **state)
{
	struct vmpt_last_ip lip;
	struct vmpt_packet pkt = { .type = VMPT_PKT_TIP };
	uint64_t ip = 0;

	(void)state;
	vmpt_last_ip_init(&lip);
	assert_int_equal(vmpt_last_ip_query(&lip, &ip), -VMPT_ERR_NO_LAST_IP);
	/* 110b: full 64-bit IP. */
	assert_int_equal(APPLY(&lip, &ip, 0xdd, 0x78, 0x56, 0x34, 0x12, 0xff, 0x7f, 0, 0), 0);
	assert_int_equal(ip, 0x00007fff12345678ull);
	/* 001b: IP[15:0] from the packet, the rest from the last IP. */
	assert_int_equal(APPLY(&lip, &ip, 0x2d, 0xcd, 0xab), 0);
	assert_int_equal(ip, 0x00007fff1234abcdull);
	/* 010b: IP[31:0]. */
	assert_int_equal(APPLY(&lip, &ip, 0x4d, 0xf0, 0xde, 0xbc, 0x9a), 0);
	assert_int_equal(ip, 0x00007fff9abcdef0ull);
	/* 011b: IP[47:0] sign-extended. */
	assert_int_equal(APPLY(&lip, &ip, 0x6d, 0x00, 0x10, 0x00, 0x00, 0x00, 0x80), 0);
	assert_int_equal(ip, 0xffff800000001000ull);
	/* 100b: IP[47:0], IP[63:48] from the last IP (here ffff). */
	assert_int_equal(APPLY(&lip, &ip, 0x8d, 0x00, 0x20, 0x00, 0x00, 0xff, 0x7f), 0);
	assert_int_equal(ip, 0xffff7fff00002000ull);
	/* 000b: suppressed; the last IP stays for the next compression. */
	assert_int_equal(APPLY(&lip, &ip, 0x0d), -VMPT_ERR_IP_SUPPRESSED);
	assert_int_equal(APPLY(&lip, &ip, 0x2d, 0x11, 0x11), 0);
	assert_int_equal(ip, 0xffff7fff00001111ull);
	/* 101b, 111b: reserved, the register is left alone. */
	pkt.ip.ipc = 5;
	assert_int_equal(vmpt_last_ip_update(&lip, &pkt), -VMPT_ERR_BAD_PACKET);
	pkt.ip.ipc = 7;
	assert_int_equal(vmpt_last_ip_update(&lip, &pkt), -VMPT_ERR_BAD_PACKET);
	assert_int_equal(vmpt_last_ip_query(&lip, &ip), 0);
	assert_int_equal(ip, 0xffff7fff00001111ull);
	/* After a reset (PSB) compression is against zero, as in libipt. */
	vmpt_last_ip_init(&lip);
	assert_int_equal(APPLY(&lip, &ip, 0x2d, 0x34, 0x12), 0);
	assert_int_equal(ip, 0x1234);
	/* A suppressed IP before any other. */
	vmpt_last_ip_init(&lip);
	assert_int_equal(APPLY(&lip, &ip, 0x01), -VMPT_ERR_IP_SUPPRESSED);
}

static void test_last_ip_compress(void **state)
{
	static const uint64_t ips[] = {
		0x401000, 0x401234, 0x7fff12345678ull, 0x7fff9abcdef0ull,
		0xffffffff81000000ull, 0xffff800000001000ull, 0x0000800000000000ull,
		0x1234567812345678ull, 0, 0xffffffffffffffffull,
	};
	struct vmpt_last_ip enc, dec;

	(void)state;
	vmpt_last_ip_init(&enc);
	vmpt_last_ip_init(&dec);
	for (size_t i = 0; i < sizeof(ips) / sizeof(ips[0]); i++) {
		struct vmpt_packet pkt = { .type = VMPT_PKT_FUP };
		uint64_t ip;

		pkt.ip.ipc = (uint8_t)vmpt_last_ip_compress(&enc, ips[i], &pkt.ip.ip);
		assert_int_equal(vmpt_last_ip_update(&enc, &pkt), 0);
		assert_int_equal(vmpt_last_ip_update(&dec, &pkt), 0);
		assert_int_equal(vmpt_last_ip_query(&dec, &ip), 0);
		assert_int_equal(ip, ips[i]);
	}
	/* The shortest form is picked. */
	{
		uint64_t payload;

		assert_int_equal(vmpt_last_ip_compress(&enc, 0xfffffffffffffff0ull, &payload),
				 VMPT_IPC_UPDATE_16);
		assert_int_equal(payload, 0xfff0);
	}
}

static void test_mode(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x99, 0x01);
	assert_int_equal(pkt.type, VMPT_PKT_MODE_EXEC);
	assert_int_equal(pkt.exec.csl, 1);
	assert_int_equal(pkt.exec.csd, 0);
	assert_payload(&pkt, "cs.l");
	DECODE(&pkt, 0x99, 0x02);
	assert_payload(&pkt, "cs.d");
	DECODE(&pkt, 0x99, 0x00);
	assert_payload(&pkt, "");
	DECODE(&pkt, 0x99, 0x07);
	assert_int_equal(pkt.exec.iflag, 1);
	assert_payload(&pkt, "cs.d, cs.l, if");
	DECODE(&pkt, 0x99, 0x20);
	assert_int_equal(pkt.type, VMPT_PKT_MODE_TSX);
	assert_int_equal(pkt.tsx.intx, 0);
	assert_int_equal(pkt.tsx.abrt, 0);
	DECODE(&pkt, 0x99, 0x21);
	assert_payload(&pkt, "intx");
	DECODE(&pkt, 0x99, 0x22);
	assert_int_equal(pkt.tsx.abrt, 1);
	assert_payload(&pkt, "abrt");
	/* Leaves 2..7 are not defined. */
	for (unsigned leaf = 2; leaf < 8; leaf++) {
		uint8_t b[2] = { 0x99, (uint8_t)(leaf << 5) };

		assert_int_equal(decode(b, 2, &pkt), -VMPT_ERR_BAD_PACKET);
	}
}

static void test_pip(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	/* From the KVM-PT recording dyn_test/sample_raw_0 (offset 0x2ff6). */
	DECODE(&pkt, 0x02, 0x43, 0x01, 0x2c, 0xfa, 0x01, 0x00, 0x00);
	assert_int_equal(pkt.type, VMPT_PKT_PIP);
	assert_int_equal(pkt.pip.nr, 1);
	assert_int_equal(pkt.pip.cr3, 0x1fa2c000);
	assert_payload(&pkt, "1fa2c000, nr");
	/* CR3[51:5] in payload bits 47:1. */
	DECODE(&pkt, 0x02, 0x43, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff);
	assert_int_equal(pkt.pip.nr, 0);
	assert_int_equal(pkt.pip.cr3, 0x000fffffffffffe0ull);
	assert_payload(&pkt, "fffffffffffe0");
}

static void test_vmcs(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x02, 0xc8, 0x12, 0x34, 0x56, 0x78, 0x9a);
	assert_int_equal(pkt.type, VMPT_PKT_VMCS);
	assert_int_equal(pkt.vmcs, 0x9a78563412000ull);
	assert_payload(&pkt, "9a78563412000");
}

static void test_tsc(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x19, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0xf7);
	assert_int_equal(pkt.type, VMPT_PKT_TSC);
	assert_int_equal(pkt.tsc, 0xf7060504030201ull);
	assert_payload(&pkt, "f7060504030201");
}

static void test_mtc(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x59, 0xa7);
	assert_int_equal(pkt.type, VMPT_PKT_MTC);
	assert_int_equal(pkt.mtc, 0xa7);
	assert_payload(&pkt, "a7");
}

static void test_tma(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	/* CTC[15:0] in bytes 2-3, byte 4 reserved, FastCounter[8:0] in
	 * byte 5 and bit 0 of byte 6. */
	DECODE(&pkt, 0x02, 0x73, 0x34, 0x12, 0x00, 0xff, 0x01);
	assert_int_equal(pkt.type, VMPT_PKT_TMA);
	assert_int_equal(pkt.tma.ctc, 0x1234);
	assert_int_equal(pkt.tma.fc, 0x1ff);
	assert_payload(&pkt, "1234, 1ff");
	DECODE_ERR(-VMPT_ERR_BAD_PACKET, 0x02, 0x73, 0x34, 0x12, 0x01, 0xff, 0x01);
	DECODE_ERR(-VMPT_ERR_BAD_PACKET, 0x02, 0x73, 0x34, 0x12, 0x00, 0xff, 0x02);
}

static void test_cyc(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x03);
	assert_int_equal(pkt.type, VMPT_PKT_CYC);
	assert_int_equal(pkt.cyc, 0);
	DECODE(&pkt, 0xfb);	/* Cyc[4:0] = 11111, Exp = 0 */
	assert_int_equal(pkt.cyc, 0x1f);
	DECODE(&pkt, 0x07, 0x02);	/* Exp, then Cyc[11:5] = 1 */
	assert_int_equal(pkt.cyc, 0x20);
	DECODE(&pkt, 0xff, 0xff, 0x02);	/* 0x1f | 0x7f << 5 | 1 << 12 */
	assert_int_equal(pkt.cyc, 0x1fff);
	assert_payload(&pkt, "1fff");
	/* Nine extension bytes hold 68 bits: a full 64-bit counter. */
	DECODE(&pkt, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0e);
	assert_int_equal(pkt.cyc, 0xffffffffffffffffull);
	/* A tenth one would shift past bit 63. */
	DECODE_ERR(-VMPT_ERR_BAD_PACKET, 0x07, 0x01, 0x01, 0x01, 0x01, 0x01,
		   0x01, 0x01, 0x01, 0x01, 0x00);
}

static void test_cbr(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x02, 0x03, 0x24, 0x00);
	assert_int_equal(pkt.type, VMPT_PKT_CBR);
	assert_int_equal(pkt.cbr, 0x24);
	assert_payload(&pkt, "24");
}

static void test_mnt(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x02, 0xc3, 0x88, 1, 2, 3, 4, 5, 6, 7, 8);
	assert_int_equal(pkt.type, VMPT_PKT_MNT);
	assert_int_equal(pkt.mnt, 0x0807060504030201ull);
	/* 02 c3 is an escape: only 88 after it is defined. */
	DECODE_ERR(-VMPT_ERR_BAD_OPC, 0x02, 0xc3, 0x89, 1, 2, 3, 4, 5, 6, 7, 8);
	DECODE_ERR(-VMPT_ERR_BAD_OPC, 0x02, 0xc3, 0x00);
}

static void test_ptw(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	/* PayloadBytes 00b: 4 bytes. */
	DECODE(&pkt, 0x02, 0x12, 0x78, 0x56, 0x34, 0x12);
	assert_int_equal(pkt.type, VMPT_PKT_PTW);
	assert_int_equal(pkt.ptw.plc, 0);
	assert_int_equal(pkt.ptw.ip, 0);
	assert_int_equal(pkt.ptw.payload, 0x12345678);
	assert_payload(&pkt, "0: 12345678");
	/* 01b: 8 bytes; IP bit 7 says a FUP follows. */
	DECODE(&pkt, 0x02, 0xb2, 1, 2, 3, 4, 5, 6, 7, 8);
	assert_int_equal(pkt.ptw.plc, 1);
	assert_int_equal(pkt.ptw.ip, 1);
	assert_int_equal(pkt.ptw.payload, 0x0807060504030201ull);
	assert_payload(&pkt, "1: 807060504030201, ip");
	/* 10b and 11b are reserved. */
	DECODE_ERR(-VMPT_ERR_BAD_PACKET, 0x02, 0x52, 1, 2, 3, 4, 5, 6, 7, 8);
	DECODE_ERR(-VMPT_ERR_BAD_PACKET, 0x02, 0xf2, 1, 2, 3, 4, 5, 6, 7, 8);
}

static void test_exstop(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x02, 0x62);
	assert_int_equal(pkt.type, VMPT_PKT_EXSTOP);
	assert_int_equal(pkt.exstop.ip, 0);
	DECODE(&pkt, 0x02, 0xe2);
	assert_int_equal(pkt.exstop.ip, 1);
	assert_payload(&pkt, "ip");
}

/* MWAIT: Hints[7:0] in byte 2, EXT[1:0] in byte 6, the rest reserved; like
 * libipt the two 32-bit words are kept whole. */
static void test_mwait(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x02, 0xc2, 0x60, 0, 0, 0, 0x01, 0, 0, 0);
	assert_int_equal(pkt.type, VMPT_PKT_MWAIT);
	assert_int_equal(pkt.mwait.hints, 0x60);
	assert_int_equal(pkt.mwait.ext, 0x1);
	assert_payload(&pkt, "00000060, 00000001");
}

/* PWRE: HW in bit 7 of byte 2 (libipt 2.0.5 reads bit 3: see
 * test_libipt_roundtrip.c); resolved C-state and sub C-state in byte 3. */
static void test_pwre(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x02, 0x22, 0x80, 0x21);
	assert_int_equal(pkt.type, VMPT_PKT_PWRE);
	assert_int_equal(pkt.pwre.hw, 1);
	assert_int_equal(pkt.pwre.state, 2);
	assert_int_equal(pkt.pwre.sub_state, 1);
	assert_payload(&pkt, "c3.2, hw");
	DECODE(&pkt, 0x02, 0x22, 0x08, 0x00);	/* bit 3 is reserved */
	assert_int_equal(pkt.pwre.hw, 0);
	assert_payload(&pkt, "c1.1");
}

/* PWRX: last core C-state in byte 2 bits 7:4, deepest in 3:0, wake reason
 * in byte 3 bits 3:0 (interrupt 1, store 4, autonomous 8). */
static void test_pwrx(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x02, 0xa2, 0x21, 0x01, 0, 0, 0);
	assert_int_equal(pkt.type, VMPT_PKT_PWRX);
	assert_int_equal(pkt.pwrx.last, 2);
	assert_int_equal(pkt.pwrx.deepest, 1);
	assert_int_equal(pkt.pwrx.wake, 1);
	assert_payload(&pkt, "int: c3, c2");
	DECODE(&pkt, 0x02, 0xa2, 0x66, 0x04, 0, 0, 0);
	assert_payload(&pkt, "st: c7, c7");
	DECODE(&pkt, 0x02, 0xa2, 0x66, 0x08, 0, 0, 0);
	assert_payload(&pkt, "hw: c7, c7");
	/* As ptdump: bit 1 is no reason it knows; none or several is "bad". */
	DECODE(&pkt, 0x02, 0xa2, 0x66, 0x03, 0, 0, 0);
	assert_payload(&pkt, "int: c7, c7");
	DECODE(&pkt, 0x02, 0xa2, 0x66, 0x05, 0, 0, 0);
	assert_payload(&pkt, "bad: c7, c7");
	DECODE(&pkt, 0x02, 0xa2, 0x66, 0x00, 0, 0, 0);
	assert_payload(&pkt, "bad: c7, c7");
}

/* CFE: IP in bit 7 and Type[4:0] of byte 2, Vector in byte 3. */
static void test_cfe(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x02, 0x13, 0x81, 0x0e);
	assert_int_equal(pkt.type, VMPT_PKT_CFE);
	assert_int_equal(pkt.cfe.ip, 1);
	assert_int_equal(pkt.cfe.type, 1);
	assert_int_equal(pkt.cfe.vector, 0x0e);
	assert_payload(&pkt, "1: e, ip");
	DECODE(&pkt, 0x02, 0x13, 0x02, 0x00);
	assert_int_equal(pkt.cfe.ip, 0);
	assert_int_equal(pkt.cfe.type, 2);
}

/* EVD: Type[5:0] in byte 2, Payload[63:0] in bytes 3-10. */
static void test_evd(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x02, 0x53, 0x01, 0x00, 0x10, 0x00, 0x00, 0xff, 0x7f, 0, 0);
	assert_int_equal(pkt.type, VMPT_PKT_EVD);
	assert_int_equal(pkt.evd.type, 1);
	assert_int_equal(pkt.evd.payload, 0x7fff00001000ull);
	assert_payload(&pkt, "1: 7fff00001000");
}

/* BBP: SZ in bit 7 of byte 2 (1: 4-byte BIPs), Type[4:0]; BIP: ID in bits
 * 7:3 and 100b; BEP: IP in bit 7. */
static void test_block_packets(void **state)
{
	struct vmpt_packet pkt;

	(void)state;
	DECODE(&pkt, 0x02, 0x63, 0x81);
	assert_int_equal(pkt.type, VMPT_PKT_BBP);
	assert_int_equal(pkt.bbp.sz, 1);
	assert_int_equal(pkt.bbp.type, 1);
	assert_payload(&pkt, "1, sz4");
	assert_int_equal(vmpt_pkt_next_ctx(VMPT_CTX_NONE, &pkt), VMPT_CTX_BLK4);
	DECODE(&pkt, 0x02, 0x63, 0x02);
	assert_int_equal(pkt.bbp.sz, 0);
	assert_int_equal(vmpt_pkt_next_ctx(VMPT_CTX_NONE, &pkt), VMPT_CTX_BLK8);

	{
		static const uint8_t bip[] = { 0x0c, 1, 2, 3, 4, 5, 6, 7, 8 };

		assert_int_equal(decode_ctx(bip, 5, VMPT_CTX_BLK4, &pkt), 5);
		assert_int_equal(pkt.type, VMPT_PKT_BIP);
		assert_int_equal(pkt.bip.id, 1);
		assert_int_equal(pkt.bip.value, 0x04030201);
		assert_int_equal(decode_ctx(bip, 9, VMPT_CTX_BLK8, &pkt), 9);
		assert_int_equal(pkt.bip.value, 0x0807060504030201ull);
		assert_payload(&pkt, "1: 807060504030201");
		assert_int_equal(decode_ctx(bip, 8, VMPT_CTX_BLK8, &pkt),
				 -VMPT_ERR_TRUNCATED);
		/* Outside a block the same byte is a TNT-8 (N, T... "!."). */
		assert_int_equal(decode_ctx(bip, 9, VMPT_CTX_NONE, &pkt), 1);
		assert_int_equal(pkt.type, VMPT_PKT_TNT8);
		assert_payload(&pkt, "!.");
	}
	DECODE(&pkt, 0x02, 0x33);
	assert_int_equal(pkt.type, VMPT_PKT_BEP);
	assert_int_equal(pkt.bep.ip, 0);
	DECODE(&pkt, 0x02, 0xb3);
	assert_int_equal(pkt.bep.ip, 1);
	assert_int_equal(vmpt_pkt_next_ctx(VMPT_CTX_BLK8, &pkt), VMPT_CTX_NONE);
}

/* The stream decoder tracks the context: BIP only between BBP and the packet
 * that ends the block; timing packets and PAD do not end it. */
static void test_block_context(void **state)
{
	static const uint8_t s[] = {
		0x02, 0x63, 0x81,		/* bbp sz4 */
		0x0c, 1, 2, 3, 4,		/* bip 1 */
		0x00,				/* pad */
		0x59, 0x10,			/* mtc */
		0x14, 5, 6, 7, 8,		/* bip 2 */
		0x02, 0xb3,			/* bep ip */
		0x0c,				/* tnt.8 */
		0x02, 0x63, 0x00,		/* bbp sz8 */
		0x0c, 1, 2, 3, 4, 5, 6, 7, 8,	/* bip 1 (8 bytes) */
		0x06,				/* tnt.8 ends the block */
		0x0c,				/* tnt.8 */
	};
	static const uint8_t types[] = {
		VMPT_PKT_BBP, VMPT_PKT_BIP, VMPT_PKT_PAD, VMPT_PKT_MTC, VMPT_PKT_BIP,
		VMPT_PKT_BEP, VMPT_PKT_TNT8, VMPT_PKT_BBP, VMPT_PKT_BIP, VMPT_PKT_TNT8,
		VMPT_PKT_TNT8,
	};
	struct vmpt_pkt_decoder dec;
	struct vmpt_packet pkt;

	(void)state;
	vmpt_pkt_decoder_init(&dec, s, sizeof(s));
	for (size_t i = 0; i < sizeof(types); i++) {
		assert_true(vmpt_pkt_next(&dec, &pkt) > 0);
		assert_int_equal(pkt.type, types[i]);
	}
	assert_int_equal(vmpt_pkt_next(&dec, &pkt), -VMPT_ERR_EOS);
	/* Seeking drops the context. */
	assert_int_equal(vmpt_pkt_seek(&dec, 3), 0);
	assert_int_equal(vmpt_pkt_next(&dec, &pkt), 1);
	assert_int_equal(pkt.type, VMPT_PKT_TNT8);
	assert_int_equal(vmpt_pkt_seek(&dec, sizeof(s) + 1), -VMPT_ERR_INVAL);
}

static void test_unknown_opcodes(void **state)
{
	struct vmpt_packet pkt;
	unsigned bad = 0;

	(void)state;
	/* 0xc9 is a free opcode (libipt uses it to force a decode fault);
	 * 0xd9 is TRIG in the newest SDM, not decoded here (nor by libipt
	 * 2.0.5 or perf); 0x55 is what KVM-PT appends to some traces. */
	DECODE_ERR(-VMPT_ERR_BAD_OPC, 0xc9);
	DECODE_ERR(-VMPT_ERR_BAD_OPC, 0xd9);
	DECODE_ERR(-VMPT_ERR_BAD_OPC, 0x55);
	/* Odd one-byte opcodes: only the IP packets, CYC, TSC, MTC, MODE. */
	for (unsigned b = 1; b < 256; b += 2) {
		uint8_t bytes[16] = { (uint8_t)b };
		int n = decode(bytes, sizeof(bytes), &pkt);

		if (n == -VMPT_ERR_BAD_OPC)
			bad++;
	}
	/* 128 odd bytes - 64 CYC - 4x6 valid IPBytes (the 4x2 reserved are bad
	 * packets, not bad opcodes) - TSC, MTC, MODE = 37. */
	assert_int_equal(bad, 128 - 64 - 24 - 8 - 3);
}

static void test_extended_opcodes(void **state)
{
	static const uint8_t known[] = {
		0x82, 0x23, 0xf3, 0x83, 0xa3, 0x43, 0xc8, 0x03, 0x73, 0xc3, 0x62,
		0xe2, 0xc2, 0x22, 0xa2, 0x63, 0x33, 0xb3, 0x13, 0x53,
	};
	struct vmpt_packet pkt;

	(void)state;
	/* Every second byte that is not a known extension (or PTW, which
	 * has 0x12 in its low 5 bits) is a bad opcode. */
	for (unsigned op = 0; op < 256; op++) {
		uint8_t bytes[16] = { 0x02, (uint8_t)op, 0x88, 1, 1, 1, 1, 1, 1, 1, 1,
				      1, 1, 1, 1, 1 };
		int n = decode(bytes, sizeof(bytes), &pkt);
		int is_known = memchr(known, op, sizeof(known)) != NULL ||
			       (op & 0x1f) == 0x12;

		if (!is_known)
			assert_int_equal(n, -VMPT_ERR_BAD_OPC);
		else if (op != 0x82 && op != 0xa3 && op != 0x73 &&
			 (op & 0x1f) != 0x12)
			assert_true(n > 0);
	}
}

static const uint8_t psb[16] = {
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
};

/* From every offset, sync lands on the first PSB that starts at or after it. */
static void test_sync_forward(void **state)
{
	uint8_t s[200];
	const size_t psbs[] = { 21, 60, 61 + 16 + 2 + 40 };
	struct vmpt_pkt_decoder dec;
	struct vmpt_packet pkt;

	(void)state;
	memset(s, 0x00, sizeof(s));
	memset(s, 0x55, 21);		/* garbage before the first PSB */
	memcpy(s + psbs[0], psb, 16);
	s[37] = 0x02;			/* psbend */
	s[38] = 0x23;
	/* A FUP whose payload ends in 02 82 right before the next PSB. */
	s[50] = 0xdd;
	memcpy(s + 51, (const uint8_t[]){ 1, 2, 3, 4, 5, 6, 0x02, 0x82 }, 8);
	/* s[59] = pad; PSB at 60, then psbend at 76 */
	memcpy(s + 60, psb, 16);
	s[76] = 0x02;
	s[77] = 0x23;
	memcpy(s + psbs[2], psb, 16);
	s[psbs[2] + 16] = 0x02;
	s[psbs[2] + 17] = 0x23;

	for (size_t off = 0; off <= sizeof(s); off++) {
		size_t want = 0;

		for (size_t i = 0; i < 3 && !want; i++)
			if (psbs[i] >= off)
				want = psbs[i];
		vmpt_pkt_decoder_init(&dec, s, sizeof(s));
		assert_int_equal(vmpt_pkt_seek(&dec, off), 0);
		if (!want) {
			assert_int_equal(vmpt_pkt_sync_forward(&dec), -VMPT_ERR_EOS);
			assert_int_equal(vmpt_pkt_offset(&dec), sizeof(s));
			continue;
		}
		assert_int_equal(vmpt_pkt_sync_forward(&dec), 0);
		assert_int_equal(vmpt_pkt_offset(&dec), want);
		assert_int_equal(vmpt_pkt_next(&dec, &pkt), 16);
		assert_int_equal(pkt.type, VMPT_PKT_PSB);
		assert_int_equal(vmpt_pkt_next(&dec, &pkt), 2);
		assert_int_equal(pkt.type, VMPT_PKT_PSBEND);
	}
	/* The 18-byte run 02 82 x 9 at 58 holds one PSB: its last 16 bytes. */
	assert_ptr_equal(vmpt_pkt_find_psb(s + 40, s + sizeof(s)), s + 60);
	/* Synced on a PSB, sync moves on to the next one. */
	vmpt_pkt_decoder_init(&dec, s, sizeof(s));
	assert_int_equal(vmpt_pkt_sync_forward(&dec), 0);
	assert_int_equal(vmpt_pkt_offset(&dec), 21);
	assert_int_equal(vmpt_pkt_sync_forward(&dec), 0);
	assert_int_equal(vmpt_pkt_offset(&dec), 60);
	/* A PSB cut off by the end is no sync point. */
	assert_null(vmpt_pkt_find_psb(psb, psb + 15));
	assert_ptr_equal(vmpt_pkt_find_psb(psb, psb + 16), psb);
	/* An empty buffer (an empty file maps to NULL, 0) has no PSB; the
	 * sync reports the end instead of searching from NULL + 1.
	 */
	assert_null(vmpt_pkt_find_psb(NULL, NULL));
	assert_null(vmpt_pkt_find_psb(psb + 4, psb));
	vmpt_pkt_decoder_init(&dec, NULL, 0);
	assert_int_equal(vmpt_pkt_sync_forward(&dec), -VMPT_ERR_EOS);
	assert_int_equal(vmpt_pkt_sync_forward(&dec), -VMPT_ERR_EOS);
	assert_int_equal(vmpt_pkt_offset(&dec), 0);
}

/* Fill in type-specific fields from a seed, within each field's range. */
static void make_packet(unsigned type, uint64_t r, struct vmpt_packet *pkt)
{
	memset(pkt, 0, sizeof(*pkt));
	pkt->type = (uint8_t)type;
	switch (type) {
	case VMPT_PKT_TNT8:
		pkt->tnt.count = (uint8_t)(1 + r % 6);
		pkt->tnt.bits = (r >> 8) & ((1u << pkt->tnt.count) - 1);
		break;
	case VMPT_PKT_TNT64:
		pkt->tnt.count = (uint8_t)(1 + r % 47);
		pkt->tnt.bits = (r >> 8) & ((1ull << pkt->tnt.count) - 1);
		break;
	case VMPT_PKT_TIP: case VMPT_PKT_TIP_PGE: case VMPT_PKT_TIP_PGD:
	case VMPT_PKT_FUP: {
		static const uint8_t ipcs[] = { 0, 1, 2, 3, 4, 6 };
		static const uint8_t bits[] = { 0, 16, 32, 48, 48, 64 };
		unsigned i = r % 6;

		pkt->ip.ipc = ipcs[i];
		pkt->ip.ip = bits[i] ? (r * 0x9e3779b97f4a7c15ull) >> (64 - bits[i]) : 0;
		break;
	}
	case VMPT_PKT_MODE_EXEC:
		pkt->exec.csl = r & 1;
		pkt->exec.csd = (r >> 1) & 1;
		pkt->exec.iflag = (r >> 2) & 1;
		break;
	case VMPT_PKT_MODE_TSX:
		pkt->tsx.intx = r & 1;
		pkt->tsx.abrt = (r >> 1) & 1;
		break;
	case VMPT_PKT_PIP:
		pkt->pip.cr3 = (r << 5) & 0x000fffffffffffe0ull;
		pkt->pip.nr = (r >> 60) & 1;
		break;
	case VMPT_PKT_VMCS:
		pkt->vmcs = (r << 12) & 0x000ffffffffff000ull;
		break;
	case VMPT_PKT_TSC:
		pkt->tsc = r & 0x00ffffffffffffffull;
		break;
	case VMPT_PKT_MTC:
		pkt->mtc = (uint8_t)r;
		break;
	case VMPT_PKT_TMA:
		pkt->tma.ctc = (uint16_t)r;
		pkt->tma.fc = (uint16_t)((r >> 16) & 0x1ff);
		break;
	case VMPT_PKT_CYC:
		pkt->cyc = r >> (r % 64);
		break;
	case VMPT_PKT_CBR:
		pkt->cbr = (uint8_t)r;
		break;
	case VMPT_PKT_MNT:
		pkt->mnt = r;
		break;
	case VMPT_PKT_EXSTOP:
		pkt->exstop.ip = r & 1;
		break;
	case VMPT_PKT_MWAIT:
		pkt->mwait.hints = (uint32_t)r;
		pkt->mwait.ext = (uint32_t)(r >> 32);
		break;
	case VMPT_PKT_PWRE:
		pkt->pwre.state = r & 0xf;
		pkt->pwre.sub_state = (r >> 4) & 0xf;
		pkt->pwre.hw = (r >> 8) & 1;
		break;
	case VMPT_PKT_PWRX:
		pkt->pwrx.last = r & 0xf;
		pkt->pwrx.deepest = (r >> 4) & 0xf;
		pkt->pwrx.wake = (r >> 8) & 0xf;
		break;
	case VMPT_PKT_PTW:
		pkt->ptw.plc = r & 1;
		pkt->ptw.ip = (r >> 1) & 1;
		pkt->ptw.payload = pkt->ptw.plc ? r : r >> 32;
		break;
	case VMPT_PKT_CFE:
		pkt->cfe.type = r & 0x1f;
		pkt->cfe.ip = (r >> 5) & 1;
		pkt->cfe.vector = (uint8_t)(r >> 8);
		break;
	case VMPT_PKT_EVD:
		pkt->evd.type = r & 0x3f;
		pkt->evd.payload = r * 31;
		break;
	case VMPT_PKT_BBP:
		pkt->bbp.sz = r & 1;
		pkt->bbp.type = (r >> 1) & 0x1f;
		break;
	case VMPT_PKT_BIP:
		pkt->size = r & 1 ? 5 : 9;
		pkt->bip.id = (r >> 1) & 0x1f;
		pkt->bip.value = pkt->size == 5 ? r >> 32 : r;
		break;
	case VMPT_PKT_BEP:
		pkt->bep.ip = r & 1;
		break;
	}
}

static void assert_same_fields(const struct vmpt_packet *a, const struct vmpt_packet *b)
{
	assert_int_equal(a->type, b->type);
	switch (a->type) {
	case VMPT_PKT_TNT8: case VMPT_PKT_TNT64:
		assert_int_equal(a->tnt.count, b->tnt.count);
		assert_int_equal(a->tnt.bits, b->tnt.bits);
		break;
	case VMPT_PKT_TIP: case VMPT_PKT_TIP_PGE: case VMPT_PKT_TIP_PGD:
	case VMPT_PKT_FUP:
		assert_int_equal(a->ip.ipc, b->ip.ipc);
		assert_int_equal(a->ip.ip, b->ip.ip);
		break;
	case VMPT_PKT_MODE_EXEC:
		assert_int_equal(a->exec.csl, b->exec.csl);
		assert_int_equal(a->exec.csd, b->exec.csd);
		assert_int_equal(a->exec.iflag, b->exec.iflag);
		break;
	case VMPT_PKT_MODE_TSX:
		assert_int_equal(a->tsx.intx, b->tsx.intx);
		assert_int_equal(a->tsx.abrt, b->tsx.abrt);
		break;
	case VMPT_PKT_PIP:
		assert_int_equal(a->pip.cr3, b->pip.cr3);
		assert_int_equal(a->pip.nr, b->pip.nr);
		break;
	case VMPT_PKT_VMCS: assert_int_equal(a->vmcs, b->vmcs); break;
	case VMPT_PKT_TSC: assert_int_equal(a->tsc, b->tsc); break;
	case VMPT_PKT_MTC: assert_int_equal(a->mtc, b->mtc); break;
	case VMPT_PKT_TMA:
		assert_int_equal(a->tma.ctc, b->tma.ctc);
		assert_int_equal(a->tma.fc, b->tma.fc);
		break;
	case VMPT_PKT_CYC: assert_int_equal(a->cyc, b->cyc); break;
	case VMPT_PKT_CBR: assert_int_equal(a->cbr, b->cbr); break;
	case VMPT_PKT_MNT: assert_int_equal(a->mnt, b->mnt); break;
	case VMPT_PKT_EXSTOP: assert_int_equal(a->exstop.ip, b->exstop.ip); break;
	case VMPT_PKT_MWAIT:
		assert_int_equal(a->mwait.hints, b->mwait.hints);
		assert_int_equal(a->mwait.ext, b->mwait.ext);
		break;
	case VMPT_PKT_PWRE:
		assert_int_equal(a->pwre.state, b->pwre.state);
		assert_int_equal(a->pwre.sub_state, b->pwre.sub_state);
		assert_int_equal(a->pwre.hw, b->pwre.hw);
		break;
	case VMPT_PKT_PWRX:
		assert_int_equal(a->pwrx.last, b->pwrx.last);
		assert_int_equal(a->pwrx.deepest, b->pwrx.deepest);
		assert_int_equal(a->pwrx.wake, b->pwrx.wake);
		break;
	case VMPT_PKT_PTW:
		assert_int_equal(a->ptw.plc, b->ptw.plc);
		assert_int_equal(a->ptw.ip, b->ptw.ip);
		assert_int_equal(a->ptw.payload, b->ptw.payload);
		break;
	case VMPT_PKT_CFE:
		assert_int_equal(a->cfe.type, b->cfe.type);
		assert_int_equal(a->cfe.ip, b->cfe.ip);
		assert_int_equal(a->cfe.vector, b->cfe.vector);
		break;
	case VMPT_PKT_EVD:
		assert_int_equal(a->evd.type, b->evd.type);
		assert_int_equal(a->evd.payload, b->evd.payload);
		break;
	case VMPT_PKT_BBP:
		assert_int_equal(a->bbp.sz, b->bbp.sz);
		assert_int_equal(a->bbp.type, b->bbp.type);
		break;
	case VMPT_PKT_BIP:
		assert_int_equal(a->size, b->size);
		assert_int_equal(a->bip.id, b->bip.id);
		assert_int_equal(a->bip.value, b->bip.value);
		break;
	case VMPT_PKT_BEP: assert_int_equal(a->bep.ip, b->bep.ip); break;
	}
}

/* encode -> decode gives the same fields, for every type and many values;
 * decode -> encode gives the same bytes. */
static void test_encode_roundtrip(void **state)
{
	uint64_t r = 0x2545f4914f6cdd1dull;

	(void)state;
	for (unsigned type = 0; type < VMPT_PKT_TYPE_COUNT; type++) {
		for (int i = 0; i < 2000; i++) {
			struct vmpt_packet in, out;
			uint8_t buf[32], again[32];
			unsigned ctx = VMPT_CTX_NONE;
			int n;

			r ^= r << 13;
			r ^= r >> 7;
			r ^= r << 17;
			make_packet(type, r, &in);
			n = vmpt_pkt_encode(buf, sizeof(buf), &in);
			assert_true(n > 0);
			if (type == VMPT_PKT_BIP)
				ctx = in.size == 5 ? VMPT_CTX_BLK4 : VMPT_CTX_BLK8;
			assert_int_equal(decode_ctx(buf, (size_t)n, ctx, &out), n);
			assert_same_fields(&in, &out);
			assert_int_equal(vmpt_pkt_encode(again, sizeof(again), &out), n);
			assert_memory_equal(buf, again, (size_t)n);
			assert_int_equal(vmpt_pkt_encode(buf, (size_t)n - 1, &in),
					 -VMPT_ERR_NOMEM);
		}
	}
}

static void test_encode_invalid(void **state)
{
	struct vmpt_packet pkt = { .type = VMPT_PKT_TNT8 };
	uint8_t buf[32];

	(void)state;
	pkt.tnt.count = 0;
	assert_int_equal(vmpt_pkt_encode(buf, sizeof(buf), &pkt), -VMPT_ERR_INVAL);
	pkt.tnt.count = 7;
	assert_int_equal(vmpt_pkt_encode(buf, sizeof(buf), &pkt), -VMPT_ERR_INVAL);
	pkt.type = VMPT_PKT_TNT64;
	pkt.tnt.count = 0;
	assert_int_equal(vmpt_pkt_encode(buf, sizeof(buf), &pkt), -VMPT_ERR_INVAL);
	pkt.tnt.count = 48;
	assert_int_equal(vmpt_pkt_encode(buf, sizeof(buf), &pkt), -VMPT_ERR_INVAL);
	pkt = (struct vmpt_packet){ .type = VMPT_PKT_TIP, .ip.ipc = 5 };
	assert_int_equal(vmpt_pkt_encode(buf, sizeof(buf), &pkt), -VMPT_ERR_INVAL);
	pkt = (struct vmpt_packet){ .type = VMPT_PKT_PIP, .pip.cr3 = 0x1010 };
	assert_int_equal(vmpt_pkt_encode(buf, sizeof(buf), &pkt), -VMPT_ERR_INVAL);
	pkt = (struct vmpt_packet){ .type = VMPT_PKT_VMCS, .vmcs = 0x1010 };
	assert_int_equal(vmpt_pkt_encode(buf, sizeof(buf), &pkt), -VMPT_ERR_INVAL);
	pkt = (struct vmpt_packet){ .type = VMPT_PKT_PTW, .ptw.plc = 2 };
	assert_int_equal(vmpt_pkt_encode(buf, sizeof(buf), &pkt), -VMPT_ERR_INVAL);
	pkt = (struct vmpt_packet){ .type = VMPT_PKT_BIP, .size = 6 };
	assert_int_equal(vmpt_pkt_encode(buf, sizeof(buf), &pkt), -VMPT_ERR_INVAL);
	pkt = (struct vmpt_packet){ .type = VMPT_PKT_TYPE_COUNT };
	assert_int_equal(vmpt_pkt_encode(buf, sizeof(buf), &pkt), -VMPT_ERR_INVAL);
}

/* A trace in parts decodes as the whole: the same packets at the same
 * offsets, the same PSBs found, however it is cut (packets and PSBs cut
 * in two, parts of a byte, empty parts).
 */
static void test_parts(void **state)
{
	static uint8_t t[6000];
	static uint64_t off[3000], psbs[200];
	static uint8_t type[3000];
	struct vmpt_pkt_part parts[1200];
	size_t len = 0, n = 0, n_psbs = 0;
	uint64_t r = 0x9e3779b97f4a7c15ull;
	struct vmpt_pkt_decoder dec;
	struct vmpt_packet pkt;

	(void)state;
	while (len < sizeof(t) - 64) {
		struct vmpt_packet in;
		unsigned ty;

		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		ty = (unsigned)(r % (VMPT_PKT_TYPE_COUNT + 4));
		/* PSBs often; no block packets (their context is tested apart) */
		if (ty >= VMPT_PKT_TYPE_COUNT)
			ty = VMPT_PKT_PSB;
		if (ty == VMPT_PKT_BBP || ty == VMPT_PKT_BIP || ty == VMPT_PKT_BEP)
			continue;
		make_packet(ty, r, &in);
		len += (size_t)vmpt_pkt_encode(t + len, sizeof(t) - len, &in);
	}
	vmpt_pkt_decoder_init(&dec, t, len);
	while (vmpt_pkt_offset(&dec) < len) {
		off[n] = vmpt_pkt_offset(&dec);
		assert_true(vmpt_pkt_next(&dec, &pkt) > 0);
		type[n++] = pkt.type;
	}
	vmpt_pkt_decoder_init(&dec, t, len);
	while (vmpt_pkt_sync_forward(&dec) == 0)
		psbs[n_psbs++] = vmpt_pkt_offset(&dec);
	assert_true(n_psbs > 20);
	for (unsigned cut = 0; cut < 300; cut++) {
		size_t np = 0, at = 0, k = 0;

		/* Two parts cut at every byte of the first 200, then parts of
		 * 0 to 20 bytes.
		 */
		while (at < len) {
			size_t sz;

			r ^= r << 13;
			r ^= r >> 7;
			r ^= r << 17;
			sz = cut < 200 ? (np ? len - at : cut) : (size_t)(r % 21);
			if (sz > len - at)
				sz = len - at;
			parts[np++] = (struct vmpt_pkt_part){ t + at, t + at + sz };
			at += sz;
		}
		vmpt_pkt_decoder_init_parts(&dec, parts, np);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(vmpt_pkt_offset(&dec), off[i]);
			assert_true(vmpt_pkt_next(&dec, &pkt) > 0);
			assert_int_equal(pkt.type, type[i]);
		}
		assert_int_equal(vmpt_pkt_next(&dec, &pkt), -VMPT_ERR_EOS);
		assert_int_equal(vmpt_pkt_offset(&dec), len);
		vmpt_pkt_decoder_init_parts(&dec, parts, np);
		while (vmpt_pkt_sync_forward(&dec) == 0) {
			assert_true(k < n_psbs);
			assert_int_equal(vmpt_pkt_offset(&dec), psbs[k++]);
			assert_int_equal(vmpt_pkt_next(&dec, &pkt), 16);
			assert_int_equal(pkt.type, VMPT_PKT_PSB);
		}
		assert_int_equal(k, n_psbs);
		/* Seeking back and forth lands on the same packets. */
		for (size_t i = n; i-- > 0; i -= i > 7 ? 7 : i) {
			assert_int_equal(vmpt_pkt_seek(&dec, off[i]), 0);
			assert_true(vmpt_pkt_next(&dec, &pkt) > 0);
			assert_int_equal(pkt.type, type[i]);
		}
		assert_int_equal(vmpt_pkt_seek(&dec, len + 1), -VMPT_ERR_INVAL);
	}
}

static void test_names(void **state)
{
	static const char *const names[VMPT_PKT_TYPE_COUNT] = {
		"pad", "psb", "psbend", "tnt.8", "tnt.64", "tip", "tip.pge", "tip.pgd",
		"fup", "mode.exec", "mode.tsx", "pip", "vmcs", "tsc", "mtc", "tma",
		"cyc", "cbr", "ovf", "stop", "mnt", "exstop", "mwait", "pwre", "pwrx",
		"ptw", "cfe", "evd", "bbp", "bip", "bep",
	};

	(void)state;
	for (unsigned t = 0; t < VMPT_PKT_TYPE_COUNT; t++) {
		assert_string_equal(vmpt_pkt_name(t), names[t]);
		assert_int_equal(vmpt_pkt_type_from_name(names[t]), (int)t);
	}
	assert_string_equal(vmpt_pkt_name(VMPT_PKT_TYPE_COUNT), "<invalid>");
	assert_int_equal(vmpt_pkt_type_from_name("tnt"), -VMPT_ERR_NOT_FOUND);
}

/* The dump of a small stream with every kind of line, byte for byte. */
static void test_dump(void **state)
{
	uint8_t s[64];
	size_t n = 0;
	struct vmpt_dump_opts opts = { 0 };
	struct vmpt_dump_stats stats = { 0 };
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	(void)state;
	s[n++] = 0x55;					/* garbage */
	memcpy(s + n, psb, 16), n += 16;		/* 0x01 psb */
	memcpy(s + n, (const uint8_t[]){ 0x99, 0x01 }, 2), n += 2;	/* 0x11 */
	memcpy(s + n, (const uint8_t[]){ 0xdd, 0x00, 0x10, 0x40, 0, 0, 0, 0, 0 }, 9), n += 9;
	memcpy(s + n, (const uint8_t[]){ 0x02, 0x23 }, 2), n += 2;	/* 0x1c */
	s[n++] = 0x00;					/* 0x1e pad */
	s[n++] = 0x4c;					/* 0x1f tnt */
	memcpy(s + n, (const uint8_t[]){ 0x2d, 0x30, 0x12 }, 3), n += 3;	/* 0x20 */
	s[n++] = 0x0d;					/* 0x23 tip suppressed */
	s[n++] = 0xc9;					/* 0x24 bad opcode */
	memcpy(s + n, psb, 16), n += 16;		/* 0x25 psb */
	memcpy(s + n, (const uint8_t[]){ 0x19, 1, 2 }, 3), n += 3;	/* 0x35 truncated tsc */

	out = open_memstream(&text, &len);
	assert_non_null(out);
	assert_int_equal(vmpt_dump_stream(out, s, n, 0x1000, &opts, &stats), 0);
	fclose(out);
	assert_string_equal(text,
		"[0000000000001000: skipped 1 bytes to the next psb]\n"
		"0000000000001001  psb\n"
		"0000000000001011  mode.exec cs.l\n"
		"0000000000001013  fup       6: 0000000000401000  ip=0000000000401000\n"
		"000000000000101c  psbend\n"
		"000000000000101e  pad\n"
		"000000000000101f  tnt.8     ..!!.\n"
		"0000000000001020  tip       1: ????????????1230  ip=0000000000401230\n"
		"0000000000001023  tip       0: ????????????????  ip=<suppressed>\n"
		"[0000000000001024: error: unknown packet opcode (byte 0xc9)]\n"
		"[0000000000001024: skipped 1 bytes to the next psb]\n"
		"0000000000001025  psb\n"
		"[0000000000001035: error: packet truncated at end of buffer]\n"
		"[0000000000001035: skipped 3 bytes to the next psb]\n");
	free(text);
	assert_int_equal(stats.errors, 2);
	assert_int_equal(stats.count[VMPT_PKT_PSB], 2);
	assert_int_equal(stats.count[VMPT_PKT_TIP], 2);
	assert_int_equal(stats.bytes_skipped, 2 + 3);

	out = open_memstream(&text, &len);
	assert_non_null(out);
	assert_int_equal(vmpt_dump_print_stats(out, &stats), 0);
	fclose(out);
	assert_string_equal(text,
		"pad 1\npsb 2\npsbend 1\ntnt.8 1\ntip 2\nfup 1\nmode.exec 1\nerrors 2\n");
	free(text);

	/* --no-pad --lastip, from offset 0 without sync. */
	memset(&stats, 0, sizeof(stats));
	opts.no_pad = 1;
	opts.lastip = 1;
	opts.no_sync = 1;
	out = open_memstream(&text, &len);
	assert_non_null(out);
	assert_int_equal(vmpt_dump_stream(out, s + 1, 0x23, 0, &opts, &stats), 0);
	fclose(out);
	assert_string_equal(text,
		"0000000000000000  psb  lastip=<unknown>\n"
		"0000000000000010  mode.exec cs.l  lastip=<unknown>\n"
		"0000000000000012  fup       6: 0000000000401000  lastip=0000000000401000\n"
		"000000000000001b  psbend  lastip=0000000000401000\n"
		"000000000000001e  tnt.8     ..!!.  lastip=0000000000401000\n"
		"000000000000001f  tip       1: ????????????1230  lastip=0000000000401230\n"
		"0000000000000022  tip       0: ????????????????  lastip=<suppressed>\n");
	free(text);
	assert_int_equal(stats.count[VMPT_PKT_PAD], 1);	/* counted, not listed */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pad),
		cmocka_unit_test(test_psb),
		cmocka_unit_test(test_psbend_ovf_stop),
		cmocka_unit_test(test_tnt8),
		cmocka_unit_test(test_tnt64),
		cmocka_unit_test(test_tip),
		cmocka_unit_test(test_tip_pge),
		cmocka_unit_test(test_tip_pgd),
		cmocka_unit_test(test_fup),
		cmocka_unit_test(test_last_ip),
		cmocka_unit_test(test_last_ip_compress),
		cmocka_unit_test(test_mode),
		cmocka_unit_test(test_pip),
		cmocka_unit_test(test_vmcs),
		cmocka_unit_test(test_tsc),
		cmocka_unit_test(test_mtc),
		cmocka_unit_test(test_tma),
		cmocka_unit_test(test_cyc),
		cmocka_unit_test(test_cbr),
		cmocka_unit_test(test_mnt),
		cmocka_unit_test(test_ptw),
		cmocka_unit_test(test_exstop),
		cmocka_unit_test(test_mwait),
		cmocka_unit_test(test_pwre),
		cmocka_unit_test(test_pwrx),
		cmocka_unit_test(test_cfe),
		cmocka_unit_test(test_evd),
		cmocka_unit_test(test_block_packets),
		cmocka_unit_test(test_block_context),
		cmocka_unit_test(test_unknown_opcodes),
		cmocka_unit_test(test_extended_opcodes),
		cmocka_unit_test(test_sync_forward),
		cmocka_unit_test(test_encode_roundtrip),
		cmocka_unit_test(test_encode_invalid),
		cmocka_unit_test(test_parts),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_dump),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
