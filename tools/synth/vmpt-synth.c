/* SPDX-License-Identifier: MIT */
/* vmpt-synth: synthesize an Intel PT trace of real code with its ground
 * truth.  See docs/synthesizer.md.
 */
#include "synth_guest.h"
#include "synth_perf.h"
#include "vmpt/error.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIE_BASE 0x555555554000ull
/* --exec from a dynamically linked program: its libc, where ld.so maps
 * it without ASLR. */
#define LIBC_PATH "/lib/x86_64-linux-gnu/libc.so.6"
#define LIBC_BASE 0x7ffff7d80000ull

static const char usage[] =
"usage: vmpt-synth [options] -o PREFIX\n"
"Writes PREFIX.pt (raw Intel PT), PREFIX.images (code image list),\n"
"PREFIX.insn, PREFIX.branches and PREFIX.events (ground truth), with --vm\n"
"PREFIX.exits (VM exits) and PREFIX.tsc (VM TSC offsets), and\n"
"PREFIX.perf.data (unless --no-perf).\n"
"\n"
"Code:\n"
"  --elf FILE[@BASE]      user program (a PIE goes at BASE, default 0x555555554000)\n"
"  --start SYM|ADDR       first instruction (default: main, else the entry)\n"
"  --exec ELF[@BASE]      after --exec-after branches the program's next system\n"
"                         call is an execve of ELF (a PIE at BASE, default\n"
"                         0x555555554000), which runs from its entry point on\n"
"  --exec-after N         branches before the exec (default half of --branches)\n"
"  --libc FILE[@BASE]     the libc whose execve a dynamically linked --elf calls\n"
"                         (default " LIBC_PATH "@0x7ffff7d80000)\n"
"  --vm                   VM scenario: host kernel model + guest\n"
"  --host-kernel FILE     host kernel: the VMM model (--vm), or a kernel with\n"
"                         entry_SYSCALL_64/asm_common_interrupt traced with --elf\n"
"  --guest-elf FILE[@BASE] guest kernel image\n"
"  --guest-code           the guest runs --elf's own code (KVM selftests)\n"
"  --guest-start SYM      guest entry (default guest_code, else the entry)\n"
"Walk:\n"
"  --seed N               branch outcomes and targets (default 1)\n"
"  --branches N           stop after N branches (default 10000)\n"
"  --irq-period N         mean instructions between interrupts (user)\n"
"  --kernel-period N      mean kernel instructions before an interrupt whose\n"
"                         handler returns to user space (--host-kernel with\n"
"                         a Linux vmlinux)\n"
"  --filter SYM|START-END trace only this code (IP filter: TIP.PGE/TIP.PGD)\n"
"  --vcpus N              vCPUs, one VMCS each (default 1)\n"
"  --tsc-offset V[,V..]   guest TSC offset per vCPU (default -0x1000000000)\n"
"  --tsc-offset-change INSN:VCPU:V  change an offset mid-trace\n"
"  --tsc-scale M          guest TSC multiplier (48.16 fixed point as a float)\n"
"  --guest-period N       mean guest instructions per VM entry (default 3000)\n"
"  --entries-per-vcpu N   VM entries before another vCPU is loaded (default 4);\n"
"                         with vCPU threads, a thread's time slice\n"
"vCPU threads (--vm): each vCPU a thread of the VMM, as QEMU runs them:\n"
"  --per-thread           a trace buffer per thread (perf record --per-thread)\n"
"  --cpus N               threads scheduled on N host CPUs; without\n"
"                         --per-thread, a buffer per CPU (perf record -a)\n"
"A real guest as the guest (--vm, vCPU threads per thread, host traced u+k):\n"
"  --guest-recording DIR  what vmpt guest collected (DIR/guest or DIR: perf.data,\n"
"                         root/, kcore_dir/, vdso): vCPU n runs what guest CPU n\n"
"                         ran; PREFIX.perf.data is a directory (data, kcore_dir/,\n"
"                         guest/), PREFIX.gtruth says each instruction's task\n"
"  --guest-from NS        guest perf time to start at (default: the first exec)\n"
"  --guest-slice N        mean guest instructions the host runs of a task's time\n"
"                         on a guest CPU (default 3000)\n"
"Trace unit:\n"
"  --noretcomp            no return compression\n"
"  --no-timing            no TSC/MTC/CYC\n"
"  --cyc / --no-mtc       cycle-accurate mode / no MTC\n"
"  --cyc-thresh N  --mtc-freq N  --psb-period BYTES\n"
"  --tnt64                pack branches into TNT-64 packets\n"
"  --defer-tips           hold indirect jumps' and calls' TIPs back while the\n"
"                         TNT fills (the SDM's deferred TIPs)\n"
"  --event                Event Trace: CFE/EVD (VM exits and entries, interrupts)\n"
"  --ptw  --fup-on-ptw    PTWRITE packets, with a FUP each\n"
"  --pwr-evt              power events: MWAIT, PWRE, EXSTOP, PWRX\n"
"  --freq-period N        mean instructions between frequency changes (CBR)\n"
"  --guest-pm             HLT and MWAIT run in the guest (KVM's cpu-pm=on)\n"
"  --ovf-at INSN[:LOST]   internal buffer overflow at an instruction\n"
"  --snapshot SIZE:EVERY  snapshot mode (perf record -S -m,SIZE): an AUX area of\n"
"                         SIZE bytes (power of 2, 4096-65536), a snapshot every\n"
"                         EVERY instructions and one at the end (PREFIX.snapshots)\n"
"  --corrupt OFF[:BYTE],..  overwrite trace bytes (default 0x05, a reserved opcode)\n"
"Output:\n"
"  -o PREFIX  --no-perf  --tsc0 N  --pid N  -q\n"
"  --aux-buffer N         perf.data: each trace as AUXTRACE buffers of about N\n"
"                         bytes that continue one another (perf record reading\n"
"                         the AUX area as it fills): cut at a packet's end, then\n"
"                         padded with PADs to 8 bytes as perf record pads\n"
"  --no-truth             skip PREFIX.insn/.branches (large traces for benchmarks)\n";

