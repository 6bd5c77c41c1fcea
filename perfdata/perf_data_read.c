/* SPDX-License-Identifier: MIT */
/* perf.data reader: file header, attrs and ids, the directory form, pipe
 * mode.  Every offset and size from the file is checked against the file
 * size before use: the reader is fuzzed.
 */
#include "perf_data_priv.h"
#include "vmpt/error.h"
#include "vmpt/path.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int pd_error(struct vmpt_perf_data *pd, uint64_t offset, int err,
	     const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	const struct vmpt_file *f = pd->cur_file ? pd->cur_file : &pd->map;

	snprintf(pd->errmsg, sizeof(pd->errmsg), "%s: offset %#llx: %s",
		 f->path ? f->path : pd->path,
		 (unsigned long long)offset, what);
	pd->err_offset = offset;
	return -err;
}

void pd_warn(struct vmpt_perf_data *pd, uint64_t offset, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	if (pd->warnmsg[0])
		return;	/* the first cut tells */
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(pd->warnmsg, sizeof(pd->warnmsg), "%s: offset %#llx: %s", pd->path,
		 (unsigned long long)offset, what);
}

int vmpt_perf_is_perf_data(const uint8_t *buf, size_t size)
{
	/* The magic alone decides: a short file with it is a damaged
	 * perf.data (the reader says so), not a raw trace. */
	return size >= 8 && pd_u64(buf) == PERF_MAGIC2;
}

static size_t id_slot(uint64_t id, size_t cap)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

/* The first attr with an id keeps it (as the scan in file order did). */
static void id_insert(struct vmpt_perf_data *pd, uint64_t id, uint32_t attr)
{
	size_t i = id_slot(id, pd->id_cap);

	while (pd->id_attr[i]) {
		if (pd->id_hash[i] == id)
			return;
		i = (i + 1) & (pd->id_cap - 1);
	}
	pd->id_hash[i] = id;
	pd->id_attr[i] = attr;
	pd->id_used++;
}

/* Room for more ids at most half full, rehashing what is there. */
static int id_reserve(struct vmpt_perf_data *pd, uint64_t more)
{
	uint64_t *old_hash = pd->id_hash;
	uint32_t *old_attr = pd->id_attr;
	size_t old_cap = pd->id_cap, cap = old_cap ? old_cap : 64;

	if (more > SIZE_MAX / 4 - pd->id_used)
		return -VMPT_ERR_NOMEM;
	while (cap < 2 * (pd->id_used + more))
		cap *= 2;
	if (cap == old_cap)
		return 0;
	pd->id_hash = calloc(cap, sizeof(*pd->id_hash));
	pd->id_attr = calloc(cap, sizeof(*pd->id_attr));
	if (!pd->id_hash || !pd->id_attr) {
		free(pd->id_hash);
		free(pd->id_attr);
		pd->id_hash = old_hash;
		pd->id_attr = old_attr;
		return -VMPT_ERR_NOMEM;
	}
	pd->id_cap = cap;
	pd->id_used = 0;
	for (size_t i = 0; i < old_cap; i++)
		if (old_attr[i])
			id_insert(pd, old_hash[i], old_attr[i]);
	free(old_hash);
	free(old_attr);
	return 0;
}

int pd_add_attr(struct vmpt_perf_data *pd, const uint8_t *attr, uint32_t attr_size,
		const uint8_t *ids, uint64_t nr_ids)
{
	struct vmpt_perf_attr *a;
	uint32_t size = attr_size;
	int err;

	if (pd->nr_attrs >= UINT32_MAX - 1)
		return -VMPT_ERR_NOMEM;
	a = realloc(pd->attrs, (pd->nr_attrs + 1) * sizeof(*a));
	if (!a)
		return -VMPT_ERR_NOMEM;
	pd->attrs = a;
	a = &pd->attrs[pd->nr_attrs];
	memset(a, 0, sizeof(*a));
	/* A newer perf's attr is longer: keep what we know. */
	if (size > sizeof(a->attr))
		size = sizeof(a->attr);
	memcpy(&a->attr, attr, size);
	a->file_attr_size = a->attr.size;
	if (nr_ids) {
		if (nr_ids > SIZE_MAX / sizeof(uint64_t))
			return -VMPT_ERR_NOMEM;
		a->ids = malloc(nr_ids * sizeof(uint64_t));
		if (!a->ids)
			return -VMPT_ERR_NOMEM;
		memcpy(a->ids, ids, nr_ids * sizeof(uint64_t));
		err = id_reserve(pd, nr_ids);
		if (err < 0) {
			free(a->ids);
			a->ids = NULL;
			return err;
		}
		for (uint64_t i = 0; i < nr_ids; i++)
			id_insert(pd, a->ids[i], (uint32_t)pd->nr_attrs + 1);
	}
	a->nr_ids = nr_ids;
	pd->nr_attrs++;
	return 0;
}

