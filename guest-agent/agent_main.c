/* SPDX-License-Identifier: MIT */
#include "agent.h"
#include "guest_pack.h"

#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(out,
		"usage: vmpt-agent COMMAND\n\n"
		"  record [-m PAGES] [-- CMD ARGS]  guest sideband until stdin closes\n"
		"                                   (or CMD exits), then the perf.data\n"
		"                                   as a reply stream on stdout\n"
		"  pack                             the files named on stdin (one a\n"
		"                                   line) as a reply stream\n"
		"  kcore DIR                        kcore, kallsyms, modules into DIR\n"
		"  check                            is this guest ready for vmpt\n"
		"  --version\n");
}

int main(int argc, char **argv)
{
	/* The host going away must not kill us mid-write silently: writes
	 * then fail with EPIPE and the subcommand reports it.
	 */
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--version")) {
		uint8_t *self;
		size_t size;

		if (agent_read_file("/proc/self/exe", &self, &size)) {
			printf("vmpt-agent %s\n", VMPT_VERSION);
			return 0;
		}
		printf("vmpt-agent %s fnv1a64:%016llx\n", VMPT_VERSION,
		       (unsigned long long)guest_fnv1a64(GUEST_FNV_INIT, self, size));
		free(self);
		return 0;
	}
	if (!strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "record"))
		return agent_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "pack"))
		return agent_pack(argc - 1, argv + 1);
	if (!strcmp(argv[1], "kcore"))
		return agent_kcore(argc - 1, argv + 1);
	if (!strcmp(argv[1], "check"))
		return agent_check(argc - 1, argv + 1);
	fprintf(stderr, "vmpt-agent: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
