/* SPDX-License-Identifier: MIT */
/* vmpt export FORMAT: a recording's decoded flow in a format other tools
 * open (vmpt/export.h): folded stacks, Chrome's trace JSON, Perfetto's
 * protobuf trace, perf's SQLite and PostgreSQL tables.
 */
#include "builtin.h"
#include "progress.h"
#include "script_filter.h"
#include "script_images.h"
#include "script_session.h"
#include "vmpt/error.h"
#include "vmpt/export.h"
#include "vmpt/image.h"
#include "vmpt/script_output.h"
#include "vmpt/session.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The script formatter's consumer, with the sideband also going to the
 * exporter (comms), as one decode feeds both.
 */
static struct vmpt_export *the_export;
static void (*script_sideband)(struct vmpt_consumer *c, const struct vmpt_perf_event *ev,
			       const struct vmpt_task *task);

static void export_sideband(struct vmpt_consumer *c, const struct vmpt_perf_event *ev,
			    const struct vmpt_task *task)
{
	vmpt_export_sideband(the_export, ev, task);
	script_sideband(c, ev, task);
}

static void export_usage(FILE *out)
{
	fprintf(out,
		"usage: vmpt export FORMAT [-i perf.data] [-o OUTPUT] [OPTIONS]\n"
		"formats:\n"
		"  folded      flame graph stacks (flamegraph.pl, speedscope); stdout\n"
		"  chrome      Chrome's Trace Event JSON (Perfetto UI, speedscope); stdout\n"
		"  perfetto    Perfetto's protobuf trace (ui.perfetto.dev); -o FILE\n"
		"  sqlite      perf's export-to-sqlite.py tables; -o NEW.db\n"
		"  postgresql  perf's export-to-postgresql.py tables; -o DBNAME, a new\n"
		"              database on the server PGHOST, PGPORT, PGUSER name\n"
		"options:\n"
		"  -o, --output OUT    where (default: stdout for folded and chrome)\n"
		"  --weight insns|time|samples\n"
		"                      what a folded stack counts (default: insns)\n"
		"  --max-depth N       leave out calls deeper than N (timelines, folded)\n"
		"  --branches          sqlite, postgresql: perf's 'branches' columns\n"
		"  --no-calls          sqlite, postgresql: no calls, call_paths tables\n"
		"  --itrace=LETTERS    the samples (default: bep for the databases, as\n"
		"                      perf script --itrace=bep -s export-to-sqlite.py;\n"
		"                      be for the others: errors as instant events)\n"
		"  -C, --cpu LIST  --pid LIST  --tid LIST  -c, --comms LIST\n"
		"  --time START,STOP | PERCENT   as vmpt script's (perf's)\n"
		"  --symfs DIR  --vmlinux FILE  --guest-code  --elf, --raw, --pagecache,\n"
		"  --kcore, --guest-elf, --guest-raw, --guest-pagecache, --guest-kcore,\n"
		"  --guestvmlinux,\n"
		"  --vmcs             the code, as vmpt script's\n");
}

static int export_perf_data(const char *path, struct vmpt_image *img, struct vmpt_script_opts *op,
			    struct script_filter *sf, struct vmpt_export_opts *xo)
{
	struct vmpt_session_opts so = { .symfs = sf->symfs, .warn = stderr };
	struct vmpt_export_stats st;
	struct vmpt_consumer_ops ops;
	struct vmpt_script *sc = NULL;
	struct vmpt_export *x = NULL;
	struct vmpt_session s;
	struct progress pg;
	char err[600];
	int ret = script_session_open(&s, "vmpt export", path, img, &so, op->guest_code,
				      NULL), status = 1;

