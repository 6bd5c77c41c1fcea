/* SPDX-License-Identifier: MIT */
/* vmpt archive (vmpt/archive.h): each binary a recording maps, from perf's
 * build-id cache or its own path, copied to SYSROOT/PATH and indexed as
 * SYSROOT/.build-id/ab/cdef... (a link to it), which is where the session
 * looks first (vmpt_session_files.c).  The vdso comes from the cache or,
 * when it is this kernel's, from this process's own mapping.
 */
#include "vmpt/archive.h"
#include "vmpt/build_id.h"
#include "vmpt/error.h"
#include "vmpt/path.h"
#include "vmpt/session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A recorded path, to go beneath the sysroot: absolute, no "..". */
static int safe_name(const char *name)
{
	const char *p = name;

	if (!strcmp(name, "[vdso]"))
		return 1;
	if (name[0] != '/')
		return 0;
	while ((p = strstr(p, "/..")))
		if (p[3] == '/' || !p[3])
			return 0;
		else
			p += 3;
	return 1;
}

static int mkdirs(char *path)
{
	for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = 0;
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			*p = '/';
			return -VMPT_ERR_IO;
		}
		*p = '/';
	}
	return 0;
}

/* Write size bytes to path (through a temporary name, then renamed). */
static int put_file(const char *path, const void *data, size_t size)
{
	char tmp[4200];
	const char *p = data;
	int fd, n = snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());

	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -VMPT_ERR_INVAL;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -VMPT_ERR_IO;
	while (size) {
		ssize_t w = write(fd, p, size);

		if (w <= 0) {
			int saved = w < 0 ? errno : ENOSPC;

			close(fd);
			unlink(tmp);
			errno = saved;
			return -VMPT_ERR_IO;
		}
		p += w;
		size -= (size_t)w;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		int saved = errno;

		unlink(tmp);
		errno = saved;
		return -VMPT_ERR_IO;
	}
	return 0;
}

static int read_file(const char *path, uint8_t **data, size_t *size)
{
	struct stat st;
	int fd = vmpt_path_open(NULL, path);	/* a regular file: no FIFO */
	ssize_t n;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -VMPT_ERR_IO;
	}
	*data = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!*data) {
		close(fd);
		return -VMPT_ERR_NOMEM;
	}
	*size = 0;
	while ((n = read(fd, *data + *size, (size_t)st.st_size - *size)) > 0)
		*size += (size_t)n;
	close(fd);
	if (n < 0) {
		free(*data);
		return -VMPT_ERR_IO;
	}
	return 0;
}

/* The bytes of the binary recorded as name (build-id id, "" if none):
 * *data malloc'ed, or the vdso's own mapping (*own set).  *changed: the
 * build-id of a file found with another one.
 */
static int find_source(const char *name, const char *id, uint8_t **data, size_t *size,
		       int *own, char *changed)
{
	char path[4200], cache[4096], have[41];
	int vdso = !strcmp(name, "[vdso]");

	*own = 0;
	changed[0] = 0;
	if (id[0] && vmpt_build_id_cache_dir(cache, sizeof(cache)) == 0) {
		const char *fmt[] = { "%s/.build-id/%.2s/%s/elf", "%s/.build-id/%.2s/%s",
				      "%s/.build-id/%.2s/%s/vdso" };

		for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
			snprintf(path, sizeof(path), fmt[i], cache, id, id + 2);
			if (vmpt_build_id_of_file(path, have) == 0 &&
			    vmpt_build_id_equal(have, id))
				return read_file(path, data, size);
		}
	}
	if (vdso) {
		const uint8_t *v;

		if (vmpt_vdso_image(&v, size) < 0)
			return -VMPT_ERR_NOT_FOUND;
		if (vmpt_build_id_of_buffer(v, *size, have) < 0)
			snprintf(have, sizeof(have), "none");
		if (id[0] && !vmpt_build_id_equal(have, id)) {
			snprintf(changed, 41, "%s", have);
			return -VMPT_ERR_NOT_FOUND;
		}
		*data = (uint8_t *)v;
		*own = 1;
		return 0;
	}
	if (access(name, R_OK) < 0)
		return -VMPT_ERR_NOT_FOUND;
	if (id[0]) {
		if (vmpt_build_id_of_file(name, have) < 0)
			snprintf(have, sizeof(have), "none");
		if (!vmpt_build_id_equal(have, id)) {
			snprintf(changed, 41, "%s", have);
			return -VMPT_ERR_NOT_FOUND;
		}
	}
	return read_file(name, data, size);
}

