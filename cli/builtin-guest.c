/* SPDX-License-Identifier: MIT */
/* vmpt guest: drive vmpt-agent in a guest over SSH (docs/guest.md). */
#include "builtin.h"
#include "guest_options.h"
#include "vmpt/error.h"
#include "vmpt/guest.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: vmpt guest collect ssh://user@host[:port] [OPTIONS] [-- CMD ARGS]\n"
		"       vmpt guest check ssh://user@host[:port] [OPTIONS]\n"
		"       vmpt guest maps REC\n\n"
		"collect: record guest sideband (until CMD, run in the guest, ends;\n"
		"         or for --duration; or until Ctrl-C) and fetch the guest\n"
		"         binaries it names into DIR/guest (see docs/guest.md)\n"
		"check:   is the guest ready: what lining its sideband up with the\n"
		"         host's trace needs (no kvmclock, a stable TSC as clocksource,\n"
		"         perf's cap_user_time_zero, BPF JIT off), each problem's fix\n"
		"maps:    the code the guest side of a recording maps (REC.guest/,\n"
		"         REC/guest/ or DIR/guest/), by process, and whether it is in\n"
		"         the sysroot\n\n"
		"  -o, --output DIR          recording directory (default vmpt.data)\n"
		"      --kcore               also fetch the guest's compact kcore\n"
		"      --no-binaries         do not fetch the guest binaries\n"
		"  -d, --duration SEC        record this long (without CMD)\n"
		"  -i, --identity FILE       private key (default: ssh-agent, ~/.ssh/id_*)\n"
		"      --known-hosts FILE    (default ~/.ssh/known_hosts)\n"
		"      --accept-new-host-key trust and remember an unknown host key\n"
		"      --agent PATH          the vmpt-agent to deploy\n"
		"      --remote-dir DIR      where it goes in the guest (default .cache/vmpt)\n"
		"      --max-file-size BYTES largest file taken from the guest (default 1 GiB)\n"
		"      --max-total-size BYTES all files taken from the guest together\n"
		"                            (default 4 GiB; 64 MiB are always left free)\n"
		"      --timeout SEC         longest silence from the guest (default 120)\n");
}

static int fail(struct vmpt_guest *g, int ret)
{
	fprintf(stderr, "vmpt guest: %s\n", g ? vmpt_guest_errmsg(g) : vmpt_strerror(ret));
	vmpt_guest_close(g);
	return 1;
}

static int collect(struct vmpt_guest *g, const char *dir, char **cmd, double duration,
		   unsigned what)
{
	struct vmpt_guest_fetch_stats st;
	struct sigaction sa = { .sa_handler = on_interrupt };
	char gdir[4200];
	int ret;

	ret = vmpt_guest_start(g, cmd);
	if (ret)
		return fail(g, ret);
	if (!cmd) {
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		fprintf(stderr, "vmpt guest: recording guest sideband%s\n",
			duration > 0 ? "" : "; Ctrl-C stops");
		for (double t = 0; !interrupted && (duration <= 0 || t < duration); t += 0.05)
			usleep(50000);
	}
	snprintf(gdir, sizeof(gdir), "%s/guest", dir);
	mkdir(dir, 0700);
	ret = vmpt_guest_stop(g, gdir);
	if (!ret && what)
		ret = vmpt_guest_fetch(g, gdir, what, &st);
	if (ret)
		return fail(g, ret);
	if (what)
		printf("guest: %u files (%llu bytes) in %s, %u missing, %u rejected\n",
		       st.files, (unsigned long long)st.bytes, gdir, st.missing, st.rejected);
	vmpt_guest_close(g);
	return 0;
}

struct args {
	struct vmpt_guest_opts o;
	const char *dir;
	unsigned what;
	double duration;
};

/* Options up to the next non-option.  -1 to go on, else the exit status. */
static int parse_options(int argc, char **argv, struct args *a)
{
	enum { OPT_KCORE = 256, OPT_NO_BIN };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "kcore", no_argument, NULL, OPT_KCORE },
		{ "no-binaries", no_argument, NULL, OPT_NO_BIN },
		GUEST_LONGOPTS(""),
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, ret;

	while ((c = getopt_long(argc, argv, "+o:d:i:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': a->dir = optarg; break;
		case 'd': a->duration = atof(optarg); break;
		case 'i': a->o.identity = optarg; break;
		case OPT_KCORE: a->what |= VMPT_GUEST_FETCH_KCORE; break;
		case OPT_NO_BIN: a->what &= ~(unsigned)VMPT_GUEST_FETCH_BINARIES; break;
		case 'h': usage(stdout); return 0;
		default:
			ret = guest_option(&a->o, c, optarg);
			if (ret > 0)
				break;
			if (ret < 0)
				return 2;
			usage(stderr);
			return 2;
		}
	}
	return -1;
}

int cmd_guest(int argc, char **argv)
{
	struct args a = { .o = { .log = stderr }, .dir = "vmpt.data",
			  .what = VMPT_GUEST_FETCH_BINARIES };
	struct vmpt_guest *g;
	const char *sub;
	int ret;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	sub = argv[1];
	if (!strcmp(sub, "maps")) {
		char err[1024];

		if (argc != 3) {
			usage(stderr);
			return 2;
		}
		ret = vmpt_guest_maps(argv[2], stdout, err, sizeof(err));
		if (ret)
			fprintf(stderr, "vmpt guest: %s\n", err);
		return ret ? 1 : 0;
	}
	if (strcmp(sub, "collect") && strcmp(sub, "check")) {
		fprintf(stderr, "vmpt guest: unknown subcommand '%s' (collect, check, "
			"maps)\n", sub);
		return 2;
	}
	argc--;
	argv++;
	optind = 1;
	ret = parse_options(argc, argv, &a);
	if (ret >= 0)
		return ret;
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	a.o.url = argv[optind++];
	/* getopt stopped at the URL: options may follow it too. */
	ret = parse_options(argc, argv, &a);
	if (ret >= 0)
		return ret;
	ret = vmpt_guest_open(&g, &a.o);
	if (ret)
		return fail(g, ret);
	if (!strcmp(sub, "check")) {
		char *report;
		int ready;

		ret = vmpt_guest_check(g, &report, &ready);
		if (ret)
			return fail(g, ret);
		fputs(report, stdout);
		free(report);
		vmpt_guest_close(g);
		return ready ? 0 : 1;
	}
	return collect(g, a.dir, optind < argc ? argv + optind : NULL, a.duration, a.what);
}
