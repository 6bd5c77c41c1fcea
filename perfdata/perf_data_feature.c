/* SPDX-License-Identifier: MIT */
/* perf.data feature sections (perf's tools/perf/util/header.c formats). */
#include "perf_data_priv.h"
#include "vmpt/error.h"

#include <stdio.h>
#include <stdlib.h>

struct feat_buf {
	struct vmpt_perf_data *pd;
	const uint8_t *p;
	uint64_t size, pos, offset;	/* offset: file offset of p[0] */
	unsigned feat;
};

static int fb_short(struct feat_buf *fb, uint64_t need)
{
	return pd_error(fb->pd, fb->offset + fb->pos, VMPT_ERR_FORMAT,
			"feature %u truncated (need %llu bytes, %llu left)", fb->feat,
			(unsigned long long)need,
			(unsigned long long)(fb->size - fb->pos));
}

static int fb_u32(struct feat_buf *fb, uint32_t *v)
{
	if (fb->size - fb->pos < 4)
		return fb_short(fb, 4);
	*v = pd_u32(fb->p + fb->pos);
	fb->pos += 4;
	return 0;
}

static int fb_u64(struct feat_buf *fb, uint64_t *v)
{
	if (fb->size - fb->pos < 8)
		return fb_short(fb, 8);
	*v = pd_u64(fb->p + fb->pos);
	fb->pos += 8;
	return 0;
}

/* A perf_header_string: u32 len, then len bytes NUL-padded. */
static int fb_string(struct feat_buf *fb, char **out)
{
	uint32_t len = 0;
	size_t n;
	int err;

	err = fb_u32(fb, &len);
	if (err < 0)
		return err;
	if (fb->size - fb->pos < len)
		return fb_short(fb, len);
	n = strnlen((const char *)fb->p + fb->pos, len);
	*out = strndup((const char *)fb->p + fb->pos, n);
	if (!*out)
		return -VMPT_ERR_NOMEM;
	fb->pos += len;
	return 0;
}

static int replace_string(struct feat_buf *fb, char **field)
{
	char *s = NULL;
	int err = fb_string(fb, &s);

	if (err < 0)
		return err;
	free(*field);
	*field = s;
	return 0;
}

static int parse_cmdline(struct feat_buf *fb, struct vmpt_perf_env *env)
{
	uint32_t nr = 0;
	int err = fb_u32(fb, &nr);

	if (err < 0)
		return err;
	/* Each string takes at least 4 bytes: bound nr by the section. */
	if (nr > (fb->size - fb->pos) / 4)
		return pd_error(fb->pd, fb->offset, VMPT_ERR_FORMAT,
				"cmdline: %u strings do not fit in %llu bytes", nr,
				(unsigned long long)fb->size);
	for (uint32_t i = 0; i < env->nr_cmdline; i++)
		free(env->cmdline[i]);
	free(env->cmdline);
	env->nr_cmdline = 0;
	env->cmdline = calloc(nr ? nr : 1, sizeof(char *));
	if (!env->cmdline)
		return -VMPT_ERR_NOMEM;
	for (uint32_t i = 0; i < nr; i++) {
		err = fb_string(fb, &env->cmdline[i]);
		if (err < 0)
			return err;
		env->nr_cmdline++;
	}
	return 0;
}

static int parse_event_desc(struct feat_buf *fb)
{
	struct vmpt_perf_data *pd = fb->pd;
	uint32_t nr = 0, attr_size = 0, nr_ids = 0;
	int err;

	if ((err = fb_u32(fb, &nr)) < 0 || (err = fb_u32(fb, &attr_size)) < 0)
		return err;
	if (attr_size < PERF_ATTR_SIZE_VER0)
		return pd_error(pd, fb->offset + 4, VMPT_ERR_FORMAT,
				"event desc: bad attr size %u", attr_size);
	for (uint32_t i = 0; i < nr; i++) {
		char *name;
		uint64_t first_id = 0;

		if (fb->size - fb->pos < attr_size)
			return fb_short(fb, attr_size);
		fb->pos += attr_size;
		if ((err = fb_u32(fb, &nr_ids)) < 0 || (err = fb_string(fb, &name)) < 0)
			return err;
		if ((fb->size - fb->pos) / 8 < nr_ids) {
			free(name);
			return fb_short(fb, (uint64_t)nr_ids * 8);
		}
		if (nr_ids)
			first_id = pd_u64(fb->p + fb->pos);
		fb->pos += (uint64_t)nr_ids * 8;
		/* Match by id; attrs without ids match by position. */
		struct vmpt_perf_attr *a = (struct vmpt_perf_attr *)
			(nr_ids ? vmpt_perf_attr_by_id(pd, first_id) : NULL);
		if (!a && !nr_ids && i < pd->nr_attrs)
			a = &pd->attrs[i];
		if (a && !a->name)
			a->name = name;
		else
			free(name);
	}
	return 0;
}

static int parse_pmu_mappings(struct feat_buf *fb, struct vmpt_perf_env *env)
{
	uint32_t nr = 0, type = 0;
	size_t len = 0;
	char *out = NULL;
	int err = fb_u32(fb, &nr);

	if (err < 0)
		return err;
	for (uint32_t i = 0; i < nr; i++) {
		char *name, *grown;
		int n;

		if ((err = fb_u32(fb, &type)) < 0 || (err = fb_string(fb, &name)) < 0) {
			free(out);
			return err;
		}
		n = snprintf(NULL, 0, "%s%s=%u", len ? "," : "", name, type);
		grown = realloc(out, len + (size_t)n + 1);
		if (!grown) {
			free(name);
			free(out);
			return -VMPT_ERR_NOMEM;
		}
		out = grown;
		snprintf(out + len, (size_t)n + 1, "%s%s=%u", len ? "," : "", name, type);
		len += (size_t)n;
		free(name);
	}
	free(env->pmu_mappings);
	env->pmu_mappings = out;
	return 0;
}

