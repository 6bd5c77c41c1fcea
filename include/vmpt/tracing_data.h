/* SPDX-License-Identifier: MIT */
/* perf's tracing data: what perf record keeps of tracefs for its
 * tracepoints (the TRACING_DATA feature section, or a pipe's
 * HEADER_TRACING_DATA record; the layout of perf's trace-event-info.c),
 * cut into its parts (the parts point into the data given), and made
 * from them.
 */
#ifndef VMPT_TRACING_DATA_H
#define VMPT_TRACING_DATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A part: size bytes at data. */
struct vmpt_tracing_blob {
	const uint8_t *data;
	uint64_t size;
};

/* One event's format file (events/SYSTEM/NAME/format). */
struct vmpt_tracing_format {
	const char *system;		/* "ftrace" for ftrace's own events */
	struct vmpt_tracing_blob text;
};

struct vmpt_tracing_data {
	const char *version;		/* "0.6" */
	uint8_t big_endian;		/* of the numbers in the data and records */
	uint8_t long_size;
	uint32_t page_size;
	struct vmpt_tracing_blob header_page, header_event;
	struct vmpt_tracing_format *formats;
	size_t n_formats;
	struct vmpt_tracing_blob kallsyms, printk;
	struct vmpt_tracing_blob cmdlines;	/* version 0.6 on */
};

/* Cut size bytes at data into td (free it with vmpt_tracing_data_free).
 * Returns 0, -VMPT_ERR_FORMAT with *err_off the offset in data of the part
 * that does not read (*what names it: "header_page", "an event format"),
 * or -VMPT_ERR_NOMEM.
 */
int vmpt_tracing_data_parse(const uint8_t *data, uint64_t size, struct vmpt_tracing_data *td,
			    uint64_t *err_off, const char **what);
void vmpt_tracing_data_free(struct vmpt_tracing_data *td);

/* The bytes of td laid out as perf writes them: the formats of system
 * "ftrace" as ftrace's own, the others by system, the systems in the order
 * of their first format.  *data is the caller's to free.  0 or
 * -VMPT_ERR_NOMEM.
 */
int vmpt_tracing_data_build(const struct vmpt_tracing_data *td, uint8_t **data, size_t *size);

#ifdef __cplusplus
}
#endif

#endif
