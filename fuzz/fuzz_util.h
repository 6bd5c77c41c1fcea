/* SPDX-License-Identifier: MIT */
/* What the file-based libFuzzer targets share: a per-process scratch
 * directory (on tmpfs when there is one), removed at exit; writing an
 * input's piece to a file there; an output stream that keeps only the
 * last bytes written in memory, so formatting runs in full without the
 * cost of a real file.  See docs/fuzzing.md.
 */
#ifndef VMPT_FUZZ_UTIL_H
#define VMPT_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The scratch directory, made on the first call; NULL when it cannot be
 * made.  It also points perf's build-id cache there and forgets the
 * debuginfod servers, so no input reaches outside it or the network.
 */
const char *fuzz_scratch(void);

/* DIR/NAME (under the scratch directory) into buf; -1 when too long. */
int fuzz_path(char *buf, size_t size, const char *name);

/* Write len bytes to path (created or truncated, mode 0600); 0 or -1. */
int fuzz_write(const char *path, const uint8_t *data, size_t len);

/* Remove path and, when it is a directory, all it holds. */
void fuzz_remove(const char *path);

/* A stream into a small ring buffer in memory (every write succeeds). */
FILE *fuzz_sink(void);

#endif