/* A sequence of build_id events: header, pid, build_id[24], filename. */
static int parse_build_ids(struct feat_buf *fb, struct vmpt_perf_env *env)
{
	while (fb->pos < fb->size) {
		const uint8_t *r = fb->p + fb->pos;
		struct vmpt_perf_build_id *b;
		uint16_t misc, size;

		if (fb->size - fb->pos < 8 + 4 + 24)
			return fb_short(fb, 8 + 4 + 24);
		misc = pd_u16(r + 4);
		size = pd_u16(r + 6);
		if (size < 8 + 4 + 24 || size > fb->size - fb->pos)
			return pd_error(fb->pd, fb->offset + fb->pos, VMPT_ERR_FORMAT,
					"build id record size %u (%llu bytes left)", size,
					(unsigned long long)(fb->size - fb->pos));
		b = realloc(env->build_ids, (env->nr_build_ids + 1) * sizeof(*b));
		if (!b)
			return -VMPT_ERR_NOMEM;
		env->build_ids = b;
		b = &b[env->nr_build_ids];
		memset(b, 0, sizeof(*b));
		b->misc = misc;
		b->pid = (int32_t)pd_u32(r + 8);
		memcpy(b->id, r + 12, 20);
		/* Without the size flag (older perf) the id is a 20-byte sha1. */
		b->size = (misc & PERF_RECORD_MISC_BUILD_ID_SIZE) ? r[12 + 20] : 20;
		if (b->size > 20)
			b->size = 20;
		b->filename = strndup((const char *)r + 36, size - 36u);
		if (!b->filename)
			return -VMPT_ERR_NOMEM;
		env->nr_build_ids++;
		fb->pos += size;
	}
	return 0;
}

static int parse_auxtrace_index(struct feat_buf *fb)
{
	struct vmpt_perf_data *pd = fb->pd;
	uint64_t nr = 0;
	int err = fb_u64(fb, &nr);

	if (err < 0)
		return err;
	if (nr > (fb->size - fb->pos) / 16)
		return pd_error(pd, fb->offset, VMPT_ERR_FORMAT,
				"auxtrace index: %llu entries do not fit in %llu bytes",
				(unsigned long long)nr, (unsigned long long)fb->size);
	free(pd->auxtrace_index);
	pd->nr_auxtrace_index = 0;
	pd->auxtrace_index = calloc(nr ? nr : 1, sizeof(*pd->auxtrace_index));
	if (!pd->auxtrace_index)
		return -VMPT_ERR_NOMEM;
	for (uint64_t i = 0; i < nr; i++) {
		fb_u64(fb, &pd->auxtrace_index[i].file_offset);
		fb_u64(fb, &pd->auxtrace_index[i].size);
	}
	pd->nr_auxtrace_index = nr;
	return 0;
}

int pd_parse_feature(struct vmpt_perf_data *pd, unsigned feat,
		     const uint8_t *buf, uint64_t size, uint64_t offset)
{
	struct feat_buf fb = { pd, buf, size, 0, offset, feat };
	struct vmpt_perf_env *env = &pd->env;
	uint32_t v32 = 0;
	int err;

	switch (feat) {
	case VMPT_PERF_FEAT_HOSTNAME: return replace_string(&fb, &env->hostname);
	case VMPT_PERF_FEAT_OSRELEASE: return replace_string(&fb, &env->os_release);
	case VMPT_PERF_FEAT_VERSION: return replace_string(&fb, &env->version);
	case VMPT_PERF_FEAT_ARCH: return replace_string(&fb, &env->arch);
	case VMPT_PERF_FEAT_CPUDESC: return replace_string(&fb, &env->cpudesc);
	case VMPT_PERF_FEAT_CPUID: return replace_string(&fb, &env->cpuid);
	case VMPT_PERF_FEAT_NRCPUS:
		/* perf writes the available (present) count first. */
		if ((err = fb_u32(&fb, &env->nr_cpus_avail)) < 0)
			return err;
		return fb_u32(&fb, &env->nr_cpus_online);
	case VMPT_PERF_FEAT_TOTAL_MEM: return fb_u64(&fb, &env->total_mem_kb);
	case VMPT_PERF_FEAT_CMDLINE: return parse_cmdline(&fb, env);
	case VMPT_PERF_FEAT_EVENT_DESC: return parse_event_desc(&fb);
	case VMPT_PERF_FEAT_PMU_MAPPINGS: return parse_pmu_mappings(&fb, env);
	case VMPT_PERF_FEAT_BUILD_ID: return parse_build_ids(&fb, env);
	case VMPT_PERF_FEAT_AUXTRACE: return parse_auxtrace_index(&fb);
	case VMPT_PERF_FEAT_SAMPLE_TIME:
		if ((err = fb_u64(&fb, &env->first_sample_time)) < 0)
			return err;
		return fb_u64(&fb, &env->last_sample_time);
	case VMPT_PERF_FEAT_CLOCK_DATA:
		/* u32 version, u32 clockid, u64 tod_ns, u64 clockid_ns */
		if ((err = fb_u32(&fb, &v32)) < 0 || (err = fb_u32(&fb, &v32)) < 0)
			return err;
		env->clockid = (int32_t)v32;
		return 0;
	default:
		/* Sections vmpt has no use for are left alone, as perf does
		 * with the ones it does not know. */
		return 0;
	}
}
