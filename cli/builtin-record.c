/* SPDX-License-Identifier: MIT */
#include "builtin.h"
#include "guest_options.h"

#include "vmpt/error.h"
#include "vmpt/guest.h"
#include "vmpt/record.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Below this much free space a --guest recording says its fetch may not
 * fit (binaries and kcore of a guest: tens of MB). */
#define GUEST_SPACE (256ULL << 20)

static volatile sig_atomic_t stop_flag, snapshot_flag;

static void on_stop(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void on_snapshot(int sig)
{
	(void)sig;
	snapshot_flag = 1;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: vmpt record [OPTIONS] (--pid PID | --domain NAME | -a | -C CPUS | -- COMMAND [ARGS])\n"
		"       vmpt record [OPTIONS] (--pid PID | --domain NAME | -a | -C CPUS) -- COMMAND [ARGS]\n\n"
		"  -o, --output PATH      perf.data to write (default perf.data; a directory with --kcore);\n"
		"                         a previous one is kept as PATH.old\n"
		"  -e, --event SPEC       intel_pt/TERMS/MODS (default intel_pt//), or 'dummy' for the\n"
		"                         sideband only (machines without Intel PT); SYSTEM:NAME\n"
		"                         (any number: kvm:kvm_exit, kvm:*) a tracepoint beside it\n"
		"      --filter FILTERS   address filters: 'filter ADDR/SIZE@FILE, start ADDR, ...'\n"
		"  -p, --pid PID          a running QEMU: its vCPU threads\n"
		"      --qmp SOCKET       that QEMU's QMP socket (else from its command line)\n"
		"      --domain NAME      a libvirt domain: its vCPU threads\n"
		"  -c, --connect URI      libvirt URI (default qemu:///system)\n"
		"  -a, --all-cpus         per-CPU, system-wide on every CPU\n"
		"  -C, --cpu CPUS         per-CPU on these CPUs (0-3,6)\n"
		"  -m, --mmap-pages P[,A] data ring pages and AUX area pages (powers of two;\n"
		"                         sizes like 4M are converted to pages)\n"
		"  -S, --snapshot[=SIZE]  snapshot mode: take the AUX area on SIGUSR2, on\n"
		"                         'snapshot' in the control FIFO, and at the end\n"
		"      --control PATH     control FIFO (commands: snapshot, stop, enable, disable)\n"
		"      --duration SEC     stop after SEC seconds\n"
		"      --kcore            copy kernel text, kallsyms and modules into PATH/kcore_dir\n"
		"      --guest ssh://USER@HOST[:PORT]  also guest sideband and the guest binaries\n"
		"                         (and with --kcore its kcore) into PATH.guest/ (PATH/guest/\n"
		"                         with --kcore)\n"
		"      --guest-identity FILE, --guest-known-hosts FILE,\n"
		"      --guest-accept-new-host-key, --guest-agent PATH, --guest-remote-dir DIR,\n"
		"      --guest-max-file-size BYTES, --guest-max-total-size BYTES,\n"
		"      --guest-timeout SEC  (vmpt guest's options)\n"
		"      --sysfs-root DIR, --procfs-root DIR, --debugfs-root DIR\n"
		"  -q, --quiet\n\n"
		"A COMMAND with --pid, --domain, -a or -C only times the recording (as\n"
		"perf record -p PID -- sleep 1): it ends when the command exits.\n"
		"SIGINT or SIGTERM stop the recording; what was read is written first.\n");
}

/* "16", "4K", "2M": pages, from a count or a size. */
static int parse_pages(const char *s, unsigned *pages)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s)
		return -1;
	unsigned long long mul = 0;
	switch (*end) {
	case '\0': mul = 0; break;
	case 'k': case 'K': mul = 1ULL << 10; end++; break;
	case 'm': case 'M': mul = 1ULL << 20; end++; break;
	case 'g': case 'G': mul = 1ULL << 30; end++; break;
	default: return -1;
	}
	if (*end)
		return -1;
	if (mul)
		v = v * mul / (unsigned long long)sysconf(_SC_PAGESIZE);
	if (!v || v > (1ULL << 30))
		return -1;
	*pages = (unsigned)v;
	return 0;
}

static int parse_size(const char *s, uint64_t *size)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s)
		return -1;
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	else if (*end == 'g' || *end == 'G')
		v <<= 30, end++;
	if (*end || !v)
		return -1;
	*size = v;
	return 0;
}

