/* SPDX-License-Identifier: MIT */
/* Where a recording's binaries are found: the recording's own sysroot
 * (vmpt archive's copies, by build-id and by path), perf's --symfs, perf's
 * build-id cache (~/.debug, or $PERF_BUILDID_DIR), the path itself, then a
 * file of the same name beside the recording, last the debuginfod servers
 * of $DEBUGINFOD_URLS by build-id.
 * Each is opened inside the directory it is looked up in, as a regular
 * file only (vmpt/path.h): the names come from the recording.
 * A file whose build-id differs from the recorded one is not taken (as
 * perf): its code may not be what ran.
 */
#include "vmpt/session.h"
#include "vmpt_session_int.h"
#include "vmpt/build_id.h"
#include "vmpt/debuginfod.h"
#include "vmpt/error.h"
#include "vmpt/path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The build-id of path inside root (vmpt/path.h), as hex. */
static int build_id_in(const char *root, const char *path, char hex[41])
{
	struct vmpt_file f;
	int ret = vmpt_path_map(&f, root, path);

	if (ret < 0)
		return ret;
	ret = vmpt_build_id_of_buffer(f.data, f.size, hex);
	vmpt_file_unmap(&f);
	return ret;
}

/* Is path inside root a regular file holding the build-id (any, when id
 * is empty)?  *other: set when it exists with another build-id.
 */
static int holds(const char *root, const char *path, const char *id, int *other)
{
	char have[41];
	int fd = vmpt_path_open(root, path);

	if (fd < 0)
		return 0;
	close(fd);
	if (!id[0])
		return 1;
	if (build_id_in(root, path, have) == 0 && vmpt_build_id_equal(have, id))
		return 1;
	*other = 1;
	return 0;
}

/* A vdso recorded without a build-id (perf's pipe form) is this
 * machine's, as perf takes it (its vdso.c copies its own to a temporary
 * file): the same kernel's when the recording was made here.  Copied
 * once to a file the image maps, then unlinks (out->temp); the image
 * finds the mapping by that path for every other process.
 */
static int own_vdso(struct vmpt_session *s, struct session_binary *out)
{
	const char *tmp = getenv("TMPDIR");
	const uint8_t *v;
	size_t size, done = 0;
	int fd;

	out->root[0] = 0;
	if (s->own_vdso[0]) {
		snprintf(out->path, sizeof(out->path), "%s", s->own_vdso);
		return 0;
	}
	if (vmpt_vdso_image(&v, &size) < 0)
		return -VMPT_ERR_NOT_FOUND;
	snprintf(out->path, sizeof(out->path), "%s/vmpt-vdso-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if ((fd = mkstemp(out->path)) < 0)
		return -VMPT_ERR_NOT_FOUND;
	while (done < size) {
		ssize_t n = write(fd, v + done, size - done);

		if (n <= 0)
			break;
		done += (size_t)n;
	}
	close(fd);
	if (done < size) {
		unlink(out->path);
		return -VMPT_ERR_NOT_FOUND;
	}
	out->temp = 1;
	snprintf(s->own_vdso, sizeof(s->own_vdso), "%s", out->path);
	return 0;
}

int session_find_binary(struct vmpt_session *s, const char *name, const char *id,
			struct session_binary *out, char *changed_id)
{
	char cache[4096];
	struct session_binary fallback = { "", "", 0 };
	const char *symfs = s->opts.symfs;
	int other = 0, vdso = !strcmp(name, "[vdso]");

	out->temp = 0;
	if (name[0] == '[' && !vdso)
		return -VMPT_ERR_NOT_FOUND;
	/* A recording's name is looked up inside its sysroot (a recording
	 * may come with a crafted one); the user's directories and the name
	 * itself on this host are opened as is, regular files only.
	 */
#define TRY(dir, ...) do { \
		int other_before = other; \
		int n_ = snprintf(out->root, sizeof(out->root), "%s", (dir)); \
		if (n_ >= 0 && (size_t)n_ < sizeof(out->root)) \
			n_ = snprintf(out->path, sizeof(out->path), __VA_ARGS__); \
		if (n_ >= 0 && (size_t)n_ < sizeof(out->path) && \
		    holds(out->root[0] ? out->root : NULL, out->path, id, &other)) \
			return 0; \
		if (other != other_before && !fallback.path[0] && !vdso) \
			fallback = *out; \
	} while (0)
	/* perf opens a relative path (an MMAP2 of "./prog") from the working
	 * directory, as it is.
	 */
	if (name[0] != '/' && !vdso) {
		TRY("", "%s", name);
		goto not_found;
	}
	if (vmpt_session_sysroot(s->pd.path, cache, sizeof(cache)) == 0) {
		if (id[0])
			TRY(cache, "/.build-id/%.2s/%s", id, id + 2);
		TRY(cache, vdso ? "/%s" : "%s", name);
	}
	/* --symfs and perf's cache are the user's: their links are followed
	 * (perf's cache is links), but the name must not climb out.
	 */
	if (vmpt_path_has_dotdot(name))
		goto none;
	if (symfs && *symfs && !vdso)
		TRY("", "%s%s", symfs, name);
	if (id[0] && vmpt_build_id_cache_dir(cache, sizeof(cache)) == 0) {
		TRY("", "%s/.build-id/%.2s/%s/elf", cache, id, id + 2);
		TRY("", "%s/.build-id/%.2s/%s", cache, id, id + 2);
		if (vdso)
			TRY("", "%s/[vdso]/%s/vdso", cache, id);
		else
			TRY("", "%s%s/%s/elf", cache, name, id);
	}
	if (!vdso) {
		const char *slash = strrchr(s->pd.path, '/');

		TRY("", "%s", name);
		snprintf(cache, sizeof(cache), "%.*s",
			 slash ? (int)(slash - s->pd.path) + (slash == s->pd.path) : 1,
			 slash ? s->pd.path : ".");
		TRY(cache, "%s", strrchr(name, '/') + 1);
	}
	if (vdso && !id[0] && own_vdso(s, out) == 0)
		return 0;
none:
#undef TRY
	if (id[0] && !vdso &&
	    vmpt_debuginfod_find(id, VMPT_DEBUGINFOD_EXECUTABLE, out->path,
				 sizeof(out->path)) == 0) {
		out->root[0] = 0;
		return 0;
	}
not_found:
	changed_id[0] = 0;
	if (fallback.path[0] &&
	    build_id_in(fallback.root[0] ? fallback.root : NULL, fallback.path,
			changed_id) < 0)
		snprintf(changed_id, 41, "none");
	return -VMPT_ERR_NOT_FOUND;
}
