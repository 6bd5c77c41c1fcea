/* SPDX-License-Identifier: MIT */
/* debuginfod lookups by build-id. */
#include "vmpt/debuginfod.h"
#include "vmpt/error.h"

#include <elfutils/debuginfod.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int vmpt_debuginfod_find(const char *build_id, enum vmpt_debuginfod_what what,
			 char *out, size_t cap)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	debuginfod_client *client;
	char *path = NULL;
	int fd, ret = -VMPT_ERR_NOT_FOUND;

	/* Off unless asked for: no client, no network. */
	if (!urls || !urls[0] || !build_id[0])
		return -VMPT_ERR_NOT_FOUND;
	client = debuginfod_begin();
	if (!client)
		return -VMPT_ERR_NOT_FOUND;
	/* A length of 0: the id is given as hex. */
	fd = what == VMPT_DEBUGINFOD_EXECUTABLE ?
	     debuginfod_find_executable(client, (const unsigned char *)build_id, 0, &path) :
	     debuginfod_find_debuginfo(client, (const unsigned char *)build_id, 0, &path);
	if (fd >= 0) {
		close(fd);
		if (path && strlen(path) < cap) {
			memcpy(out, path, strlen(path) + 1);
			ret = 0;
		}
	}
	free(path);
	debuginfod_end(client);
	return ret;
}
