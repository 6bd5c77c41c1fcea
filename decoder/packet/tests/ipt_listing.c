/* SPDX-License-Identifier: MIT */
/* The reference side of the real-trace tests: libipt's packet decoder over a
 * raw Intel PT file, resyncing at the next PSB after an error the way
 * libipt's ptdump does.  Output matches `vmpt dump` so the test can diff:
 *
 *   ipt-listing FILE           "OFFSET  NAME PAYLOAD" per packet (payload as
 *                              ptdump prints it), with " ip=IP" after a
 *                              TIP, TIP.PGE, TIP.PGD and FUP: the IP
 *                              reconstructed from the last IP,
 *                              "[OFFSET: error]"
 *   ipt-listing --stats FILE   "NAME COUNT" per type seen, "errors COUNT"
 *
 * It links libipt only, never libvmpt: an independent opinion.  libipt
 * keeps its last-IP register private, so the reconstruction is done here,
 * from libipt's compression type and payload, by the SDM's rules (Intel
 * SDM vol. 3C, "IP Compression": each compression keeps the upper bytes of
 * the last IP; the last IP is 0 after a PSB).
 */
#include <intel-pt.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *packet_name(const struct pt_packet *pkt)
{
	switch (pkt->type) {
	case ppt_pad: return "pad";
	case ppt_psb: return "psb";
	case ppt_psbend: return "psbend";
	case ppt_fup: return "fup";
	case ppt_tip: return "tip";
	case ppt_tip_pge: return "tip.pge";
	case ppt_tip_pgd: return "tip.pgd";
	case ppt_tnt_8: return "tnt.8";
	case ppt_tnt_64: return "tnt.64";
	case ppt_mode:
		return pkt->payload.mode.leaf == pt_mol_tsx ? "mode.tsx" : "mode.exec";
	case ppt_pip: return "pip";
	case ppt_vmcs: return "vmcs";
	case ppt_cbr: return "cbr";
	case ppt_tsc: return "tsc";
	case ppt_tma: return "tma";
	case ppt_mtc: return "mtc";
	case ppt_cyc: return "cyc";
	case ppt_stop: return "stop";
	case ppt_ovf: return "ovf";
	case ppt_mnt: return "mnt";
	case ppt_exstop: return "exstop";
	case ppt_mwait: return "mwait";
	case ppt_pwre: return "pwre";
	case ppt_pwrx: return "pwrx";
	case ppt_ptw: return "ptw";
	default: return NULL;
	}
}

