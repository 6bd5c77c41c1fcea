/* SPDX-License-Identifier: MIT */
/* vmpt against libipt, an independent implementation of the same SDM
 * tables: random packet sequences encoded by libipt (pt_enc_next) and
 * decoded by vmpt must give every field back, and sequences encoded by vmpt
 * must decode in libipt (pt_pkt_next) to the same fields.  Deterministic:
 * fixed seeds.
 *
 * Where libipt 2.0.5 and the SDM part, vmpt follows the SDM and the test
 * pins the difference down:
 * - PWRE: the SDM puts HW in bit 7 of byte 2; libipt reads and writes bit 3
 *   (pt_pl_pwre_hw_mask = 0x8), a reserved bit.
 * - CYC: a 64-bit cycle count needs 9 extension bytes (5 + 9 * 7 >= 64);
 *   libipt's encoder writes them but its decoder rejects more than 8.
 * - MODE.Exec IF (bit 2) and CFE/EVD/BBP/BIP/BEP are newer than 2.0.5.
 */
#include "pkt_lockstep.h"
#include "vmpt/error.h"
#include "vmpt/packet.h"

#include <intel-pt.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define SEEDS 300
#define PACKETS_PER_SEED 400
#define BUF_SIZE (PACKETS_PER_SEED * 16)

static uint64_t next_rand(uint64_t *r)
{
	*r ^= *r << 13;
	*r ^= *r >> 7;
	*r ^= *r << 17;
	return *r;
}

/* A random value of a random width, so short and long encodings occur. */
static uint64_t rand_bits(uint64_t *r)
{
	uint64_t v = next_rand(r);

	return v >> (next_rand(r) % 64);
}

static const enum pt_packet_type ipt_types[] = {
	ppt_pad, ppt_psb, ppt_psbend, ppt_fup, ppt_tip, ppt_tip_pge, ppt_tip_pgd,
	ppt_tnt_8, ppt_tnt_64, ppt_mode, ppt_pip, ppt_vmcs, ppt_cbr, ppt_tsc,
	ppt_tma, ppt_mtc, ppt_cyc, ppt_stop, ppt_ovf, ppt_mnt, ppt_exstop,
	ppt_mwait, ppt_pwre, ppt_pwrx, ppt_ptw,
};
#define N_IPT_TYPES (sizeof(ipt_types) / sizeof(ipt_types[0]))

