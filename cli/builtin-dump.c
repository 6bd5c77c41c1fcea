/* SPDX-License-Identifier: MIT */
/* vmpt dump: the packets of a raw Intel PT stream or of a perf.data's
 * AUXTRACE buffers, one line each.
 */
#include "builtin.h"
#include "vmpt/dump.h"
#include "vmpt/error.h"
#include "vmpt/file.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void dump_usage(FILE *out)
{
	fprintf(out,
		"usage: vmpt dump [OPTIONS] FILE\n"
		"FILE is a raw Intel PT stream or a perf.data with intel_pt.\n"
		"  --no-pad     leave PAD packets out\n"
		"  --lastip     show the last-IP register on every line\n"
		"  --no-sync    start at offset 0 instead of the first PSB\n"
		"  --stats      print 'NAME COUNT' per packet type and 'errors COUNT'\n");
}

int cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "no-pad", no_argument, NULL, 'p' },
		{ "lastip", no_argument, NULL, 'l' },
		{ "no-sync", no_argument, NULL, 'n' },
		{ "stats", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct vmpt_dump_opts opts = { 0 };
	struct vmpt_dump_stats stats = { 0 };
	struct vmpt_file file;
	int stats_only = 0, c, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': opts.no_pad = 1; break;
		case 'l': opts.lastip = 1; break;
		case 'n': opts.no_sync = 1; break;
		case 's': stats_only = 1; break;
		case 'h': dump_usage(stdout); return 0;
		default: dump_usage(stderr); return 2;
		}
	}
	if (optind + 1 != argc) {
		dump_usage(stderr);
		return 2;
	}
	opts.quiet = stats_only;

	err = vmpt_file_map(&file, argv[optind]);
	if (err < 0) {
		fprintf(stderr, "vmpt dump: %s: %s\n", argv[optind],
			err == -VMPT_ERR_IO ? strerror(errno) : vmpt_strerror(err));
		return 1;
	}
	err = vmpt_dump_stream(stdout, file.data, file.size, 0, &opts, &stats);
	if (!err && stats_only)
		err = vmpt_dump_print_stats(stdout, &stats);
	vmpt_file_unmap(&file);
	if (err < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "vmpt dump: writing output: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
