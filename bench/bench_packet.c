/* SPDX-License-Identifier: MIT */
/* Packet-layer throughput: vmpt's packet decoder against libipt's on the
 * same stream, in the same process, best of N runs each.
 *
 *   bench-packet [MB [RUNS [TRACE...]]]      (defaults: 128 MB, 5 runs)
 *
 * Without TRACEs the stream is generated with a mix like a real branch
 * trace: mostly TNT-8, TIPs with compressed IPs, PADs, MTC/CYC timing, the
 * odd TSC and TNT-64, and a PSB+ every 4 KiB (as IA32_RTIT_CTL.PSBFreq=0
 * gives).  With TRACEs (raw PT files that start at a PSB) the stream is
 * those files one after the other, repeated up to MB.
 */
#include "vmpt/error.h"
#include "vmpt/packet.h"

#include <intel-pt.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gen {
	uint8_t *buf, *pos, *end;
	uint64_t rng;
	struct vmpt_last_ip lip;
	uint64_t tsc;
};

static uint64_t rnd(struct gen *g)
{
	g->rng ^= g->rng << 13;
	g->rng ^= g->rng >> 7;
	g->rng ^= g->rng << 17;
	return g->rng;
}

static void emit(struct gen *g, const struct vmpt_packet *pkt)
{
	int n = vmpt_pkt_encode(g->pos, (size_t)(g->end - g->pos), pkt);

	if (n < 0) {
		fprintf(stderr, "bench-packet: encoding: %s\n", vmpt_strerror(n));
		exit(1);
	}
	g->pos += n;
}

static void emit_ip(struct gen *g, unsigned type, uint64_t ip)
{
	struct vmpt_packet pkt = { .type = (uint8_t)type };

	pkt.ip.ipc = (uint8_t)vmpt_last_ip_compress(&g->lip, ip, &pkt.ip.ip);
	emit(g, &pkt);
	vmpt_last_ip_update(&g->lip, &pkt);
}

/* A branch target near the last one, mostly within 64 KiB. */
static uint64_t next_ip(struct gen *g)
{
	uint64_t r = rnd(g);
	uint64_t base = g->lip.have_ip ? g->lip.ip : 0x7f3a12340000ull;

	if ((r & 15) == 0)
		return 0x7f3a00000000ull + (r >> 20 & 0xfffffff);
	return (base & ~0xffffull) | (r >> 32 & 0xffff);
}

static void emit_psb_plus(struct gen *g)
{
	struct vmpt_packet pkt = { .type = VMPT_PKT_PSB };

	emit(g, &pkt);
	vmpt_last_ip_init(&g->lip);
	pkt = (struct vmpt_packet){ .type = VMPT_PKT_TSC, .tsc = g->tsc };
	emit(g, &pkt);
	pkt = (struct vmpt_packet){ .type = VMPT_PKT_TMA };
	pkt.tma.ctc = (uint16_t)rnd(g);
	pkt.tma.fc = (uint16_t)(rnd(g) & 0x1ff);
	emit(g, &pkt);
	pkt = (struct vmpt_packet){ .type = VMPT_PKT_PIP, .pip.cr3 = 0x1f3a2000 };
	emit(g, &pkt);
	pkt = (struct vmpt_packet){ .type = VMPT_PKT_CBR, .cbr = 0x24 };
	emit(g, &pkt);
	pkt = (struct vmpt_packet){ .type = VMPT_PKT_MODE_EXEC, .exec.csl = 1 };
	emit(g, &pkt);
	emit_ip(g, VMPT_PKT_FUP, next_ip(g));
	pkt = (struct vmpt_packet){ .type = VMPT_PKT_PSBEND };
	emit(g, &pkt);
}

