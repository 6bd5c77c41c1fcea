/* SPDX-License-Identifier: MIT */
/* vmpt archive: copy what a recording's trace ran (its mapped binaries,
 * the vdso, the kernel's text) into the recording's sysroot, so that
 * vmpt script decodes it on another machine (docs/archive.md).
 */
#include "builtin.h"
#include "vmpt/archive.h"
#include "vmpt/error.h"
#include "vmpt/kcore.h"
#include "vmpt/session.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void archive_usage(FILE *out)
{
	fprintf(out,
		"usage: vmpt archive [OPTIONS] [-i] REC\n"
		"Copies into REC's sysroot (DIR/root of a recording directory, FILE.root\n"
		"beside a file) every binary REC maps, by path and by build-id, taken\n"
		"from perf's build-id cache (~/.debug) or its path when its build-id is\n"
		"the recorded one; the vdso; the kernel's text (kcore_dir) when REC\n"
		"traced kernel code and has none.\n"
		"  -i REC           the recording (default perf.data)\n"
		"  --no-kcore       leave the kernel's text out\n"
		"  -q, --quiet      no line per file\n");
}

int cmd_archive(int argc, char **argv)
{
	enum { O_NO_KCORE = 256 };
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "no-kcore", no_argument, NULL, O_NO_KCORE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *rec = NULL;
	int no_kcore = 0, quiet = 0, c, ret;
	struct vmpt_archive_stats st;
	char err[1024], root[4096], kdir[4200];

	while ((c = getopt_long(argc, argv, "i:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': rec = optarg; break;
		case 'q': quiet = 1; break;
		case O_NO_KCORE: no_kcore = 1; break;
		case 'h': archive_usage(stdout); return 0;
		default: archive_usage(stderr); return 2;
		}
	}
	if (optind < argc && !rec)
		rec = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "vmpt archive: one recording at a time ('%s' too)\n", argv[optind]);
		return 2;
	}
	if (!rec)
		rec = "perf.data";
	if (vmpt_session_sysroot(rec, root, sizeof(root)) < 0) {
		fprintf(stderr, "vmpt archive: %s: path too long\n", rec);
		return 2;
	}
	if (!quiet)
		printf("%s:\n", root);
	ret = vmpt_archive(rec, &st, quiet ? NULL : stdout, err, sizeof(err));
	fflush(stdout);
	if (ret < 0) {
		fprintf(stderr, "vmpt archive: %s\n", err);
		return 1;
	}
	if (st.kernel && !st.have_kcore && !no_kcore) {
		struct vmpt_kcore_stats ks;

		snprintf(kdir, sizeof(kdir), "%s/kcore_dir", root);
		if (vmpt_kcore_copy("/proc", kdir, &ks, err, sizeof(err)) < 0) {
			fprintf(stderr, "vmpt archive: warning: the kernel's text not copied: %s "
				"(as root, or --no-kcore)\n", err);
		} else {
			st.have_kcore = 1;
			if (!quiet)
				printf("  kcore_dir (%" PRIu64 " bytes of kernel text and modules)\n",
				       ks.bytes);
		}
	}
	printf("vmpt archive: %zu binar%s (%" PRIu64 " bytes) in %s", st.files,
	       st.files == 1 ? "y" : "ies", st.bytes, root);
	if (st.missing)
		printf(", %zu missing", st.missing);
	if (st.changed)
		printf(", %zu changed since the recording", st.changed);
	if (st.kernel)
		printf("; kernel text %s", st.have_kcore ? "in kcore_dir" : "not archived");
	printf("\n");
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "vmpt archive: writing output failed\n");
		return 1;
	}
	return 0;
}