const struct vmpt_perf_attr *vmpt_perf_attr_by_id(const struct vmpt_perf_data *pd,
						  uint64_t id)
{
	if (!pd->id_cap)
		return NULL;
	for (size_t i = id_slot(id, pd->id_cap); pd->id_attr[i];
	     i = (i + 1) & (pd->id_cap - 1))
		if (pd->id_hash[i] == id)
			return &pd->attrs[pd->id_attr[i] - 1];
	return NULL;
}

static int read_attrs(struct vmpt_perf_data *pd, uint64_t attr_size,
		      uint64_t off, uint64_t size)
{
	const uint8_t *d = pd->map.data;
	uint64_t fsize = pd->map.size;
	int err;

	if (!attr_size)
		return size ? pd_error(pd, 16, VMPT_ERR_FORMAT, "attr size is 0") : 0;
	if (attr_size < PERF_ATTR_SIZE_VER0 + 16 || attr_size > 4096)
		return pd_error(pd, 16, VMPT_ERR_FORMAT, "bad attr size %llu",
				(unsigned long long)attr_size);
	if (off > fsize || size > fsize - off)
		return pd_error(pd, 24, VMPT_ERR_FORMAT,
				"attrs section (offset %#llx, size %llu) beyond end of file (%llu bytes)",
				(unsigned long long)off, (unsigned long long)size,
				(unsigned long long)fsize);
	for (uint64_t pos = off; pos + attr_size <= off + size; pos += attr_size) {
		uint32_t asz = pd_u32(d + pos + 4);
		uint64_t ids_off, ids_size;

		if (!asz)
			asz = PERF_ATTR_SIZE_VER0;
		if (asz > attr_size - 16)
			return pd_error(pd, pos + 4, VMPT_ERR_FORMAT,
					"attr size %u larger than the file's attr slot (%llu)",
					asz, (unsigned long long)(attr_size - 16));
		/* The ids section sits after the attr as perf wrote it. */
		ids_off = pd_u64(d + pos + asz);
		ids_size = pd_u64(d + pos + asz + 8);
		if (ids_off > fsize || ids_size > fsize - ids_off || ids_size % 8)
			return pd_error(pd, pos + asz, VMPT_ERR_FORMAT,
					"ids of attr %zu (offset %#llx, size %llu) beyond end of file or misaligned",
					pd->nr_attrs, (unsigned long long)ids_off,
					(unsigned long long)ids_size);
		err = pd_add_attr(pd, d + pos, asz, d + ids_off, ids_size / 8);
		if (err < 0)
			return err;
	}
	return 0;
}

static int read_features(struct vmpt_perf_data *pd, uint64_t feat_offset)
{
	const uint8_t *d = pd->map.data;
	uint64_t fsize = pd->map.size, pos = feat_offset;
	int err;

	for (unsigned feat = 1; feat < VMPT_PERF_FEAT_BITS; feat++) {
		uint64_t off, size;

		if (!vmpt_perf_has_feature(pd, feat))
			continue;
		/* A file cut in its feature section: the features before the
		 * cut stand (perf reads what is there).
		 */
		if (!pd->read_cut) {
			if (pos > fsize || fsize - pos < 16)
				return pd_error(pd, pos, VMPT_ERR_FORMAT,
						"feature section table truncated (feature %u)",
						feat);
			off = pd_u64(d + pos);
			size = pd_u64(d + pos + 8);
			if (off > fsize || size > fsize - off)
				return pd_error(pd, pos, VMPT_ERR_FORMAT,
						"feature %u (offset %#llx, size %llu) beyond end "
						"of file (%llu bytes)", feat,
						(unsigned long long)off, (unsigned long long)size,
						(unsigned long long)fsize);
		} else if (pos > fsize || fsize - pos < 16 ||
			   (off = pd_u64(d + pos)) > fsize ||
			   (size = pd_u64(d + pos + 8)) > fsize - off) {
			pd_warn(pd, pos, "the file ends (at %llu bytes) in its feature section: "
				"feature %u and later ones lost", (unsigned long long)fsize, feat);
			for (unsigned f = feat; f < VMPT_PERF_FEAT_BITS; f++)
				pd->features[f / 64] &= ~(1ULL << (f % 64));
			return 0;
		}
		err = pd_parse_feature(pd, feat, d + off, size, off);
		if (err < 0)
			return err;
		pos += 16;
	}
	return 0;
}

