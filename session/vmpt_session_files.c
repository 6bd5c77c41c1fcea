/* SPDX-License-Identifier: MIT */
/* Where a recording's binaries are found: the recording's own sysroot
 * (vmpt archive's copies, by build-id and by path), perf's --symfs, perf's
 * build-id cache (~/.debug, or $PERF_BUILDID_DIR), the path itself, then
 * the debuginfod servers of $DEBUGINFOD_URLS by build-id.
 * A file whose build-id differs from the recorded one is not taken (as
 * perf): its code may not be what ran.
 */
#include "vmpt/session.h"
#include "vmpt_session_int.h"
#include "vmpt/build_id.h"
#include "vmpt/debuginfod.h"
#include "vmpt/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int vmpt_session_sysroot(const char *recording, char *buf, size_t size)
{
	struct stat st;
	int n;

	if (stat(recording, &st) == 0 && S_ISDIR(st.st_mode))
		n = snprintf(buf, size, "%s/root", recording);
	else
		n = snprintf(buf, size, "%s.root", recording);
	return n < 0 || (size_t)n >= size ? -VMPT_ERR_INVAL : 0;
}

static int regular(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* perf's build-id cache directory. */
static int cache_dir(char *buf, size_t size)
{
	const char *dir = getenv("PERF_BUILDID_DIR");
	const char *home = getenv("HOME");
	int n;

	if (dir && *dir)
		n = snprintf(buf, size, "%s", dir);
	else if (home && *home)
		n = snprintf(buf, size, "%s/.debug", home);
	else
		return -1;
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Is path a regular file holding the build-id (any, when id is empty)?
 * *other: set when it exists with another build-id.
 */
static int holds(const char *path, const char *id, int *other)
{
	char have[41];

	if (!regular(path))
		return 0;
	if (!id[0])
		return 1;
	if (vmpt_build_id_of_file(path, have) == 0 && vmpt_build_id_equal(have, id))
		return 1;
	*other = 1;
	return 0;
}

int session_find_binary(struct vmpt_session *s, const char *name, const char *id,
			char *out, size_t size, char *changed_id)
{
	char root[4096], cache[4096], fallback[4096] = "";
	const char *symfs = s->opts.symfs;
	int other = 0, vdso = !strcmp(name, "[vdso]");

	if (name[0] != '/' && !vdso)
		return -VMPT_ERR_NOT_FOUND;
#define TRY(...) do { \
		int other_before = other; \
		snprintf(out, size, __VA_ARGS__); \
		if (holds(out, id, &other)) \
			return 0; \
		if (other != other_before && !fallback[0] && !vdso) \
			snprintf(fallback, sizeof(fallback), "%s", out); \
	} while (0)
	if (vmpt_session_sysroot(s->pd.path, root, sizeof(root)) == 0) {
		if (id[0])
			TRY("%s/.build-id/%.2s/%s", root, id, id + 2);
		TRY(vdso ? "%s/%s" : "%s%s", root, name);
	}
	if (symfs && !vdso)
		TRY("%s%s", symfs, name);
	if (id[0] && cache_dir(cache, sizeof(cache)) == 0) {
		TRY("%s/.build-id/%.2s/%s/elf", cache, id, id + 2);
		TRY("%s/.build-id/%.2s/%s", cache, id, id + 2);
		if (vdso)
			TRY("%s/[vdso]/%s/vdso", cache, id);
		else
			TRY("%s%s/%s/elf", cache, name, id);
	}
	if (!vdso)
		TRY("%s", name);
#undef TRY
	if (id[0] && !vdso &&
	    vmpt_debuginfod_find(id, VMPT_DEBUGINFOD_EXECUTABLE, out, size) == 0)
		return 0;
	changed_id[0] = 0;
	if (fallback[0] && vmpt_build_id_of_file(fallback, changed_id) < 0)
		snprintf(changed_id, 41, "none");
	return -VMPT_ERR_NOT_FOUND;
}
