/* SPDX-License-Identifier: MIT */
/* Who ran when, as vmpt's session reads a perf.data's sideband: for each
 * stdin line "C CPU NS" (per-cpu: the task on CPU at perf time NS) or
 * "T TID NS" (per-thread: thread TID at NS) prints "COMM PID/TID", for
 * comparing with perf script's task and switch events.
 * usage: session_tasks PERF.DATA < queries
 */
#include "vmpt/session.h"

#include <inttypes.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	struct vmpt_session s;
	char kind;
	int key;
	uint64_t ns;

	if (argc != 2) {
		fprintf(stderr, "usage: session_tasks PERF.DATA < queries\n");
		return 2;
	}
	if (vmpt_session_open(&s, argv[1], NULL) < 0) {
		fprintf(stderr, "session_tasks: %s\n", s.errmsg);
		vmpt_session_close(&s);
		return 1;
	}
	while (scanf(" %c %d %" SCNu64, &kind, &key, &ns) == 3) {
		struct vmpt_session_buffer b = { .cpu = -1, .tid = -1 };
		struct vmpt_task t;

		if (kind == 'C')
			b.cpu = key;
		else
			b.tid = key;
		vmpt_session_task(&s, &b, ns, &t);
		if (t.comm)
			printf("%s %d/%d\n", t.comm, t.pid, t.tid);
		else
			printf(":%d %d/%d\n", t.tid, t.pid, t.tid);
	}
	vmpt_session_close(&s);
	return 0;
}
