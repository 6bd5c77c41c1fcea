/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the perf.data forms that are not one file: perf's
 * directory form (DIR/data, the data.N files of perf record --threads,
 * DIR/kcore_dir) and the pipe form read from a real pipe.  The input is a
 * mode byte, then pieces cut at each "VMPTPART" mark.  Mode bit 0: the
 * first piece is written into a pipe and opened as vmpt script opens "-"
 * (read to its end); else piece 0 is DIR/data and piece N DIR/data.(N-1)
 * in a scratch directory (bit 1: with a kcore_dir), opened by path.  Every
 * record is walked as fuzz-perf-data does.  See docs/fuzzing.md.
 */
#include "fuzz_util.h"
#include "vmpt/error.h"
#include "vmpt/perf_data.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MARK "VMPTPART"
#define MAX_PARTS 4
#define PIPE_MAX (1 << 16)

static char dir[512], kcore[600];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (!fuzz_scratch() || fuzz_path(dir, sizeof(dir), "rec") < 0 || mkdir(dir, 0700) < 0)
		return -1;
	snprintf(kcore, sizeof(kcore), "%s/kcore_dir", dir);
	return 0;
}

static void walk(const char *path)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;

	if (vmpt_perf_open_flags(&pd, path, VMPT_PERF_READ_CUT) == 0) {
		vmpt_perf_cursor_init(&pd, &cur);
		while (vmpt_perf_next(&pd, &cur, &ev) > 0) {
			struct vmpt_perf_intel_pt_info info;
			struct vmpt_perf_id_entry e;

			if (ev.type == VMPT_PERF_RECORD_AUXTRACE_INFO)
				vmpt_perf_intel_pt_info(&ev, &info);
			for (uint64_t i = 0; ev.type == VMPT_PERF_RECORD_ID_INDEX &&
					     i < ev.id_index.nr; i++)
				vmpt_perf_id_index_entry(&ev, i, &e);
			if (ev.sid.id)
				vmpt_perf_attr_by_id(&pd, ev.sid.id);
		}
	}
	vmpt_perf_close(&pd);
}

/* The first piece through a pipe, all of it written before it is read. */
static void from_pipe(const uint8_t *p, size_t len)
{
	char path[64];
	int fd[2];

	if (len > PIPE_MAX || pipe2(fd, O_CLOEXEC) < 0)
		return;
	fcntl(fd[1], F_SETPIPE_SZ, PIPE_MAX);
	if (write(fd[1], p, len) == (ssize_t)len) {
		close(fd[1]);
		fd[1] = -1;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd[0]);
		walk(path);
	}
	if (fd[1] >= 0)
		close(fd[1]);
	close(fd[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data + 1, *end = data + size;
	unsigned n = 0;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		const uint8_t *cut = memmem(p, size - 1, MARK, 8);

		from_pipe(p, (size_t)((cut ? cut : end) - p));
		return 0;
	}
	if (data[0] & 2)
		mkdir(kcore, 0700);
	else
		rmdir(kcore);
	while (n < MAX_PARTS + 1) {
		const uint8_t *cut = memmem(p, (size_t)(end - p), MARK, 8);
		char name[600];

		snprintf(name, sizeof(name), n ? "%s/data.%u" : "%s/data", dir, n - 1);
		if (fuzz_write(name, p, (size_t)((cut ? cut : end) - p)) < 0)
			return 0;
		n++;
		if (!cut)
			break;
		p = cut + 8;
	}
	/* No data.N left from an earlier input. */
	for (unsigned k = n - 1; k < MAX_PARTS; k++) {
		char name[600];

		snprintf(name, sizeof(name), "%s/data.%u", dir, k);
		unlink(name);
	}
	walk(dir);
	return 0;
}
