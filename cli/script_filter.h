/* SPDX-License-Identifier: MIT */
/* vmpt script's sample filters as perf script takes them: -C/--cpu,
 * --pid, --tid, -c/--comms, --dsos, -S/--symbols and --time (perf's
 * syntax: START,STOP with seconds.nanoseconds, several ranges apart by
 * spaces, or percentages A%/N, A%-B%, several apart by commas).  They are
 * collected while the options are read and settled once the recording
 * (its CPUs, its time span) is known.  --symfs rides along: it is a
 * recording setting too.
 */
#ifndef VMPT_CLI_SCRIPT_FILTER_H
#define VMPT_CLI_SCRIPT_FILTER_H

#include "vmpt/script_output.h"
#include "vmpt/session.h"

#include <stddef.h>
#include <stdint.h>

struct script_filter {
	const char *symfs;
	int no_guest_tasks;	/* --no-guest-tasks: the session's choice */
	const char *cpu_str, *time_str;
	uint8_t cpus[4096];
	int *pids, *tids;
	size_t npids, ntids;
	char **comms, **dsos, **syms;
	size_t ncomms, ndsos, nsyms;
	uint64_t *from, *to;
	size_t ntimes;
};

/* One filter option (opt: its long name).  0, or -VMPT_ERR_INVAL with
 * why saying what is wrong with arg, -VMPT_ERR_NOMEM.
 */
int script_filter_add(struct script_filter *sf, const char *opt, const char *arg,
		      char *why, size_t whylen);

/* Check the filters against the recording and set op->filter (kept by
 * reference).  0, or -VMPT_ERR_INVAL with err in perf's words.
 */
int script_filter_settle(struct script_filter *sf, const struct vmpt_session *s,
			 struct vmpt_script_opts *op, char *err, size_t errlen);

void script_filter_free(struct script_filter *sf);

/* Parse perf's --time string against the recording's first and last
 * sample times (ns; for percentages).  Returns the number of ranges, or
 * -VMPT_ERR_INVAL.  *from and *to are malloc'ed; to 0 means open.
 */
int script_time_parse(const char *s, uint64_t first, uint64_t last, uint64_t **from,
		      uint64_t **to);

#endif