int vmpt_perf_feature_data(const struct vmpt_perf_data *pd, unsigned feat,
			   const uint8_t **data, uint64_t *size)
{
	const uint8_t *d = pd->map.data;
	uint64_t fsize = pd->map.size, pos = pd->data_offset + pd->data_size;
	uint64_t off, len;

	if (pd->pipe || !vmpt_perf_has_feature(pd, feat))
		return -VMPT_ERR_NOT_FOUND;
	/* The table has one entry per feature bit set, in bit order. */
	for (unsigned f = 1; f < feat; f++)
		if (vmpt_perf_has_feature(pd, f))
			pos += 16;
	if (pos > fsize || fsize - pos < 16)
		return -VMPT_ERR_NOT_FOUND;
	off = pd_u64(d + pos);
	len = pd_u64(d + pos + 8);
	if (off > fsize || len > fsize - off)
		return -VMPT_ERR_NOT_FOUND;
	*data = d + off;
	*size = len;
	return 0;
}

int vmpt_perf_tracing_data(const struct vmpt_perf_data *pd, const uint8_t **data,
			   uint64_t *size)
{
	if (!pd->pipe)
		return vmpt_perf_feature_data(pd, VMPT_PERF_FEAT_TRACING_DATA, data, size);
	if (!pd->pipe_tracing_size)
		return -VMPT_ERR_NOT_FOUND;
	*data = pd->pipe_tracing;
	*size = pd->pipe_tracing_size;
	return 0;
}

static int read_file_header(struct vmpt_perf_data *pd)
{
	const uint8_t *d = pd->map.data;
	uint64_t fsize = pd->map.size;
	uint64_t hsize, attr_size, attrs_off, attrs_size;
	int err;

	hsize = pd_u64(d + 8);
	if (hsize == PERF_PIPE_HEADER_SIZE) {
		pd->pipe = 1;
		pd->data_offset = PERF_PIPE_HEADER_SIZE;
		pd->data_size = fsize - PERF_PIPE_HEADER_SIZE;
		return 0;
	}
	if (hsize != PERF_FILE_HEADER_SIZE)
		return pd_error(pd, 8, VMPT_ERR_FORMAT, "bad header size %llu",
				(unsigned long long)hsize);
	if (fsize < PERF_FILE_HEADER_SIZE)
		return pd_error(pd, fsize, VMPT_ERR_FORMAT,
				"file header truncated (%llu of 104 bytes)",
				(unsigned long long)fsize);
	attr_size = pd_u64(d + 16);
	attrs_off = pd_u64(d + 24);
	attrs_size = pd_u64(d + 32);
	pd->data_offset = pd_u64(d + 40);
	pd->data_size = pd_u64(d + 48);
	memcpy(pd->features, d + 72, sizeof(pd->features));
	if (pd->data_offset < PERF_FILE_HEADER_SIZE || pd->data_offset > fsize)
		return pd_error(pd, 40, VMPT_ERR_FORMAT,
				"data offset %#llx outside the file (%llu bytes)",
				(unsigned long long)pd->data_offset,
				(unsigned long long)fsize);
	if (pd->data_size > fsize - pd->data_offset && !pd->read_cut)
		return pd_error(pd, 48, VMPT_ERR_FORMAT,
				"data section (offset %#llx, size %llu) beyond end of file (%llu bytes)",
				(unsigned long long)pd->data_offset,
				(unsigned long long)pd->data_size,
				(unsigned long long)fsize);
	if (pd->data_size > fsize - pd->data_offset) {
		/* Cut in its data: the records up to the last whole one. */
		pd_warn(pd, 48, "data section (offset %#llx, size %llu) goes beyond the end "
			"of the file (%llu bytes): the file was cut, read up to where it ends",
			(unsigned long long)pd->data_offset, (unsigned long long)pd->data_size,
			(unsigned long long)fsize);
		pd->data_size = fsize - pd->data_offset;
		pd->truncated = 1;
		memset(pd->features, 0, sizeof(pd->features));
	}
	err = read_attrs(pd, attr_size, attrs_off, attrs_size);
	if (err < 0)
		return err;
	err = read_features(pd, pd->data_offset + pd->data_size);
	/* perf record (and vmpt's writer) leave data size 0 until they
	 * finish: records, not features, follow the header then (vmpt's
	 * provisional header has no feature bits).  perf reads no records
	 * from such a file; say why instead of reading nothing. */
	int no_features = 1;

	for (unsigned i = 0; i < VMPT_PERF_FEAT_BITS / 64; i++)
		no_features &= !pd->features[i];
	if ((err == -VMPT_ERR_FORMAT || no_features) && !pd->data_size &&
	    fsize > pd->data_offset)
		return pd_error(pd, 48, VMPT_ERR_FORMAT,
				"data size is 0 but %llu bytes follow the header: a recording that was not finished (perf record or vmpt record killed?)",
				(unsigned long long)(fsize - pd->data_offset));
	return err;
}