struct opts {
	const char *out, *elf, *start, *host_kernel, *guest_elf, *guest_start;
	const char *offsets, *offset_change, *corrupt, *ovf, *filter, *snapshot;
	const char *grec, *exec, *libc;
	uint64_t exec_after;
	uint64_t guest_from, guest_slice;
	int vm, guest_code, no_perf, no_truth, quiet, vcpus, per_thread, cpus;
	int guest_pm;
	uint64_t freq_period, aux_buffer;
	double tsc_scale;
	uint64_t seed, branches, irq_period, kernel_period, guest_period;
	uint64_t entries_per_vcpu;
	uint64_t tsc0, pid;
	struct synth_pt_config pt;
};

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end ? -1 : 0;
}

static int parse_s64(const char *s, int64_t *v)
{
	char *end;
	int neg = *s == '-';
	uint64_t u;

	errno = 0;
	u = strtoull(s + neg, &end, 0);
	if (errno || end == s + neg || (*end && *end != ',' && *end != ':'))
		return -1;
	*v = neg ? -(int64_t)u : (int64_t)u;
	return 0;
}

static int load_elf(struct synth_image *img, const char *spec, uint64_t def_base)
{
	char err[512], *path = strdup(spec), *at;
	uint64_t base = def_base;
	int ret;

	if (!path)
		return -VMPT_ERR_NOMEM;
	at = strrchr(path, '@');
	if (at) {
		*at = 0;
		if (parse_u64(at + 1, &base)) {
			fprintf(stderr, "vmpt-synth: bad base in '%s'\n", spec);
			free(path);
			return -VMPT_ERR_INVAL;
		}
	}
	ret = synth_image_load(img, path, base, err, sizeof(err));
	if (ret)
		fprintf(stderr, "vmpt-synth: %s\n", err);
	free(path);
	return ret;
}

static uint64_t resolve(const struct synth_image *img, const char *s,
			const char *fallback)
{
	uint64_t v;

	if (s && !parse_u64(s, &v))
		return v;
	if (s)
		return synth_image_symbol(img, s, NULL);
	v = synth_image_symbol(img, fallback, NULL);
	return v ? v : img->entry;
}

