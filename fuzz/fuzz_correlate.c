/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the correlator (vmpt/correlate.h).  The input is a
 * VM trace: a 12-byte head with what AUXTRACE_INFO and the intel_pt config
 * give (flags, MTC period, TSC/CTC ratio) and what vmpt record saves (KVM
 * values, vCPU threads, perf's OFFSET:VMCS), then the AUXTRACE buffers,
 * each after a "BUF:" mark and its mmap index and cpu.  The packet pass
 * and the learning run, the patches are checked sorted, applied to a copy
 * of each buffer and read on the fly by the flow decoder (no code: from
 * PSB to PSB), the report goes
 * to a memory sink.  With flag bit 7 the rest of the input is a whole
 * perf.data instead: opened by vmpt_corr_open from a scratch file, run,
 * and its patched copy written (vmpt_corr_write) to the scratch directory.
 * See docs/fuzzing.md.
 */
#include "fuzz_util.h"
#include "vmpt/correlate.h"
#include "vmpt/error.h"
#include "vmpt/flow.h"
#include "vmpt/image.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
	F_TSC = 1, F_MTC = 2, F_NOT_CONSEC = 4, F_PERF_PATCHES = 8, F_PERF_LOG = 16,
	F_PER_CPU = 32, F_DEFAULT_OFFSET = 64, F_PERF_DATA = 128,
};
#define HEAD 12
#define EXTRA 16	/* one KVM value, vCPU thread or offset */
#define MAX_BUFS 8
#define MARK "BUF:"

static FILE *sink;
static struct vmpt_image *no_code;	/* the decoder reads packets only */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	sink = fuzz_sink();
	no_code = vmpt_image_new();
	return fuzz_scratch() && sink && no_code ? 0 : -1;
}

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static void extra(struct vmpt_corr *c, const uint8_t *p)
{
	switch (p[0] % 3) {
	case 0: {
		struct vmpt_kvm_value v = {
			.pid = p[1] % 4, .vcpu = p[2] % 4, .offset = (int64_t)le(p + 8, 8),
			.ratio = le(p + 3, 4) << 16, .frac_bits = p[7] % 64,
			.from = p[0] & 8 ? le(p + 3, 2) : 0,
		};

		vmpt_corr_add_kvm(c, &v);
		break;
	}
	case 1: {
		struct vmpt_vcpu_thread v = { .pid = p[1] % 4, .tid = p[2] % 8, .vcpu = p[3] % 4 };

		vmpt_corr_add_vcpu(c, &v);
		break;
	}
	default:
		vmpt_corr_set_offset(c, p[1] == 0xff ? VMPT_NO_VMCS : le(p + 1, 5) & VMPT_NO_VMCS,
				     le(p + 8, 8));
	}
}

/* The patches must be sorted (vmpt_tsc_patch_find bisects them); applied
 * to a copy, and read by the decoder as it goes.
 */
static void use_patches(const struct vmpt_corr *c, const struct vmpt_corr_config *cfg,
			size_t b, const uint8_t *buf, size_t size)
{
	struct vmpt_tsc_patches pl = vmpt_corr_patches(c, b);
	struct vmpt_flow_config fc;
	struct vmpt_flow_item it;
	struct vmpt_flow *dec;
	uint8_t *copy;

	for (size_t i = 1; i < pl.n; i++)
		if (pl.p[i].offset <= pl.p[i - 1].offset)
			abort();
	copy = malloc(size ? size : 1);
	if (!copy)
		return;
	memcpy(copy, buf, size);
	for (size_t i = 0; i < pl.n; i++)
		if (pl.p[i].offset < size && copy[pl.p[i].offset] == 0x19)
			for (unsigned k = 0; k < 7 && pl.p[i].offset + 1 + k < size; k++)
				copy[pl.p[i].offset + 1 + k] = (uint8_t)(pl.p[i].tsc >> 8 * k);
	memset(&fc, 0, sizeof(fc));
	fc.begin = buf;
	fc.end = buf + size;
	fc.image = no_code;
	fc.tsc_ctc_ratio_n = cfg->tsc_ctc_ratio_n;
	fc.tsc_ctc_ratio_d = cfg->tsc_ctc_ratio_d;
	fc.mtc_period = cfg->mtc_period;
	fc.tsc_patches = &pl;
	dec = vmpt_flow_new(&fc);
	for (int n = 0; dec && n < 1024 && vmpt_flow_next(dec, &it) >= 0; n++)
		;
	vmpt_flow_free(dec);
	free(copy);
}