/* Pipe mode: attrs and features come as records; collect them before the
 * walk so callers see them up front, as in a regular file.  A broken
 * record stops the scan; the walk reports it.
 */
static int scan_pipe_headers(struct vmpt_perf_data *pd)
{
	struct vmpt_perf_cursor cur;
	const uint8_t *d = pd->map.data;
	uint64_t pos;
	int ret;

	vmpt_perf_cursor_init(pd, &cur);
	for (;;) {
		pos = cur.pos;
		ret = pd_step(pd, &cur);
		if (ret <= 0)
			break;
		uint32_t type = pd_u32(d + pos);
		uint16_t size = pd_u16(d + pos + 6);

		if (type == VMPT_PERF_RECORD_HEADER_ATTR) {
			uint32_t asz = size >= 8 + 8 ? pd_u32(d + pos + 8 + 4) : 0;

			if (!asz)
				asz = PERF_ATTR_SIZE_VER0;
			if (asz < PERF_ATTR_SIZE_VER0 || asz > (uint32_t)size - 8u)
				break;
			ret = pd_add_attr(pd, d + pos + 8, asz, d + pos + 8 + asz,
					  (size - 8u - asz) / 8);
		} else if (type == VMPT_PERF_RECORD_HEADER_BUILD_ID) {
			/* The record is laid out as a BUILD_ID feature entry. */
			ret = pd_parse_feature(pd, VMPT_PERF_FEAT_BUILD_ID, d + pos,
					       size, pos);
		} else if (type == VMPT_PERF_RECORD_HEADER_TRACING_DATA) {
			/* pd_step checked that the data follows in the file. */
			pd->pipe_tracing = d + pos + size;
			pd->pipe_tracing_size = pd_u32(d + pos + 8);
		} else if (type == VMPT_PERF_RECORD_HEADER_FEATURE && size >= 16) {
			uint64_t feat = pd_u64(d + pos + 8);

			if (feat && feat < VMPT_PERF_FEAT_BITS) {
				pd->features[feat / 64] |= 1ULL << (feat % 64);
				ret = pd_parse_feature(pd, (unsigned)feat, d + pos + 16,
						       size - 16u, pos + 16);
			}
		}
		if (ret < 0)
			break;
	}
	if (ret == -VMPT_ERR_NOMEM)
		return ret;
	pd->errmsg[0] = 0;
	pd->err_offset = 0;
	return 0;
}

/* The data.N files of perf record --threads, in order. */
static int map_parts(struct vmpt_perf_data *pd, const char *dir)
{
	for (;;) {
		struct vmpt_file *parts;
		char *part_path, name[32];
		struct stat st;
		int err;

		snprintf(name, sizeof(name), "data.%zu", pd->nr_parts);
		if (asprintf(&part_path, "%s/%s", dir, name) < 0)
			return -VMPT_ERR_NOMEM;
		if (lstat(part_path, &st) != 0) {
			free(part_path);
			return 0;
		}
		parts = realloc(pd->parts, (pd->nr_parts + 1) * sizeof(*parts));
		if (!parts) {
			free(part_path);
			return -VMPT_ERR_NOMEM;
		}
		pd->parts = parts;
		/* A directory's files: inside it, regular (vmpt/path.h). */
		err = vmpt_path_map(&parts[pd->nr_parts], dir, name);
		if (err < 0) {
			snprintf(pd->errmsg, sizeof(pd->errmsg), "%s: %s", part_path,
				 err == -VMPT_ERR_IO ? strerror(errno) : vmpt_strerror(err));
			free(part_path);
			return err;
		}
		free(part_path);
		pd->nr_parts++;
	}
}

static int parse_mapped(struct vmpt_perf_data *pd);

int vmpt_perf_open(struct vmpt_perf_data *pd, const char *path)
{
	return vmpt_perf_open_flags(pd, path, 0);
}