/* --filter SYM (the function's extent) or START-END (run-time addresses). */
static int parse_filter(const struct synth_image *img, const char *spec,
			uint64_t *lo, uint64_t *hi)
{
	const char *dash = strchr(spec, '-');
	uint64_t size = 0;

	if (dash) {
		char *a = strndup(spec, (size_t)(dash - spec));
		int bad = !a || parse_u64(a, lo) || parse_u64(dash + 1, hi);

		free(a);
		return bad || *hi <= *lo ? -1 : 0;
	}
	*lo = synth_image_symbol(img, spec, &size);
	*hi = *lo + size;
	return *lo && size ? 0 : -1;
}

static FILE *open_out(const char *prefix, const char *ext)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", prefix, ext);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "vmpt-synth: %s: %s\n", path, strerror(errno));
	return f;
}

static int setup_vcpus(struct synth_walk_config *w, const struct opts *o)
{
	const char *p = o->offsets;
	int64_t last = -0x1000000000ll;

	w->n_vcpus = (unsigned)o->vcpus;
	for (unsigned i = 0; i < w->n_vcpus; i++) {
		struct synth_vcpu *v = &w->vcpus[i];

		if (p && *p) {
			if (parse_s64(p, &last)) {
				fprintf(stderr, "vmpt-synth: bad --tsc-offset '%s'\n", p);
				return -1;
			}
			p = strchr(p, ',');
			p = p ? p + 1 : NULL;
		}
		v->vmcs = 0x1c0000ull + 0x3000ull * i;
		v->tsc_offset = last;
		v->initial_offset = last;
		v->tsc_mult = (uint64_t)(o->tsc_scale * (double)(1ull << 48));
		v->guest_cr3 = 0x7000000ull + 0x10000ull * i;
	}
	if (o->offset_change) {
		uint64_t insn, vcpu;
		int64_t off;
		char *a = strdup(o->offset_change), *b, *c;

		b = a ? strchr(a, ':') : NULL;
		c = b ? strchr(b + 1, ':') : NULL;
		if (!c) {
			free(a);
			fprintf(stderr, "vmpt-synth: --tsc-offset-change INSN:VCPU:OFFSET\n");
			return -1;
		}
		*b = *c = 0;
		if (parse_u64(a, &insn) || parse_u64(b + 1, &vcpu) ||
		    parse_s64(c + 1, &off) || vcpu >= w->n_vcpus) {
			free(a);
			fprintf(stderr, "vmpt-synth: bad --tsc-offset-change\n");
			return -1;
		}
		free(a);
		w->vcpus[vcpu].change_at_insn = insn;
		w->vcpus[vcpu].new_offset = off;
	}
	return 0;
}

/* OFF[:BYTE],...: overwrite trace bytes; the default 0x05 is a reserved
 * opcode, so a decoder must notice (a changed payload byte may not be).
 */
static int corrupt(struct synth_pt *pt, const char *list)
{
	while (list && *list) {
		char *end;
		uint64_t off = strtoull(list, &end, 0), byte = 0x05;

		if (end == list)
			return -1;
		if (*end == ':')
			byte = strtoull(end + 1, &end, 0);
		if (off >= pt->len || byte > 0xff || (*end && *end != ','))
			return -1;
		pt->buf[off] = (uint8_t)byte;
		list = *end ? end + 1 : NULL;
	}
	return 0;
}

/* The raw trace: PREFIX.pt, or per buffer PREFIX.tidT.pt / PREFIX.cpuN.pt. */
static int write_raw(const char *prefix, const struct synth_stream *s,
		     int threads)
{
	const struct synth_pt *pt = &s->pt;
	char ext[64];
	FILE *f;

	if (!threads)
		snprintf(ext, sizeof(ext), ".pt");
	else if (s->cpu >= 0)
		snprintf(ext, sizeof(ext), ".cpu%d.pt", (int)s->cpu);
	else
		snprintf(ext, sizeof(ext), ".tid%d.pt", (int)s->tid);
	f = open_out(prefix, ext);
	if (!f)
		return -1;
	if (pt->len && fwrite(pt->buf, 1, pt->len, f) != pt->len) {
		fclose(f);
		return -1;
	}
	return fclose(f);
}

