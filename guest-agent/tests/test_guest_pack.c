/* SPDX-License-Identifier: MIT */
/* The host's checks on what a guest sends: guest path sanitizing and the
 * agent's reply stream, fed hostile input from memory.  Each case asserts
 * the exact error and that nothing was written outside the sysroot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "guest_pack.h"
#include "guest_pack_read.h"
#include "guest_sysroot.h"
#include "vmpt/error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct mem {
	uint8_t buf[8192];
	size_t len, pos;
};

static int mem_read(void *ctx, void *buf, size_t n)
{
	struct mem *m = ctx;

	if (m->len - m->pos < n)
		return -VMPT_ERR_TRUNCATED;
	memcpy(buf, m->buf + m->pos, n);
	m->pos += n;
	return 0;
}

static void put(struct mem *m, const void *p, size_t n)
{
	assert_true(m->len + n <= sizeof(m->buf));
	if (n)
		memcpy(m->buf + m->len, p, n);
	m->len += n;
}

static void put_frame(struct mem *m, uint32_t kind, const char *name, uint32_t err,
		      uint64_t size, const char *data)
{
	uint32_t len = name ? (uint32_t)strlen(name) : 0;
	uint32_t hdr[4] = { kind, len, err, 0 };

	put(m, hdr, sizeof(hdr));	/* x86: little endian like the format */
	put(m, &size, sizeof(size));
	put(m, name, len);
	if (data)
		put(m, data, strlen(data));
}

struct fixture {
	char base[64];		/* base/root is the sysroot, base/outside is not */
	int rootfd;
	char outside[96];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char root[96];

