/* SPDX-License-Identifier: MIT */
#include "builtin.h"
#include "vmpt/debuginfod.h"
#include "vmpt/script_output.h"

#include <stdio.h>
#include <string.h>

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct command commands[] = {
	{ "dump", cmd_dump, "list the Intel PT packets of a raw trace or perf.data" },
	{ "script", cmd_script, "the instruction flow of a trace, like perf script" },
	{ "report", cmd_report, "VM exits explained (--vm-exits), or hot spots per symbol" },
	{ "correlate", cmd_correlate, "guest TSCs as host TSCs; a guest's own recording on host time" },
	{ "guest", cmd_guest, "collect guest sideband, kcore and binaries over SSH" },
	{ "record", cmd_record, "record Intel PT of a VM's vCPU threads into perf.data" },
	{ "doctor", cmd_doctor, "check whether this host can trace its guests" },
	{ "archive", cmd_archive, "copy the binaries a recording ran into it, to decode elsewhere" },
	{ "export", cmd_export, "a trace as a timeline, flame graph or perf's SQL tables" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: vmpt COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(out, "\n'vmpt COMMAND --help' tells more.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	/* For shell completion (tools/completion/vmpt.bash), as git's
	 * --list-cmds: words that come from the code, not from a copy.
	 */
	if (!strcmp(argv[1], "--list-cmds")) {
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			printf("%s\n", commands[i].name);
		return 0;
	}
	if (!strcmp(argv[1], "--list-fields")) {
		for (size_t i = 0; vmpt_script_field_name(i); i++)
			printf("%s\n", vmpt_script_field_name(i));
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("vmpt %s\n", VMPT_VERSION);
		return 0;
	}
	vmpt_debuginfod_set_warn(stderr);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "vmpt: '%s' is not a vmpt command\n\n", argv[1]);
	usage(stderr);
	return 2;
}
