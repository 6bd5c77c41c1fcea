/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the decoding session end to end, as `vmpt script
 * -i REC` runs it: the input is written to REC in a scratch directory
 * beside a fixed set of small binaries (copied once from the directory
 * $VMPT_FUZZ_IMAGES: a mapping finds its binary by name beside the
 * recording), opened by vmpt_session_open_opts, decoded by
 * vmpt_session_decode into the script formatter with perf's defaults and
 * every sideband event shown (one input in three with two decoding
 * threads), its lines going to a memory sink.  See docs/fuzzing.md.
 */
#include "fuzz_util.h"
#include "vmpt/correlate.h"
#include "vmpt/error.h"
#include "vmpt/script_output.h"
#include "vmpt/session.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink;
static char rec[512];

/* The binaries of $VMPT_FUZZ_IMAGES into the scratch directory. */
static void copy_images(void)
{
	const char *dir = getenv("VMPT_FUZZ_IMAGES");
	struct dirent *de;
	DIR *d;

	if (!dir || !(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		char from[1024], to[512];
		struct stat st;
		uint8_t *buf;
		FILE *f;

		snprintf(from, sizeof(from), "%s/%s", dir, de->d_name);
		if (stat(from, &st) < 0 || !S_ISREG(st.st_mode) ||
		    fuzz_path(to, sizeof(to), de->d_name) < 0 || !(f = fopen(from, "rb")))
			continue;
		buf = malloc((size_t)st.st_size + 1);
		if (buf && fread(buf, 1, (size_t)st.st_size, f) == (size_t)st.st_size)
			fuzz_write(to, buf, (size_t)st.st_size);
		free(buf);
		fclose(f);
	}
	closedir(d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	sink = fuzz_sink();
	if (!sink || !fuzz_scratch() || fuzz_path(rec, sizeof(rec), "rec.data") < 0)
		return -1;
	copy_images();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmpt_session_opts so = { .warn = sink };
	struct vmpt_script_opts op;
	struct vmpt_script *sc = NULL;
	struct vmpt_session s;
	char err[512];

	vmpt_script_opts_init(&op);
	if (fuzz_write(rec, data, size) < 0)
		return 0;
	if (vmpt_session_open_opts(&s, rec, NULL, &so) < 0)
		goto out;
	if (s.corr)
		vmpt_corr_summary(s.corr, sink, "fuzz");
	op.show_task = op.show_mmap = op.show_switch = op.show_lost = 1;
	s.cfg.perf_resync = 1;
	op.image = s.image;
	op.have_tc = s.have_tc;
	op.tc = s.tc;
	op.map_of = vmpt_session_map_of;
	op.map_ctx = &s;
	if (vmpt_script_tp_open(&s.pd, &op.tp, err, sizeof(err)) < 0)
		goto out;
	if (vmpt_script_opts_recording(&op, &s.pd, s.intel_pt, s.have_info ? &s.info : NULL,
				       err, sizeof(err)) < 0)
		goto out;
	sc = vmpt_script_new(&op);
	/* One input in three on two threads, as -j 2: the pieces' seams
	 * and the blocks the workers fold.
	 */
	if (sc)
		vmpt_session_decode(&s, vmpt_script_consumer(sc), size % 3 ? 1 : 2, sink);
out:
	fflush(sink);
	vmpt_script_free(sc);
	vmpt_script_tp_free(op.tp);
	vmpt_session_close(&s);
	return 0;
}