static void make_ipt_packet(uint64_t *r, struct pt_packet *pkt)
{
	static const enum pt_ip_compression ipcs[] = {
		pt_ipc_suppressed, pt_ipc_update_16, pt_ipc_update_32,
		pt_ipc_sext_48, pt_ipc_update_48, pt_ipc_full,
	};
	static const unsigned ip_bits[] = { 0, 16, 32, 48, 48, 64 };
	uint64_t v = next_rand(r);
	unsigned i;

	memset(pkt, 0, sizeof(*pkt));
	pkt->type = ipt_types[next_rand(r) % N_IPT_TYPES];
	switch (pkt->type) {
	case ppt_fup: case ppt_tip: case ppt_tip_pge: case ppt_tip_pgd:
		i = (unsigned)(v % 6);
		pkt->payload.ip.ipc = ipcs[i];
		pkt->payload.ip.ip = ip_bits[i] ? next_rand(r) >> (64 - ip_bits[i]) : 0;
		break;
	case ppt_tnt_8:
		pkt->payload.tnt.bit_size = (uint8_t)(1 + v % 6);
		pkt->payload.tnt.payload = (v >> 8) & ((1u << pkt->payload.tnt.bit_size) - 1);
		break;
	case ppt_tnt_64:
		pkt->payload.tnt.bit_size = (uint8_t)(1 + v % 47);
		pkt->payload.tnt.payload = (v >> 8) &
					   ((1ull << pkt->payload.tnt.bit_size) - 1);
		break;
	case ppt_mode:
		if (v & 1) {
			pkt->payload.mode.leaf = pt_mol_tsx;
			pkt->payload.mode.bits.tsx.intx = (v >> 1) & 1;
			pkt->payload.mode.bits.tsx.abrt = (v >> 2) & 1;
		} else {
			pkt->payload.mode.leaf = pt_mol_exec;
			pkt->payload.mode.bits.exec.csl = (v >> 1) & 1;
			pkt->payload.mode.bits.exec.csd = (v >> 2) & 1;
		}
		break;
	case ppt_pip:
		pkt->payload.pip.cr3 = (v << 5) & 0x000fffffffffffe0ull;
		pkt->payload.pip.nr = (v >> 63) & 1;
		break;
	case ppt_vmcs:
		pkt->payload.vmcs.base = (v << 12) & 0x000ffffffffff000ull;
		break;
	case ppt_cbr:
		pkt->payload.cbr.ratio = (uint8_t)v;
		break;
	case ppt_tsc:
		pkt->payload.tsc.tsc = v >> 8;
		break;
	case ppt_tma:
		pkt->payload.tma.ctc = (uint16_t)v;
		pkt->payload.tma.fc = (uint16_t)((v >> 16) & 0x1ff);
		break;
	case ppt_mtc:
		pkt->payload.mtc.ctc = (uint8_t)v;
		break;
	case ppt_cyc:
		pkt->payload.cyc.value = rand_bits(r);
		break;
	case ppt_mnt:
		pkt->payload.mnt.payload = v;
		break;
	case ppt_exstop:
		pkt->payload.exstop.ip = v & 1;
		break;
	case ppt_mwait:
		pkt->payload.mwait.hints = (uint32_t)v;
		pkt->payload.mwait.ext = (uint32_t)(v >> 32);
		break;
	case ppt_pwre:
		pkt->payload.pwre.state = v & 0xf;
		pkt->payload.pwre.sub_state = (v >> 4) & 0xf;
		pkt->payload.pwre.hw = (v >> 8) & 1;
		break;
	case ppt_pwrx:
		pkt->payload.pwrx.last = v & 0xf;
		pkt->payload.pwrx.deepest = (v >> 4) & 0xf;
		pkt->payload.pwrx.interrupt = (v >> 8) & 1;
		pkt->payload.pwrx.store = (v >> 9) & 1;
		pkt->payload.pwrx.autonomous = (v >> 10) & 1;
		break;
	case ppt_ptw:
		pkt->payload.ptw.plc = v & 1;
		pkt->payload.ptw.ip = (v >> 1) & 1;
		pkt->payload.ptw.payload = pkt->payload.ptw.plc ? next_rand(r) : v >> 32;
		break;
	default:
		break;
	}
}

/* The vmpt type libipt's packet should decode to. */
static unsigned vmpt_type_of(const struct pt_packet *pkt)
{
	switch (pkt->type) {
	case ppt_pad: return VMPT_PKT_PAD;
	case ppt_psb: return VMPT_PKT_PSB;
	case ppt_psbend: return VMPT_PKT_PSBEND;
	case ppt_fup: return VMPT_PKT_FUP;
	case ppt_tip: return VMPT_PKT_TIP;
	case ppt_tip_pge: return VMPT_PKT_TIP_PGE;
	case ppt_tip_pgd: return VMPT_PKT_TIP_PGD;
	case ppt_tnt_8: return VMPT_PKT_TNT8;
	case ppt_tnt_64: return VMPT_PKT_TNT64;
	case ppt_mode:
		return pkt->payload.mode.leaf == pt_mol_tsx ? VMPT_PKT_MODE_TSX :
							       VMPT_PKT_MODE_EXEC;
	case ppt_pip: return VMPT_PKT_PIP;
	case ppt_vmcs: return VMPT_PKT_VMCS;
	case ppt_cbr: return VMPT_PKT_CBR;
	case ppt_tsc: return VMPT_PKT_TSC;
	case ppt_tma: return VMPT_PKT_TMA;
	case ppt_mtc: return VMPT_PKT_MTC;
	case ppt_cyc: return VMPT_PKT_CYC;
	case ppt_stop: return VMPT_PKT_STOP;
	case ppt_ovf: return VMPT_PKT_OVF;
	case ppt_mnt: return VMPT_PKT_MNT;
	case ppt_exstop: return VMPT_PKT_EXSTOP;
	case ppt_mwait: return VMPT_PKT_MWAIT;
	case ppt_pwre: return VMPT_PKT_PWRE;
	case ppt_pwrx: return VMPT_PKT_PWRX;
	case ppt_ptw: return VMPT_PKT_PTW;
	default: return VMPT_PKT_TYPE_COUNT;
	}
}

