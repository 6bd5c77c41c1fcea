/* SPDX-License-Identifier: MIT */
/* Scratch files and a memory sink for the libFuzzer targets (fuzz_util.h). */
#include "fuzz_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char scratch[256];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void fuzz_remove(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return;
	if (S_ISDIR(st.st_mode))
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	else
		unlink(path);
}

static void remove_scratch(void)
{
	if (scratch[0])
		fuzz_remove(scratch);
}

/* libFuzzer often leaves by _Exit (a crash, a timeout, the end of its
 * time), so atexit is not enough: the directories of processes gone are
 * removed by the next one.
 */
static void remove_stale(const char *base)
{
	struct dirent *e;
	DIR *d = opendir(base);

	while (d && (e = readdir(d))) {
		char path[512];
		long pid;
		char *end;

		if (strncmp(e->d_name, "vmpt-fuzz-", 10))
			continue;
		pid = strtol(e->d_name + 10, &end, 10);
		if (*end || pid <= 0 || !(kill((pid_t)pid, 0) < 0 && errno == ESRCH))
			continue;
		snprintf(path, sizeof(path), "%s/%s", base, e->d_name);
		fuzz_remove(path);
	}
	if (d)
		closedir(d);
}

const char *fuzz_scratch(void)
{
	struct stat st;
	char cache[300];
	const char *base;

	if (scratch[0])
		return scratch;
	base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
	remove_stale(base);
	snprintf(scratch, sizeof(scratch), "%s/vmpt-fuzz-%ld", base, (long)getpid());
	fuzz_remove(scratch);
	if (mkdir(scratch, 0700) < 0) {
		scratch[0] = 0;
		return NULL;
	}
	atexit(remove_scratch);
	snprintf(cache, sizeof(cache), "%s/buildid-cache", scratch);
	setenv("PERF_BUILDID_DIR", cache, 1);
	unsetenv("DEBUGINFOD_URLS");
	return scratch;
}

int fuzz_path(char *buf, size_t size, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", fuzz_scratch() ? scratch : "/nonexistent", name);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

int fuzz_write(const char *path, const uint8_t *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return -1;
	while (len) {
		ssize_t n = write(fd, data, len);

		if (n <= 0) {
			close(fd);
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	return close(fd);
}

static char ring[4096];
static size_t ring_at;

static ssize_t sink_write(void *cookie, const char *buf, size_t size)
{
	(void)cookie;
	for (size_t done = 0; done < size;) {
		size_t n = sizeof(ring) - ring_at;

		if (n > size - done)
			n = size - done;
		memcpy(ring + ring_at, buf + done, n);
		ring_at = (ring_at + n) % sizeof(ring);
		done += n;
	}
	return (ssize_t)size;
}

FILE *fuzz_sink(void)
{
	cookie_io_functions_t io = { .write = sink_write };

	return fopencookie(NULL, "w", io);
}