int cmd_record(int argc, char **argv)
{
	struct vmpt_record_opts o = { .stop = &stop_flag, .snapshot_request = &snapshot_flag,
				      .log = stderr };
	enum { OPT_QMP = 256, OPT_DOMAIN, OPT_FILTER, OPT_CONTROL, OPT_KCORE, OPT_SYSFS,
	       OPT_PROCFS, OPT_DEBUGFS, OPT_GUEST, OPT_DURATION };
	struct vmpt_guest_opts guest_opts = { .log = stderr };
	struct vmpt_guest *guest = NULL;
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "event", required_argument, NULL, 'e' },
		{ "filter", required_argument, NULL, OPT_FILTER },
		{ "pid", required_argument, NULL, 'p' },
		{ "qmp", required_argument, NULL, OPT_QMP },
		{ "domain", required_argument, NULL, OPT_DOMAIN },
		{ "connect", required_argument, NULL, 'c' },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "mmap-pages", required_argument, NULL, 'm' },
		{ "snapshot", optional_argument, NULL, 'S' },
		{ "control", required_argument, NULL, OPT_CONTROL },
		{ "kcore", no_argument, NULL, OPT_KCORE },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "sysfs-root", required_argument, NULL, OPT_SYSFS },
		{ "procfs-root", required_argument, NULL, OPT_PROCFS },
		{ "debugfs-root", required_argument, NULL, OPT_DEBUGFS },
		{ "guest", required_argument, NULL, OPT_GUEST },
		GUEST_LONGOPTS("guest-"),
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static const char *tps[64];
	size_t nr_tps = 0;
	int c, ret;
	/* '+': stop at the first non-option, the COMMAND */
	while ((c = getopt_long(argc, argv, "+o:e:p:c:aC:m:S::qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': o.output = optarg; break;
		case 'e':
			/* SYSTEM:NAME is a tracepoint; intel_pt/../ and dummy[:u] the trace. */
			if (strchr(optarg, ':') && !strchr(optarg, '/') &&
			    strcmp(optarg, "dummy:u")) {
				if (nr_tps == sizeof(tps) / sizeof(tps[0])) {
					fprintf(stderr, "vmpt record: -e %s: at most %zu tracepoint "
						"options (globs take many: kvm:*)\n", optarg,
						sizeof(tps) / sizeof(tps[0]));
					return 2;
				}
				tps[nr_tps++] = optarg;
				o.tracepoints = tps;
				o.nr_tracepoints = nr_tps;
			} else {
				o.event = optarg;
			}
			break;
		case OPT_FILTER: o.filter = optarg; break;
		case 'p': {
			char *end;
			long pid = strtol(optarg, &end, 10);
			if (end == optarg || *end || pid <= 0) {
				fprintf(stderr, "vmpt record: --pid %s: not a process id\n", optarg);
				return 2;
			}
			o.pid = (pid_t)pid;
			break;
		}
		case OPT_QMP: o.qmp = optarg; break;
		case OPT_DOMAIN: o.domain = optarg; break;
		case 'c': o.uri = optarg; break;
		case 'a': o.all_cpus = 1; break;
		case 'C': o.cpu_list = optarg; break;
		case 'm': {
			char buf[128];
			snprintf(buf, sizeof(buf), "%s", optarg);
			char *comma = strchr(buf, ',');
			if (comma)
				*comma = '\0';
			if ((buf[0] && parse_pages(buf, &o.data_pages)) ||
			    (comma && parse_pages(comma + 1, &o.aux_pages))) {
				fprintf(stderr, "vmpt record: -m %s: expected PAGES[,AUXPAGES] "
					"(counts or sizes like 4M)\n", optarg);
				return 2;
			}
			break;
		}
		case 'S':
			o.snapshot = 1;
			if (optarg && parse_size(optarg, &o.snapshot_size)) {
				fprintf(stderr, "vmpt record: -S%s: expected a size (e.g. "
					"-S4M)\n", optarg);
				return 2;
			}
			break;
		case OPT_CONTROL:
			o.control_fifo = !strncmp(optarg, "fifo:", 5) ? optarg + 5 : optarg;
			break;
		case OPT_KCORE: o.kcore = 1; break;
		case OPT_DURATION: {
			char *end;
			o.duration = strtod(optarg, &end);
			if (end == optarg || *end || !(o.duration > 0)) {
				fprintf(stderr, "vmpt record: --duration %s: expected seconds "
					"(e.g. 2.5)\n", optarg);
				return 2;
			}
			break;
		}
		case OPT_SYSFS: o.sysfs_root = optarg; break;
		case OPT_PROCFS: o.procfs_root = optarg; break;
		case OPT_DEBUGFS: o.debugfs_root = optarg; break;
		case OPT_GUEST: guest_opts.url = optarg; break;
		case 'q': o.log = NULL; break;
		case 'h': usage(stdout); return 0;
		default:
			ret = guest_option(&guest_opts, c, optarg);
			if (ret > 0)
				break;
			if (ret < 0)
				return 2;
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		o.argv = argv + optind;

	struct sigaction sa = { .sa_handler = on_stop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_snapshot;
	sigaction(SIGUSR2, &sa, NULL);

	/* Nothing starts in the guest for an output that cannot be written. */
	const char *out = o.output ? o.output : "perf.data";
	struct vmpt_record_stats st;
	char err[2048];
	uint64_t avail;
	if (vmpt_record_output_check(out, o.kcore, &avail, err, sizeof(err))) {
		fprintf(stderr, "vmpt record: %s\n", err);
		return 1;
	}
	if (guest_opts.url && avail < GUEST_SPACE && o.log)
		fprintf(stderr, "vmpt record: %" PRIu64 " MiB free for %s: the guest's "
			"binaries%s fetched after the recording may not fit\n",
			avail >> 20, out, o.kcore ? " and kcore" : "");

	/* Guest sideband starts before and stops after the host trace. */
	if (guest_opts.url && (vmpt_guest_open(&guest, &guest_opts) ||
			       vmpt_guest_start(guest, NULL))) {
		fprintf(stderr, "vmpt record: guest: %s\n", vmpt_guest_errmsg(guest));
		vmpt_guest_close(guest);
		return 1;
	}
	int rc = vmpt_record(&o, &st, err, sizeof(err));
	struct vmpt_guest_fetch_stats gst;
	int fetched = 0;
	/* a recording that failed before writing anything gets no guest side */
	if (guest && st.output_created && (!rc || st.bytes_written)) {
		unsigned what = VMPT_GUEST_FETCH_BINARIES | (o.kcore ? VMPT_GUEST_FETCH_KCORE : 0);
		if (vmpt_guest_finish(guest, out, what, &gst)) {
			fprintf(stderr, "vmpt record: guest: %s\n", vmpt_guest_errmsg(guest));
			rc = rc ? rc : -VMPT_ERR_REMOTE;
		} else {
			fetched = 1;
		}
	}
	vmpt_guest_close(guest);
	if (o.log && !st.write_error && (st.records || st.aux_bytes || st.bytes_written))
		fprintf(stderr, "[ vmpt record: %" PRIu64 " sideband records, %" PRIu64
			" AUX bytes (%" PRIu64 " AUX records, %" PRIu64 " truncated, %"
			PRIu64 " partial), %" PRIu64 " lost records (%" PRIu64 " events), %"
			PRIu64 " snapshots; %" PRIu64 " bytes of data in %s ]\n",
			st.records, st.aux_bytes, st.aux_records, st.aux_truncated,
			st.aux_partial, st.lost_records, st.lost_events, st.snapshots,
			st.bytes_written, out);
	if (fetched) {
		char gdir[4200];
		vmpt_record_path(out, o.kcore, "guest", gdir, sizeof(gdir));
		fprintf(stderr, "guest: %u files (%" PRIu64 " bytes) in %s, %u missing, "
			"%u rejected\n", gst.files, gst.bytes, gdir, gst.missing, gst.rejected);
	}
	if (rc) {
		fprintf(stderr, "vmpt record: %s\n", err[0] ? err : vmpt_strerror(rc));
		return 1;
	}
	/* As perf record: the command's exit status, 128 + N when signal N
	 * ended it (127: it could not run).
	 */
	if (st.child_status != -1 && WIFEXITED(st.child_status))
		return WEXITSTATUS(st.child_status);
	if (st.child_status != -1 && WIFSIGNALED(st.child_status))
		return 128 + WTERMSIG(st.child_status);
	return 0;
}
