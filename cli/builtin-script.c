/* SPDX-License-Identifier: MIT */
/* vmpt script: the instruction flow of a trace, printed the way perf script
 * prints Intel PT samples (--itrace, -F), from a raw trace with images
 * given like ptxed's, or from a perf.data.
 */
#include "builtin.h"
#include "script_images.h"
#include "vmpt/correlate.h"
#include "vmpt/error.h"
#include "vmpt/file.h"
#include "vmpt/flow.h"
#include "vmpt/image.h"
#include "vmpt/script_output.h"
#include "vmpt/session.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* perf.data; img holds the code given with --elf etc., cfg the --filter
 * ranges and a --retcomp/--noretcomp override of the recorded config.
 */
static int script_perf_data(const char *path, struct vmpt_image *img,
			    const struct vmpt_flow_config *cfg,
			    struct vmpt_script_opts *op, int jobs)
{
	struct vmpt_session s;
	int ret = vmpt_session_open(&s, path, img);

	if (ret == 0 && s.corr)
		vmpt_corr_summary(s.corr, stderr, "vmpt script");
	if (ret == 0 && op->guest_code)
		ret = vmpt_session_add_guest_code(&s);
	if (ret == 0) {
		memcpy(s.cfg.filter_a, cfg->filter_a, sizeof(cfg->filter_a));
		memcpy(s.cfg.filter_b, cfg->filter_b, sizeof(cfg->filter_b));
		s.cfg.n_filters = cfg->n_filters;
		if (cfg->retcomp != VMPT_RETCOMP_AUTO)
			s.cfg.retcomp = cfg->retcomp;
		op->image = s.image;
		op->have_tc = s.have_tc;
		op->tc = s.tc;
		ret = vmpt_session_script(&s, op, jobs, stdout);
	}
	if (ret < 0)
		fprintf(stderr, "vmpt script: %s\n", s.errmsg);
	vmpt_session_close(&s);
	return ret < 0;
}

static void script_usage(FILE *out)
{
	fprintf(out,
		"usage: vmpt script [OPTIONS] [-i perf.data]\n"
		"       vmpt script --pt TRACE [--elf FILE[@BASE]] [--raw FILE@ADDR]\n"
		"                   [--pagecache PREFIX] [--kcore FILE] [OPTIONS]\n"
		"images (any number, with --pt or a perf.data):\n"
		"  --elf FILE[@BASE], --raw FILE@ADDR, --pagecache PREFIX, --kcore FILE\n"
		"                    code of every machine; of the host once a guest\n"
		"                    image or --guest-code is given\n"
		"  --vmlinux FILE    the host kernel, named [kernel.kallsyms] as perf's\n"
		"  --guest-elf FILE[@BASE], --guest-raw FILE@ADDR,\n"
		"  --guest-pagecache PREFIX, --guest-kcore FILE\n"
		"                    code of the guest (PIP.NR=1)\n"
		"  --vmcs BASE|any   the guest images after it serve only the guest whose\n"
		"                    VMCS base address is BASE (any: every guest)\n"
		"  --guest-code      the guest runs the host program's code at the same\n"
		"                    addresses (KVM selftests, as perf's --guest-code): with\n"
		"                    a perf.data its processes' mappings, with --pt the\n"
		"                    --elf images\n"
		"output:\n"
		"  --itrace=LETTERS  i[PERIOD] instructions, b branches, c calls, r returns,\n"
		"                    e errors, Z timeless (periods: i100us, i0ns, i1000i)\n"
		"  -F FIELDS         ip,addr,sym,symoff,dso,flags,insn,time,cpu,pid,tid,comm,ipc\n"
		"                    (+FIELDS adds, -FIELDS removes)\n"
		"  --call-trace      calls and returns, indented by depth\n"
		"  --insn-trace      every instruction with its disassembly\n"
		"  --filter A-B      the IP filter range the trace was recorded with\n"
		"  --retcomp, --noretcomp\n"
		"                    return compression was on / off (default: as the\n"
		"                    trace shows it, or a perf.data's config)\n"
		"  -j N              decode N pieces of the trace in parallel\n"
		"  --ns              sample times in nanoseconds\n");
}

