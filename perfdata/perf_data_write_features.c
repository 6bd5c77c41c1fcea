/* SPDX-License-Identifier: MIT */
/* The perf.data writer's end: feature sections and the final header. */
#include "perf_data_write.h"
#include "vmpt/error.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <unistd.h>

/* ---- defaults from this machine ---- */

static char *cpuinfo_field(const char *key)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char *line = NULL, *out = NULL;
	size_t cap = 0, klen = strlen(key);

	if (!f)
		return NULL;
	while (!out && getline(&line, &cap, f) > 0) {
		char *colon = strchr(line, ':');

		if (strncmp(line, key, klen) || !colon ||
		    (line[klen] != ' ' && line[klen] != '\t' && line[klen] != ':'))
			continue;
		colon++;
		while (*colon == ' ')
			colon++;
		colon[strcspn(colon, "\n")] = 0;
		out = strdup(colon);
	}
	free(line);
	fclose(f);
	return out;
}

/* "model name" with runs of spaces squashed, as perf's write_cpudesc. */
static char *default_cpudesc(void)
{
	char *s = cpuinfo_field("model name"), *r, *w;

	if (!s)
		return NULL;
	for (r = w = s; *r; r++)
		if (!(isspace((unsigned char)*r) && w > s && w[-1] == ' '))
			*w++ = isspace((unsigned char)*r) ? ' ' : *r;
	*w = 0;
	return s;
}

static char *default_cpuid(void)
{
	char *vendor = cpuinfo_field("vendor_id"), *family = cpuinfo_field("cpu family");
	char *model = cpuinfo_field("model"), *stepping = cpuinfo_field("stepping");
	char *out = NULL;

	if (vendor && family && model && stepping &&
	    asprintf(&out, "%s,%s,%s,%s", vendor, family, model, stepping) < 0)
		out = NULL;
	free(vendor);
	free(family);
	free(model);
	free(stepping);
	return out;
}

static uint64_t default_total_mem(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	unsigned long long kb = 0;
	char line[256];

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static int default_cmdline(struct vmpt_perf_env *env)
{
	FILE *f = fopen("/proc/self/cmdline", "r");
	char *arg = NULL;
	size_t cap = 0;

	if (!f)
		return 0;
	while (getdelim(&arg, &cap, 0, f) > 0) {
		char **grown = realloc(env->cmdline, (env->nr_cmdline + 1) * sizeof(char *));

		if (!grown)
			break;
		env->cmdline = grown;
		env->cmdline[env->nr_cmdline] = strdup(arg);
		if (!env->cmdline[env->nr_cmdline])
			break;
		env->nr_cmdline++;
	}
	free(arg);
	fclose(f);
	return 0;
}

static char *default_pmu_mappings(void)
{
	DIR *d = opendir("/sys/bus/event_source/devices");
	struct dirent *de;
	char *out = NULL;
	size_t len = 0;

	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		char path[512], *grown;
		unsigned type;
		FILE *f;
		int n, ok;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/type",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		ok = fscanf(f, "%u", &type) == 1;
		fclose(f);
		if (!ok)
			continue;
		n = snprintf(NULL, 0, "%s%s=%u", len ? "," : "", de->d_name, type);
		grown = realloc(out, len + (size_t)n + 1);
		if (!grown)
			break;
		out = grown;
		snprintf(out + len, (size_t)n + 1, "%s%s=%u", len ? "," : "", de->d_name, type);
		len += (size_t)n;
	}
	closedir(d);
	return out;
}

static void fill_env_defaults(struct vmpt_perf_env *e)
{
	struct utsname u;
	long n;

	if (uname(&u) == 0) {
		if (!e->hostname)
			e->hostname = strdup(u.nodename);
		if (!e->os_release)
			e->os_release = strdup(u.release);
		if (!e->arch)
			e->arch = strdup(u.machine);
	}
	if (!e->version)
		e->version = strdup("vmpt");
	if (!e->cpudesc)
		e->cpudesc = default_cpudesc();
	if (!e->cpuid)
		e->cpuid = default_cpuid();
	if (!e->nr_cpus_avail && (n = sysconf(_SC_NPROCESSORS_CONF)) > 0)
		e->nr_cpus_avail = (uint32_t)n;
	if (!e->nr_cpus_online && (n = sysconf(_SC_NPROCESSORS_ONLN)) > 0)
		e->nr_cpus_online = (uint32_t)n;
	if (!e->total_mem_kb)
		e->total_mem_kb = default_total_mem();
	if (!e->nr_cmdline)
		default_cmdline(e);
	if (!e->pmu_mappings)
		e->pmu_mappings = default_pmu_mappings();
}