/* Every field libipt has must equal vmpt's.  raw is the packet's bytes. */
static void assert_same(const struct pt_packet *ipt, const struct vmpt_packet *v,
			const uint8_t *raw)
{
	const struct pt_packet_mode_exec *exec = &ipt->payload.mode.bits.exec;
	const struct pt_packet_mode_tsx *tsx = &ipt->payload.mode.bits.tsx;

	assert_int_equal(v->type, vmpt_type_of(ipt));
	assert_int_equal(v->size, ipt->size);
	switch (ipt->type) {
	case ppt_fup: case ppt_tip: case ppt_tip_pge: case ppt_tip_pgd:
		assert_int_equal(v->ip.ipc, ipt->payload.ip.ipc);
		assert_int_equal(v->ip.ip, ipt->payload.ip.ip);
		break;
	case ppt_tnt_8: case ppt_tnt_64:
		assert_int_equal(v->tnt.count, ipt->payload.tnt.bit_size);
		assert_int_equal(v->tnt.bits, ipt->payload.tnt.payload);
		break;
	case ppt_mode:
		if (ipt->payload.mode.leaf == pt_mol_exec) {
			assert_int_equal(v->exec.csl, exec->csl);
			assert_int_equal(v->exec.csd, exec->csd);
		} else {
			assert_int_equal(v->tsx.intx, tsx->intx);
			assert_int_equal(v->tsx.abrt, tsx->abrt);
		}
		break;
	case ppt_pip:
		assert_int_equal(v->pip.cr3, ipt->payload.pip.cr3);
		assert_int_equal(v->pip.nr, ipt->payload.pip.nr);
		break;
	case ppt_vmcs: assert_int_equal(v->vmcs, ipt->payload.vmcs.base); break;
	case ppt_cbr: assert_int_equal(v->cbr, ipt->payload.cbr.ratio); break;
	case ppt_tsc: assert_int_equal(v->tsc, ipt->payload.tsc.tsc); break;
	case ppt_tma:
		assert_int_equal(v->tma.ctc, ipt->payload.tma.ctc);
		assert_int_equal(v->tma.fc, ipt->payload.tma.fc);
		break;
	case ppt_mtc: assert_int_equal(v->mtc, ipt->payload.mtc.ctc); break;
	case ppt_cyc: assert_int_equal(v->cyc, ipt->payload.cyc.value); break;
	case ppt_mnt: assert_int_equal(v->mnt, ipt->payload.mnt.payload); break;
	case ppt_exstop: assert_int_equal(v->exstop.ip, ipt->payload.exstop.ip); break;
	case ppt_mwait:
		assert_int_equal(v->mwait.hints, ipt->payload.mwait.hints);
		assert_int_equal(v->mwait.ext, ipt->payload.mwait.ext);
		break;
	case ppt_pwre:
		assert_int_equal(v->pwre.state, ipt->payload.pwre.state);
		assert_int_equal(v->pwre.sub_state, ipt->payload.pwre.sub_state);
		/* libipt's HW is bit 3 of byte 2, the SDM's bit 7. */
		assert_int_equal(raw[2] >> 3 & 1, ipt->payload.pwre.hw);
		assert_int_equal(v->pwre.hw, raw[2] >> 7);
		break;
	case ppt_pwrx:
		assert_int_equal(v->pwrx.last, ipt->payload.pwrx.last);
		assert_int_equal(v->pwrx.deepest, ipt->payload.pwrx.deepest);
		assert_int_equal(v->pwrx.wake & 0xd, ipt->payload.pwrx.interrupt |
			       ipt->payload.pwrx.store << 2 |
			       ipt->payload.pwrx.autonomous << 3);
		break;
	case ppt_ptw:
		assert_int_equal(v->ptw.plc, ipt->payload.ptw.plc);
		assert_int_equal(v->ptw.ip, ipt->payload.ptw.ip);
		assert_int_equal(v->ptw.payload, ipt->payload.ptw.payload);
		break;
	default:
		break;
	}
}

