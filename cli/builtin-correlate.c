/* SPDX-License-Identifier: MIT */
/* vmpt correlate: the TSC offset (and scaling) of every VMCS of a VM
 * recording, and its guest TSC packets turned into host TSCs: into a new
 * perf.data (default), in place (--force), or not at all (--dry-run).
 * perf inject's --vm-time-correlation is accepted as perf has it.
 * --guest-data merges a guest's own recording instead, as perf inject's
 * option of that name (cli/correlate_guest_data.c).
 *
 * stdout: vmpt's report; stderr: perf's messages (with --dry-run or
 * --vm-time-correlation, exactly as perf inject prints them) and errors.
 */
#include "builtin.h"
#include "correlate_guest_data.h"
#include "vmpt/correlate.h"
#include "vmpt/error.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void correlate_usage(FILE *out)
{
	fprintf(out,
		"usage: vmpt correlate [-i PATH] [-o OUT] [--dry-run | --force]\n"
		"       vmpt correlate [-i PATH] --vm-time-correlation[=\"[dry-run] "
		"[OFFSET[:VMCS[,VMCS]...]]...\"] [--force]\n"
		"  -i PATH           the recording (default ./perf.data; perf's directory\n"
		"                    form too)\n"
		"  -o OUT            where the corrected recording goes (default PATH.corr)\n"
		"  --dry-run         report only; perf inject's dry-run lines on stderr\n"
		"  --report          report only, learned from the PSB+s alone (the\n"
		"                    packets are walked where that cannot give the walk's\n"
		"                    answer)\n"
		"  --walk            with --report: walk every packet\n"
		"  --force           rewrite PATH in place, as perf inject does\n"
		"  --vm-time-correlation[=ARGS]\n"
		"                    perf inject's option: perf's offsets (or the ones\n"
		"                    given, OFFSET for every VMCS or OFFSET:VMCS,...), perf's\n"
		"                    rewrite in place (needs --force unless dry-run)\n"
		"  -q                no report\n"
		"       vmpt correlate [-i PATH] -o OUT --guest-data=FILE,PID[,OFFSET[,SCALE]]\n"
		"                    [--vcpus FILE]\n"
		"  --guest-data=FILE,PID[,OFFSET[,SCALE]]\n"
		"                    merge the guest's perf.data FILE (recorded with perf\n"
		"                    record -a inside the VM of QEMU pid PID) as perf inject\n"
		"                    --guest-data does: host TSC = (guest TSC - OFFSET) / SCALE\n"
		"  --vcpus FILE      vCPU map ('vcpu N tid T source S' lines) instead of\n"
		"                    PATH.vcpus or QEMU's thread names 'CPU n/KVM'\n"
		"See docs/correlate.md and docs/guest-merge.md.\n");
}

static void fmt_time(const struct vmpt_corr *c, uint64_t tsc, char *buf, size_t len)
{
	uint64_t ns = vmpt_corr_tsc_to_time(c, tsc);

	if (ns)
		snprintf(buf, len, "%" PRIu64 ".%06" PRIu64, ns / 1000000000,
			 ns % 1000000000 / 1000);
	else
		snprintf(buf, len, "%#" PRIx64, tsc);
}

static const char *source_name(enum vmpt_tsc_source s)
{
	switch (s) {
	case VMPT_TSC_FROM_TRACE: return "trace";
	case VMPT_TSC_FROM_KVM: return "kvm";
	case VMPT_TSC_FROM_USER: return "user";
	default: return "unknown";
	}
}

static void report(const struct vmpt_corr *c, FILE *f)
{
	size_t n, nm;
	const struct vmpt_tsc_segment *s = vmpt_corr_segments(c, &n);
	const char *const *msgs = vmpt_corr_messages(c, &nm);
	uint64_t guest, patched, psbs, ambiguous, walked;

	vmpt_corr_counts(c, &guest, &patched);
	if (vmpt_corr_psb_only(c, &psbs, &ambiguous, &walked))
		fprintf(f, "# %s: %zu segment(s), learned from %" PRIu64 " PSB+(s) alone (%"
			PRIu64 " bytes walked around %" PRIu64 " no two host PSB+s bracket)\n",
			vmpt_corr_path(c), n, psbs, walked, ambiguous);
	else
		fprintf(f, "# %s: %zu segment(s), %" PRIu64 " guest TSC packet(s), %" PRIu64
			" to rewrite\n", vmpt_corr_path(c), n, guest, patched);
	fprintf(f, "# VMCS     vCPU threads  source  TSC offset          ratio[/multiplier] "
		"samples agree max-residual  host time (s)           TSC packets\n");
	for (size_t i = 0; i < n; i++) {
		char vcpu[16] = "-", tids[48] = "-", ratio[48] = "1", t0[32], t1[32];
		int len = 0;

		if (s[i].vcpu >= 0)
			snprintf(vcpu, sizeof(vcpu), "%d", s[i].vcpu);
		for (int t = 0; t < s[i].n_tids && len < (int)sizeof(tids) - 12; t++)
			len += snprintf(tids + len, sizeof(tids) - (size_t)len, "%s%d",
					t ? "," : "", s[i].tids[t]);
		if (s[i].scale.mult)
			snprintf(ratio, sizeof(ratio), "%.9f/%#" PRIx64,
				 (double)s[i].scale.mult / (double)(1ull << s[i].scale.frac_bits),
				 s[i].scale.mult);
		fmt_time(c, s[i].first, t0, sizeof(t0));
		fmt_time(c, s[i].last, t1, sizeof(t1));
		fprintf(f, "%#-10" PRIx64 " %-4s %-8s %-7s %#-19" PRIx64 " %-18s %-7" PRIu64
			" %-5" PRIu64 " %-13" PRIu64 " %s-%s %" PRIu64 "\n", s[i].vmcs, vcpu, tids,
			source_name(s[i].source), s[i].scale.offset, ratio, s[i].samples,
			s[i].agree, s[i].max_residual, t0, t1, s[i].tsc_packets);
	}
	for (size_t i = 0; i < nm; i++)
		fprintf(f, "note: %s\n", msgs[i]);
}