	if (ret < 0)
		goto out;
	if (!s.n_bufs) {
		fprintf(stderr, "vmpt export: no Intel PT data in %s\n", path);
		goto out;
	}
	s.cfg.perf_resync = 1;
	op->image = s.image;
	op->have_tc = s.have_tc;
	op->tc = s.tc;
	op->map_of = vmpt_session_map_of;
	op->vdso_unread = vmpt_session_vdso_unread;
	op->map_ctx = &s;
	if (vmpt_script_opts_recording(op, &s.pd, s.intel_pt, s.have_info ? &s.info : NULL,
				       err, sizeof(err)) < 0 ||
	    script_filter_settle(sf, &s, op, err, sizeof(err)) < 0) {
		fprintf(stderr, "vmpt export: %s\n", err);
		status = 2;
		goto out;
	}
	/* perf's branch samples carry their IPC counts whatever is printed */
	op->f.set[VMPT_OUT_HW] |= VMPT_F_IPC;
	xo->script = op;
	x = vmpt_export_new(xo, err, sizeof(err));
	if (!x) {
		fprintf(stderr, "vmpt export: %s\n", err[0] ? err : vmpt_strerror(-VMPT_ERR_NOMEM));
		goto out;
	}
	op->sample_fn = vmpt_export_sample;
	op->sample_ctx = x;
	sc = vmpt_script_new(op);
	if (!sc) {
		fprintf(stderr, "vmpt export: %s\n", vmpt_strerror(-VMPT_ERR_NOMEM));
		goto out;
	}
	ops = *vmpt_script_consumer(sc);
	the_export = x;
	script_sideband = ops.sideband;
	ops.sideband = export_sideband;
	s.opts.progress = progress_start(&pg, "vmpt export");
	ret = vmpt_session_decode(&s, &ops, 1, stdout);
	progress_end(&pg);
	if (ret < 0) {
		fprintf(stderr, "vmpt export: %s\n", s.errmsg);
		goto out;
	}
	vmpt_script_free(sc);
	sc = NULL;
	if (vmpt_export_finish(x, &st, err, sizeof(err)) < 0) {
		fprintf(stderr, "vmpt export: %s\n", err);
		goto out;
	}
	fprintf(stderr, "vmpt export: %" PRIu64 " samples, %" PRIu64 " threads, %" PRIu64
		" dsos, %" PRIu64 " symbols, %" PRIu64 " call paths, %" PRIu64 " calls",
		st.samples, st.threads, st.dsos, st.symbols, st.call_paths, st.calls);
	if (xo->format == VMPT_EXPORT_FOLDED)
		fprintf(stderr, ", %" PRIu64 " stacks", st.stacks);
	if (xo->format == VMPT_EXPORT_CHROME || xo->format == VMPT_EXPORT_PERFETTO)
		fprintf(stderr, ", %" PRIu64 " slices", st.slices);
	if (st.errors)
		fprintf(stderr, ", %" PRIu64 " decoding errors", st.errors);
	if (st.bytes)
		fprintf(stderr, "; %" PRIu64 " bytes", st.bytes);
	fprintf(stderr, "\n");
	status = 0;
out:
	vmpt_script_free(sc);
	vmpt_export_free(x);
	vmpt_session_close(&s);
	return status;
}

