/* SPDX-License-Identifier: MIT */
/* debuginfod lookups by build-id. */
#include "vmpt/debuginfod.h"
#include "vmpt/error.h"
#include "../lib/vmpt_dl.h"

#include <elfutils/debuginfod.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Opened at the first lookup, so only runs with DEBUGINFOD_URLS pay for
 * libdebuginfod and the libcurl and Kerberos it pulls in.
 */
#define DEBUGINFOD_FUNCS(X) X(debuginfod_begin) X(debuginfod_end) \
	X(debuginfod_find_executable) X(debuginfod_find_debuginfo)
VMPT_DL_TABLE(dinfod, DEBUGINFOD_FUNCS, "libdebuginfod.so.1", "libdebuginfod1");

/* Where a missing library is said (vmpt_debuginfod_set_warn). */
static FILE *warn_stream;

void vmpt_debuginfod_set_warn(FILE *f)
{
	warn_stream = f;
}

static void vmpt_debuginfod_say_missing(void)
{
	/* Without it, a user who set DEBUGINFOD_URLS would see symbols
	 * missing and never learn why.
	 */
	if (warn_stream)
		fprintf(warn_stream, "vmpt: DEBUGINFOD_URLS is set, but no debuginfod "
			"lookups: %s\n", vmpt_dl_errmsg(&dinfod));
}

int vmpt_debuginfod_find(const char *build_id, enum vmpt_debuginfod_what what,
			 char *out, size_t cap)
{
	static pthread_once_t said = PTHREAD_ONCE_INIT;
	const char *urls = getenv("DEBUGINFOD_URLS");
	debuginfod_client *client;
	char *path = NULL;
	int fd, ret = -VMPT_ERR_NOT_FOUND;

	/* Off unless asked for: no client, no network. */
	if (!urls || !urls[0] || !build_id[0])
		return -VMPT_ERR_NOT_FOUND;
	/* No library: as with no servers. */
	if (vmpt_dl_load(&dinfod) < 0) {
		pthread_once(&said, vmpt_debuginfod_say_missing);
		return -VMPT_ERR_NOT_FOUND;
	}
	client = VMPT_DL(dinfod, debuginfod_begin)();
	if (!client)
		return -VMPT_ERR_NOT_FOUND;
	/* A length of 0: the id is given as hex. */
	fd = what == VMPT_DEBUGINFOD_EXECUTABLE ?
	     VMPT_DL(dinfod, debuginfod_find_executable)(client,
			(const unsigned char *)build_id, 0, &path) :
	     VMPT_DL(dinfod, debuginfod_find_debuginfo)(client,
			(const unsigned char *)build_id, 0, &path);
	if (fd >= 0) {
		close(fd);
		if (path && strlen(path) < cap) {
			memcpy(out, path, strlen(path) + 1);
			ret = 0;
		}
	}
	free(path);
	VMPT_DL(dinfod, debuginfod_end)(client);
	return ret;
}
