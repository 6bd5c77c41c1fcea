/* SPDX-License-Identifier: MIT */
/* The perf.data writer's state, shared by its two files. */
#ifndef VMPT_PERF_DATA_WRITE_H
#define VMPT_PERF_DATA_WRITE_H

#include "perf_data_priv.h"

#define MAX_RECORD 0xffff
#define WBUF_SIZE (256 * 1024)

struct pw_attr {
	struct perf_event_attr attr;
	char *name;
	uint64_t *ids;
	size_t nr_ids;
};

/* A feature section kept as raw bytes (vmpt_perf_writer_copy_feature). */
struct pw_raw_feature {
	unsigned feat;
	uint8_t *data;
	uint64_t size;
};

/* An executable file a written MMAP named (opts.build_ids). */
struct pw_mapped {
	char *name;
	uint16_t misc;		/* PERF_RECORD_MISC_KERNEL or _USER */
	int have_id;		/* the MMAP2 carried it */
	uint8_t id[20], id_size;
};

struct vmpt_perf_writer {
	int fd;
	char *path;		/* the file written (PATH or PATH/data) */
	char *kcore_dir;	/* directory form only */
	struct pw_attr *attrs;
	size_t nr_attrs;
	struct vmpt_perf_env env;
	struct pw_raw_feature *raw_features;
	size_t nr_raw_features;
	struct vmpt_perf_auxtrace_index *index;
	size_t nr_index, cap_index;
	uint64_t pos;		/* file offset of the next byte written */
	uint64_t data_offset;
	int started;
	uint64_t nr_records;	/* records taken (buffered or written) */
	int err;		/* sticky: the first write error */
	int want_build_ids;	/* opts.build_ids */
	struct pw_mapped *mapped;
	size_t nr_mapped;
	size_t wlen;
	uint8_t wbuf[WBUF_SIZE];
};

/* Bytes made in memory before they are written (feature sections, the
 * tracing data): nomem is sticky, the bytes are the caller's to free.
 */
struct pw_buf {
	uint8_t *p;
	size_t len, cap;
	int nomem;
};

void pw_put(struct pw_buf *b, const void *p, size_t n);
static inline void pw_put32(struct pw_buf *b, uint32_t v) { pw_put(b, &v, 4); }
static inline void pw_put64(struct pw_buf *b, uint64_t v) { pw_put(b, &v, 8); }

int pw_flush(struct vmpt_perf_writer *w);
int pw_write(struct vmpt_perf_writer *w, const void *buf, size_t size);
int pw_zero(struct vmpt_perf_writer *w, size_t size);
/* (Re)write the file header in place. */
int pd_write_header(struct vmpt_perf_writer *w, uint64_t data_size,
		    const uint64_t *features);
/* Write header placeholder, ids and attrs before the first record. */
int pw_start(struct vmpt_perf_writer *w);
/* perf_data_write_build_ids.c: note a record's executable file; name
 * the build-ids of all noted in w->env (at close).
 */
void pw_note_mapping(struct vmpt_perf_writer *w, const uint8_t *r, uint16_t size);
int pw_mapped_build_ids(struct vmpt_perf_writer *w);

#endif
