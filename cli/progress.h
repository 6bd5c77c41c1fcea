/* SPDX-License-Identifier: MIT */
/* A progress line on the terminal for long decodes (bytes done, rate,
 * time left), on stderr when it is a terminal and stdout is not (the
 * lines themselves show progress there).
 */
#ifndef VMPT_CLI_PROGRESS_H
#define VMPT_CLI_PROGRESS_H

#include "vmpt/consumer.h"

#include <time.h>

struct progress {
	const char *cmd;	/* "vmpt script" */
	int on;			/* a terminal to show it on */
	int shown;		/* a line is on the screen */
	double delay;		/* seconds before the first line */
	struct timespec start, last;
};

/* Set p up; the returned hook goes to the decoder (fn NULL: off). */
struct vmpt_progress progress_start(struct progress *p, const char *cmd);
/* Erase the line, if one is shown. */
void progress_end(struct progress *p);

#endif