/* ---- feature encoding ---- */

/* perf_header_string: u32 len (NUL included, padded to 64), bytes. */
static void fput_string(struct pw_buf *b, const char *s)
{
	static const uint8_t zero[PERF_NAME_ALIGN];
	size_t n = strlen(s ? s : "") + 1;
	uint32_t len = (uint32_t)((n + PERF_NAME_ALIGN - 1) & ~(size_t)(PERF_NAME_ALIGN - 1));

	pw_put32(b, len);
	pw_put(b, s ? s : "", n - 1);
	pw_put(b, zero, len - (n - 1));
}

static void feat_build_ids(struct pw_buf *b, const struct vmpt_perf_env *e)
{
	static const uint8_t zero[PERF_NAME_ALIGN];

	for (size_t i = 0; i < e->nr_build_ids; i++) {
		const struct vmpt_perf_build_id *bid = &e->build_ids[i];
		size_t n = strlen(bid->filename) + 1;
		size_t len = (n + PERF_NAME_ALIGN - 1) & ~(size_t)(PERF_NAME_ALIGN - 1);
		uint16_t misc = bid->misc | PERF_RECORD_MISC_BUILD_ID_SIZE;
		uint16_t size = (uint16_t)(8 + 4 + 24 + len);
		uint8_t id[24] = { 0 };

		memcpy(id, bid->id, 20);
		id[20] = bid->size;
		pw_put32(b, VMPT_PERF_RECORD_HEADER_BUILD_ID);
		pw_put(b, &misc, 2);
		pw_put(b, &size, 2);
		pw_put32(b, (uint32_t)bid->pid);
		pw_put(b, id, sizeof(id));
		pw_put(b, bid->filename, n - 1);
		pw_put(b, zero, len - (n - 1));
	}
}

static void feat_pmu_mappings(struct pw_buf *b, const char *maps)
{
	uint32_t nr = 0;
	const char *p;

	for (p = maps; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] ? 1 : 0))
		nr++;
	pw_put32(b, nr);
	for (p = maps; p && *p; ) {
		size_t len = strcspn(p, ",");
		const char *eq = memchr(p, '=', len);
		char name[256];
		size_t nlen = eq ? (size_t)(eq - p) : len;

		if (nlen >= sizeof(name))
			nlen = sizeof(name) - 1;
		memcpy(name, p, nlen);
		name[nlen] = 0;
		pw_put32(b, eq ? (uint32_t)strtoul(eq + 1, NULL, 10) : 0);
		fput_string(b, name);
		p += len + (p[len] ? 1 : 0);
	}
}

