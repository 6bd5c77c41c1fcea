/* SPDX-License-Identifier: MIT */
/* vmpt report: a recording's VM exits explained (--vm-exits), or its hot
 * spots as perf report --itrace counts them, as text tables or JSON
 * (docs/report.md).
 */
#include "builtin.h"
#include "progress.h"
#include "script_filter.h"
#include "script_images.h"
#include "script_session.h"
#include "vmpt/error.h"
#include "vmpt/image.h"
#include "vmpt/report.h"
#include "vmpt/session.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void report_usage(FILE *out)
{
	fprintf(out,
		"usage: vmpt report [--vm-exits] [OPTIONS] [-i perf.data]\n"
		"  --vm-exits        every VM exit (vCPU, guest RIP, reason, host and guest\n"
		"                    time) and per reason, per vCPU: counts, totals, p50,\n"
		"                    p99, max, histograms, the guest RIPs that exit most\n"
		"  (default)         hot spots: instructions, branches, IPC per machine and\n"
		"                    --sort keys, as perf report --itrace=i0ns\n"
		"  --sort KEYS       machine,comm,pid,tid,dso,sym (default comm,dso,sym)\n"
		"  --percent-limit P leave out rows under P%% of the instructions\n"
		"  --time START,STOP | PERCENT   only that time (as vmpt script's)\n"
		"  --per-exit        --vm-exits: a row per exit too\n"
		"  --top N           guest RIPs shown (default 10)\n"
		"  --stdio           text tables (the default)\n"
		"  --json            JSON (docs/report.schema.json)\n"
		"images, as vmpt script's:\n"
		"  --elf FILE[@BASE], --raw FILE@ADDR, --pagecache PREFIX, --kcore FILE,\n"
		"  --vmlinux FILE, the same with guest- (--guestvmlinux FILE), --vmcs BASE,\n"
		"  --guest-code, --symfs DIR\n");
}

static int report_perf_data(const char *path, struct vmpt_image *img,
			    struct vmpt_report_opts *o, const char *symfs,
			    const char *time_str, int guest_code)
{
	struct vmpt_session_opts so = { .symfs = symfs, .warn = stderr };
	struct vmpt_report *r = NULL;
	struct vmpt_session s;
	struct progress pg;
	uint64_t *from = NULL, *to = NULL;
	int ret = script_session_open(&s, "vmpt report", path, img, &so, guest_code, NULL),
	    status = 1;

	if (ret < 0)
		goto out;
	if (!s.n_bufs) {
		fprintf(stderr, "vmpt report: no Intel PT data in %s\n", path);
		goto out;
	}
	s.cfg.perf_resync = 1;
	o->image = s.image;
	o->have_tc = s.have_tc;
	o->tc = s.tc;
	o->input = path;
	if (time_str) {
		int n = script_time_parse(time_str, s.pd.env.first_sample_time,
					  s.pd.env.last_sample_time, &from, &to);

		if (n < 0) {
			fprintf(stderr, "vmpt report: --time %s: invalid time string (START,STOP "
				"in seconds, or percentages A%%/N, A%%-B%%)\n", time_str);
			status = 2;
			goto out;
		}
		o->time_from = from;
		o->time_to = to;
		o->ntimes = (size_t)n;
	}
	r = vmpt_report_new(o);
	if (!r) {
		fprintf(stderr, "vmpt report: %s\n", vmpt_strerror(-VMPT_ERR_NOMEM));
		goto out;
	}
	s.opts.progress = progress_start(&pg, "vmpt report");
	ret = vmpt_session_decode(&s, vmpt_report_consumer(r), 1, stdout);
	progress_end(&pg);
	if (ret < 0) {
		fprintf(stderr, "vmpt report: %s\n", s.errmsg);
		goto out;
	}
	if (vmpt_report_print(r, stdout) < 0) {
		fprintf(stderr, "vmpt report: writing output: %s\n", strerror(errno));
		goto out;
	}
	status = 0;
out:
	vmpt_report_free(r);
	vmpt_session_close(&s);
	free(from);
	free(to);
	return status;
}