static void write_image(FILE *f, const char *role, const struct synth_image *img)
{
	if (img)
		fprintf(f, "%s %s 0x%" PRIx64 "\n", role, img->path, img->base);
}

static int write_images(const char *prefix, const struct synth_walk_config *w)
{
	FILE *f = open_out(prefix, ".images");

	if (!f)
		return -1;
	/* ROLE PATH BASE: where each ELF's file addresses are shifted to. */
	write_image(f, "user", w->user);
	write_image(f, "libc", w->libc);
	write_image(f, "exec", w->exec);
	write_image(f, "host-kernel", w->kernel);
	if (w->vm)
		write_image(f, "guest", w->guest);
	return fclose(f);
}

/* --guest-recording: the guest, and where the host trace starts (the
 * first exec in the guest, or --guest-from). */
static int open_grec(struct synth_grec *g, struct synth_walk_config *w,
		     struct opts *o)
{
	int64_t offsets[SYNTH_MAX_VCPUS];
	const struct gslice *next;
	char err[512];
	int ret;

	for (unsigned i = 0; i < w->n_vcpus; i++)
		offsets[i] = w->vcpus[i].tsc_offset;
	ret = synth_grec_open(g, o->grec, offsets, w->n_vcpus, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "vmpt-synth: %s\n", ret == -VMPT_ERR_NOMEM ?
			vmpt_strerror(ret) : err);
		return -1;
	}
	if (g->guest_cpus > w->n_vcpus) {
		fprintf(stderr, "vmpt-synth: %s: the guest ran on %u CPUs: give "
			"--vcpus %u\n", o->grec, g->guest_cpus, g->guest_cpus);
		return -1;
	}
	g->slice_insns = o->guest_slice ? o->guest_slice : 3000;
	w->grec = g;
	w->guest = &g->kernel;
	o->tsc0 = o->guest_from ? synth_grec_host_tsc(g, 0, o->guest_from) :
				  g->first_exec;
	/* before the first task the trace shows, if that comes later */
	for (unsigned i = 0; i < w->n_vcpus; i++) {
		const struct gslice *s = synth_grec_slice(g, i, o->tsc0, &next);

		if (!s && next && (!o->tsc0 || next->from < o->tsc0))
			o->tsc0 = next->from;
	}
	if (!o->tsc0) {
		fprintf(stderr, "vmpt-synth: %s: no task ran on a guest CPU\n",
			o->grec);
		return -1;
	}
	o->tsc0 -= 1000;
	return 0;
}

/* --snapshot SIZE:EVERY */
static int parse_snapshot(struct synth_walk_config *w, const char *spec)
{
	char *end;
	uint64_t size = strtoull(spec, &end, 0);

	if (*end != ':' || size < 4096 || size > 65536 || (size & (size - 1)) ||
	    parse_u64(end + 1, &w->snapshot_every) || !w->snapshot_every ||
	    w->threads) {
		fprintf(stderr, "vmpt-synth: bad --snapshot '%s' (SIZE:EVERY, SIZE a "
			"power of 2 from 4096 to 65536; one trace buffer only)\n", spec);
		return -1;
	}
	w->snapshot_size = (size_t)size;
	return 0;
}

/* K START END FIRST AFTER LAST OVERLAP BFIRST BAFTER BLAST per snapshot
 * (docs/synthesizer.md). */
static int write_snapshots(const char *prefix, const struct synth_snapshots *ss)
{
	static const char *const overlap[] = {
		[SO_NONE] = "none", [SO_TAIL] = "tail",
		[SO_LAST_PSB] = "last-psb", [SO_FIRST_PSB] = "first-psb",
	};
	FILE *f = open_out(prefix, ".snapshots");

	if (!f)
		return -1;
	for (size_t i = 0; i < ss->n; i++) {
		const struct synth_snapshot *sn = &ss->v[i];

		fprintf(f, "%zu %" PRId64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			" %" PRIu64 " %s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
			i + 1, sn->start, sn->end, sn->first, sn->after, sn->last,
			overlap[sn->overlap], sn->bfirst, sn->bafter, sn->blast);
	}
	return fclose(f);
}

