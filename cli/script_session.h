/* SPDX-License-Identifier: MIT */
/* A recording opened for decoding the way script, report and export open
 * it: the correlator's summary (a VM recording's time offsets and where
 * they came from) on stderr, --guest-code's code added.
 */
#ifndef VMPT_CLI_SCRIPT_SESSION_H
#define VMPT_CLI_SCRIPT_SESSION_H

#include "vmpt/session.h"

/* Open path into s.  On failure prints "vmpt CMD: why" (and, with
 * raw_hint, that hint when the file is a raw Intel PT trace) and returns
 * < 0.  s is to be closed either way.
 */
int script_session_open(struct vmpt_session *s, const char *cmd, const char *path,
			struct vmpt_image *img, const struct vmpt_session_opts *so,
			int guest_code, const char *raw_hint);

#endif
