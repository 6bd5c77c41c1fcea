/* SPDX-License-Identifier: MIT */
/* vmpt correlate: guest and host on one time line.  This minimal command
 * takes --guest-data (cli/correlate_guest_data.c); the TSC-offset side
 * joins it.
 */
#include "builtin.h"
#include "correlate_guest_data.h"

#include <getopt.h>
#include <stdio.h>

static void correlate_usage(FILE *out)
{
	fprintf(out,
		"usage: vmpt correlate -i HOST.data -o OUT.data --guest-data=FILE,PID[,OFFSET[,SCALE]]\n"
		"  -i, --input FILE        the host recording (default perf.data)\n"
		"  -o, --output FILE       the merged recording (written out of place)\n"
		"  --guest-data=FILE,PID[,OFFSET[,SCALE]]\n"
		"                          merge the guest's perf.data FILE (recorded with\n"
		"                          perf record -a inside the VM of QEMU pid PID) as\n"
		"                          perf inject --guest-data does: host TSC =\n"
		"                          (guest TSC - OFFSET) / SCALE\n"
		"  --vcpus FILE            vCPU map ('vcpu N tid T source S' lines) instead of\n"
		"                          HOST.vcpus or QEMU's thread names 'CPU n/KVM'\n"
		"See docs/guest-merge.md.\n");
}

int cmd_correlate(int argc, char **argv)
{
	enum { OPT_GUEST_DATA = 0x100, OPT_VCPUS };
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "guest-data", required_argument, NULL, OPT_GUEST_DATA },
		{ "vcpus", required_argument, NULL, OPT_VCPUS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *input = "perf.data", *output = NULL, *guest_data = NULL, *vcpus = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "i:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': input = optarg; break;
		case 'o': output = optarg; break;
		case OPT_GUEST_DATA: guest_data = optarg; break;
		case OPT_VCPUS: vcpus = optarg; break;
		case 'h':
			correlate_usage(stdout);
			return 0;
		default:
			correlate_usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !guest_data || !output) {
		fprintf(stderr, "vmpt correlate: %s\n",
			optind != argc ? "unexpected arguments" :
			!guest_data ? "--guest-data is needed" : "-o OUTPUT is needed");
		correlate_usage(stderr);
		return 2;
	}
	return correlate_guest_data(guest_data, input, output, vcpus);
}