static void generate(struct gen *g)
{
	uint8_t *next_psb = g->pos;

	while (g->end - g->pos > 64) {
		struct vmpt_packet pkt = { 0 };
		unsigned r = (unsigned)(rnd(g) % 100);

		if (g->pos >= next_psb) {
			emit_psb_plus(g);
			next_psb = g->pos + 4096;
			continue;
		}
		g->tsc += 1 + (rnd(g) & 0xff);
		if (r < 50) {
			pkt.type = VMPT_PKT_TNT8;
			pkt.tnt.count = (uint8_t)(1 + rnd(g) % 6);
			pkt.tnt.bits = rnd(g);
		} else if (r < 65) {
			emit_ip(g, VMPT_PKT_TIP, next_ip(g));
			continue;
		} else if (r < 75) {
			pkt.type = VMPT_PKT_PAD;
		} else if (r < 83) {
			pkt.type = VMPT_PKT_MTC;
			pkt.mtc = (uint8_t)(g->tsc >> 10);
		} else if (r < 93) {
			pkt.type = VMPT_PKT_CYC;
			pkt.cyc = rnd(g) & ((1u << (rnd(g) % 16)) - 1);
		} else if (r < 95) {
			pkt.type = VMPT_PKT_TNT64;
			pkt.tnt.count = (uint8_t)(7 + rnd(g) % 41);
			pkt.tnt.bits = rnd(g);
		} else if (r < 97) {
			emit_ip(g, VMPT_PKT_FUP, next_ip(g));
			continue;
		} else if (r < 98) {
			pkt.type = VMPT_PKT_TSC;
			pkt.tsc = g->tsc & 0xffffffffffffffull;
		} else {
			pkt.type = VMPT_PKT_MODE_EXEC;
			pkt.exec.csl = 1;
		}
		emit(g, &pkt);
	}
	while (g->pos < g->end)
		*g->pos++ = 0;	/* PAD to the end */
}