static void report(struct vmpt_corr *c, const struct vmpt_corr_config *cfg)
{
	const struct vmpt_tsc_segment *seg;
	uint64_t guest, patched;
	size_t n;

	seg = vmpt_corr_segments(c, &n);
	for (size_t i = 0; i < n; i++)
		if (seg[i].n_tids > VMPT_CORR_MAX_TIDS)
			abort();
	/* vmpt's own patches are of the guest TSCs it counts (perf's, with
	 * perf_patches, follow perf's reading, which may take more).
	 */
	vmpt_corr_counts(c, &guest, &patched);
	if (!cfg->perf_patches && patched > guest)
		abort();
	vmpt_corr_messages(c, &n);
	vmpt_corr_summary(c, sink, "fuzz");
	fflush(sink);
}

static void from_perf_data(const uint8_t *data, size_t size, const struct vmpt_corr_config *cfg)
{
	char in[512], out[512];
	struct vmpt_corr *c = NULL;

	if (fuzz_path(in, sizeof(in), "corr.data") < 0 ||
	    fuzz_path(out, sizeof(out), "corr-out.data") < 0 || fuzz_write(in, data, size) < 0)
		return;
	if (vmpt_corr_open(&c, in, cfg) == 0 && vmpt_corr_run(c) == 0) {
		report(c, cfg);
		vmpt_corr_write(c, out);
		fuzz_remove(out);
	}
	vmpt_corr_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmpt_corr_config cfg;
	uint8_t *bufs[MAX_BUFS];
	size_t sizes[MAX_BUFS], n_bufs = 0, n_extra;
	struct vmpt_corr *c;
	const uint8_t *p, *end = data + size;

	if (size < HEAD)
		return 0;
	memset(&cfg, 0, sizeof(cfg));
	cfg.have_tsc = data[0] & F_TSC;
	cfg.have_mtc = !!(data[0] & F_MTC);
	cfg.not_consecutive = !!(data[0] & F_NOT_CONSEC);
	cfg.perf_patches = !!(data[0] & F_PERF_PATCHES);
	cfg.perf_log = data[0] & F_PERF_LOG ? sink : NULL;
	cfg.mtc_period = data[1];
	cfg.tsc_ctc_ratio_n = (uint32_t)le(data + 2, 4);
	cfg.tsc_ctc_ratio_d = (uint32_t)le(data + 6, 4);
	n_extra = data[10] % 8;
	if (data[0] & F_PERF_DATA) {
		from_perf_data(data + HEAD, size - HEAD, &cfg);
		return 0;
	}
	c = vmpt_corr_new(&cfg);
	if (!c)
		return 0;
	p = data + HEAD;
	for (size_t i = 0; i < n_extra && end - p >= EXTRA; i++, p += EXTRA)
		extra(c, p);
	if (data[0] & F_DEFAULT_OFFSET)
		vmpt_corr_set_offset(c, VMPT_NO_VMCS, le(data + 2, 8));
	/* Buffers: from each mark (or the start) to the next; each an
	 * exact-size copy, so ASan sees a read past it.
	 */
	while (p < end && n_bufs < MAX_BUFS) {
		struct vmpt_corr_buffer b = { .cpu = -1, .tid = -1 };
		const uint8_t *q = p, *next;

		if (end - p >= 6 && !memcmp(p, MARK, 4)) {
			b.idx = p[4] % 4;
			if (data[0] & F_PER_CPU)
				b.cpu = p[5] % 4;
			else
				b.tid = p[5] % 8;
			q = p + 6;
		}
		next = memmem(q, (size_t)(end - q), MARK, 4);
		if (!next)
			next = end;
		sizes[n_bufs] = (size_t)(next - q);
		bufs[n_bufs] = malloc(sizes[n_bufs] ? sizes[n_bufs] : 1);
		if (!bufs[n_bufs])
			break;
		memcpy(bufs[n_bufs], q, sizes[n_bufs]);
		b.data = bufs[n_bufs];
		b.size = sizes[n_bufs];
		b.reference = n_bufs;
		b.file_offset = (uint64_t)(q - data);
		if (vmpt_corr_add_buffer(c, &b) < 0) {
			free(bufs[n_bufs]);
			break;
		}
		n_bufs++;
		p = next;
	}
	if (vmpt_corr_run(c) == 0) {
		report(c, &cfg);
		for (size_t i = 0; i < n_bufs; i++)
			use_patches(c, &cfg, i, bufs[i], sizes[i]);
	}
	vmpt_corr_free(c);
	for (size_t i = 0; i < n_bufs; i++)
		free(bufs[i]);
	return 0;
}