/* libipt encodes, vmpt decodes. */
static void test_libipt_to_vmpt(void **state)
{
	static uint8_t buf[BUF_SIZE];
	static struct pt_packet sent[PACKETS_PER_SEED];
	static uint64_t offsets[PACKETS_PER_SEED];
	unsigned seen[N_IPT_TYPES] = { 0 };

	(void)state;
	for (uint64_t seed = 1; seed <= SEEDS; seed++) {
		uint64_t r = seed * 0x9e3779b97f4a7c15ull;
		struct pt_encoder *enc;
		struct vmpt_pkt_decoder dec;
		struct pt_config cfg;
		uint64_t end;

		pt_config_init(&cfg);
		cfg.begin = buf;
		cfg.end = buf + sizeof(buf);
		enc = pt_alloc_encoder(&cfg);
		assert_non_null(enc);
		for (int i = 0; i < PACKETS_PER_SEED; i++) {
			int n;

			make_ipt_packet(&r, &sent[i]);
			assert_int_equal(pt_enc_get_offset(enc, &offsets[i]), 0);
			n = pt_enc_next(enc, &sent[i]);
			assert_true(n > 0);
			sent[i].size = (uint8_t)n;
		}
		assert_int_equal(pt_enc_get_offset(enc, &end), 0);
		pt_free_encoder(enc);

		vmpt_pkt_decoder_init(&dec, buf, end);
		for (int i = 0; i < PACKETS_PER_SEED; i++) {
			struct vmpt_packet pkt;

			assert_int_equal(vmpt_pkt_offset(&dec), offsets[i]);
			assert_int_equal(vmpt_pkt_next(&dec, &pkt), sent[i].size);
			assert_same(&sent[i], &pkt, buf + offsets[i]);
			for (unsigned t = 0; t < N_IPT_TYPES; t++)
				seen[t] += ipt_types[t] == sent[i].type;
		}
		assert_int_equal(vmpt_pkt_offset(&dec), end);
	}
	for (unsigned t = 0; t < N_IPT_TYPES; t++)
		assert_true(seen[t] > 1000);
}

/* Fill a vmpt packet of a type libipt 2.0.5 knows, within what libipt can
 * read back (CYC below 2^61, see the top). */
static void make_vmpt_packet(uint64_t *r, struct vmpt_packet *pkt)
{
	static const uint8_t types[] = {
		VMPT_PKT_PAD, VMPT_PKT_PSB, VMPT_PKT_PSBEND, VMPT_PKT_TNT8,
		VMPT_PKT_TNT64, VMPT_PKT_TIP, VMPT_PKT_TIP_PGE, VMPT_PKT_TIP_PGD,
		VMPT_PKT_FUP, VMPT_PKT_MODE_EXEC, VMPT_PKT_MODE_TSX, VMPT_PKT_PIP,
		VMPT_PKT_VMCS, VMPT_PKT_TSC, VMPT_PKT_MTC, VMPT_PKT_TMA, VMPT_PKT_CYC,
		VMPT_PKT_CBR, VMPT_PKT_OVF, VMPT_PKT_STOP, VMPT_PKT_MNT,
		VMPT_PKT_EXSTOP, VMPT_PKT_MWAIT, VMPT_PKT_PWRE, VMPT_PKT_PWRX,
		VMPT_PKT_PTW,
	};
	struct pt_packet ipt;
	uint64_t v;

	/* Reuse libipt's field ranges; set vmpt's fields from them. */
	do
		make_ipt_packet(r, &ipt);
	while (vmpt_type_of(&ipt) == VMPT_PKT_TYPE_COUNT);
	v = next_rand(r);
	memset(pkt, 0, sizeof(*pkt));
	pkt->type = (uint8_t)vmpt_type_of(&ipt);
	assert_non_null(memchr(types, pkt->type, sizeof(types)));
	switch (pkt->type) {
	case VMPT_PKT_TIP: case VMPT_PKT_TIP_PGE: case VMPT_PKT_TIP_PGD:
	case VMPT_PKT_FUP:
		pkt->ip.ipc = (uint8_t)ipt.payload.ip.ipc;
		pkt->ip.ip = ipt.payload.ip.ip;
		break;
	case VMPT_PKT_TNT8: case VMPT_PKT_TNT64:
		pkt->tnt.count = ipt.payload.tnt.bit_size;
		pkt->tnt.bits = ipt.payload.tnt.payload;
		break;
	case VMPT_PKT_MODE_EXEC:
		pkt->exec.csl = ipt.payload.mode.bits.exec.csl;
		pkt->exec.csd = ipt.payload.mode.bits.exec.csd;
		pkt->exec.iflag = v & 1;	/* libipt 2.0.5 ignores it */
		break;
	case VMPT_PKT_MODE_TSX:
		pkt->tsx.intx = ipt.payload.mode.bits.tsx.intx;
		pkt->tsx.abrt = ipt.payload.mode.bits.tsx.abrt;
		break;
	case VMPT_PKT_PIP:
		pkt->pip.cr3 = ipt.payload.pip.cr3;
		pkt->pip.nr = ipt.payload.pip.nr;
		break;
	case VMPT_PKT_VMCS: pkt->vmcs = ipt.payload.vmcs.base; break;
	case VMPT_PKT_CBR: pkt->cbr = ipt.payload.cbr.ratio; break;
	case VMPT_PKT_TSC: pkt->tsc = ipt.payload.tsc.tsc; break;
	case VMPT_PKT_TMA:
		pkt->tma.ctc = ipt.payload.tma.ctc;
		pkt->tma.fc = ipt.payload.tma.fc;
		break;
	case VMPT_PKT_MTC: pkt->mtc = ipt.payload.mtc.ctc; break;
	case VMPT_PKT_CYC: pkt->cyc = ipt.payload.cyc.value >> 3; break;
	case VMPT_PKT_MNT: pkt->mnt = ipt.payload.mnt.payload; break;
	case VMPT_PKT_EXSTOP: pkt->exstop.ip = ipt.payload.exstop.ip; break;
	case VMPT_PKT_MWAIT:
		pkt->mwait.hints = ipt.payload.mwait.hints;
		pkt->mwait.ext = ipt.payload.mwait.ext;
		break;
	case VMPT_PKT_PWRE:
		pkt->pwre.state = ipt.payload.pwre.state;
		pkt->pwre.sub_state = ipt.payload.pwre.sub_state;
		pkt->pwre.hw = v & 1;
		break;
	case VMPT_PKT_PWRX:
		pkt->pwrx.last = ipt.payload.pwrx.last;
		pkt->pwrx.deepest = ipt.payload.pwrx.deepest;
		pkt->pwrx.wake = (uint8_t)(v & 0xf);
		break;
	case VMPT_PKT_PTW:
		pkt->ptw.plc = ipt.payload.ptw.plc;
		pkt->ptw.ip = ipt.payload.ptw.ip;
		pkt->ptw.payload = ipt.payload.ptw.payload;
		break;
	}
}

