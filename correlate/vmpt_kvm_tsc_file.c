/* SPDX-License-Identifier: MIT */
/* What vmpt record saves next to a recording about its vCPUs (the files
 * are the recorder's; docs/record.md and docs/correlate.md):
 *
 *   REC.kvm-tsc (REC/kvm-tsc): one line per vCPU per value seen, in time
 *     order: "vm PID-FD vcpu N tsc-offset V [tsc-scaling-ratio R
 *     frac-bits B] [time NS]", V signed decimal, NS the host perf time
 *     from which the value held (none: the whole recording);
 *   REC.vcpus (REC/vcpus): "vcpu N tid T source qmp|libvirt|thread-names".
 *
 * Both are read strictly: a line that is not one of these is an error
 * naming the file and line.
 */
#include "vmpt/correlate.h"
#include "vmpt/error.h"
#include "vmpt_corr_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_LINE 512

static int parse_i64(const char *s, int64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoll(s, &end, 10);
	return *s && !*end && !errno ? 0 : -1;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	if (*s == '-')
		return -1;
	*v = strtoull(s, &end, 10);
	return *s && !*end && !errno ? 0 : -1;
}

static int parse_int(const char *s, int *v)
{
	int64_t x;

	if (parse_i64(s, &x) < 0 || x < 0 || x > INT32_MAX)
		return -1;
	*v = (int)x;
	return 0;
}

/* "key value" pairs of one line into tok[]; the count, or -1. */
static int split(char *line, char **tok, int max)
{
	char *save = NULL;
	int n = 0;

	for (char *t = strtok_r(line, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) {
		if (n == max)
			return -1;
		tok[n++] = t;
	}
	return n % 2 ? -1 : n;
}

static int kvm_line(struct vmpt_corr *c, char *line)
{
	struct vmpt_kvm_value v = { .pid = -1, .vcpu = -1 };
	int have_vm = 0, have_off = 0, have_ratio = 0, have_bits = 0;
	char *tok[16];
	int n = split(line, tok, 16);

	if (n <= 0)
		return n;
	for (int i = 0; i < n; i += 2) {
		const char *k = tok[i], *val = tok[i + 1];
		uint64_t u;
		int64_t x;

		if (!strcmp(k, "vm")) {
			char *dash = strchr(val, '-');

			if (!dash)
				return -1;
			*dash = '\0';
			if (parse_int(val, &v.pid) < 0 || parse_u64(dash + 1, &u) < 0)
				return -1;
			have_vm = 1;
		} else if (!strcmp(k, "vcpu")) {
			if (parse_int(val, &v.vcpu) < 0)
				return -1;
		} else if (!strcmp(k, "tsc-offset")) {
			if (parse_i64(val, &x) < 0)
				return -1;
			v.offset = x;
			have_off = 1;
		} else if (!strcmp(k, "tsc-scaling-ratio")) {
			if (parse_u64(val, &v.ratio) < 0)
				return -1;
			have_ratio = 1;
		} else if (!strcmp(k, "frac-bits")) {
			if (parse_u64(val, &u) < 0 || u > 63)
				return -1;
			v.frac_bits = (unsigned)u;
			have_bits = 1;
		} else if (!strcmp(k, "time")) {
			if (parse_u64(val, &v.from) < 0)
				return -1;
		} else {
			return -1;
		}
	}
	if (!have_vm || v.vcpu < 0 || !have_off || have_ratio != have_bits)
		return -1;
	return vmpt_corr_add_kvm(c, &v) < 0 ? -2 : 1;
}

static int vcpu_line(struct vmpt_corr *c, char *line, int pid)
{
	struct vmpt_vcpu_thread v = { .pid = pid, .tid = -1, .vcpu = -1 };
	int have_source = 0;
	char *tok[8];
	int n = split(line, tok, 8);

	if (n <= 0)
		return n;
	for (int i = 0; i < n; i += 2) {
		const char *k = tok[i], *val = tok[i + 1];

		if (!strcmp(k, "vcpu")) {
			if (parse_int(val, &v.vcpu) < 0)
				return -1;
		} else if (!strcmp(k, "tid")) {
			if (parse_int(val, &v.tid) < 0)
				return -1;
		} else if (!strcmp(k, "source")) {
			if (strcmp(val, "qmp") && strcmp(val, "libvirt") &&
			    strcmp(val, "thread-names"))
				return -1;
			have_source = 1;
		} else {
			return -1;
		}
	}
	if (v.vcpu < 0 || v.tid < 0 || !have_source)
		return -1;
	return vmpt_corr_add_vcpu(c, &v) < 0 ? -2 : 1;
}

/* Read one of the files, line by line: 0 when absent, else the lines
 * read or a negative vmpt_err with errmsg set.
 */
static int read_lines(struct vmpt_corr *c, const char *path,
		      int (*line_fn)(struct vmpt_corr *, char *, int), int arg)
{
	char line[MAX_LINE + 2];
	struct stat st;
	FILE *f;
	int no = 0, n = 0;

	if (stat(path, &st) != 0)
		return 0;
	if (!S_ISREG(st.st_mode)) {
		snprintf(c->errmsg, sizeof(c->errmsg), "%.500s: not a regular file", path);
		return -VMPT_ERR_FORMAT;
	}
	f = fopen(path, "r");
	if (!f) {
		snprintf(c->errmsg, sizeof(c->errmsg), "%.500s: %s", path, strerror(errno));
		return -VMPT_ERR_IO;
	}
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		int ret;

		no++;
		if (len > MAX_LINE) {
			snprintf(c->errmsg, sizeof(c->errmsg), "%.500s:%d: line too long",
				 path, no);
			fclose(f);
			return -VMPT_ERR_FORMAT;
		}
		if (line[0] == '#')
			continue;
		ret = line_fn(c, line, arg);
		if (ret == -2) {
			fclose(f);
			return -VMPT_ERR_NOMEM;
		}
		if (ret < 0) {
			snprintf(c->errmsg, sizeof(c->errmsg), "%.500s:%d: not a line vmpt "
				 "record writes", path, no);
			fclose(f);
			return -VMPT_ERR_FORMAT;
		}
		n += ret;
	}
	fclose(f);
	return n;
}

static int kvm_line_fn(struct vmpt_corr *c, char *line, int arg)
{
	(void)arg;
	return kvm_line(c, line);
}

int vmpt_corr_read_vcpu_files(struct vmpt_corr *c, const char *recording, int pid)
{
	char kvm[4200], vcpus[4200];
	struct stat st;
	int ret;

	if (stat(recording, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(kvm, sizeof(kvm), "%.4000s/kvm-tsc", recording);
		snprintf(vcpus, sizeof(vcpus), "%.4000s/vcpus", recording);
	} else {
		snprintf(kvm, sizeof(kvm), "%.4000s.kvm-tsc", recording);
		snprintf(vcpus, sizeof(vcpus), "%.4000s.vcpus", recording);
	}
	ret = read_lines(c, kvm, kvm_line_fn, 0);
	if (ret < 0)
		return ret;
	return read_lines(c, vcpus, vcpu_line, pid);
}