/* The payload the way libipt's ptdump prints it, from libipt's fields. */
static void print_payload(const struct pt_packet *pkt)
{
	const struct pt_packet_mode *mode = &pkt->payload.mode;
	uint64_t ip = pkt->payload.ip.ip;
	const char *a, *b;

	switch (pkt->type) {
	case ppt_fup: case ppt_tip: case ppt_tip_pge: case ppt_tip_pgd:
		switch (pkt->payload.ip.ipc) {
		case pt_ipc_suppressed:
			printf(" 0: ????????????????");
			return;
		case pt_ipc_update_16:
			printf(" 1: ????????????%04" PRIx64, ip);
			return;
		case pt_ipc_update_32:
			printf(" 2: ????????%08" PRIx64, ip);
			return;
		case pt_ipc_update_48:
			printf(" 4: ????%012" PRIx64, ip);
			return;
		case pt_ipc_sext_48:
			printf(" 3: %016" PRIx64, (uint64_t)((int64_t)(ip << 16) >> 16));
			return;
		case pt_ipc_full:
			printf(" 6: %016" PRIx64, ip);
			return;
		}
		return;
	case ppt_tnt_8: case ppt_tnt_64:
		putchar(' ');
		for (unsigned i = pkt->payload.tnt.bit_size; i > 0; i--)
			putchar(pkt->payload.tnt.payload >> (i - 1) & 1 ? '!' : '.');
		return;
	case ppt_mode:
		if (mode->leaf == pt_mol_exec) {
			a = mode->bits.exec.csd ? "cs.d" : "";
			b = mode->bits.exec.csl ? "cs.l" : "";
		} else {
			a = mode->bits.tsx.intx ? "intx" : "";
			b = mode->bits.tsx.abrt ? "abrt" : "";
		}
		if (a[0] || b[0])
			printf(" %s%s%s", a, a[0] && b[0] ? ", " : "", b);
		return;
	case ppt_pip:
		printf(" %" PRIx64 "%s", pkt->payload.pip.cr3,
		       pkt->payload.pip.nr ? ", nr" : "");
		return;
	case ppt_vmcs: printf(" %" PRIx64, pkt->payload.vmcs.base); return;
	case ppt_cbr: printf(" %x", pkt->payload.cbr.ratio); return;
	case ppt_tsc: printf(" %" PRIx64, pkt->payload.tsc.tsc); return;
	case ppt_tma:
		printf(" %x, %x", pkt->payload.tma.ctc, pkt->payload.tma.fc);
		return;
	case ppt_mtc: printf(" %x", pkt->payload.mtc.ctc); return;
	case ppt_cyc: printf(" %" PRIx64, pkt->payload.cyc.value); return;
	case ppt_mnt: printf(" %" PRIx64, pkt->payload.mnt.payload); return;
	case ppt_exstop:
		if (pkt->payload.exstop.ip)
			printf(" ip");
		return;
	case ppt_mwait:
		printf(" %08x, %08x", pkt->payload.mwait.hints, pkt->payload.mwait.ext);
		return;
	case ppt_pwre:
		printf(" c%u.%u%s", (pkt->payload.pwre.state + 1) & 0xf,
		       (pkt->payload.pwre.sub_state + 1) & 0xf,
		       pkt->payload.pwre.hw ? ", hw" : "");
		return;
	case ppt_pwrx:
		/* ptdump: the single wake reason, "bad" for none or several
		 * (it also puts a space before "st" and "hw"; spacing is not
		 * compared). */
		a = "bad";
		if (pkt->payload.pwrx.interrupt + pkt->payload.pwrx.store +
		    pkt->payload.pwrx.autonomous == 1)
			a = pkt->payload.pwrx.interrupt ? "int" :
			    pkt->payload.pwrx.store ? "st" : "hw";
		printf(" %s: c%u, c%u", a, (pkt->payload.pwrx.last + 1) & 0xf,
		       (pkt->payload.pwrx.deepest + 1) & 0xf);
		return;
	case ppt_ptw:
		printf(" %x: %" PRIx64 "%s", pkt->payload.ptw.plc,
		       pkt->payload.ptw.payload, pkt->payload.ptw.ip ? ", ip" : "");
		return;
	default:
		return;
	}
}

/* The last-IP register, as the SDM describes it. */
struct last_ip {
	uint64_t ip;
	int suppressed;
};

/* Update last from an IP packet and print the IP it gives. */
static void print_ip(struct last_ip *last, const struct pt_packet *pkt)
{
	uint64_t p = pkt->payload.ip.ip;

	switch (pkt->payload.ip.ipc) {
	case pt_ipc_suppressed:
		last->suppressed = 1;
		printf(" ip=<suppressed>");
		return;
	case pt_ipc_update_16:
		last->ip = (last->ip & ~0xffffull) | (p & 0xffff);
		break;
	case pt_ipc_update_32:
		last->ip = (last->ip & ~0xffffffffull) | (p & 0xffffffff);
		break;
	case pt_ipc_update_48:
		last->ip = (last->ip & ~0xffffffffffffull) | (p & 0xffffffffffffull);
		break;
	case pt_ipc_sext_48:
		last->ip = (uint64_t)((int64_t)(p << 16) >> 16);
		break;
	case pt_ipc_full:
		last->ip = p;
		break;
	}
	last->suppressed = 0;
	printf(" ip=%016" PRIx64, last->ip);
}