/* vmpt encodes, libipt decodes. */
static void test_vmpt_to_libipt(void **state)
{
	static uint8_t buf[BUF_SIZE];
	static struct vmpt_packet sent[PACKETS_PER_SEED];
	static size_t offsets[PACKETS_PER_SEED];

	(void)state;
	for (uint64_t seed = 1; seed <= SEEDS; seed++) {
		uint64_t r = seed * 0xbf58476d1ce4e5b9ull;
		struct pt_packet_decoder *dec;
		struct pt_config cfg;
		size_t end = 0;

		for (int i = 0; i < PACKETS_PER_SEED; i++) {
			int n;

			make_vmpt_packet(&r, &sent[i]);
			n = vmpt_pkt_encode(buf + end, sizeof(buf) - end, &sent[i]);
			assert_true(n > 0);
			sent[i].size = (uint8_t)n;
			offsets[i] = end;
			end += (size_t)n;
		}
		pt_config_init(&cfg);
		cfg.begin = buf;
		cfg.end = buf + end;
		dec = pt_pkt_alloc_decoder(&cfg);
		assert_non_null(dec);
		assert_int_equal(pt_pkt_sync_set(dec, 0), 0);
		for (int i = 0; i < PACKETS_PER_SEED; i++) {
			struct pt_packet ipt;
			struct vmpt_packet back;
			uint64_t offset;

			assert_int_equal(pt_pkt_get_offset(dec, &offset), 0);
			assert_int_equal(offset, offsets[i]);
			assert_int_equal(pt_pkt_next(dec, &ipt, sizeof(ipt)), sent[i].size);
			/* What vmpt reads back is what it wrote... */
			assert_int_equal(vmpt_pkt_decode(buf + offsets[i], buf + end,
							 VMPT_CTX_NONE, &back), sent[i].size);
			assert_int_equal(back.type, sent[i].type);
			if (back.type == VMPT_PKT_MODE_EXEC)
				assert_int_equal(back.exec.iflag, sent[i].exec.iflag);
			if (back.type == VMPT_PKT_PWRE)
				assert_int_equal(back.pwre.hw, sent[i].pwre.hw);
			if (back.type == VMPT_PKT_PWRX)
				assert_int_equal(back.pwrx.wake, sent[i].pwrx.wake);
			/* ... and libipt agrees on every field it has. */
			assert_same(&ipt, &sent[i], buf + offsets[i]);
		}
		assert_int_equal(pt_pkt_next(dec, &(struct pt_packet){ 0 },
					     sizeof(struct pt_packet)), -pte_eos);
		pt_pkt_free_decoder(dec);
	}
}

