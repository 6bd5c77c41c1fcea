/* SPDX-License-Identifier: MIT */
/* libFuzzer target for what a hostile guest sends: its reply stream
 * (guest_pack.h) answering three requests (usr/bin/ls, lib/libc.so.6 and
 * a made-up [perf.data]) under a scratch sysroot, with small size limits:
 * the input's first line is a guest path for the sysroot's name rules,
 * the rest the stream.  After each input nothing but those three files may exist in the
 * scratch directory: anything else (a file outside the asked names, a
 * symlink) aborts.  The same path is then looked up as the decoder
 * looks up a guest's names (vmpt_path_open, both ways: openat2 and the
 * walk) in a fixed sysroot holding a file, a FIFO, a link inside and
 * links out of it: anything opened must be a regular file inside it.  See
 * docs/fuzzing.md.
 */
#include "fuzz_util.h"
#include "guest_pack_read.h"
#include "guest_sysroot.h"
#include "vmpt/error.h"
#include "vmpt/path.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[512], lookup[512];
static int rootfd = -1;
static dev_t lookup_dev;

struct mem {
	const uint8_t *p;
	size_t n;
};

static int mem_read(void *ctx, void *buf, size_t n)
{
	struct mem *m = ctx;

	if (n > m->n)
		return -VMPT_ERR_TRUNCATED;
	memcpy(buf, m->p, n);
	m->p += n;
	m->n -= n;
	return 0;
}

/* The decoder's side: a guest/root with a file, a FIFO, a link inside it
 * and links out of it (absolute, relative, to a directory).
 */
static int make_lookup_root(void)
{
	static const char *const dirs[] = { "", "/usr", "/usr/bin", "/lib" };
	struct stat st;
	char p[600];
	int fd;

	if (fuzz_path(lookup, sizeof(lookup), "root") < 0)
		abort();
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", lookup, dirs[i]);
		mkdir(p, 0700);
	}
	snprintf(p, sizeof(p), "%s/usr/bin/ls", lookup);
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, "\177ELF", 4) != 4)
		abort();
	close(fd);
	snprintf(p, sizeof(p), "%s/usr/bin/fifo", lookup);
	mkfifo(p, 0600);
	snprintf(p, sizeof(p), "%s/lib/ls", lookup);
	symlink("../usr/bin/ls", p);
	snprintf(p, sizeof(p), "%s/lib/passwd", lookup);
	symlink("/etc/passwd", p);
	snprintf(p, sizeof(p), "%s/lib/up", lookup);
	symlink("../../../../..", p);
	snprintf(p, sizeof(p), "%s/etc", lookup);
	symlink("/etc", p);
	if (stat(lookup, &st) < 0)
		abort();
	lookup_dev = st.st_dev;
	return 0;
}

/* An fd the lookup gave must be a regular file inside the lookup root. */
static void check_inside(int fd, const char *path)
{
	char link[64], target[512];
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0 || fstat(fd, &st) < 0)
		abort();
	target[n] = 0;
	if (!S_ISREG(st.st_mode) || st.st_dev != lookup_dev ||
	    strncmp(target, lookup, strlen(lookup)) || target[strlen(lookup)] != '/') {
		fprintf(stderr, "fuzz-pack: %s opened %s outside %s\n", path, target, lookup);
		abort();
	}
	close(fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* Both under the scratch directory, removed at exit. */
	if (fuzz_path(base, sizeof(base), "sysroot") < 0 || mkdir(base, 0700) < 0)
		abort();
	rootfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		abort();
	return make_lookup_root();
}

/* Remove what a reply left, checking it is only what was asked for. */
static void sweep(int dirfd, const char *rel)
{
	static const char *const allowed[] = { "usr", "usr/bin", "usr/bin/ls", "lib",
					      "lib/libc.so.6", "perf.data" };
	DIR *d = fdopendir(dup(dirfd));
	struct dirent *e;

	if (!d)
		abort();
	while ((e = readdir(d))) {
		char path[512];
		struct stat st;
		int ok = 0;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
			ok |= !strcmp(path, allowed[i]);
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !ok || S_ISLNK(st.st_mode)) {
			fprintf(stderr, "fuzz-pack: unexpected %s/%s\n", base, path);
			abort();
		}
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

			if (sub < 0)
				abort();
			sweep(sub, path);
			close(sub);
			unlinkat(dirfd, e->d_name, AT_REMOVEDIR);
		} else {
			unlinkat(dirfd, e->d_name, 0);
		}
	}
	closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct guest_pack_request reqs[3] = {
		{ "/usr/bin/ls", rootfd, "usr/bin/ls", 0, 0 },
		{ "/lib/libc.so.6", rootfd, "lib/libc.so.6", 0, 0 },
		{ "[perf.data]", rootfd, "perf.data", 0, 0 },
	};
	struct guest_pack_limits lim = { 1 << 16, 1 << 17, 0, 0, base };
	const uint8_t *nl = memchr(data, '\n', size);
	size_t len = nl ? (size_t)(nl - data) : size;
	struct mem m = { nl ? nl + 1 : data, nl ? size - len - 1 : size };
	struct guest_pack_source src = { mem_read, &m, 0 };
	char err[512], path[256], rel[256];
	const char *why;

	if (len < sizeof(path)) {
		memcpy(path, data, len);
		path[len] = 0;
		guest_sysroot_path(path, rel, sizeof(rel), &why);
		check_inside(vmpt_path_open(lookup, path), path);
		check_inside(vmpt_path_open_walk(lookup, path), path);
	}
	guest_pack_receive(&src, reqs, 3, &lim, err, sizeof(err));
	sweep(rootfd, "");
	return 0;
}
