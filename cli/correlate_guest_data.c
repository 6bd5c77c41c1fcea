/* SPDX-License-Identifier: MIT */
/* vmpt correlate --guest-data: perf inject --guest-data's option, turned
 * into a guest merge (include/vmpt/guest_merge.h).
 */
#include "correlate_guest_data.h"
#include "vmpt/error.h"
#include "vmpt/guest_merge.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRAMMAR "--guest-data takes FILE,PID[,OFFSET[,SCALE]]: the guest's perf.data, " \
		"the QEMU process's pid, and the guest TSC's offset and scale " \
		"(host TSC = (guest TSC - OFFSET) / SCALE)"

struct guest_data {
	char *file;
	uint32_t pid;
	struct vmpt_tsc_scale tsc;
};

static int bad(const char *spec, const char *what, const char *field)
{
	fprintf(stderr, "vmpt correlate: --guest-data=%s: %s '%s'; " GRAMMAR "\n", spec,
		what, field);
	return -1;
}

/* perf's parse_guest_data, with every field checked. */
static int parse(const char *spec, struct guest_data *gd, char *buf)
{
	char *field[5] = { 0 }, *end, *s = buf;
	unsigned nr = 0;
	unsigned long long v;
	double scale;

	while (s && nr < 5)
		field[nr++] = strsep(&s, ",");
	if (nr < 2 || nr > 4 || !field[0][0])
		return bad(spec, nr > 4 ? "too many fields in" : "missing fields in", spec);
	gd->file = field[0];
	errno = 0;
	v = strtoull(field[1], &end, 0);
	if (errno || *end || !field[1][0] || field[1][0] == '-' || !v || v > UINT32_MAX)
		return bad(spec, "PID must be a process id, not", field[1]);
	gd->pid = (uint32_t)v;
	if (nr > 2) {
		/* A negative offset is a u64's wrap, as perf and KVM print it. */
		errno = 0;
		gd->tsc.offset = strtoull(field[2], &end, 0);
		if (errno || *end || !field[2][0])
			return bad(spec, "OFFSET must be a number of TSC ticks, not", field[2]);
	}
	if (nr > 3) {
		errno = 0;
		scale = strtod(field[3], &end);
		/* As VMX's multiplier: 48 fraction bits in 64. */
		if (errno || *end || !field[3][0] || !isfinite(scale) || scale <= 0 ||
		    scale >= 65536 || ldexp(scale, 48) < 1)
			return bad(spec, "SCALE must be a positive ratio below 65536, not",
				   field[3]);
		gd->tsc.mult = (uint64_t)llround(ldexp(scale, 48));
		gd->tsc.frac_bits = 48;
	}
	return 0;
}

static void print_summary(const char *output, const struct vmpt_guest_merge_stats *st,
			  uint32_t pid)
{
	fprintf(stderr, "vmpt correlate: %s: guest records %" PRIu64 " in, %" PRIu64 " out (",
		output, st->guest_in, st->guest_out);
	for (unsigned t = 0, first = 1; t < VMPT_GUEST_MERGE_TYPES; t++)
		if (st->guest_by_type[t]) {
			fprintf(stderr, "%s%s %" PRIu64, first ? "" : ", ",
				vmpt_perf_record_name(t), st->guest_by_type[t]);
			first = 0;
		}
	fprintf(stderr, "), %" PRIu64 " host records; %u vCPU%s of pid %u (%s), %u guest build id%s%s\n",
		st->host_records, st->nr_vcpus, st->nr_vcpus == 1 ? "" : "s", pid,
		st->vcpu_source, st->guest_build_ids, st->guest_build_ids == 1 ? "" : "s",
		st->dir ? ", guest kcore in kcore_dir__PID" : "");
	if (st->guest_skipped)
		fprintf(stderr, "vmpt correlate: %" PRIu64 " guest samples and other records left out, as perf inject leaves them\n",
			st->guest_skipped);
}

int correlate_guest_data(const char *spec, const char *input, const char *output,
			 const char *vcpus)
{
	struct guest_data gd = { 0 };
	struct vmpt_guest_merge_config cfg = { 0 };
	struct vmpt_guest_merge_stats st;
	char *buf = strdup(spec), err[1024] = "";
	int ret;

	if (!buf) {
		fprintf(stderr, "vmpt correlate: out of memory\n");
		return 1;
	}
	if (parse(spec, &gd, buf) < 0) {
		free(buf);
		return 2;
	}
	cfg.host = input;
	cfg.guest = gd.file;
	cfg.output = output;
	cfg.machine_pid = gd.pid;
	cfg.tsc = &gd.tsc;
	cfg.nr_tsc = 1;
	cfg.vcpu_map = vcpus;
	ret = vmpt_guest_merge(&cfg, &st, err, sizeof(err));
	if (ret < 0)
		fprintf(stderr, "vmpt correlate: %s\n", err[0] ? err : vmpt_strerror(ret));
	else
		print_summary(output, &st, gd.pid);
	free(buf);
	return ret < 0 ? 1 : 0;
}