/* The one packet libipt writes but cannot read: CYC with 9 extension bytes.
 * vmpt reads it (as perf does). */
static void test_cyc_full_width(void **state)
{
	uint8_t buf[16];
	struct pt_packet ipt = { .type = ppt_cyc };
	struct pt_packet_decoder *dec;
	struct vmpt_packet pkt;
	struct pt_encoder *enc;
	struct pt_config cfg;
	int n;

	(void)state;
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + sizeof(buf);
	enc = pt_alloc_encoder(&cfg);
	assert_non_null(enc);
	ipt.payload.cyc.value = 0xfedcba9876543210ull;
	n = pt_enc_next(enc, &ipt);
	pt_free_encoder(enc);
	assert_int_equal(n, 10);
	assert_int_equal(vmpt_pkt_decode(buf, buf + n, VMPT_CTX_NONE, &pkt), 10);
	assert_int_equal(pkt.cyc, 0xfedcba9876543210ull);

	cfg.end = buf + n;
	dec = pt_pkt_alloc_decoder(&cfg);
	assert_non_null(dec);
	assert_int_equal(pt_pkt_sync_set(dec, 0), 0);
	assert_int_equal(pt_pkt_next(dec, &ipt, sizeof(ipt)), -pte_bad_packet);
	pt_pkt_free_decoder(dec);
}

/* A stream of valid packets (libipt's encoder for the types it knows, vmpt's
 * for CFE, EVD and BBP/BIP/BEP), PSBs, and runs of random bytes. */
static size_t make_mixed_stream(uint64_t *r, uint8_t *buf, size_t cap)
{
	struct pt_encoder *enc;
	struct pt_config cfg;
	uint64_t pos = 0;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + cap;
	enc = pt_alloc_encoder(&cfg);
	assert_non_null(enc);
	while (pos + 64 < cap) {
		unsigned what = (unsigned)(next_rand(r) % 100);
		struct pt_packet ipt;

		if (what < 3) {
			ipt.type = ppt_psb;
		} else if (what < 6) {
			size_t n = 1 + next_rand(r) % 24;

			for (size_t i = 0; i < n; i++)
				buf[pos + i] = (uint8_t)next_rand(r);
			pos += n;
			assert_int_equal(pt_enc_sync_set(enc, pos), 0);
			continue;
		} else if (what < 8) {
			static const uint8_t newer[] = {
				VMPT_PKT_CFE, VMPT_PKT_EVD, VMPT_PKT_BBP, VMPT_PKT_BEP,
			};
			struct vmpt_packet v = { .type = newer[next_rand(r) % 4] };
			int n;

			v.cfe.type = 1;
			v.bbp.sz = 1;
			n = vmpt_pkt_encode(buf + pos, cap - pos, &v);
			assert_true(n > 0);
			pos += (uint64_t)n;
			if (v.type == VMPT_PKT_BBP) {	/* a BIP in the block */
				v = (struct vmpt_packet){ .type = VMPT_PKT_BIP, .size = 5 };
				pos += (uint64_t)vmpt_pkt_encode(buf + pos, cap - pos, &v);
			}
			assert_int_equal(pt_enc_sync_set(enc, pos), 0);
			continue;
		} else {
			make_ipt_packet(r, &ipt);
		}
		assert_true(pt_enc_next(enc, &ipt) > 0);
		assert_int_equal(pt_enc_get_offset(enc, &pos), 0);
	}
	pt_free_encoder(enc);
	return (size_t)pos;
}

/* Both decoders in lockstep (pkt_lockstep.c) over random streams: they must
 * agree up to the documented differences, and each of those must occur. */
static void test_lockstep_mixed(void **state)
{
	static uint8_t buf[1 << 15];
	struct pkt_lockstep_stats st = { 0 };

	(void)state;
	for (uint64_t seed = 1; seed <= 100; seed++) {
		uint64_t r = seed * 0x94d049bb133111ebull;
		size_t size = make_mixed_stream(&r, buf, sizeof(buf));

		assert_int_equal(pkt_lockstep(buf, size, &st), 0);
	}
	assert_true(st.packets > 100000);
	assert_true(st.errors > 1000);
	assert_true(st.newer > 100);
	assert_true(st.backward > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_libipt_to_vmpt),
		cmocka_unit_test(test_vmpt_to_libipt),
		cmocka_unit_test(test_cyc_full_width),
		cmocka_unit_test(test_lockstep_mixed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
