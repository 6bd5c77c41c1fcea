/* SPDX-License-Identifier: MIT */
/* vmpt dump: the packets of a raw Intel PT stream or of a perf.data's
 * AUXTRACE buffers, one line each.
 */
#include "builtin.h"
#include "vmpt/dump.h"
#include "vmpt/error.h"
#include "vmpt/file.h"
#include "vmpt/perf_data.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Every AUXTRACE buffer of a perf.data (file, pipe mode or perf's
 * directory form, data.N files included), each after a header line,
 * offsets in the file.
 */
static int dump_perf_data(const char *path, struct vmpt_file *file,
			  const struct vmpt_dump_opts *opts, struct vmpt_dump_stats *stats)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	int ret;

	/* A pipe was read already: parse what came. */
	ret = file ? vmpt_perf_open_mapped(&pd, file, VMPT_PERF_READ_CUT) :
		     vmpt_perf_open_flags(&pd, path, VMPT_PERF_READ_CUT);
	if (ret < 0) {
		fprintf(stderr, "vmpt dump: %s\n", pd.errmsg);
		vmpt_perf_close(&pd);
		return 1;
	}
	vmpt_perf_cursor_init(&pd, &cur);
	while ((ret = vmpt_perf_next(&pd, &cur, &ev)) > 0) {
		if (ev.type != VMPT_PERF_RECORD_AUXTRACE)
			continue;
		/* Offsets are in the record's file: data.N of a threaded
		 * recording says so. */
		char part[32] = "";

		if (ev.part)
			snprintf(part, sizeof(part), ", in data.%u", ev.part - 1);
		if ((!opts->quiet &&
		     printf("[auxtrace: cpu %d, tid %d, offset %016llx, size %#llx%s]\n",
			    (int)ev.auxtrace.cpu, (int)ev.auxtrace.tid,
			    (unsigned long long)ev.auxtrace.data_offset,
			    (unsigned long long)ev.auxtrace.size, part) < 0) ||
		    vmpt_dump_stream(stdout, ev.auxtrace.data, ev.auxtrace.size,
				     ev.auxtrace.data_offset, opts, stats) < 0) {
			fprintf(stderr, "vmpt dump: writing output: %s\n", strerror(errno));
			vmpt_perf_close(&pd);
			return 1;
		}
	}
	if (ret < 0) {
		fflush(stdout);
		fprintf(stderr, "vmpt dump: %s\n", pd.errmsg);
	} else if (pd.warnmsg[0]) {
		fflush(stdout);
		fprintf(stderr, "vmpt dump: warning: %s\n", pd.warnmsg);
	}
	vmpt_perf_close(&pd);
	return ret < 0 ? 1 : 0;
}

static void dump_usage(FILE *out)
{
	fprintf(out,
		"usage: vmpt dump [OPTIONS] FILE\n"
		"FILE is a raw Intel PT stream or a perf.data with intel_pt\n"
		"(a file, pipe-mode output or perf's directory form).\n"
		"  --no-pad     leave PAD packets out\n"
		"  --lastip     show the last-IP register on every line\n"
		"  --no-sync    start at offset 0 instead of the first PSB\n"
		"  --stats      print 'NAME COUNT' per packet type and 'errors COUNT'\n");
}

/* The listing shows every skip; --stats must not hide them either. */
static void warn_skipped(const char *path, const struct vmpt_dump_stats *stats,
			 int stats_only)
{
	if (stats_only && stats->bytes_skipped)
		fprintf(stderr, "vmpt dump: %s: %llu bytes skipped (no PSB to sync to, or"
			" resyncing after errors)\n", path,
			(unsigned long long)stats->bytes_skipped);
}

static int dump_perf_data_and_stats(const char *path, struct vmpt_file *file,
				    const struct vmpt_dump_opts *opts,
				    int stats_only)
{
	struct vmpt_dump_stats stats = { 0 };
	int ret = dump_perf_data(path, file, opts, &stats);

	if (ret)
		return ret;	/* reported */
	warn_skipped(path, &stats, stats_only);
	if ((stats_only && vmpt_dump_print_stats(stdout, &stats) < 0) ||
	    fflush(stdout) != 0) {
		fprintf(stderr, "vmpt dump: writing output: %s\n", strerror(errno));
		return 1;
	}
	return 0;
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

	struct stat st;
	if (stat(argv[optind], &st) == 0 && S_ISDIR(st.st_mode))
		return dump_perf_data_and_stats(argv[optind], NULL, &opts, stats_only);
	err = vmpt_file_map(&file, argv[optind]);
	if (err < 0) {
		fprintf(stderr, "vmpt dump: %s: %s\n", argv[optind],
			err == -VMPT_ERR_IO ? strerror(errno) : vmpt_strerror(err));
		return 1;
	}
	if (!file.size) {
		fprintf(stderr, "vmpt dump: %s: empty file, nothing to dump\n",
			argv[optind]);
		vmpt_file_unmap(&file);
		return 1;
	}
	if (vmpt_perf_is_perf_data(file.data, file.size))
		return dump_perf_data_and_stats(argv[optind], &file, &opts, stats_only);
	err = vmpt_dump_stream(stdout, file.data, file.size, 0, &opts, &stats);
	warn_skipped(argv[optind], &stats, stats_only);
	if (!err && stats_only)
		err = vmpt_dump_print_stats(stdout, &stats);
	vmpt_file_unmap(&file);
	if (err < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "vmpt dump: writing output: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