/* Archive one binary: name under root, and its build-id link. */
static int archive_one(const char *root, const char *name, const char *id,
		       struct vmpt_archive_stats *st, FILE *report)
{
	char dest[4200], link[4200], target[4200], changed[41];
	int by_id = !strcmp(name, "[vdso]") && id[0], own, ret;
	uint8_t *data = NULL;
	size_t size = 0;

	/* The vdso has no path: by build-id only, or as ROOT/[vdso]. */
	if (by_id)
		snprintf(dest, sizeof(dest), "%s/.build-id/%.2s/%s", root, id, id + 2);
	else
		snprintf(dest, sizeof(dest), "%s%s%s", root, name[0] == '/' ? "" : "/", name);
	ret = find_source(name, id, &data, &size, &own, changed);
	if (ret == -VMPT_ERR_NOT_FOUND) {
		if (changed[0]) {
			st->changed++;
			if (report)
				fprintf(report, "  changed %s: build-id %s here, the recording's is "
					"%s: not copied\n", name, changed, id);
		} else {
			st->missing++;
			if (report)
				fprintf(report, "  missing %s%s%s%s: not in the build-id cache nor "
					"at its path\n", name, id[0] ? " (build-id " : "", id,
					id[0] ? ")" : "");
		}
		return 0;
	}
	if (ret < 0)
		return ret;
	ret = mkdirs(dest);
	if (ret == 0)
		ret = put_file(dest, data, size);
	if (!own)
		free(data);
	if (ret < 0)
		return ret;
	st->files++;
	st->bytes += size;
	if (report)
		fprintf(report, "  %s (%zu bytes%s%s)\n", name, size,
			id[0] ? ", build-id " : "", id);
	if (!id[0] || by_id)
		return 0;
	/* The build-id index, relative: the sysroot moves with the recording. */
	snprintf(link, sizeof(link), "%s/.build-id/%.2s/%s", root, id, id + 2);
	snprintf(target, sizeof(target), "../..%s", name);
	if (mkdirs(link) < 0)
		return -VMPT_ERR_IO;
	unlink(link);
	return symlink(target, link) < 0 ? -VMPT_ERR_IO : 0;
}

int vmpt_archive(const char *recording, struct vmpt_archive_stats *st, FILE *report,
		 char *err, size_t errlen)
{
	struct vmpt_session s;
	char root[4096], kcore[4200];
	struct stat sb;
	int ret;

	memset(st, 0, sizeof(*st));
	ret = vmpt_session_open(&s, recording, NULL);
	if (ret < 0) {
		snprintf(err, errlen, "%s", s.errmsg);
		vmpt_session_close(&s);
		return ret;
	}
	if (vmpt_session_sysroot(recording, root, sizeof(root)) < 0) {
		snprintf(err, errlen, "%.500s: path too long", recording);
		vmpt_session_close(&s);
		return -VMPT_ERR_INVAL;
	}
	for (size_t i = 0; i < s.n_maps && ret == 0; i++) {
		const struct vmpt_session_map *m = &s.maps[i];
		size_t k;

		if (m->pid < 0 && m->name[0] == '[')
			st->kernel = 1;	/* the kernel: kcore, not a file */
		if (!safe_name(m->name))
			continue;
		/* Once per binary. */
		for (k = 0; k < i; k++)
			if (!strcmp(s.maps[k].name, m->name) &&
			    !strcmp(s.maps[k].build_id, m->build_id))
				break;
		if (k < i)
			continue;
		ret = archive_one(root, m->name, m->build_id, st, report);
		if (ret < 0)
			snprintf(err, errlen, "%.500s: writing %.500s: %s", recording, root,
				 ret == -VMPT_ERR_IO ? strerror(errno) : vmpt_strerror(ret));
	}
	if (s.intel_pt && s.intel_pt->exclude_kernel)
		st->kernel = 0;
	snprintf(kcore, sizeof(kcore), "%s/kcore_dir", root);
	st->have_kcore = s.pd.kcore_dir != NULL ||
			 (stat(kcore, &sb) == 0 && S_ISDIR(sb.st_mode));
	vmpt_session_close(&s);
	return ret;
}
