/* SPDX-License-Identifier: MIT */
/* vmpt_dl_load: a real library's functions are called through the table;
 * a missing library or function is an error value whose message names the
 * soname, dlerror()'s words and the package, the same on every later try.
 */
#include "../vmpt_dl.h"
#include "vmpt/error.h"

#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#define Z_FUNCS(X) X(zlibVersion) X(crc32)
VMPT_DL_TABLE(z, Z_FUNCS, "libz.so.1", "zlib1g");

/* crc32 exists in zlib; this does not. */
uLong vmpt_not_in_zlib(void);
#define ZBAD_FUNCS(X) X(crc32) X(vmpt_not_in_zlib)
VMPT_DL_TABLE(zbad, ZBAD_FUNCS, "libz.so.1", "zlib1g");

#define NONE_FUNCS(X) X(zlibVersion)
VMPT_DL_TABLE(none, NONE_FUNCS, "libvmpt-no-such.so.9", "vmpt-none");

static void *load_z(void *arg)
{
	(void)arg;
	return (void *)(size_t)(vmpt_dl_load(&z) == 0);
}

static void test_real_library(void **state)
{
	pthread_t t[4];

	(void)state;
	/* At once from several threads: one load, all see it done. */
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, load_z, NULL), 0);
	for (int i = 0; i < 4; i++) {
		void *ok;

		assert_int_equal(pthread_join(t[i], &ok), 0);
		assert_true(ok);
	}
	assert_string_equal(VMPT_DL(z, zlibVersion)(), ZLIB_VERSION);
	/* The check value of "123456789" (RFC 1952's CRC-32). */
	assert_int_equal(VMPT_DL(z, crc32)(0, (const Bytef *)"123456789", 9), 0xcbf43926);
	assert_string_equal(vmpt_dl_errmsg(&z), "");
}

static void test_missing_library(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(vmpt_dl_load(&none), -VMPT_ERR_NO_LIBRARY);
		assert_string_equal(vmpt_dl_errmsg(&none),
			"cannot use libvmpt-no-such.so.9 (Debian package vmpt-none): "
			"libvmpt-no-such.so.9: cannot open shared object file: "
			"No such file or directory");
	}
	assert_string_equal(vmpt_strerror(-VMPT_ERR_NO_LIBRARY),
			    "a shared library this command needs cannot be loaded");
}

static void test_missing_function(void **state)
{
	Dl_info di;
	char want[600];

	(void)state;
	/* dlerror() names the file the soname resolved to. */
	assert_int_equal(vmpt_dl_load(&z), 0);
	assert_int_not_equal(dladdr((void *)VMPT_DL(z, crc32), &di), 0);
	snprintf(want, sizeof(want), "cannot use libz.so.1 (Debian package zlib1g): "
		 "%s: undefined symbol: vmpt_not_in_zlib", di.dli_fname);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(vmpt_dl_load(&zbad), -VMPT_ERR_NO_LIBRARY);
		assert_string_equal(vmpt_dl_errmsg(&zbad), want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_library),
		cmocka_unit_test(test_missing_library),
		cmocka_unit_test(test_missing_function),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