static int encode_feature(struct vmpt_perf_writer *w, unsigned feat, struct pw_buf *b)
{
	const struct vmpt_perf_env *e = &w->env;

	switch (feat) {
	case VMPT_PERF_FEAT_BUILD_ID: feat_build_ids(b, e); break;
	case VMPT_PERF_FEAT_HOSTNAME: fput_string(b, e->hostname); break;
	case VMPT_PERF_FEAT_OSRELEASE: fput_string(b, e->os_release); break;
	case VMPT_PERF_FEAT_VERSION: fput_string(b, e->version); break;
	case VMPT_PERF_FEAT_ARCH: fput_string(b, e->arch); break;
	case VMPT_PERF_FEAT_NRCPUS:
		pw_put32(b, e->nr_cpus_avail);
		pw_put32(b, e->nr_cpus_online);
		break;
	case VMPT_PERF_FEAT_CPUDESC: fput_string(b, e->cpudesc); break;
	case VMPT_PERF_FEAT_CPUID: fput_string(b, e->cpuid); break;
	case VMPT_PERF_FEAT_TOTAL_MEM: pw_put64(b, e->total_mem_kb); break;
	case VMPT_PERF_FEAT_CMDLINE:
		pw_put32(b, e->nr_cmdline);
		for (uint32_t i = 0; i < e->nr_cmdline; i++)
			fput_string(b, e->cmdline[i]);
		break;
	case VMPT_PERF_FEAT_EVENT_DESC:
		pw_put32(b, (uint32_t)w->nr_attrs);
		pw_put32(b, sizeof(struct perf_event_attr));
		for (size_t i = 0; i < w->nr_attrs; i++) {
			pw_put(b, &w->attrs[i].attr, sizeof(w->attrs[i].attr));
			pw_put32(b, (uint32_t)w->attrs[i].nr_ids);
			fput_string(b, w->attrs[i].name);
			pw_put(b, w->attrs[i].ids, w->attrs[i].nr_ids * 8);
		}
		break;
	case VMPT_PERF_FEAT_PMU_MAPPINGS: feat_pmu_mappings(b, e->pmu_mappings); break;
	case VMPT_PERF_FEAT_AUXTRACE:
		pw_put64(b, w->nr_index);
		for (size_t i = 0; i < w->nr_index; i++) {
			pw_put64(b, w->index[i].file_offset);
			pw_put64(b, w->index[i].size);
		}
		break;
	default:
		return -VMPT_ERR_INTERNAL;
	}
	return b->nomem ? -VMPT_ERR_NOMEM : 0;
}

static int pwrite_all(int fd, const void *buf, size_t size, uint64_t off)
{
	const uint8_t *p = buf;

	while (size) {
		ssize_t n = pwrite(fd, p, size, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -VMPT_ERR_IO;
		}
		p += n;
		off += (uint64_t)n;
		size -= (size_t)n;
	}
	return 0;
}

static const unsigned built_feats[] = {
	VMPT_PERF_FEAT_BUILD_ID, VMPT_PERF_FEAT_HOSTNAME,
	VMPT_PERF_FEAT_OSRELEASE, VMPT_PERF_FEAT_VERSION,
	VMPT_PERF_FEAT_ARCH, VMPT_PERF_FEAT_NRCPUS,
	VMPT_PERF_FEAT_CPUDESC, VMPT_PERF_FEAT_CPUID,
	VMPT_PERF_FEAT_TOTAL_MEM, VMPT_PERF_FEAT_CMDLINE,
	VMPT_PERF_FEAT_EVENT_DESC, VMPT_PERF_FEAT_PMU_MAPPINGS,
	VMPT_PERF_FEAT_AUXTRACE,
};
#define NR_BUILT_FEATS (sizeof(built_feats) / sizeof(built_feats[0]))

/* Does the writer build this feature itself (from env, attrs, index)? */
static int builds_feature(unsigned feat)
{
	for (size_t i = 0; i < NR_BUILT_FEATS; i++)
		if (built_feats[i] == feat)
			return 1;
	return 0;
}

int vmpt_perf_writer_copy_feature(struct vmpt_perf_writer *w, unsigned feat,
				  const void *data, uint64_t size)
{
	struct pw_raw_feature *f;

	if (!feat || feat >= VMPT_PERF_FEAT_BITS || builds_feature(feat))
		return -VMPT_ERR_INVAL;
	for (size_t i = 0; i < w->nr_raw_features; i++)
		if (w->raw_features[i].feat == feat)
			return -VMPT_ERR_INVAL;
	f = realloc(w->raw_features, (w->nr_raw_features + 1) * sizeof(*f));
	if (!f)
		return -VMPT_ERR_NOMEM;
	w->raw_features = f;
	f = &f[w->nr_raw_features];
	f->feat = feat;
	f->size = size;
	f->data = malloc(size ? size : 1);
	if (!f->data)
		return -VMPT_ERR_NOMEM;
	memcpy(f->data, data, size);
	w->nr_raw_features++;
	return 0;
}