	strcpy(f->base, "/tmp/vmpt-test-pack.XXXXXX");
	assert_non_null(mkdtemp(f->base));
	snprintf(root, sizeof(root), "%s/root", f->base);
	snprintf(f->outside, sizeof(f->outside), "%s/outside", f->base);
	assert_int_equal(mkdir(root, 0755), 0);
	assert_int_equal(mkdir(f->outside, 0755), 0);
	f->rootfd = open(root, O_RDONLY | O_DIRECTORY);
	assert_true(f->rootfd >= 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	close(f->rootfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->base);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* Every file under dir, "a/b" style, sorted, joined by spaces. */
static void list_files(const char *dir, char *out, size_t size)
{
	char cmd[512];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && find . ! -type d | sed 's|^\\./||' | sort | tr '\\n' ' '", dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, size - 1, p);
	out[n] = 0;
	pclose(p);
}

static void assert_file(int dirfd, const char *rel, const char *content)
{
	char buf[256] = "";
	struct stat st;
	int fd = openat(dirfd, rel, O_RDONLY | O_NOFOLLOW);
	ssize_t n;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = 0;
	assert_string_equal(buf, content);
}

static void test_sysroot_path(void **state)
{
	static const struct { const char *in, *rel, *why; } cases[] = {
		{ "/usr/bin/ls", "usr/bin/ls", NULL },
		{ "//usr///lib/x86_64-linux-gnu/libc.so.6", "usr/lib/x86_64-linux-gnu/libc.so.6", NULL },
		{ "/a/...b/..c", "a/...b/..c", NULL },
		{ "/../etc/passwd", NULL, "'.' or '..' component" },
		{ "/usr/lib/../../../etc/passwd", NULL, "'.' or '..' component" },
		{ "/usr/./bin", NULL, "'.' or '..' component" },
		{ "/usr/..", NULL, "'.' or '..' component" },
		{ "etc/passwd", NULL, "not an absolute path" },
		{ "", NULL, "not an absolute path" },
		{ "/", NULL, "names a directory" },
		{ "/usr/bin/", NULL, "names a directory" },
		{ "/bin/a\nb", NULL, "control character" },
		{ "/bin/\x7f", NULL, "control character" },
	};
	char rel[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *why = NULL;
		int ret = guest_sysroot_path(cases[i].in, rel, sizeof(rel), &why);

		if (cases[i].rel) {
			assert_int_equal(ret, 0);
			assert_string_equal(rel, cases[i].rel);
		} else {
			assert_int_equal(ret, -VMPT_ERR_INVAL);
			assert_string_equal(why, cases[i].why);
		}
	}
}

static int receive_lim(struct fixture *f, struct mem *m, struct guest_pack_request *reqs,
		       size_t nr, struct guest_pack_limits *lim, char *err, size_t errlen)
{
	struct guest_pack_source src = { mem_read, m, 0 };

	for (size_t i = 0; i < nr; i++)
		reqs[i].dirfd = f->rootfd;
	err[0] = 0;
	lim->dir = f->base;
	return guest_pack_receive(&src, reqs, nr, lim, err, errlen);
}

static int receive(struct fixture *f, struct mem *m, struct guest_pack_request *reqs,
		   size_t nr, uint64_t max, char *err, size_t errlen)
{
	struct guest_pack_limits lim = { .max_file = max, .max_total = UINT64_MAX };

	return receive_lim(f, m, reqs, nr, &lim, err, errlen);
}

static void test_receive(void **state)
{
	struct fixture *f = *state;
	static struct mem m;
	struct guest_pack_request reqs[] = {
		{ .name = "/usr/bin/ls", .dest = "usr/bin/ls" },
		{ .name = "/lib/gone.so", .dest = "lib/gone.so" },
		{ .name = GUEST_PACK_VDSO, .dest = "vdso" },
	};
	char err[256], files[512], root[96];

	memset(&m, 0, sizeof(m));
	put(&m, GUEST_PACK_MAGIC, 8);
	put_frame(&m, GUEST_PACK_FILE, "/usr/bin/ls", 0, 5, "hello");
	put_frame(&m, GUEST_PACK_MISSING, "/lib/gone.so", ENOENT, 0, NULL);
	put_frame(&m, GUEST_PACK_FILE, GUEST_PACK_VDSO, 0, 4, "vdso");
	put_frame(&m, GUEST_PACK_END, NULL, 0, 0, NULL);
	assert_int_equal(receive(f, &m, reqs, 3, 1 << 20, err, sizeof(err)), 0);
	assert_file(f->rootfd, "usr/bin/ls", "hello");
	assert_file(f->rootfd, "vdso", "vdso");
	assert_int_equal(reqs[0].size, 5);
	assert_int_equal(reqs[1].missing_errno, ENOENT);
	snprintf(root, sizeof(root), "%s/root", f->base);
	list_files(root, files, sizeof(files));
	assert_string_equal(files, "usr/bin/ls vdso ");
}

/* A hostile reply: the exact error, and no file anywhere but dirs. */
static void hostile(struct fixture *f, struct mem *m, const char *name, uint64_t max,
		    int want_ret, const char *want_err)
{
	struct guest_pack_request req = { .name = name, .dest = "bin/ls" };
	char err[256], files[512];

	assert_int_equal(receive(f, m, &req, 1, max, err, sizeof(err)), want_ret);
	assert_string_equal(err, want_err);
	list_files(f->base, files, sizeof(files));
	assert_string_equal(files, "");
}

static void test_bad_magic(void **state)
{
	static struct mem m;

	memset(&m, 0, sizeof(m));
	put(&m, "GARBAGE!garbage garbage", 23);
	hostile(*state, &m, "/bin/ls", 1 << 20, -VMPT_ERR_FORMAT,
		"agent reply offset 0: not a vmpt-agent reply (bad magic)");
}

static void test_empty_reply(void **state)
{
	static struct mem m;

	memset(&m, 0, sizeof(m));
	hostile(*state, &m, "/bin/ls", 1 << 20, -VMPT_ERR_TRUNCATED,
		"agent reply offset 0: no reply stream (reply ends here)");
}

static void test_oversize(void **state)
{
	static struct mem m;

	memset(&m, 0, sizeof(m));
	put(&m, GUEST_PACK_MAGIC, 8);
	put_frame(&m, GUEST_PACK_FILE, "/bin/ls", 0, 1ull << 40, "short");
	hostile(*state, &m, "/bin/ls", 1 << 20, -VMPT_ERR_FORMAT,
		"agent reply offset 8: /bin/ls is 1099511627776 bytes, over the limit of 1048576");
}

static void test_other_name(void **state)
{
	static struct mem m;

	memset(&m, 0, sizeof(m));
	put(&m, GUEST_PACK_MAGIC, 8);
	put_frame(&m, GUEST_PACK_FILE, "/../../../../tmp/pwned", 0, 5, "pwned");
	put_frame(&m, GUEST_PACK_END, NULL, 0, 0, NULL);
	hostile(*state, &m, "/bin/ls", 1 << 20, -VMPT_ERR_FORMAT,
		"agent reply offset 8: frame names another file than /bin/ls");
}

static void test_same_length_other_name(void **state)
{
	static struct mem m;

	memset(&m, 0, sizeof(m));
	put(&m, GUEST_PACK_MAGIC, 8);
	put_frame(&m, GUEST_PACK_FILE, "/../etc", 0, 5, "pwned");
	hostile(*state, &m, "/bin/ls", 1 << 20, -VMPT_ERR_FORMAT,
		"agent reply offset 8: frame names another file than /bin/ls");
}

static void test_truncated_data(void **state)
{
	struct fixture *f = *state;
	static struct mem m;
	char files[256];

	memset(&m, 0, sizeof(m));
	put(&m, GUEST_PACK_MAGIC, 8);
	put_frame(&m, GUEST_PACK_FILE, "/bin/ls", 0, 100, "only ten b");
	hostile(f, &m, "/bin/ls", 1 << 20, -VMPT_ERR_TRUNCATED,
		"agent reply offset 39: data of /bin/ls cut short (reply ends here)");
	/* The temporary file went with the error. */
	snprintf(files, sizeof(files), "%s/root/bin", f->base);
	list_files(files, files, sizeof(files));
	assert_string_equal(files, "");
}

static void test_bad_kind(void **state)
{
	static struct mem m;

	memset(&m, 0, sizeof(m));
	put(&m, GUEST_PACK_MAGIC, 8);
	put_frame(&m, 77, "/bin/ls", 0, 0, NULL);
	hostile(*state, &m, "/bin/ls", 1 << 20, -VMPT_ERR_FORMAT,
		"agent reply offset 8: bad frame kind where /bin/ls was expected");
}

static void test_missing_with_data(void **state)
{
	static struct mem m;

	memset(&m, 0, sizeof(m));
	put(&m, GUEST_PACK_MAGIC, 8);
	put_frame(&m, GUEST_PACK_MISSING, "/bin/ls", ENOENT, 5, "sneak");
	hostile(*state, &m, "/bin/ls", 1 << 20, -VMPT_ERR_FORMAT,
		"agent reply offset 8: missing-file frame for /bin/ls carries data");
}

static void test_extra_frame(void **state)
{
	struct fixture *f = *state;
	static struct mem m;
	struct guest_pack_request req = { .name = "/bin/ls", .dest = "bin/ls" };
	char err[256];

	memset(&m, 0, sizeof(m));
	put(&m, GUEST_PACK_MAGIC, 8);
	put_frame(&m, GUEST_PACK_FILE, "/bin/ls", 0, 2, "ls");
	put_frame(&m, GUEST_PACK_FILE, "/etc/shadow", 0, 2, "xx");
	assert_int_equal(receive(f, &m, &req, 1, 1 << 20, err, sizeof(err)),
			 -VMPT_ERR_FORMAT);
	assert_string_equal(err, "agent reply offset 41: more frames than files asked for");
}

/* The budget is over all files: the one that would pass it is not
 * written, those before it stay whole.
 */
static void test_budget(void **state)
{
	struct fixture *f = *state;
	static struct mem m;
	struct guest_pack_request reqs[] = {
		{ .name = "/bin/a", .dest = "bin/a" },
		{ .name = "/bin/b", .dest = "bin/b" },
	};
	struct guest_pack_limits lim = { .max_file = 1 << 20, .max_total = 12, .taken = 3 };
	char err[256], files[256], root[96];

	memset(&m, 0, sizeof(m));
	put(&m, GUEST_PACK_MAGIC, 8);
	put_frame(&m, GUEST_PACK_FILE, "/bin/a", 0, 5, "hello");
	put_frame(&m, GUEST_PACK_FILE, "/bin/b", 0, 6, "world!");
	put_frame(&m, GUEST_PACK_END, NULL, 0, 0, NULL);
	assert_int_equal(receive_lim(f, &m, reqs, 2, &lim, err, sizeof(err)),
			 -VMPT_ERR_FORMAT);
	assert_string_equal(err, "agent reply offset 43: /bin/b is 6 bytes: with the 8 "
			    "taken from the guest before, over the budget of 12 for all "
			    "its files");
	assert_int_equal(lim.taken, 8);
	snprintf(root, sizeof(root), "%s/root", f->base);
	list_files(root, files, sizeof(files));
	assert_string_equal(files, "bin/a ");
	assert_file(f->rootfd, "bin/a", "hello");
}

/* Too little space on the destination: refused from the frame header,
 * nothing written.
 */
static void test_no_space(void **state)
{
	struct fixture *f = *state;
	static struct mem m;
	struct guest_pack_request req = { .name = "/bin/ls", .dest = "bin/ls" };
	struct guest_pack_limits lim = { .max_file = 1 << 20, .max_total = UINT64_MAX,
					 .min_free = UINT64_MAX - 4 };
	char err[512], want[256], files[256];

	memset(&m, 0, sizeof(m));
	put(&m, GUEST_PACK_MAGIC, 8);
	put_frame(&m, GUEST_PACK_FILE, "/bin/ls", 0, 5, "hello");
	put_frame(&m, GUEST_PACK_END, NULL, 0, 0, NULL);
	assert_int_equal(receive_lim(f, &m, &req, 1, &lim, err, sizeof(err)), -VMPT_ERR_IO);
	snprintf(want, sizeof(want), "agent reply offset 8: /bin/ls is 5 bytes, more than "
		 "%s can take: ", f->base);
	assert_memory_equal(err, want, strlen(want));
	snprintf(want, sizeof(want), " bytes free, %llu of them kept free",
		 (unsigned long long)(UINT64_MAX - 4));
	assert_string_equal(err + strlen(err) - strlen(want), want);
	list_files(f->base, files, sizeof(files));
	assert_string_equal(files, "");
}

/* A symlink in the sysroot pointing out of it is never followed. */
static void test_symlink_dir(void **state)
{
	struct fixture *f = *state;
	static struct mem m;
	struct guest_pack_request req = { .name = "/lib/evil.so", .dest = "lib/evil.so" };
	char err[256], files[256], link[96];

	snprintf(link, sizeof(link), "%s/root/lib", f->base);
	assert_int_equal(symlink(f->outside, link), 0);
	memset(&m, 0, sizeof(m));
	put(&m, GUEST_PACK_MAGIC, 8);
	put_frame(&m, GUEST_PACK_FILE, "/lib/evil.so", 0, 4, "evil");
	put_frame(&m, GUEST_PACK_END, NULL, 0, 0, NULL);
	assert_int_equal(receive(f, &m, &req, 1, 1 << 20, err, sizeof(err)), -VMPT_ERR_IO);
	assert_string_equal(err, "/lib/evil.so: cannot create lib/evil.so: Not a directory");
	list_files(f->outside, files, sizeof(files));
	assert_string_equal(files, "");
}

static void test_symlink_file(void **state)
{
	struct fixture *f = *state;
	static struct mem m;
	struct guest_pack_request req = { .name = "/bin/ls", .dest = "bin/ls" };
	char err[256], target[128], link[96];
	int fd;

	snprintf(target, sizeof(target), "%s/precious", f->outside);
	fd = open(target, O_WRONLY | O_CREAT, 0644);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);
	snprintf(link, sizeof(link), "%s/root/bin", f->base);
	assert_int_equal(mkdir(link, 0755), 0);
	snprintf(link, sizeof(link), "%s/root/bin/ls", f->base);
	assert_int_equal(symlink(target, link), 0);
	memset(&m, 0, sizeof(m));
	put(&m, GUEST_PACK_MAGIC, 8);
	put_frame(&m, GUEST_PACK_FILE, "/bin/ls", 0, 5, "guest");
	put_frame(&m, GUEST_PACK_END, NULL, 0, 0, NULL);
	assert_int_equal(receive(f, &m, &req, 1, 1 << 20, err, sizeof(err)), 0);
	assert_file(f->rootfd, "bin/ls", "guest");
	fd = open(target, O_RDONLY);
	assert_int_equal(read(fd, err, 8), 4);
	close(fd);
	assert_memory_equal(err, "keep", 4);
}

/* Random damage to a good reply: never a crash, always a clear error or
 * success, and files only at the names asked for.
 */
static void test_mutations(void **state)
{
	struct fixture *f = *state;
	static struct mem good, m;
	char err[256], files[512], root[96];
	unsigned seed = 12345;

	memset(&good, 0, sizeof(good));
	put(&good, GUEST_PACK_MAGIC, 8);
	put_frame(&good, GUEST_PACK_FILE, "/usr/bin/ls", 0, 5, "hello");
	put_frame(&good, GUEST_PACK_MISSING, "/lib/gone.so", ENOENT, 0, NULL);
	put_frame(&good, GUEST_PACK_FILE, GUEST_PACK_VDSO, 0, 4, "vdso");
	put_frame(&good, GUEST_PACK_END, NULL, 0, 0, NULL);
	for (int i = 0; i < 3000; i++) {
		struct guest_pack_request reqs[] = {
			{ .name = "/usr/bin/ls", .dest = "usr/bin/ls" },
			{ .name = "/lib/gone.so", .dest = "lib/gone.so" },
			{ .name = GUEST_PACK_VDSO, .dest = "vdso" },
		};
		int ret;

		m = good;
		if (i % 4 == 3) {
			m.len = rand_r(&seed) % good.len;
		} else {
			for (int n = 1 + rand_r(&seed) % 4; n; n--)
				m.buf[rand_r(&seed) % m.len] = (uint8_t)rand_r(&seed);
		}
		ret = receive(f, &m, reqs, 3, 1 << 20, err, sizeof(err));
		assert_true(ret == 0 || ret == -VMPT_ERR_FORMAT || ret == -VMPT_ERR_TRUNCATED);
		if (ret)
			assert_true(!strncmp(err, "agent reply offset ", 19));
	}
	snprintf(root, sizeof(root), "%s/root", f->base);
	list_files(root, files, sizeof(files));
	assert_true(!strcmp(files, "usr/bin/ls vdso ") || !strcmp(files, "usr/bin/ls ") ||
		    !strcmp(files, "vdso ") || !strcmp(files, ""));
	list_files(f->outside, files, sizeof(files));
	assert_string_equal(files, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sysroot_path),
		cmocka_unit_test_setup_teardown(test_receive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_magic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oversize, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_length_other_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_kind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_with_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_extra_frame, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_space, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mutations, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
