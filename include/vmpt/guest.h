/* SPDX-License-Identifier: MIT */
/* Driving vmpt-agent in a guest over SSH: guest sideband that starts and
 * stops with a host recording, the guest's compact kcore, and the guest
 * binaries its sideband names, all fetched into a guest directory GDIR
 * (REC.guest beside a recording REC, REC/guest inside perf's directory
 * form, DIR/guest for vmpt guest collect -o DIR):
 *
 *   GDIR/perf.data        guest sideband (mmap2, comm, task, switch)
 *   GDIR/kcore_dir/       kcore, kallsyms, modules (perf's kcore_dir)
 *   GDIR/root/            the guest binaries, at their guest paths
 *   GDIR/vdso             the guest's vdso image
 *
 * See docs/guest.md.  One struct vmpt_guest is one SSH session; it is not
 * thread-safe.
 */
#ifndef VMPT_GUEST_H
#define VMPT_GUEST_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vmpt_guest_opts {
	const char *url;		/* ssh://user@host[:port] */
	const char *identity;		/* private key file; NULL: ssh-agent, ~/.ssh/id_* */
	const char *known_hosts;	/* NULL: ~/.ssh/known_hosts */
	int accept_new_host_key;	/* add an unknown host's key to known_hosts */
	const char *agent_path;		/* the local vmpt-agent to deploy; NULL: $VMPT_AGENT,
					 * else the one installed beside this program */
	const char *remote_dir;		/* its guest directory; NULL: ".cache/vmpt" in the home */
	uint64_t max_file_size;		/* largest file taken from the guest; 0: 1 GiB */
	/* All files taken from the guest in this session together (sideband,
	 * binaries, kcore); 0: 4 GiB.  Whatever the budget, a file is taken
	 * only when 64 MiB stay free on the host's file system. */
	uint64_t max_total_size;
	int timeout_sec;		/* longest wait for the guest; 0: 120 */
	FILE *log;			/* progress, warnings and the guest's stderr; NULL: quiet */
};

struct vmpt_guest;

/* Connect, check the host key, authenticate with a key, and deploy the
 * agent when the guest has none or another version.  Returns 0 or a
 * negative vmpt_err; on failure *g (when not NULL) holds the message for
 * vmpt_guest_errmsg and must still be closed.
 */
int vmpt_guest_open(struct vmpt_guest **g, const struct vmpt_guest_opts *opts);
void vmpt_guest_close(struct vmpt_guest *g);

/* What failed last, with the guest's stderr when the agent failed. */
const char *vmpt_guest_errmsg(const struct vmpt_guest *g);

/* The agent's `check` report (malloc'd text); *ready says whether the
 * guest passed.
 */
int vmpt_guest_check(struct vmpt_guest *g, char **report, int *ready);

/* Start guest sideband (as root or via sudo -n); returns once the agent's
 * events are on.  cmd, when not NULL, is a NULL-terminated command the
 * agent runs in the guest; the sideband then also ends when it exits.
 */
int vmpt_guest_start(struct vmpt_guest *g, char *const *cmd);

/* Stop guest sideband (a running cmd is waited for) and write
 * GDIR/perf.data (GDIR made when missing).
 */
int vmpt_guest_stop(struct vmpt_guest *g, const char *gdir);

enum vmpt_guest_fetch_what {
	VMPT_GUEST_FETCH_BINARIES = 1,	/* files named by GDIR/perf.data, and the vdso */
	VMPT_GUEST_FETCH_KCORE = 2,	/* GDIR/kcore_dir */
};

struct vmpt_guest_fetch_stats {
	unsigned files, missing, rejected;
	uint64_t bytes;
};

/* Fetch what decoding guest code needs into GDIR.  Guest paths that
 * could land outside GDIR/root are rejected (and logged); files the
 * guest does not have are counted as missing.
 */
int vmpt_guest_fetch(struct vmpt_guest *g, const char *gdir, unsigned what,
		     struct vmpt_guest_fetch_stats *stats);

/* The guest directory of a recording or collect directory: REC/guest or
 * REC.guest, or REC itself when it is one (holds perf.data and no data).
 * 0, or -VMPT_ERR_NOT_FOUND with err naming what was looked for.
 */
int vmpt_guest_dir(const char *rec, char *gdir, size_t len, char *err, size_t errlen);

/* List the executable mappings of the guest sideband of rec (found by
 * vmpt_guest_dir) with their process and whether the file is in the
 * sysroot ("in sysroot", "missing", "no file", or why the name was
 * rejected).  No SSH involved.
 */
int vmpt_guest_maps(const char *rec, FILE *out, char *err, size_t errlen);

/* With a host recording (vmpt record --guest): stop guest sideband and
 * fetch into the recording's guest directory: REC/guest in perf's
 * directory form, REC.guest beside a perf.data file.
 */
int vmpt_guest_finish(struct vmpt_guest *g, const char *recording, unsigned what,
		      struct vmpt_guest_fetch_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