/* Names in the order vmpt prints its stats. */
static const char *const stats_order[] = {
	"pad", "psb", "psbend", "tnt.8", "tnt.64", "tip", "tip.pge", "tip.pgd",
	"fup", "mode.exec", "mode.tsx", "pip", "vmcs", "tsc", "mtc", "tma", "cyc",
	"cbr", "ovf", "stop", "mnt", "exstop", "mwait", "pwre", "pwrx", "ptw",
};
#define NTYPES (sizeof(stats_order) / sizeof(stats_order[0]))

static unsigned stats_index(const char *name)
{
	unsigned i = 0;

	while (i < NTYPES && strcmp(stats_order[i], name) != 0)
		i++;
	return i;
}

static uint8_t *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1)) &&
	    fread(buf, 1, (size_t)len, f) == (size_t)len) {
		*size = (size_t)len;
		fclose(f);
		return buf;
	}
	free(buf);
	fclose(f);
	return NULL;
}

int main(int argc, char **argv)
{
	int stats = argc == 3 && strcmp(argv[1], "--stats") == 0;
	uint64_t count[NTYPES + 1] = { 0 }, errors = 0, resume = 0;
	struct last_ip last = { 0, 0 };
	struct pt_packet_decoder *dec;
	struct pt_config cfg;
	const char *path;
	uint8_t *buf;
	size_t size;

	if (argc != 2 + stats) {
		fprintf(stderr, "usage: ipt-listing [--stats] FILE\n");
		return 2;
	}
	path = argv[argc - 1];
	buf = read_file(path, &size);
	if (!buf) {
		fprintf(stderr, "ipt-listing: %s: %s\n", path, strerror(errno));
		return 1;
	}
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + size;
	dec = pt_pkt_alloc_decoder(&cfg);
	if (!dec) {
		fprintf(stderr, "ipt-listing: cannot allocate a decoder\n");
		return 1;
	}
	while (pt_pkt_sync_forward(dec) >= 0) {
		uint64_t sync;

		/* libipt 2.0.5 can sync "forward" to a PSB that starts before
		 * the bad packet, when that packet lies inside the PSB's
		 * pattern (a byte of the PSB was taken as part of the packet
		 * before).  Later libipt skips such a PSB ("ignore it unless
		 * start points to its beginning"), as vmpt does: so here. */
		pt_pkt_get_offset(dec, &sync);
		if (sync < resume)
			continue;
		for (;;) {
			struct pt_packet pkt;
			uint64_t offset;
			const char *name;
			int n;

			pt_pkt_get_offset(dec, &offset);
			n = pt_pkt_next(dec, &pkt, sizeof(pkt));
			/* libipt says pte_eos both at the end and for a packet
			 * cut off by it; vmpt counts the latter as an error
			 * (truncated), so count it here too. */
			if (n == -pte_eos && offset == size)
				goto done;
			if (n < 0) {
				errors++;
				resume = offset;
				if (!stats)
					printf("[%016" PRIx64 ": error]\n", offset);
				if (n == -pte_eos)
					goto done;
				break;
			}
			name = packet_name(&pkt);
			if (!name) {
				fprintf(stderr, "ipt-listing: unexpected type %d\n",
					pkt.type);
				return 1;
			}
			if (pkt.type == ppt_psb)
				last = (struct last_ip){ 0, 0 };
			if (stats)
				count[stats_index(name)]++;
			else {
				printf("%016" PRIx64 "  %s", offset, name);
				print_payload(&pkt);
				if (pkt.type == ppt_tip || pkt.type == ppt_tip_pge ||
				    pkt.type == ppt_tip_pgd || pkt.type == ppt_fup)
					print_ip(&last, &pkt);
				putchar('\n');
			}
		}
	}
done:
	if (stats) {
		for (unsigned i = 0; i < NTYPES; i++)
			if (count[i])
				printf("%s %" PRIu64 "\n", stats_order[i], count[i]);
		printf("errors %" PRIu64 "\n", errors);
	}
	pt_pkt_free_decoder(dec);
	free(buf);
	return 0;
}
