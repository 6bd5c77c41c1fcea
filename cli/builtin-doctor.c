/* SPDX-License-Identifier: MIT */
#include "builtin.h"

#include "vmpt/doctor.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void print_line(void *ctx, enum vmpt_doctor_status status, const char *check,
		       const char *text)
{
	(void)ctx;
	static const char *const tag[] = { "ok     ", "info   ", "PROBLEM" };
	printf("%s %s: %s\n", tag[status], check, text);
}

int cmd_doctor(int argc, char **argv)
{
	struct vmpt_doctor_opts o = {
		.sysfs_root = "/sys", .procfs_root = "/proc", .dev_root = "/dev",
		.libvirt_uri = "qemu:///system", .as_root = geteuid() == 0,
	};
	static const struct option longopts[] = {
		{ "sysfs-root", required_argument, NULL, 's' },
		{ "procfs-root", required_argument, NULL, 'p' },
		{ "dev-root", required_argument, NULL, 'd' },
		{ "connect", required_argument, NULL, 'c' },
		{ "no-libvirt", no_argument, NULL, 'n' },
		{ "as-user", no_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's': o.sysfs_root = optarg; break;
		case 'p': o.procfs_root = optarg; break;
		case 'd': o.dev_root = optarg; break;
		case 'c': o.libvirt_uri = optarg; break;
		case 'n': o.libvirt_uri = NULL; break;
		case 'u': o.as_root = 0; break;
		case 'h':
			printf("usage: vmpt doctor [--sysfs-root DIR] [--procfs-root DIR] "
			       "[--dev-root DIR] [-c URI | --no-libvirt]\n"
			       "                   [--as-user]\n\n"
			       "Checks whether this host can record its guests with Intel "
			       "PT: one line per check,\nok or the problem and its fix. Exit "
			       "status 1 when there are problems.\n"
			       "--as-user judges the limits as for a user without root.\n");
			return 0;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vmpt doctor: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	/* A root that is not there would read as a machine without
	 * anything: say so instead.
	 */
	const char *roots[][2] = { { "sysfs-root", o.sysfs_root },
				   { "procfs-root", o.procfs_root },
				   { "dev-root", o.dev_root } };
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		struct stat st;

		if (stat(roots[i][1], &st) != 0) {
			fprintf(stderr, "vmpt doctor: --%s %s: %s\n", roots[i][0],
				roots[i][1], strerror(errno));
			return 2;
		}
		if (!S_ISDIR(st.st_mode)) {
			fprintf(stderr, "vmpt doctor: --%s %s: not a directory\n",
				roots[i][0], roots[i][1]);
			return 2;
		}
	}
	int problems = vmpt_doctor_run(&o, print_line, NULL);
	if (problems < 0) {
		fprintf(stderr, "vmpt doctor: out of memory\n");
		return 2;
	}
	printf("%d problem%s\n", problems, problems == 1 ? "" : "s");
	return problems ? 1 : 0;
}