int cmd_export(int argc, char **argv)
{
	enum { O_WEIGHT = 256, O_MAX_DEPTH, O_BRANCHES, O_NO_CALLS, O_ITRACE, O_PID, O_TID,
	       O_TIME, O_SYMFS, O_FORMAT };
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, O_FORMAT },
		{ "weight", required_argument, NULL, O_WEIGHT },
		{ "max-depth", required_argument, NULL, O_MAX_DEPTH },
		{ "branches", no_argument, NULL, O_BRANCHES },
		{ "no-calls", no_argument, NULL, O_NO_CALLS },
		{ "itrace", required_argument, NULL, O_ITRACE },
		{ "cpu", required_argument, NULL, 'C' },
		{ "pid", required_argument, NULL, O_PID },
		{ "tid", required_argument, NULL, O_TID },
		{ "comms", required_argument, NULL, 'c' },
		{ "time", required_argument, NULL, O_TIME },
		{ "symfs", required_argument, NULL, O_SYMFS },
		SCRIPT_IMAGE_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct vmpt_export_opts xo = { .format = -1 };
	struct script_images images = { 0 };
	struct script_filter sf = { 0 };
	struct vmpt_script_opts op;
	const char *input = "perf.data", *output = NULL, *itrace = NULL, *failed = NULL;
	struct vmpt_image *img = vmpt_image_new();
	FILE *out = NULL;
	int c, ret, status = 2, fmt = -1;

	if (!img)
		return 1;
	vmpt_script_opts_init(&op);
	while ((c = getopt_long(argc, argv, "i:o:C:c:h", longopts, NULL)) != -1) {
		const char *opt = NULL;
		char why[300] = "";
		char *end;

		for (size_t k = 0; longopts[k].name; k++)
			if (longopts[k].val == c)
				opt = longopts[k].name;
		if (c == SCRIPT_IMAGE_OPT_VMLINUX)
			xo.vmlinux = optarg;
		ret = script_images_option(&images, c, optarg, why, sizeof(why));
		if (ret != 0) {
			if (ret > 0)
				ret = 0;
		} else switch (c) {
		case 'i': input = optarg; break;
		case 'o': output = optarg; break;
		case O_FORMAT:
			fmt = vmpt_export_format_parse(optarg);
			if (fmt < 0) {
				fprintf(stderr, "vmpt export: unknown format '%s' (folded, chrome, "
					"perfetto, sqlite, postgresql)\n", optarg);
				goto out;
			}
			break;
		case O_WEIGHT:
			if (!strcmp(optarg, "insns"))
				xo.weight = VMPT_WEIGHT_INSNS;
			else if (!strcmp(optarg, "time"))
				xo.weight = VMPT_WEIGHT_TIME;
			else if (!strcmp(optarg, "samples"))
				xo.weight = VMPT_WEIGHT_SAMPLES;
			else {
				fprintf(stderr, "vmpt export: --weight %s: insns, time or "
					"samples\n", optarg);
				goto out;
			}
			break;
		case O_MAX_DEPTH:
			errno = 0;
			xo.max_depth = (unsigned)strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg) {
				fprintf(stderr, "vmpt export: --max-depth %s: a number\n", optarg);
				goto out;
			}
			break;
		case O_BRANCHES: xo.branches_only = 1; break;
		case O_NO_CALLS: xo.no_calls = 1; break;
		case O_ITRACE: itrace = optarg; break;
		case O_SYMFS: sf.symfs = optarg; break;
		case 'C': case O_PID: case O_TID: case 'c': case O_TIME:
			ret = script_filter_add(&sf, opt, optarg, why, sizeof(why));
			break;
		case 'h':
			export_usage(stdout);
			status = 0;
			goto out;
		default:
			export_usage(stderr);
			goto out;
		}
		if (ret < 0) {
			fprintf(stderr, "vmpt export: --%s %s: %s\n", opt, optarg,
				why[0] ? why : vmpt_strerror(ret));
			goto out;
		}
	}
	if (fmt < 0 && optind < argc) {
		fmt = vmpt_export_format_parse(argv[optind]);
		if (fmt < 0) {
			fprintf(stderr, "vmpt export: unknown format '%s' (folded, chrome, "
				"perfetto, sqlite, postgresql)\n", argv[optind]);
			goto out;
		}
		optind++;
	}
	if (fmt < 0) {
		export_usage(stderr);
		goto out;
	}
	if (optind < argc) {
		fprintf(stderr, "vmpt export: unexpected argument '%s'\n", argv[optind]);
		goto out;
	}
	xo.format = fmt;
	if (!itrace)
		itrace = fmt == VMPT_EXPORT_SQLITE || fmt == VMPT_EXPORT_POSTGRESQL ? "bep" : "be";
	{
		char why[300];

		if (vmpt_itrace_parse(itrace, &op.it, why, sizeof(why)) < 0) {
			fprintf(stderr, "vmpt export: %s\n", why);
			goto out;
		}
	}
	if (fmt == VMPT_EXPORT_SQLITE || fmt == VMPT_EXPORT_POSTGRESQL) {
		struct stat sb;

		if (!output) {
			fprintf(stderr, "vmpt export: %s needs -o %s\n", argv[optind - 1],
				fmt == VMPT_EXPORT_SQLITE ? "FILE.db" : "DBNAME");
			goto out;
		}
		if (fmt == VMPT_EXPORT_SQLITE && stat(output, &sb) == 0) {
			fprintf(stderr, "vmpt export: %s already exists\n", output);
			goto out;
		}
		xo.db = output;
	} else if (output && strcmp(output, "-")) {
		out = fopen(output, "w");
		if (!out) {
			fprintf(stderr, "vmpt export: %s: %s\n", output, strerror(errno));
			status = 1;
			goto out;
		}
		xo.out = out;
	} else if (fmt == VMPT_EXPORT_PERFETTO && isatty(1)) {
		fprintf(stderr, "vmpt export: perfetto writes a binary trace: give -o FILE\n");
		goto out;
	} else {
		xo.out = stdout;
	}
	op.guest_code = images.guest_code;
	ret = script_images_add(&images, img, &failed);
	if (ret < 0) {
		fprintf(stderr, "vmpt export: %s: %s\n", failed,
			ret == -VMPT_ERR_IO ? strerror(errno) : vmpt_strerror(ret));
		status = 1;
		goto out;
	}
	status = export_perf_data(input, img, &op, &sf, &xo);
	if (out && fclose(out) != 0 && status == 0) {
		fprintf(stderr, "vmpt export: %s: %s\n", output, strerror(errno));
		status = 1;
	}
	out = NULL;
out:
	if (out)
		fclose(out);
	if (xo.out == stdout && (fflush(stdout) != 0 || ferror(stdout)) && status == 0) {
		fprintf(stderr, "vmpt export: writing output: %s\n", strerror(errno ? errno : EIO));
		status = 1;
	}
	script_filter_free(&sf);
	script_images_free(&images);
	vmpt_image_free(img);
	return status;
}
