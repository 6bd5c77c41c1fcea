/* SPDX-License-Identifier: MIT */
#include "guest_options.h"

#include <stdio.h>
#include <stdlib.h>

/* "1048576", "512K", "64M", "4G": bytes. */
static int parse_bytes(const char *arg, uint64_t *bytes)
{
	char *end;
	unsigned long long v = strtoull(arg, &end, 10);
	unsigned shift = 0;

	if (end == arg || arg[0] == '-')
		goto bad;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end || !v || v > UINT64_MAX >> shift)
		goto bad;
	*bytes = (uint64_t)v << shift;
	return 1;
bad:
	fprintf(stderr, "vmpt: '%s': expected a size in bytes (or with K, M, G)\n", arg);
	return -1;
}

int guest_option(struct vmpt_guest_opts *o, int c, const char *arg)
{
	switch (c) {
	case GUEST_OPT_IDENTITY: o->identity = arg; return 1;
	case GUEST_OPT_KNOWN_HOSTS: o->known_hosts = arg; return 1;
	case GUEST_OPT_ACCEPT_NEW_HOST_KEY: o->accept_new_host_key = 1; return 1;
	case GUEST_OPT_AGENT: o->agent_path = arg; return 1;
	case GUEST_OPT_REMOTE_DIR: o->remote_dir = arg; return 1;
	case GUEST_OPT_MAX_FILE_SIZE: return parse_bytes(arg, &o->max_file_size);
	case GUEST_OPT_MAX_TOTAL_SIZE: return parse_bytes(arg, &o->max_total_size);
	case GUEST_OPT_TIMEOUT: o->timeout_sec = atoi(arg); return 1;
	default: return 0;
	}
}
