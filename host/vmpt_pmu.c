/* SPDX-License-Identifier: MIT */
#include "vmpt/pmu.h"
#include "vmpt/error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int vmpt_read_small_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? -VMPT_ERR_NOT_FOUND
		       : errno == EACCES || errno == EPERM ? -VMPT_ERR_PERM
							  : -VMPT_ERR_IO;
	ssize_t n = read(fd, buf, len - 1);
	int saved = errno;
	close(fd);
	if (n < 0) {
		errno = saved;
		return saved == EACCES || saved == EPERM ? -VMPT_ERR_PERM : -VMPT_ERR_IO;
	}
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return (int)n;
}

/* "config:14-17", "config1:0-63", "config:5" */
static int parse_format(const char *text, struct vmpt_pmu_format *fmt)
{
	const char *colon = strchr(text, ':');
	if (!colon)
		return -VMPT_ERR_FORMAT;
	size_t flen = (size_t)(colon - text);
	if (flen == 6 && !strncmp(text, "config", 6))
		fmt->field = 0;
	else if (flen == 7 && !strncmp(text, "config1", 7))
		fmt->field = 1;
	else if (flen == 7 && !strncmp(text, "config2", 7))
		fmt->field = 2;
	else
		return -VMPT_ERR_FORMAT;
	char *end;
	errno = 0;
	unsigned long lo = strtoul(colon + 1, &end, 10), hi = lo;
	if (end == colon + 1 || errno)
		return -VMPT_ERR_FORMAT;
	if (*end == '-') {
		const char *p = end + 1;
		hi = strtoul(p, &end, 10);
		if (end == p)
			return -VMPT_ERR_FORMAT;
	}
	/* Multi-range formats ("config:0-7,32-35") exist on other PMUs, not on
	 * intel_pt; refuse rather than misread them. */
	if (*end != '\0' || lo > hi || hi > 63)
		return -VMPT_ERR_FORMAT;
	fmt->lo = (unsigned)lo;
	fmt->hi = (unsigned)hi;
	return 0;
}

static int cmp_format(const void *a, const void *b)
{
	return strcmp(((const struct vmpt_pmu_format *)a)->name,
		      ((const struct vmpt_pmu_format *)b)->name);
}

int vmpt_pmu_open(struct vmpt_pmu *pmu, const char *sysfs_root,
		  const char *name, char *err, size_t errlen)
{
	char path[4200], buf[256];
	memset(pmu, 0, sizeof(*pmu));
	snprintf(pmu->name, sizeof(pmu->name), "%s", name);
	snprintf(pmu->dir, sizeof(pmu->dir), "%s/bus/event_source/devices/%s",
		 sysfs_root ? sysfs_root : "/sys", name);

	snprintf(path, sizeof(path), "%s/type", pmu->dir);
	int n = vmpt_read_small_file(path, buf, sizeof(buf));
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", path, vmpt_strerror(n));
		return n;
	}
	char *end;
	unsigned long type = strtoul(buf, &end, 10);
	if (end == buf || *end) {
		snprintf(err, errlen, "%s: not a PMU type number: '%s'", path, buf);
		return -VMPT_ERR_FORMAT;
	}
	pmu->type = (uint32_t)type;

	snprintf(path, sizeof(path), "%s/format", pmu->dir);
	DIR *d = opendir(path);
	if (!d)
		return 0;	/* software-like PMUs have no format directory */
	struct dirent *de;
	int ret = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (pmu->nr_formats == VMPT_PMU_MAX_FORMATS ||
		    strlen(de->d_name) >= sizeof(pmu->formats[0].name)) {
			snprintf(err, errlen, "%s/%s: too many or too long format names",
				 path, de->d_name);
			ret = -VMPT_ERR_FORMAT;
			break;
		}
		char fpath[4500];
		snprintf(fpath, sizeof(fpath), "%s/%s", path, de->d_name);
		n = vmpt_read_small_file(fpath, buf, sizeof(buf));
		struct vmpt_pmu_format *fmt = &pmu->formats[pmu->nr_formats];
		if (n < 0 || parse_format(buf, fmt) < 0) {
			snprintf(err, errlen, "%s: cannot parse format '%s'", fpath,
				 n < 0 ? vmpt_strerror(n) : buf);
			ret = -VMPT_ERR_FORMAT;
			break;
		}
		memcpy(fmt->name, de->d_name, strlen(de->d_name) + 1); /* length checked above */
		pmu->nr_formats++;
	}
	closedir(d);
	qsort(pmu->formats, pmu->nr_formats, sizeof(pmu->formats[0]), cmp_format);
	return ret;
}

const struct vmpt_pmu_format *vmpt_pmu_format(const struct vmpt_pmu *pmu,
					      const char *term)
{
	for (size_t i = 0; i < pmu->nr_formats; i++)
		if (!strcmp(pmu->formats[i].name, term))
			return &pmu->formats[i];
	return NULL;
}

uint64_t vmpt_pmu_format_mask(const struct vmpt_pmu_format *fmt)
{
	unsigned width = fmt->hi - fmt->lo + 1;
	uint64_t ones = width == 64 ? ~0ULL : (1ULL << width) - 1;
	return ones << fmt->lo;
}

int vmpt_pmu_cap(const struct vmpt_pmu *pmu, const char *cap, uint64_t *value)
{
	char path[4200], buf[64];
	snprintf(path, sizeof(path), "%s/caps/%s", pmu->dir, cap);
	int n = vmpt_read_small_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	char *end;
	*value = strtoull(buf, &end, 16);
	if (end == buf || *end)
		return -VMPT_ERR_FORMAT;
	return 0;
}
