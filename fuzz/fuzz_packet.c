/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the packet layer: the stream decoder with PSB sync
 * and last-IP tracking, every decoded packet re-encoded and decoded again
 * (fields must survive), single-packet decoding at every offset in every
 * block context, the dump listing (into /dev/null), and libipt's packet
 * decoder in lockstep (same packets, errors and resyncs).  See
 * docs/fuzzing.md; build and run with fuzz/run.sh.
 */
#include "pkt_lockstep.h"
#include "vmpt/dump.h"
#include "vmpt/error.h"
#include "vmpt/packet.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		abort();
	return 0;
}

/* The payload as text says everything the packet holds. */
static void check_reencode(const struct vmpt_packet *pkt, unsigned ctx)
{
	struct vmpt_packet back;
	char a[96], b[96];
	uint8_t buf[VMPT_PKT_MAX_SIZE];
	int n = vmpt_pkt_encode(buf, sizeof(buf), pkt);

	if (n <= 0)
		abort();	/* every decoded packet must be encodable */
	if (vmpt_pkt_decode(buf, buf + n, ctx, &back) != n || back.type != pkt->type)
		abort();
	vmpt_pkt_format_payload(a, sizeof(a), pkt);
	vmpt_pkt_format_payload(b, sizeof(b), &back);
	if (strcmp(a, b) != 0)
		abort();
}

static void walk(const uint8_t *data, size_t size)
{
	struct vmpt_pkt_decoder dec;
	struct vmpt_last_ip lip;
	struct vmpt_packet pkt;
	uint64_t ip;

	vmpt_pkt_decoder_init(&dec, data, size);
	vmpt_last_ip_init(&lip);
	while (vmpt_pkt_sync_forward(&dec) == 0) {
		int n;

		for (;;) {
			unsigned ctx = dec.ctx;
			const uint8_t *pos = dec.pos;

			n = vmpt_pkt_next(&dec, &pkt);
			if (n <= 0)
				break;
			if (dec.pos != pos + n || pkt.size != n || pkt.type >= VMPT_PKT_TYPE_COUNT)
				abort();
			check_reencode(&pkt, ctx);
			if (vmpt_pkt_has_ip(pkt.type) &&
			    vmpt_last_ip_update(&lip, &pkt) < 0 && pkt.ip.ipc != 5 &&
			    pkt.ip.ipc != 7)
				abort();
			vmpt_last_ip_query(&lip, &ip);
		}
		if (n == -VMPT_ERR_EOS)
			break;
		if (n != -VMPT_ERR_BAD_OPC && n != -VMPT_ERR_BAD_PACKET &&
		    n != -VMPT_ERR_TRUNCATED)
			abort();
		vmpt_last_ip_init(&lip);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmpt_dump_opts opts = { 0 };
	struct vmpt_dump_stats stats = { 0 };
	struct vmpt_packet pkt;
	uint8_t *copy;

	if (size == 0)
		return 0;
	/* An exact-size heap copy, so ASan sees any read past the end. */
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);

	walk(copy, size);
	{
		struct pkt_lockstep_stats st = { 0 };

		if (pkt_lockstep(copy, size, &st) != 0)
			abort();	/* vmpt and libipt disagree */
	}
	for (size_t i = 0; i < size; i++)
		for (unsigned ctx = VMPT_CTX_NONE; ctx <= VMPT_CTX_BLK8; ctx++)
			if (vmpt_pkt_decode(copy + i, copy + size, ctx, &pkt) > (int)(size - i))
				abort();
	opts.no_pad = copy[0] & 1;
	opts.lastip = (copy[0] >> 1) & 1;
	opts.no_sync = (copy[0] >> 2) & 1;
	opts.quiet = (copy[0] >> 3) & 1;
	if (vmpt_dump_stream(devnull, copy, size, 0, &opts, &stats) != 0)
		abort();
	vmpt_dump_print_stats(devnull, &stats);
	free(copy);
	return 0;
}
