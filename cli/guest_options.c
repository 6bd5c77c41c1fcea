/* SPDX-License-Identifier: MIT */
#include "guest_options.h"

#include <stdlib.h>

int guest_option(struct vmpt_guest_opts *o, int c, const char *arg)
{
	switch (c) {
	case GUEST_OPT_IDENTITY: o->identity = arg; return 1;
	case GUEST_OPT_KNOWN_HOSTS: o->known_hosts = arg; return 1;
	case GUEST_OPT_ACCEPT_NEW_HOST_KEY: o->accept_new_host_key = 1; return 1;
	case GUEST_OPT_AGENT: o->agent_path = arg; return 1;
	case GUEST_OPT_REMOTE_DIR: o->remote_dir = arg; return 1;
	case GUEST_OPT_MAX_FILE_SIZE: o->max_file_size = strtoull(arg, NULL, 0); return 1;
	case GUEST_OPT_TIMEOUT: o->timeout_sec = atoi(arg); return 1;
	default: return 0;
	}
}
