/* SPDX-License-Identifier: MIT */
/* vmpt_path_open: a recording's path stays inside its root, and only a
 * regular file opens (a FIFO is refused at once, never waited on); the
 * openat2 way and the component walk alike.
 */
#include "vmpt/path.h"
#include "vmpt/error.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char top[256], root[300];

static void put(const char *rel, const char *text)
{
	char p[600];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void link_(const char *target, const char *rel)
{
	char p[600];

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	assert_int_equal(symlink(target, p), 0);
}

static int setup(void **state)
{
	char p[600];

	(void)state;
	snprintf(top, sizeof(top), "/tmp/vmpt-path-XXXXXX");
	assert_non_null(mkdtemp(top));
	snprintf(root, sizeof(root), "%s/root", top);
	mkdir(root, 0755);
	snprintf(p, sizeof(p), "%s/root/usr", top);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/root/usr/lib", top);
	mkdir(p, 0755);
	put("secret", "outside\n");
	put("root/usr/lib/libc.so", "inside\n");
	/* A sysroot's own absolute and relative links, staying inside. */
	link_("/usr/lib/libc.so", "root/usr/lib/abs.so");
	link_("../lib/libc.so", "root/usr/lib/rel.so");
	/* Links leading out. */
	link_("../../secret", "root/usr/lib/out-rel");
	char target[600];

	snprintf(target, sizeof(target), "%s/secret", top);
	link_(target, "root/usr/lib/out-abs");
	link_("/proc/self/root/etc/passwd", "root/usr/lib/magic");
	snprintf(p, sizeof(p), "%s/root/usr/lib/fifo", top);
	assert_int_equal(mkfifo(p, 0600), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd);
}

/* What the open read: the file's first line, or "errno N". */
static const char *got(int walk, const char *r, const char *path)
{
	static char buf[64];
	int fd = walk ? vmpt_path_open_walk(r, path) : vmpt_path_open(r, path);
	ssize_t n;

	if (fd < 0) {
		assert_int_equal(fd, -VMPT_ERR_IO);
		snprintf(buf, sizeof(buf), "errno %d", errno);
		return buf;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	assert_true(n >= 0);
	buf[n] = 0;
	assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	close(fd);
	return buf;
}

static const char *ERR(int e)
{
	static char s[32];

	snprintf(s, sizeof(s), "errno %d", e);
	return s;
}

static void inside_opens(void **state)
{
	(void)state;
	for (int walk = 0; walk < 2; walk++) {
		assert_string_equal(got(walk, root, "/usr/lib/libc.so"), "inside\n");
		assert_string_equal(got(walk, root, "usr//lib/./libc.so"), "inside\n");
	}
	/* Links inside a sysroot: resolved in it by openat2, refused by the walk. */
	assert_string_equal(got(0, root, "/usr/lib/abs.so"), "inside\n");
	assert_string_equal(got(0, root, "/usr/lib/rel.so"), "inside\n");
	assert_string_equal(got(1, root, "/usr/lib/abs.so"), ERR(ELOOP));
	assert_string_equal(got(1, root, "/usr/lib/rel.so"), ERR(ELOOP));
}

static void nothing_outside(void **state)
{
	(void)state;
	for (int walk = 0; walk < 2; walk++) {
		assert_string_equal(got(walk, root, "/../secret"), ERR(EXDEV));
		assert_string_equal(got(walk, root, "/usr/lib/../../../secret"), ERR(EXDEV));
		assert_string_equal(got(walk, root, ".."), ERR(EXDEV));
	}
	/* openat2 resolves the links in the root, where no secret is. */
	assert_string_equal(got(0, root, "/usr/lib/out-rel"), ERR(ENOENT));
	assert_string_equal(got(0, root, "/usr/lib/out-abs"), ERR(ENOENT));
	assert_string_equal(got(0, root, "/usr/lib/magic"), ERR(ENOENT));
	assert_string_equal(got(1, root, "/usr/lib/out-rel"), ERR(ELOOP));
	assert_string_equal(got(1, root, "/usr/lib/out-abs"), ERR(ELOOP));
	assert_string_equal(got(1, root, "/usr/lib/magic"), ERR(ELOOP));
}

/* A FIFO with no writer: O_NONBLOCK opens it at once, and it is refused. */
static void only_regular(void **state)
{
	char fifo[600];

	(void)state;
	snprintf(fifo, sizeof(fifo), "%s/usr/lib/fifo", root);
	for (int walk = 0; walk < 2; walk++) {
		assert_string_equal(got(walk, root, "/usr/lib/fifo"), ERR(EINVAL));
		assert_string_equal(got(walk, root, "/usr/lib"), ERR(EISDIR));
		assert_string_equal(got(walk, root, "/"), ERR(EISDIR));
		assert_string_equal(got(walk, root, "/usr/lib/none"), ERR(ENOENT));
	}
	assert_string_equal(got(0, NULL, fifo), ERR(EINVAL));
	assert_string_equal(got(0, NULL, "/dev/zero"), ERR(EINVAL));
}

static void map_names(void **state)
{
	struct vmpt_file f;
	char want[600];

	(void)state;
	assert_int_equal(vmpt_path_map(&f, root, "/usr/lib/rel.so"), 0);
	snprintf(want, sizeof(want), "%s/usr/lib/rel.so", root);
	assert_string_equal(f.path, want);
	assert_int_equal(f.size, 7);
	assert_memory_equal(f.data, "inside\n", 7);
	vmpt_file_unmap(&f);
	assert_int_equal(vmpt_path_map(&f, root, "/usr/lib/fifo"), -VMPT_ERR_IO);
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(inside_opens),
		cmocka_unit_test(nothing_outside),
		cmocka_unit_test(only_regular),
		cmocka_unit_test(map_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
