/* SPDX-License-Identifier: MIT */
#ifndef VMPT_CLI_GUEST_OPTIONS_H
#define VMPT_CLI_GUEST_OPTIONS_H

#include "vmpt/guest.h"

#include <getopt.h>

/* The SSH and agent options of struct vmpt_guest_opts, one parser for
 * vmpt guest (--identity, ...) and vmpt record (--guest-identity, ...).
 * getopt values above any a command uses for its own options.
 */
enum {
	GUEST_OPT_IDENTITY = 0x1000,
	GUEST_OPT_KNOWN_HOSTS,
	GUEST_OPT_ACCEPT_NEW_HOST_KEY,
	GUEST_OPT_AGENT,
	GUEST_OPT_REMOTE_DIR,
	GUEST_OPT_MAX_FILE_SIZE,
	GUEST_OPT_MAX_TOTAL_SIZE,
	GUEST_OPT_TIMEOUT,
};

/* struct option entries, each name behind prefix ("" or "guest-"). */
#define GUEST_LONGOPTS(prefix) \
	{ prefix "identity", required_argument, NULL, GUEST_OPT_IDENTITY }, \
	{ prefix "known-hosts", required_argument, NULL, GUEST_OPT_KNOWN_HOSTS }, \
	{ prefix "accept-new-host-key", no_argument, NULL, GUEST_OPT_ACCEPT_NEW_HOST_KEY }, \
	{ prefix "agent", required_argument, NULL, GUEST_OPT_AGENT }, \
	{ prefix "remote-dir", required_argument, NULL, GUEST_OPT_REMOTE_DIR }, \
	{ prefix "max-file-size", required_argument, NULL, GUEST_OPT_MAX_FILE_SIZE }, \
	{ prefix "max-total-size", required_argument, NULL, GUEST_OPT_MAX_TOTAL_SIZE }, \
	{ prefix "timeout", required_argument, NULL, GUEST_OPT_TIMEOUT }

/* Store getopt's result c (a GUEST_OPT_*) and its argument in o.
 * Returns 1 when c is one of these options, else 0; -1 (said on stderr)
 * for a size that is none.
 */
int guest_option(struct vmpt_guest_opts *o, int c, const char *arg);

#endif