int cmd_correlate(int argc, char **argv)
{
	enum { OPT_GUEST_DATA = 0x100, OPT_VCPUS, OPT_REPORT, OPT_WALK };
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "force", no_argument, NULL, 'f' },
		{ "vm-time-correlation", optional_argument, NULL, 'V' },
		{ "guest-data", required_argument, NULL, OPT_GUEST_DATA },
		{ "vcpus", required_argument, NULL, OPT_VCPUS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "report", no_argument, NULL, OPT_REPORT },
		{ "walk", no_argument, NULL, OPT_WALK },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct vmpt_corr_config cfg = { 0 };
	const char *input = "perf.data", *output = NULL, *perf_args = NULL;
	const char *guest_data = NULL, *vcpus = NULL;
	int dry_run = 0, force = 0, perf_mode = 0, quiet = 0, c, ret, status = 1;
	int report_only = 0, walk = 0;
	char *def_out = NULL;
	struct vmpt_corr *corr = NULL;

	while ((c = getopt_long(argc, argv, "i:o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': input = optarg; break;
		case 'o': output = optarg; break;
		case 'n': dry_run = 1; break;
		case 'f': force = 1; break;
		case 'V':
			perf_mode = 1;
			perf_args = optarg;
			break;
		case 'q': quiet = 1; break;
		case OPT_GUEST_DATA: guest_data = optarg; break;
		case OPT_VCPUS: vcpus = optarg; break;
		case OPT_REPORT: report_only = 1; break;
		case OPT_WALK: walk = 1; break;
		case 'h':
			correlate_usage(stdout);
			return 0;
		default:
			correlate_usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		correlate_usage(stderr);
		return 2;
	}
	if (guest_data) {
		if (!output || dry_run || force || perf_mode) {
			fprintf(stderr, "vmpt correlate: %s\n", !output ?
				"--guest-data needs -o OUTPUT (written out of place)" :
				"--guest-data goes without --dry-run, --force and "
				"--vm-time-correlation");
			return 2;
		}
		return correlate_guest_data(guest_data, input, output, vcpus);
	}
	if (walk && !report_only) {
		fprintf(stderr, "vmpt correlate: --walk goes with --report\n");
		return 2;
	}
	if (report_only && (output || dry_run || force || perf_mode)) {
		fprintf(stderr, "vmpt correlate: --report goes without -o, --dry-run, --force "
			"and --vm-time-correlation\n");
		return 2;
	}
	if ((force || perf_mode) && output) {
		fprintf(stderr, "Output file name must not be specified for in-place updating\n");
		return 2;
	}
	cfg.perf_patches = (uint8_t)perf_mode;
	cfg.psb_only = (uint8_t)(report_only && !walk);
	/* perf's messages where perf inject prints them: a dry run, or
	 * perf's own rewrite.
	 */
	cfg.perf_log = dry_run || perf_mode ? stderr : NULL;
	dry_run |= report_only;
	ret = vmpt_corr_open(&corr, input, &cfg);
	if (ret == 0 && perf_mode) {
		int perf_dry = 0;

		ret = vmpt_corr_parse_perf_args(corr, perf_args, &perf_dry);
		dry_run |= perf_dry;
		if (ret == 0 && !dry_run && !force) {
			fprintf(stderr, "The input file would be updated in place, the --force "
				"option is required.\n");
			status = 2;
			goto out;
		}
	}
	if (ret == 0)
		ret = vmpt_corr_run(corr);
	if (ret < 0) {
		fprintf(stderr, "vmpt correlate: %s\n",
			corr ? vmpt_corr_errmsg(corr) : vmpt_strerror(ret));
		goto out;
	}
	if (!quiet)
		report(corr, stdout);
	if (dry_run) {
		status = 0;
		goto out;
	}
	if (!force && !perf_mode) {
		if (asprintf(&def_out, "%s.corr", input) < 0)
			goto out;
		output = output ? output : def_out;
	}
	ret = vmpt_corr_write(corr, force || perf_mode ? NULL : output);
	if (ret < 0) {
		fprintf(stderr, "vmpt correlate: %s\n", vmpt_corr_errmsg(corr));
		goto out;
	}
	if (!quiet && !perf_mode)
		printf("# wrote %s\n", force ? input : output);
	status = 0;
out:
	fflush(stdout);
	vmpt_corr_free(corr);
	free(def_out);
	return status;
}