int vmpt_perf_open_flags(struct vmpt_perf_data *pd, const char *path, unsigned flags)
{
	char *data_path = NULL;
	struct stat st;
	int err, is_dir;

	memset(pd, 0, sizeof(*pd));
	pd->env.clockid = -1;
	pd->read_cut = !!(flags & VMPT_PERF_READ_CUT);
	pd->path = strdup(path);
	if (!pd->path)
		return -VMPT_ERR_NOMEM;
	if (strcmp(path, "-") && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (asprintf(&data_path, "%s/data", path) < 0)
			return -VMPT_ERR_NOMEM;
		if (asprintf(&pd->kcore_dir, "%s/kcore_dir", path) < 0) {
			free(data_path);
			return -VMPT_ERR_NOMEM;
		}
		if (lstat(pd->kcore_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
			free(pd->kcore_dir);
			pd->kcore_dir = NULL;
		}
	}
	err = data_path ? vmpt_path_map(&pd->map, path, "data") :
			  vmpt_file_map(&pd->map, path);
	if (err < 0 && data_path && errno == ENOENT) {
		/* perf's directory form holds PATH/data: this is none. */
		snprintf(pd->errmsg, sizeof(pd->errmsg),
			 "%s: is a directory, not a perf.data (perf's directory form "
			 "holds %s/data)", path, path);
		free(data_path);
		return err;
	}
	if (err < 0) {
		snprintf(pd->errmsg, sizeof(pd->errmsg), "%s: %s",
			 data_path ? data_path : path,
			 err == -VMPT_ERR_IO ? strerror(errno) : vmpt_strerror(err));
		free(data_path);
		return err;
	}
	is_dir = data_path != NULL;
	free(data_path);
	err = parse_mapped(pd);
	if (err < 0 || pd->pipe)
		return err;
	return is_dir ? map_parts(pd, path) : 0;
}

int vmpt_perf_open_mapped(struct vmpt_perf_data *pd, struct vmpt_file *file,
			  unsigned flags)
{
	int err;

	memset(pd, 0, sizeof(*pd));
	pd->env.clockid = -1;
	pd->read_cut = !!(flags & VMPT_PERF_READ_CUT);
	pd->map = *file;
	memset(file, 0, sizeof(*file));
	pd->path = strdup(pd->map.path ? pd->map.path : "-");
	if (!pd->path)
		return -VMPT_ERR_NOMEM;
	err = parse_mapped(pd);
	return err;
}

/* The header, attrs and ids of pd->map (a pipe's headers too). */
static int parse_mapped(struct vmpt_perf_data *pd)
{
	int err;

	if (!pd->map.size) {
		snprintf(pd->errmsg, sizeof(pd->errmsg),
			 "%s: zero-sized data, nothing to do", pd->map.path);
		return -VMPT_ERR_FORMAT;
	}
	if (pd->map.size < PERF_PIPE_HEADER_SIZE)
		return pd_error(pd, pd->map.size, VMPT_ERR_FORMAT,
				"file too short for a perf.data header (%zu bytes)",
				pd->map.size);
	if (pd_u64(pd->map.data) == PERF_MAGIC2_SWAPPED) {
		pd->swapped = 1;
		return pd_error(pd, 0, VMPT_ERR_UNSUPPORTED,
				"perf.data of the other byte order");
	}
	if (pd_u64(pd->map.data) != PERF_MAGIC2)
		return pd_error(pd, 0, VMPT_ERR_FORMAT,
				"not a perf.data file (no PERFILE2 magic)");
	err = read_file_header(pd);
	if (err < 0)
		return err;
	return pd->pipe ? scan_pipe_headers(pd) : 0;
}

static void free_env(struct vmpt_perf_env *env)
{
	free(env->hostname);
	free(env->os_release);
	free(env->version);
	free(env->arch);
	free(env->cpudesc);
	free(env->cpuid);
	for (uint32_t i = 0; i < env->nr_cmdline; i++)
		free(env->cmdline[i]);
	free(env->cmdline);
	free(env->pmu_mappings);
	for (size_t i = 0; i < env->nr_build_ids; i++)
		free(env->build_ids[i].filename);
	free(env->build_ids);
}

void vmpt_perf_close(struct vmpt_perf_data *pd)
{
	for (size_t i = 0; i < pd->nr_attrs; i++) {
		free(pd->attrs[i].ids);
		free(pd->attrs[i].name);
	}
	free(pd->attrs);
	free(pd->id_hash);
	free(pd->id_attr);
	free_env(&pd->env);
	free(pd->auxtrace_index);
	pd_zstd_free(pd);
	free(pd->kcore_dir);
	free(pd->path);
	vmpt_file_unmap(&pd->map);
	for (size_t i = 0; i < pd->nr_parts; i++)
		vmpt_file_unmap(&pd->parts[i]);
	free(pd->parts);
	memset(pd, 0, sizeof(*pd));
}