static void replay(struct gen *g, char **files, int nfiles)
{
	while (g->pos < g->end) {
		for (int i = 0; i < nfiles && g->pos < g->end; i++) {
			FILE *f = fopen(files[i], "rb");
			size_t n;

			if (!f) {
				perror(files[i]);
				exit(1);
			}
			n = fread(g->pos, 1, (size_t)(g->end - g->pos), f);
			fclose(f);
			if (n == 0) {
				fprintf(stderr, "bench-packet: %s: empty\n", files[i]);
				exit(1);
			}
			g->pos += n;
		}
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Packets decoded and errors seen, so neither loop can be optimized out
 * and the two decoders can be checked against each other. */
struct tally {
	uint64_t packets, errors, sum;
};

static struct tally run_vmpt(const uint8_t *buf, size_t size)
{
	struct vmpt_pkt_decoder dec;
	struct vmpt_packet pkt;
	struct tally t = { 0 };

	vmpt_pkt_decoder_init(&dec, buf, size);
	while (vmpt_pkt_sync_forward(&dec) == 0) {
		int n;

		while ((n = vmpt_pkt_next(&dec, &pkt)) > 0) {
			t.packets++;
			t.sum += pkt.type;
		}
		if (n == -VMPT_ERR_EOS)
			break;
		t.errors++;
	}
	return t;
}

/* libipt's packet types in vmpt's numbering, for the checksum. */
static unsigned ipt_type(const struct pt_packet *pkt)
{
	switch (pkt->type) {
	case ppt_pad: return VMPT_PKT_PAD;
	case ppt_psb: return VMPT_PKT_PSB;
	case ppt_psbend: return VMPT_PKT_PSBEND;
	case ppt_tnt_8: return VMPT_PKT_TNT8;
	case ppt_tnt_64: return VMPT_PKT_TNT64;
	case ppt_tip: return VMPT_PKT_TIP;
	case ppt_tip_pge: return VMPT_PKT_TIP_PGE;
	case ppt_tip_pgd: return VMPT_PKT_TIP_PGD;
	case ppt_fup: return VMPT_PKT_FUP;
	case ppt_mode:
		return pkt->payload.mode.leaf == pt_mol_exec ?
		       VMPT_PKT_MODE_EXEC : VMPT_PKT_MODE_TSX;
	case ppt_pip: return VMPT_PKT_PIP;
	case ppt_vmcs: return VMPT_PKT_VMCS;
	case ppt_tsc: return VMPT_PKT_TSC;
	case ppt_mtc: return VMPT_PKT_MTC;
	case ppt_tma: return VMPT_PKT_TMA;
	case ppt_cyc: return VMPT_PKT_CYC;
	case ppt_cbr: return VMPT_PKT_CBR;
	default: return VMPT_PKT_TYPE_COUNT;
	}
}

static struct tally run_libipt(const uint8_t *buf, size_t size)
{
	struct pt_packet_decoder *dec;
	struct pt_packet pkt;
	struct pt_config cfg;
	struct tally t = { 0 };

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + size;
	dec = pt_pkt_alloc_decoder(&cfg);
	if (!dec) {
		fprintf(stderr, "bench-packet: pt_pkt_alloc_decoder failed\n");
		exit(1);
	}
	while (pt_pkt_sync_forward(dec) >= 0) {
		int n;

		while ((n = pt_pkt_next(dec, &pkt, sizeof(pkt))) > 0) {
			t.packets++;
			t.sum += ipt_type(&pkt);
		}
		if (n == -pte_eos)
			break;
		t.errors++;
	}
	pt_pkt_free_decoder(dec);
	return t;
}

int main(int argc, char **argv)
{
	size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 128;
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	size_t size = mb << 20;
	struct gen g = { .rng = 0x9e3779b97f4a7c15ull };
	struct tally tv = { 0 }, ti = { 0 };
	double best_v = 1e30, best_i = 1e30, mbs_v, mbs_i;

	if (mb == 0 || runs <= 0) {
		fprintf(stderr, "usage: bench-packet [MB [RUNS]]\n");
		return 2;
	}
	g.buf = g.pos = malloc(size);
	if (!g.buf) {
		fprintf(stderr, "bench-packet: out of memory\n");
		return 1;
	}
	g.end = g.buf + size;
	vmpt_last_ip_init(&g.lip);
	if (argc > 3)
		replay(&g, argv + 3, argc - 3);
	else
		generate(&g);

	/* Interleave the runs so both decoders see the same machine state. */
	for (int i = 0; i < runs; i++) {
		double t0 = now();

		tv = run_vmpt(g.buf, size);
		double t1 = now();

		ti = run_libipt(g.buf, size);
		double t2 = now();

		if (t1 - t0 < best_v)
			best_v = t1 - t0;
		if (t2 - t1 < best_i)
			best_i = t2 - t1;
	}
	if (tv.packets != ti.packets || tv.sum != ti.sum || tv.errors != ti.errors) {
		fprintf(stderr, "bench-packet: decoders disagree: vmpt %" PRIu64
			" packets %" PRIu64 " errors, libipt %" PRIu64 " packets %"
			PRIu64 " errors\n", tv.packets, tv.errors, ti.packets,
			ti.errors);
		return 1;
	}
	mbs_v = (double)size / (1 << 20) / best_v;
	mbs_i = (double)size / (1 << 20) / best_i;
	printf("stream: %s, %zu MB, %" PRIu64 " packets (%.2f bytes/packet), "
	       "%" PRIu64 " errors, best of %d\n", argc > 3 ? "replayed traces" :
	       "generated", mb, tv.packets, (double)size / (double)tv.packets,
	       tv.errors, runs);
	printf("vmpt:   %8.1f MB/s  %6.1f Mpackets/s\n", mbs_v,
	       (double)tv.packets / best_v / 1e6);
	printf("libipt: %8.1f MB/s  %6.1f Mpackets/s\n", mbs_i,
	       (double)ti.packets / best_i / 1e6);
	printf("ratio:  %.2fx\n", mbs_v / mbs_i);
	free(g.buf);
	return 0;
}