static int write_tsc(const char *prefix, const struct synth_walk_config *w)
{
	FILE *f = open_out(prefix, ".tsc");

	if (!f)
		return -1;
	/* VMCS OFFSET [INSN NEW-OFFSET]: the VMCS as perf prints it (the VMCS
	 * packet payload, base >> 12) and the offset as a u64, the way perf
	 * inject --vm-time-correlation=dry-run reports it; a mid-trace change
	 * adds where (in instructions) and the new offset.
	 */
	for (unsigned i = 0; i < w->n_vcpus; i++) {
		const struct synth_vcpu *v = &w->vcpus[i];

		fprintf(f, "0x%" PRIx64 " 0x%" PRIx64, v->vmcs >> 12,
			(uint64_t)v->initial_offset);
		if (v->changed_at_insn)
			fprintf(f, " %" PRIu64 " 0x%" PRIx64, v->changed_at_insn,
				(uint64_t)v->new_offset);
		if (w->threads)
			fprintf(f, " vcpu %u tid %u", i, w->pid + 1 + i);
		fputc('\n', f);
	}
	return fclose(f);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "elf", 1, 0, 'e' }, { "start", 1, 0, 's' }, { "vm", 0, 0, 'V' },
		{ "host-kernel", 1, 0, 'K' }, { "guest-elf", 1, 0, 'G' },
		{ "guest-code", 0, 0, 'C' }, { "guest-start", 1, 0, 'S' },
		{ "seed", 1, 0, 'r' }, { "branches", 1, 0, 'b' },
		{ "irq-period", 1, 0, 'I' }, { "kernel-period", 1, 0, 'k' },
		{ "vcpus", 1, 0, 'v' },
		{ "tsc-offset", 1, 0, 'O' }, { "tsc-offset-change", 1, 0, 'X' },
		{ "tsc-scale", 1, 0, 'M' }, { "guest-period", 1, 0, 'g' },
		{ "entries-per-vcpu", 1, 0, 'E' }, { "noretcomp", 0, 0, 'n' },
		{ "no-timing", 0, 0, 'T' }, { "cyc", 0, 0, 'c' },
		{ "no-mtc", 0, 0, 'm' }, { "cyc-thresh", 1, 0, 'h' },
		{ "mtc-freq", 1, 0, 'f' }, { "psb-period", 1, 0, 'p' },
		{ "tnt64", 0, 0, '6' }, { "ovf-at", 1, 0, 'F' },
		{ "corrupt", 1, 0, 'x' }, { "no-perf", 0, 0, 'N' },
		{ "tsc0", 1, 0, 't' }, { "pid", 1, 0, 'P' }, { "help", 0, 0, 'H' },
		{ "filter", 1, 0, 'L' }, { "no-truth", 0, 0, 'R' },
		{ "per-thread", 0, 0, 'W' }, { "cpus", 1, 0, 'U' },
		{ "snapshot", 1, 0, 'Z' }, { "guest-recording", 1, 0, 'Q' },
		{ "guest-from", 1, 0, 'j' }, { "guest-slice", 1, 0, 'J' },
		{ "event", 0, 0, 'a' }, { "ptw", 0, 0, 'w' },
		{ "fup-on-ptw", 0, 0, 'u' }, { "pwr-evt", 0, 0, 'y' },
		{ "freq-period", 1, 0, 'z' }, { "guest-pm", 0, 0, 'i' },
		{ "aux-buffer", 1, 0, 'A' }, { "exec", 1, 0, 'B' },
		{ "exec-after", 1, 0, 'D' }, { "libc", 1, 0, 'l' },
		{ "defer-tips", 0, 0, 'd' },
		{ 0, 0, 0, 0 }
	};
	struct opts o = {
		.seed = 1, .branches = 10000, .vcpus = 1, .tsc_scale = 1.0,
		.guest_period = 3000, .entries_per_vcpu = 4,
		.tsc0 = 0x2a00000000ull, .pid = 4242, .exec_after = UINT64_MAX,
		.pt = { .retcomp = 1, .tsc = 1, .mtc = 1, .psb_period = 4096,
			.mtc_freq = 3, .tsc_ctc_n = 84, .tsc_ctc_d = 2, .cbr = 32 },
	};
	struct synth_image user = { 0 }, kernel = { 0 }, guest_img = { 0 };
	struct synth_image exec = { 0 }, libc = { 0 };
	struct synth_grec grec = { 0 };
	struct synth_walk_config w = { 0 };
	struct synth_truth truth = { 0 };
	struct synth_stats st;
	struct synth_out out = { 0 };
	char err[512];
	int opt, ret = 1;
	uint64_t v;

	while ((opt = getopt_long(argc, argv, "o:qh", lopts, NULL)) != -1) {
		switch (opt) {
		case 'o': o.out = optarg; break;
		case 'q': o.quiet = 1; break;
		case 'e': o.elf = optarg; break;
		case 's': o.start = optarg; break;
		case 'V': o.vm = 1; break;
		case 'K': o.host_kernel = optarg; break;
		case 'G': o.guest_elf = optarg; break;
		case 'C': o.guest_code = 1; o.vm = 1; break;
		case 'S': o.guest_start = optarg; break;
		case 'O': o.offsets = optarg; break;
		case 'X': o.offset_change = optarg; break;
		case 'M': o.tsc_scale = strtod(optarg, NULL); break;
		case 'n': o.pt.retcomp = 0; break;
		case 'T': o.pt.tsc = o.pt.mtc = o.pt.cyc = 0; break;
		case 'c': o.pt.cyc = 1; break;
		case 'm': o.pt.mtc = 0; break;
		case '6': o.pt.tnt64 = 1; break;
		case 'd': o.pt.defer_tips = 1; break;
		case 'F': o.ovf = optarg; break;
		case 'x': o.corrupt = optarg; break;
		case 'L': o.filter = optarg; break;
		case 'R': o.no_truth = 1; break;
		case 'W': o.per_thread = 1; break;
		case 'Z': o.snapshot = optarg; break;
		case 'Q': o.grec = optarg; o.vm = 1; break;
		case 'B': o.exec = optarg; break;
		case 'l': o.libc = optarg; break;
		case 'N': o.no_perf = 1; break;
		case 'a': o.pt.event = 1; break;
		case 'w': o.pt.ptw = 1; break;
		case 'u': o.pt.ptw = o.pt.fup_on_ptw = 1; break;
		case 'y': o.pt.pwr_evt = 1; break;
		case 'i': o.guest_pm = 1; break;
		case 'H': fputs(usage, stdout); return 0;
		case 'r': case 'b': case 'I': case 'k': case 'v': case 'g': case 'E':
		case 'h': case 'f': case 'p': case 't': case 'P': case 'U':
		case 'j': case 'J': case 'z': case 'A': case 'D':
			if (parse_u64(optarg, &v)) {
				fprintf(stderr, "vmpt-synth: bad number '%s'\n", optarg);
				return 2;
			}
			switch (opt) {
			case 'r': o.seed = v; break;
			case 'b': o.branches = v; break;
			case 'I': o.irq_period = v; break;
			case 'k': o.kernel_period = v; break;
			case 'v': o.vcpus = (int)v; break;
			case 'g': o.guest_period = v; break;
			case 'E': o.entries_per_vcpu = v; break;
			case 'h': o.pt.cyc_thresh = (unsigned)v; break;
			case 'f': o.pt.mtc_freq = (unsigned)v; break;
			case 'p': o.pt.psb_period = (unsigned)v; break;
			case 't': o.tsc0 = v; break;
			case 'P': o.pid = v; break;
			case 'U': o.cpus = (int)v; break;
			case 'j': o.guest_from = v; break;
			case 'J': o.guest_slice = v; break;
			case 'z': o.freq_period = v; break;
			case 'A': o.aux_buffer = v; break;
			case 'D': o.exec_after = v; break;
			}
			break;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!o.out || optind != argc || (!o.elf && !o.vm) ||
	    (o.vm && (!o.host_kernel ||
		      (!o.guest_elf && !o.guest_code && !o.grec))) ||
	    (o.grec && (o.guest_elf || o.guest_code || o.cpus || o.snapshot)) ||
	    (o.guest_code && !o.elf) || (o.filter && o.vm) || o.vcpus < 1 || o.vcpus > SYNTH_MAX_VCPUS ||
	    o.pt.psb_period < 256 || o.pt.mtc_freq > 15 ||
	    o.pt.cyc_thresh > 15 || o.cpus < 0 || o.cpus > 64 ||
	    ((o.per_thread || o.cpus || o.guest_pm) && !o.vm) ||
	    ((o.exec_after != UINT64_MAX || o.libc) && !o.exec) ||
	    (o.exec && (!o.elf || o.vm || o.host_kernel || o.filter))) {
		fputs(usage, stderr);
		return 2;
	}
	if (o.elf && load_elf(&user, o.elf, PIE_BASE))
		goto out;
	if (o.host_kernel && load_elf(&kernel, o.host_kernel, 0))
		goto out;
	if (o.guest_elf && load_elf(&guest_img, o.guest_elf, 0))
		goto out;
	if (o.exec && (load_elf(&exec, o.exec, PIE_BASE) ||
		       (user.interp && load_elf(&libc, o.libc ? o.libc : LIBC_PATH,
						LIBC_BASE))))
		goto out;
	if (o.exec && o.exec_after == UINT64_MAX)
		o.exec_after = o.branches / 2;
	if (o.exec && o.exec_after >= o.branches) {
		fprintf(stderr, "vmpt-synth: --exec-after must be below --branches\n");
		goto out;
	}

	w.seed = o.seed;
	w.max_branches = o.branches;
	w.user = o.elf ? &user : NULL;
	w.kernel = o.host_kernel ? &kernel : NULL;
	w.irq_period = o.irq_period;
	w.kernel_period = o.kernel_period;
	w.kernel_cr3 = 0x1e0d000ull;
	w.pid = (uint32_t)o.pid;
	w.threads = o.vm && (o.per_thread || o.cpus);
	w.per_thread = o.per_thread;
	w.n_cpus = o.cpus ? (unsigned)o.cpus : 1;
	w.guest_pm = o.guest_pm;
	w.freq_period = o.freq_period;
	w.exec = o.exec ? &exec : NULL;
	w.libc = libc.path ? &libc : NULL;
	w.exec_after = o.exec_after;
	if (o.snapshot && parse_snapshot(&w, o.snapshot))
		goto out;
	if (o.ovf) {
		char *colon;

		w.ovf_at = strtoull(o.ovf, &colon, 0);
		w.ovf_lost = *colon == ':' ? strtoull(colon + 1, NULL, 0) : 1000;
	}
	if (o.grec) {
		w.vm = 1;
		w.trace_kernel = w.trace_user = 1;
		w.threads = w.per_thread = 1;
		w.n_cpus = (unsigned)o.vcpus;
		w.guest_period = o.guest_period;
		w.kernel_period = o.kernel_period ? o.kernel_period : 1500;
		if (setup_vcpus(&w, &o) || open_grec(&grec, &w, &o))
			goto out;
	} else if (o.vm) {
		w.vm = 1;
		w.trace_kernel = 1;
		w.guest = o.guest_code ? &user : &guest_img;
		w.guest_start = resolve(w.guest, o.guest_start, "guest_code");
		w.guest_period = o.guest_period;
		w.entries_per_vcpu = o.entries_per_vcpu;
		if (setup_vcpus(&w, &o))
			goto out;
	} else {
		w.trace_user = 1;
		w.trace_kernel = o.host_kernel != NULL;
		if (o.filter && parse_filter(&user, o.filter, &w.filter_lo,
					     &w.filter_hi)) {
			fprintf(stderr, "vmpt-synth: %s: bad --filter '%s' (a "
				"function symbol or START-END)\n", o.elf, o.filter);
			goto out;
		}
		w.start = resolve(&user, o.start, "main");
		if (!w.start) {
			fprintf(stderr, "vmpt-synth: %s: no symbol '%s'\n",
				o.elf, o.start);
			goto out;
		}
	}
	if (!o.no_truth) {
		truth.insn = open_out(o.out, ".insn");
		truth.branch = open_out(o.out, ".branches");
		if (!truth.insn || !truth.branch)
			goto out;
		if (o.grec && !(truth.gtruth = open_out(o.out, ".gtruth")))
			goto out;
		if (!(truth.events = open_out(o.out, ".events")) ||
		    (o.vm && !(truth.exits = open_out(o.out, ".exits"))))
			goto out;
	}
	/* the exits' ns as perf converts the trace's TSC (TIME_CONV) */
	truth.time_shift = grec.time_mult ? grec.time_shift : SYNTH_PERF_TIME_SHIFT;
	truth.time_mult = grec.time_mult ? grec.time_mult :
			  (10ull << SYNTH_PERF_TIME_SHIFT) / o.pt.cbr;

	ret = synth_walk(&w, &o.pt, o.tsc0, &out, &truth, &st, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "vmpt-synth: %s\n", ret == -VMPT_ERR_NOMEM ?
			vmpt_strerror(ret) : err);
		ret = 1;
		goto out;
	}
	if (corrupt(&out.streams[0].pt, o.corrupt)) {
		fprintf(stderr, "vmpt-synth: bad --corrupt '%s' (trace is %zu bytes)\n",
			o.corrupt, out.streams[0].pt.len);
		ret = 1;
		goto out;
	}
	ret = write_images(o.out, &w) || (o.vm && write_tsc(o.out, &w)) ||
	      (w.snapshot_size && write_snapshots(o.out, &out.snap));
	for (size_t i = 0; !ret && i < out.n_streams; i++)
		ret = write_raw(o.out, &out.streams[i], w.threads);
	if (!ret && !o.no_perf) {
		struct synth_perf_params pp = {
			.pid = (uint32_t)o.pid, .tsc0 = o.tsc0, .vm = o.vm,
			.guest_code = o.guest_code,
			.grec = o.grec ? &grec : NULL,
			.time_mult = grec.time_mult, .time_shift = grec.time_shift,
			.aux_buffer = o.aux_buffer,
		};
		char path[4096];

		snprintf(path, sizeof(path), "%s.perf.data", o.out);
		ret = synth_perf_write(path, &pp, &o.pt, &w, &out, err,
				       sizeof(err));
		if (ret)
			fprintf(stderr, "vmpt-synth: %s\n", err);
	}
	if (!o.quiet) {
		size_t bytes = 0;

		for (size_t i = 0; i < out.n_streams; i++)
			bytes += out.streams[i].pt.len;
		printf("%" PRIu64 " instructions, %" PRIu64 " branches "
		       "(%" PRIu64 " TNT bits, %" PRIu64 " TIPs), %" PRIu64
		       " PSBs, %" PRIu64 " syscalls, %" PRIu64 " interrupts, "
		       "%" PRIu64 " VM entries, %" PRIu64 " VM exits, %zu bytes",
		       st.insns, st.branches, st.tnt_bits, st.tips, st.psbs,
		       st.syscalls, st.irqs, st.vmentries, st.vmexits, bytes);
		if (st.events || st.ptwrites || st.cstates || st.freq_changes)
			printf(", %" PRIu64 " events, %" PRIu64 " PTWRITEs, %" PRIu64
			       " C-states, %" PRIu64 " frequency changes", st.events,
			       st.ptwrites, st.cstates, st.freq_changes);
		if (w.threads)
			printf(" in %zu buffers, %" PRIu64 " context switches, %"
			       PRIu64 " migrations", out.n_streams, st.switches,
			       st.migrations);
		putchar('\n');
	}
out:
	synth_out_free(&out);
	if (truth.insn)
		fclose(truth.insn);
	if (truth.branch)
		fclose(truth.branch);
	if (truth.gtruth)
		fclose(truth.gtruth);
	if (truth.events)
		fclose(truth.events);
	if (truth.exits)
		fclose(truth.exits);
	synth_grec_close(&grec);
	synth_image_free(&user);
	synth_image_free(&kernel);
	synth_image_free(&guest_img);
	synth_image_free(&exec);
	synth_image_free(&libc);
	return ret ? 1 : 0;
}