int cmd_script(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pt", required_argument, NULL, 'p' },
		{ "elf", required_argument, NULL, 'E' },
		{ "raw", required_argument, NULL, 'R' },
		{ "pagecache", required_argument, NULL, 'P' },
		{ "kcore", required_argument, NULL, 'K' },
		{ "vmlinux", required_argument, NULL, 'V' },
		{ "guest-elf", required_argument, NULL, 'e' },
		{ "guest-raw", required_argument, NULL, 'w' },
		{ "guest-pagecache", required_argument, NULL, 'g' },
		{ "guest-kcore", required_argument, NULL, 'k' },
		{ "vmcs", required_argument, NULL, 'v' },
		{ "guest-code", no_argument, NULL, 'G' },
		{ "itrace", required_argument, NULL, 'I' },
		{ "fields", required_argument, NULL, 'F' },
		{ "call-trace", no_argument, NULL, 'C' },
		{ "insn-trace", no_argument, NULL, 'T' },
		{ "filter", required_argument, NULL, 'f' },
		{ "retcomp", no_argument, NULL, 'r' },
		{ "noretcomp", no_argument, NULL, 'n' },
		{ "input", required_argument, NULL, 'i' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "ns", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct script_images images = { 0 };
	struct vmpt_flow_config cfg = { 0 };
	struct vmpt_script_opts op = { 0 };
	struct vmpt_script_task unknown = { .cpu = -1, .pid = -1, .tid = -1 };
	int jobs = 1;
	const char *pt = NULL, *input = NULL;
	struct vmpt_image *img = vmpt_image_new();
	struct vmpt_file trace = { 0 };
	const char *fields = NULL;
	const char *failed = NULL;
	size_t bad_at;
	int c, ret = 0, status = 1;

	if (!img)
		return 1;
	op.it.branches = 1;
	op.it.errors = 1;
	while ((c = getopt_long(argc, argv, "F:i:j:h", longopts, NULL)) != -1) {
		const char *what = optarg;

		switch (c) {
		case 'p': pt = optarg; break;
		case 'i': input = optarg; break;
		case 'E': case 'e':
			ret = script_images_parse(&images, SCRIPT_IMAGE_ELF, c == 'e', optarg);
			break;
		case 'R': case 'w':
			ret = script_images_parse(&images, SCRIPT_IMAGE_RAW, c == 'w', optarg);
			break;
		case 'P': case 'g':
			ret = script_images_parse(&images, SCRIPT_IMAGE_PAGECACHE, c == 'g',
						  optarg);
			break;
		case 'K': case 'k':
			ret = script_images_parse(&images, SCRIPT_IMAGE_KCORE, c == 'k', optarg);
			break;
		case 'V':
			ret = script_images_parse(&images, SCRIPT_IMAGE_VMLINUX, 0, optarg);
			break;
		case 'v': ret = script_images_vmcs(&images, optarg); break;
		case 'G':
			images.guest_code = 1;
			op.guest_code = 1;
			break;
		case 'I':
			if (vmpt_itrace_parse(optarg, &op.it) < 0)
				goto bad_arg;
			break;
		case 'F': fields = optarg; break;
		case 'C':
			op.call_trace = 1;
			op.it = (struct vmpt_itrace){ .calls = 1, .returns = 1, .errors = 1 };
			break;
		case 'T':
			op.it = (struct vmpt_itrace){ .insns = 1, .period_time = 1, .errors = 1 };
			op.fields |= VMPT_F_INSN;
			op.disasm = 1;
			break;
		case 'f': {
			char *dash = strchr(optarg, '-');

			if (!dash || cfg.n_filters == 4)
				goto bad_arg;
			cfg.filter_a[cfg.n_filters] = strtoull(optarg, NULL, 0);
			cfg.filter_b[cfg.n_filters++] = strtoull(dash + 1, NULL, 0);
			break;
		}
		case 'r': cfg.retcomp = VMPT_RETCOMP_ON; break;
		case 'n': cfg.retcomp = VMPT_RETCOMP_OFF; break;
		case 'N': op.ns = 1; break;
		case 'j':
			jobs = atoi(optarg);
			if (jobs < 1)
				goto bad_arg;
			break;
		case 'h':
			script_usage(stdout);
			status = 0;
			goto out;
		default:
			script_usage(stderr);
			status = 2;
			goto out;
		}
		if (ret == -VMPT_ERR_INVAL)
			goto bad_arg;
		if (ret < 0) {
			fprintf(stderr, "vmpt script: %s\n", vmpt_strerror(ret));
			goto out;
		}
		continue;
bad_arg:
		fprintf(stderr, "vmpt script: bad argument '%s'\n", what);
		status = 2;
		goto out;
	}
	/* perf's defaults for Intel PT, less what raw mode cannot know. */
	op.fields |= op.it.insns ? VMPT_F_IP | VMPT_F_SYM | VMPT_F_SYMOFF | VMPT_F_DSO :
		     VMPT_F_FLAGS | VMPT_F_IP | VMPT_F_SYM | VMPT_F_SYMOFF | VMPT_F_DSO | VMPT_F_ADDR;
	if (op.call_trace)
		op.fields = VMPT_F_SYM | VMPT_F_DSO;
	if (fields && vmpt_script_fields_parse(fields, &op.fields, &bad_at) < 0) {
		fprintf(stderr, "vmpt script: unknown field '%.*s'\n",
			(int)strcspn(fields + bad_at, ","), fields + bad_at);
		status = 2;
		goto out;
	}
	ret = script_images_add(&images, img, &failed);
	if (ret < 0) {
		fprintf(stderr, "vmpt script: %s: %s%s%s\n", failed, vmpt_strerror(ret),
			ret == -VMPT_ERR_IO ? ": " : "",
			ret == -VMPT_ERR_IO ? strerror(errno) : "");
		goto out;
	}
	if (!pt) {
		status = script_perf_data(input ? input : "perf.data", img, &cfg, &op, jobs);
		goto out;
	}
	ret = vmpt_file_map(&trace, pt);
	if (ret < 0) {
		fprintf(stderr, "vmpt script: %s: %s\n", pt,
			ret == -VMPT_ERR_IO ? strerror(errno) : vmpt_strerror(ret));
		goto out;
	}
	cfg.image = img;
	op.image = img;
	cfg.begin = trace.data;
	cfg.end = trace.data + trace.size;
	ret = vmpt_script_run(&cfg, &op, &unknown, 0, jobs, stdout);
	if (ret < 0)
		fprintf(stderr, "vmpt script: %s: %s\n", pt, vmpt_strerror(ret));
	status = ret < 0;
	vmpt_file_unmap(&trace);
out:
	fflush(stdout);
	script_images_free(&images);
	vmpt_image_free(img);
	return status;
}