int cmd_report(int argc, char **argv)
{
	enum { O_VM_EXITS = 256, O_JSON, O_STDIO, O_SORT, O_PERCENT, O_TIME, O_PER_EXIT,
	       O_TOP, O_SYMFS };
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "vm-exits", no_argument, NULL, O_VM_EXITS },
		{ "json", no_argument, NULL, O_JSON },
		{ "stdio", no_argument, NULL, O_STDIO },
		{ "sort", required_argument, NULL, O_SORT },
		{ "percent-limit", required_argument, NULL, O_PERCENT },
		{ "time", required_argument, NULL, O_TIME },
		{ "per-exit", no_argument, NULL, O_PER_EXIT },
		{ "top", required_argument, NULL, O_TOP },
		SCRIPT_IMAGE_LONGOPTS,
		{ "symfs", required_argument, NULL, O_SYMFS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct script_images images = { 0 };
	struct vmpt_report_opts o;
	struct vmpt_image *img = vmpt_image_new();
	const char *input = NULL, *symfs = NULL, *time_str = NULL, *failed = NULL;
	int c, ret = 0, status = 2;
	char why[300];

	if (!img)
		return 1;
	vmpt_report_opts_init(&o);
	while ((c = getopt_long(argc, argv, "i:h", longopts, NULL)) != -1) {
		char *end;

		why[0] = 0;
		ret = script_images_option(&images, c, optarg, why, sizeof(why));
		if (ret < 0 && why[0]) {
			for (size_t k = 0; longopts[k].name; k++)
				if (longopts[k].val == c)
					fprintf(stderr, "vmpt report: --%s %s: %s\n",
						longopts[k].name, optarg, why);
			goto out;
		}
		if (ret != 0) {
			if (ret > 0)
				ret = 0;
		} else switch (c) {
		case 'i': input = optarg; break;
		case O_VM_EXITS: o.vm_exits = 1; break;
		case O_JSON: o.json = 1; break;
		case O_STDIO: o.json = 0; break;
		case O_PER_EXIT: o.per_exit = 1; break;
		case O_SORT:
			ret = vmpt_report_sort_parse(&o, optarg, why, sizeof(why));
			break;
		case O_PERCENT:
			errno = 0;
			o.percent_limit = strtod(optarg, &end);
			if (errno || *end || end == optarg || o.percent_limit < 0) {
				snprintf(why, sizeof(why), "--percent-limit %s: a percentage "
					 "(0.5, say)", optarg);
				ret = -VMPT_ERR_INVAL;
			}
			break;
		case O_TOP:
			errno = 0;
			o.top = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg) {
				snprintf(why, sizeof(why), "--top %s: a number of rows", optarg);
				ret = -VMPT_ERR_INVAL;
			}
			break;
		case O_TIME: time_str = optarg; break;
		case O_SYMFS: symfs = optarg; break;
		case 'h':
			report_usage(stdout);
			status = 0;
			goto out;
		default:
			report_usage(stderr);
			goto out;
		}
		if (ret < 0) {
			fprintf(stderr, "vmpt report: %s\n", why[0] ? why : vmpt_strerror(ret));
			goto out;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vmpt report: unexpected argument '%s'\n", argv[optind]);
		goto out;
	}
	ret = script_images_add(&images, img, &failed);
	if (ret < 0) {
		fprintf(stderr, "vmpt report: %s: %s\n", failed,
			ret == -VMPT_ERR_IO ? strerror(errno) : vmpt_strerror(ret));
		status = 1;
		goto out;
	}
	status = report_perf_data(input ? input : "perf.data", img, &o, symfs, time_str,
				  images.guest_code);
out:
	if ((fflush(stdout) != 0 || ferror(stdout)) && status == 0) {
		fprintf(stderr, "vmpt report: writing output: %s\n", strerror(errno ? errno : EIO));
		status = 1;
	}
	script_images_free(&images);
	vmpt_image_free(img);
	return status;
}