static const struct pw_raw_feature *raw_feature(const struct vmpt_perf_writer *w,
						unsigned feat)
{
	for (size_t i = 0; i < w->nr_raw_features; i++)
		if (w->raw_features[i].feat == feat)
			return &w->raw_features[i];
	return NULL;
}

static int write_features_and_header(struct vmpt_perf_writer *w)
{
	uint64_t features[VMPT_PERF_FEAT_BITS / 64] = { 0 };
	uint64_t *table;
	uint64_t data_size = w->pos - w->data_offset, feat_offset = w->pos;
	unsigned nr = 0;
	int err = 0;

	for (unsigned i = 0; i < NR_BUILT_FEATS; i++) {
		unsigned f = built_feats[i];

		if (f == VMPT_PERF_FEAT_AUXTRACE && !w->nr_index)
			continue;
		if (f == VMPT_PERF_FEAT_CPUID && !w->env.cpuid)
			continue;
		if (f == VMPT_PERF_FEAT_CPUDESC && !w->env.cpudesc)
			continue;
		features[f / 64] |= 1ULL << (f % 64);
		nr++;
	}
	for (size_t i = 0; i < w->nr_raw_features; i++) {
		features[w->raw_features[i].feat / 64] |= 1ULL << (w->raw_features[i].feat % 64);
		nr++;
	}
	table = calloc(2 * (size_t)nr + 1, sizeof(*table));
	if (!table)
		return -VMPT_ERR_NOMEM;
	if ((err = pw_zero(w, nr * 16u)) < 0)
		goto out;
	nr = 0;
	for (unsigned f = 1; f < VMPT_PERF_FEAT_BITS; f++) {
		const struct pw_raw_feature *raw = raw_feature(w, f);
		struct pw_buf b = { 0 };

		if (!((features[f / 64] >> (f % 64)) & 1))
			continue;
		table[2 * nr] = w->pos;
		if (raw) {
			table[2 * nr + 1] = raw->size;
			err = pw_write(w, raw->data, raw->size);
		} else {
			err = encode_feature(w, f, &b);
			table[2 * nr + 1] = b.len;
			if (!err)
				err = pw_write(w, b.p, b.len);
		}
		free(b.p);
		if (err < 0)
			goto out;
		nr++;
	}
	if ((err = pw_flush(w)) < 0)
		goto out;
	if ((err = pwrite_all(w->fd, table, nr * 16u, feat_offset)) < 0)
		goto out;
	err = pd_write_header(w, data_size, features);
out:
	free(table);
	return err;
}

static void free_writer(struct vmpt_perf_writer *w)
{
	struct vmpt_perf_env *e = &w->env;

	for (size_t i = 0; i < w->nr_attrs; i++) {
		free(w->attrs[i].name);
		free(w->attrs[i].ids);
	}
	free(w->attrs);
	free(e->hostname);
	free(e->os_release);
	free(e->version);
	free(e->arch);
	free(e->cpudesc);
	free(e->cpuid);
	free(e->pmu_mappings);
	for (uint32_t i = 0; i < e->nr_cmdline; i++)
		free(e->cmdline[i]);
	free(e->cmdline);
	for (size_t i = 0; i < e->nr_build_ids; i++)
		free(e->build_ids[i].filename);
	free(e->build_ids);
	for (size_t i = 0; i < w->nr_mapped; i++)
		free(w->mapped[i].name);
	free(w->mapped);
	for (size_t i = 0; i < w->nr_raw_features; i++)
		free(w->raw_features[i].data);
	free(w->raw_features);
	free(w->index);
	free(w->path);
	free(w->kcore_dir);
	free(w);
}

int vmpt_perf_writer_close(struct vmpt_perf_writer *w)
{
	int err, saved = 0;

	fill_env_defaults(&w->env);
	err = pw_start(w);
	if (!err && w->want_build_ids && !w->env.nr_build_ids)
		err = pw_mapped_build_ids(w);
	if (!err)
		err = write_features_and_header(w);
	if (err == -VMPT_ERR_IO)
		saved = errno;
	if (close(w->fd) < 0 && !err) {
		err = -VMPT_ERR_IO;
		saved = errno;
	}
	free_writer(w);
	if (saved)
		errno = saved;
	return err;
}
