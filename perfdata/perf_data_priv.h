/* SPDX-License-Identifier: MIT */
/* Shared between the perf.data reader files; not a public header. */
#ifndef VMPT_PERF_DATA_PRIV_H
#define VMPT_PERF_DATA_PRIV_H

#include "vmpt/perf_data.h"

#include <stdint.h>
#include <string.h>

#define PERF_MAGIC2 0x32454c4946524550ULL	/* "PERFILE2" little-endian */
#define PERF_MAGIC2_SWAPPED 0x50455246494c4532ULL
#define PERF_FILE_HEADER_SIZE 104
#define PERF_PIPE_HEADER_SIZE 16
#define PERF_NAME_ALIGN 64		/* feature strings are padded to this */
#define PERF_RECORD_MISC_BUILD_ID_SIZE (1 << 15)

static inline uint64_t pd_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t pd_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint16_t pd_u16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Set pd->errmsg to "PATH: offset 0x..: message" and return -err. */
/* A warning in pd->warnmsg (the first one), as pd_error's. */
void pd_warn(struct vmpt_perf_data *pd, uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int pd_error(struct vmpt_perf_data *pd, uint64_t offset, int err,
	     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Parse the features of a file's feature section or a pipe-mode
 * HEADER_FEATURE record.
 */
int pd_parse_feature(struct vmpt_perf_data *pd, unsigned feat,
		     const uint8_t *buf, uint64_t size, uint64_t offset);

/* Check the record at cur->pos and step past it (and past the data of
 * AUXTRACE and HEADER_TRACING_DATA).  1, 0 at the end, or an error.
 */
int pd_step(struct vmpt_perf_data *pd, struct vmpt_perf_cursor *cur);

/* perf record -z (perf_data_compressed.c): the stream of the COMPRESSED
 * record at offset of file part, and [start, end) of it that the record
 * holds (the stream decompressed when first asked for).  0,
 * -VMPT_ERR_NOT_FOUND (no such record), or the error of a record that did
 * not decompress (errmsg set).
 */
int pd_zstd_chunk(struct vmpt_perf_data *pd, unsigned part, uint64_t offset,
		  const uint8_t **stream, uint64_t *len, uint64_t *start, uint64_t *end);
/* The error of the record where part's stream stopped decompressing (its
 * end is cut there), or 0.
 */
int pd_zstd_failure(struct vmpt_perf_data *pd, unsigned part);
void pd_zstd_free(struct vmpt_perf_data *pd);

/* The fields of the SAMPLE record ev (its attr set) as its sample_type
 * lays them out (perf_data_sample.c): 0 or an error naming the record.
 */
int pd_parse_sample(struct vmpt_perf_data *pd, struct vmpt_perf_event *ev);

/* Add an attr with ids (copied). */
int pd_add_attr(struct vmpt_perf_data *pd, const uint8_t *attr, uint32_t attr_size,
		const uint8_t *ids, uint64_t nr_ids);

#endif
