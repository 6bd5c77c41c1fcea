/* SPDX-License-Identifier: MIT */
#include "vmpt/dump.h"
#include "vmpt/error.h"

#include <inttypes.h>

static int report_error(FILE *out, uint64_t offset, int err, uint8_t byte,
			const struct vmpt_dump_opts *opts)
{
	if (opts->quiet)
		return 0;
	if (err == -VMPT_ERR_TRUNCATED)
		return fprintf(out, "[%016" PRIx64 ": error: %s]\n", offset,
			       vmpt_strerror(err));
	return fprintf(out, "[%016" PRIx64 ": error: %s (byte 0x%02x)]\n", offset,
		       vmpt_strerror(err), byte);
}

static int report_skip(FILE *out, uint64_t offset, uint64_t skipped,
		       const struct vmpt_dump_opts *opts)
{
	if (opts->quiet || !skipped)
		return 0;
	return fprintf(out, "[%016" PRIx64 ": skipped %" PRIu64 " bytes to the next psb]\n",
		       offset, skipped);
}

static int print_packet(FILE *out, uint64_t offset, const struct vmpt_packet *pkt,
			const struct vmpt_last_ip *lip,
			const struct vmpt_dump_opts *opts)
{
	char payload[96];
	uint64_t ip;
	int n;

	vmpt_pkt_format_payload(payload, sizeof(payload), pkt);
	if (payload[0])
		n = fprintf(out, "%016" PRIx64 "  %-9s %s", offset,
			    vmpt_pkt_name(pkt->type), payload);
	else
		n = fprintf(out, "%016" PRIx64 "  %s", offset,
			    vmpt_pkt_name(pkt->type));
	if (vmpt_pkt_has_ip(pkt->type) || opts->lastip) {
		int err = vmpt_last_ip_query(lip, &ip);
		const char *tag = opts->lastip ? "lastip" : "ip";

		if (!err)
			n = fprintf(out, "  %s=%016" PRIx64, tag, ip);
		else if (err == -VMPT_ERR_IP_SUPPRESSED)
			n = fprintf(out, "  %s=<suppressed>", tag);
		else
			n = fprintf(out, "  %s=<unknown>", tag);
	}
	if (n >= 0)
		n = fputc('\n', out);
	return n;
}

int vmpt_dump_stream(FILE *out, const uint8_t *buf, size_t size, uint64_t base,
		     const struct vmpt_dump_opts *opts,
		     struct vmpt_dump_stats *stats)
{
	struct vmpt_pkt_decoder dec;
	struct vmpt_last_ip lip;
	struct vmpt_packet pkt;
	int io = 0;

	vmpt_pkt_decoder_init(&dec, buf, size);
	vmpt_last_ip_init(&lip);
	if (!opts->no_sync) {
		vmpt_pkt_sync_forward(&dec);
		stats->bytes_skipped += vmpt_pkt_offset(&dec);
		io |= report_skip(out, base, vmpt_pkt_offset(&dec), opts) < 0;
	}

	while (dec.pos < dec.end) {
		uint64_t offset = vmpt_pkt_offset(&dec);
		int err = vmpt_pkt_next(&dec, &pkt);

		if (err < 0) {
			stats->errors++;
			io |= report_error(out, base + offset, err, *dec.pos, opts) < 0;
			vmpt_pkt_sync_forward(&dec);
			stats->bytes_skipped += vmpt_pkt_offset(&dec) - offset;
			io |= report_skip(out, base + offset,
					  vmpt_pkt_offset(&dec) - offset, opts) < 0;
			vmpt_last_ip_init(&lip);
			continue;
		}
		stats->count[pkt.type]++;
		if (pkt.type == VMPT_PKT_PSB)
			vmpt_last_ip_init(&lip);
		else if (vmpt_pkt_has_ip(pkt.type))
			vmpt_last_ip_update(&lip, &pkt);
		if (opts->quiet || (opts->no_pad && pkt.type == VMPT_PKT_PAD))
			continue;
		io |= print_packet(out, base + offset, &pkt, &lip, opts) < 0;
	}
	return io ? -VMPT_ERR_IO : 0;
}

int vmpt_dump_print_stats(FILE *out, const struct vmpt_dump_stats *stats)
{
	int n = 0;

	for (unsigned t = 0; t < VMPT_PKT_TYPE_COUNT && n >= 0; t++)
		if (stats->count[t])
			n = fprintf(out, "%s %" PRIu64 "\n", vmpt_pkt_name(t),
				    stats->count[t]);
	if (n >= 0)
		n = fprintf(out, "errors %" PRIu64 "\n", stats->errors);
	return n < 0 ? -VMPT_ERR_IO : 0;
}
