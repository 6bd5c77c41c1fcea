/* SPDX-License-Identifier: MIT */
/* vmpt script: the instruction flow of a trace, printed the way perf script
 * prints Intel PT samples (--itrace, -F), from a raw trace with images
 * given like ptxed's, or from a perf.data.
 */
#include "builtin.h"
#include "vmpt/error.h"
#include "vmpt/file.h"
#include "vmpt/flow.h"
#include "vmpt/image.h"
#include "vmpt/perf_data.h"

#include <capstone/capstone.h>
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum field {
	F_TIME = 1 << 0, F_IP = 1 << 1, F_ADDR = 1 << 2, F_SYM = 1 << 3,
	F_SYMOFF = 1 << 4, F_DSO = 1 << 5, F_FLAGS = 1 << 6, F_INSN = 1 << 7,
	F_CPU = 1 << 8, F_PID = 1 << 9, F_TID = 1 << 10, F_COMM = 1 << 11,
	F_IPC = 1 << 12,
};

static const struct { const char *name; unsigned bit; } field_names[] = {
	{ "time", F_TIME }, { "ip", F_IP }, { "addr", F_ADDR }, { "sym", F_SYM },
	{ "symoff", F_SYMOFF }, { "dso", F_DSO }, { "flags", F_FLAGS },
	{ "insn", F_INSN }, { "cpu", F_CPU }, { "pid", F_PID }, { "tid", F_TID },
	{ "comm", F_COMM }, { "ipc", F_IPC },
};

struct itrace {
	unsigned insns : 1, branches : 1, calls : 1, returns : 1, errors : 1,
		 timeless : 1;
	uint64_t period;	/* instructions, or ticks when period_time */
	unsigned period_time : 1;
};

struct opts {
	struct itrace it;
	unsigned fields;
	int call_trace, jobs;
	int cpu, pid, tid;
	const char *comm;
	/* perf.data: TSC to perf time (TIME_CONV), printed sec.usec as perf */
	int have_tc;
	struct vmpt_perf_time_conv tc;
	int disasm;			/* --insn-trace: insn shows the text too */
	const struct vmpt_image *image;	/* for sym/dso of branch targets */
};

static uint64_t perf_time(const struct vmpt_perf_time_conv *tc, uint64_t cyc)
{
	uint64_t quot, rem;

	if (tc->cap_user_time_short)
		cyc = tc->time_cycles + ((cyc - tc->time_cycles) & tc->time_mask);
	quot = cyc >> tc->time_shift;
	rem = cyc & ((1ull << tc->time_shift) - 1);
	return tc->time_zero + quot * tc->time_mult +
	       ((rem * tc->time_mult) >> tc->time_shift);
}

/* Per decoding thread: output goes to its own stream, through a buffer
 * (stdio's per-call cost would be most of the time).
 */
#define OUT_CAP (1u << 16)

struct out {
	FILE *f;
	char *buf;
	size_t len;
	const struct opts *o;
	csh cs[3];
	cs_insn *insn[3];
	const struct vmpt_section *last_sec;	/* the last symbol looked up */
	const struct vmpt_symbol *last_sym;
	uint64_t since;		/* instructions since the last i sample */
	uint64_t last_time;
	int have_last;
	int depth;		/* for --call-trace */
};

static int parse_itrace(const char *s, struct itrace *it)
{
	memset(it, 0, sizeof(*it));
	for (; *s; s++) {
		switch (*s) {
		case 'i': {
			char *end;
			uint64_t n;

			it->insns = 1;
			it->period = 0;
			if (s[1] < '0' || s[1] > '9')
				break;
			n = strtoull(s + 1, &end, 10);
			if (!strncmp(end, "ns", 2)) {
				it->period = n, it->period_time = 1, end += 2;
			} else if (!strncmp(end, "us", 2)) {
				it->period = n * 1000, it->period_time = 1, end += 2;
			} else if (!strncmp(end, "ms", 2)) {
				it->period = n * 1000000, it->period_time = 1, end += 2;
			} else {
				if (*end == 'i')
					end++;
				it->period = n;
			}
			s = end - 1;
			break;
		}
		case 'b': it->branches = 1; break;
		case 'c': it->calls = 1; break;
		case 'r': it->returns = 1; break;
		case 'e': it->errors = 1; break;
		case 'Z': it->timeless = 1; break;
		case 'q': case 'x': case 'w': case 'p': case 'd': case 'g':
		case 'l': case 's': case 'o': case 'f': case 'm': case 't':
		case 'a': case 'L':
			break;	/* accepted for perf compatibility; no effect */
		default:
			return -1;
		}
	}
	return 0;
}

static int parse_fields(const char *s, unsigned *fields)
{
	int add = *s == '+', del = *s == '-';
	char *copy = strdup(s + (add || del)), *tok, *save = NULL;
	unsigned set = 0;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < sizeof(field_names) / sizeof(field_names[0]); i++)
			if (!strcmp(tok, field_names[i].name))
				break;
		if (i == sizeof(field_names) / sizeof(field_names[0])) {
			fprintf(stderr, "vmpt script: unknown field '%s'\n", tok);
			free(copy);
			return -1;
		}
		set |= field_names[i].bit;
	}
	free(copy);
	*fields = add ? *fields | set : del ? *fields & ~set : set;
	return 0;
}

static void out_flush(struct out *o)
{
	if (o->len && o->f)
		fwrite(o->buf, 1, o->len, o->f);
	o->len = 0;
}

static void outf(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void outf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->len > OUT_CAP - 1024)
		out_flush(o);
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, OUT_CAP - o->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < OUT_CAP - o->len) {
		o->len += (size_t)n;
		return;
	}
	/* Longer than the room left (a long symbol name): write it out. */
	out_flush(o);
	va_start(ap, fmt);
	vfprintf(o->f, fmt, ap);
	va_end(ap);
}

static void out_char(struct out *o, char c)
{
	if (o->len == OUT_CAP)
		out_flush(o);
	o->buf[o->len++] = c;
}

static void out_str(struct out *o, const char *str)
{
	size_t n = strlen(str);

	if (n > OUT_CAP / 2) {
		out_flush(o);
		fwrite(str, 1, n, o->f);
		return;
	}
	if (o->len + n > OUT_CAP)
		out_flush(o);
	memcpy(o->buf + o->len, str, n);
	o->len += n;
}

/* "%lx" without printf. */
static void out_hex(struct out *o, uint64_t v)
{
	char tmp[16];
	int n = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	if (o->len + 16 > OUT_CAP)
		out_flush(o);
	while (n)
		o->buf[o->len++] = tmp[--n];
}

/* " %16lx", the way perf prints addresses, without printf. */
static void out_hex16(struct out *o, uint64_t v)
{
	char *p;

	if (o->len > OUT_CAP - 32)
		out_flush(o);
	p = o->buf + o->len;
	memset(p, ' ', 17);
	p += 16;
	do {
		*p-- = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	o->len += 17;
}

/* Samples show microseconds, error lines nanoseconds, as perf script. */
static void print_time(struct out *o, const struct opts *op, uint64_t tsc,
		       const char *sep)
{
	if (op->have_tc) {
		uint64_t ns = perf_time(&op->tc, tsc);

		if (*sep)
			outf(o, "%5" PRIu64 ".%06" PRIu64 "%s", ns / 1000000000,
			     ns % 1000000000 / 1000, sep);
		else
			outf(o, "%" PRIu64 ".%09" PRIu64, ns / 1000000000,
			     ns % 1000000000);
	} else {
		outf(o, "%" PRIu64 "%s", tsc, sep);
	}
}

static const char *branch_flags(const struct vmpt_flow_item *b)
{
	switch (b->iclass) {
	case VMPT_IC_JCC: return "jcc";
	case VMPT_IC_JMP:
	case VMPT_IC_JMP_IND: return "jmp";
	case VMPT_IC_CALL:
	case VMPT_IC_CALL_IND: return "call";
	case VMPT_IC_RET: return "return";
	case VMPT_IC_FAR_CALL: return "syscall";
	case VMPT_IC_FAR_RET: return "sysret";
	case VMPT_IC_FAR_JMP: return "jmp";
	default: return "";
	}
}

static void print_sym(struct out *o, const struct vmpt_section *sec, uint64_t ip)
{
	unsigned f = o->o->fields;

	if (f & F_SYM) {
		const struct vmpt_symbol *sym = o->last_sym;

		/* Consecutive samples are mostly in one function. */
		if (sec != o->last_sec || !sym || ip - sym->addr >= sym->size) {
			sym = sec ? vmpt_section_symbol(sec, ip) : NULL;
			o->last_sec = sec;
			o->last_sym = sym;
		}

		out_char(o, ' ');
		out_str(o, sym ? sym->name : "[unknown]");
		if ((f & F_SYMOFF) && sym) {
			out_str(o, "+0x");
			out_hex(o, ip - sym->addr);
		}
	}
	if (f & F_DSO) {
		out_str(o, " (");
		out_str(o, sec ? sec->name : "[unknown]");
		out_char(o, ')');
	}
}

/* The fields before the ip, as perf lays them out. */
static void print_head(struct out *o, uint64_t time)
{
	const struct opts *op = o->o;
	unsigned f = op->fields;

	if (f & F_COMM)
		outf(o, "%16s ", op->comm ? op->comm : ":-1");
	if (f & (F_PID | F_TID)) {
		if ((f & F_PID) && (f & F_TID))
			outf(o, "%7d/%-7d ", op->pid, op->tid);
		else
			outf(o, "%7d ", f & F_PID ? op->pid : op->tid);
	}
	if (f & F_CPU)
		outf(o, "[%03d] ", op->cpu);
	if ((f & F_TIME) && !op->it.timeless)
		print_time(o, op, time, ": ");
}

/* perf's "insn: 41 57", then (--insn-trace) the disassembly. */
static void print_insn(struct out *o, const struct vmpt_flow_item *b,
		       uint64_t ip, unsigned size)
{
	const struct vmpt_section *s = b->sec;
	cs_insn *in = o->insn[b->mode];
	const uint8_t *code;
	size_t avail = size;
	uint64_t at = ip;

	if (!s || ip - s->vaddr >= s->size || s->size - (ip - s->vaddr) < size)
		return;
	code = s->data + (ip - s->vaddr);
	outf(o, " insn:");
	for (unsigned i = 0; i < size; i++)
		outf(o, " %02x", code[i]);
	if (o->o->disasm && cs_disasm_iter(o->cs[b->mode], &code, &avail, &at, in))
		outf(o, "\t\t%s %s", in->mnemonic, in->op_str);
}

static void sample_insn(struct out *o, const struct vmpt_flow_item *b,
			uint64_t ip, unsigned size)
{
	unsigned f = o->o->fields;

	print_head(o, b->time);
	if (f & F_FLAGS)
		outf(o, "  %-21s ", ip == b->end_ip ? branch_flags(b) : "");
	if (f & F_IP)
		out_hex16(o, ip);
	if (f & F_IP)
		print_sym(o, b->sec, ip);
	if (f & F_INSN)
		print_insn(o, b, ip, size);
	out_char(o, '\n');
}

/* A branch from `from` to `to` (0: tracing starts or ends). */
static void sample_branch(struct out *o, const struct vmpt_flow_item *b,
			  uint64_t from, uint64_t to, const char *flags)
{
	const struct vmpt_image *img = o->o->image;
	struct vmpt_asid any = vmpt_asid_any();
	unsigned f = o->o->fields;

	print_head(o, b->time);
	if (o->o->call_trace) {
		outf(o, "%*s", 2 * (o->depth > 0 ? o->depth : 0), "");
		print_sym(o, to ? vmpt_image_find(img, &any, to) : NULL, to);
		out_char(o, '\n');
		return;
	}
	if (f & F_FLAGS)
		outf(o, "  %-21s ", flags);
	if (f & F_IP) {
		out_hex16(o, from);
		print_sym(o, b->kind == VMPT_FLOW_BLOCK ? b->sec :
			  from ? vmpt_image_find(img, &any, from) : NULL, from);
	}
	if (f & F_ADDR) {
		outf(o, " =>");
		out_hex16(o, to);
		if (f & F_IP)
			print_sym(o, to ? vmpt_image_find(img, &any, to) : NULL, to);
	}
	out_char(o, '\n');
}

static void on_block(struct out *o, const struct vmpt_flow_item *b)
{
	const struct itrace *it = &o->o->it;

	if (it->insns) {
		uint64_t ip = b->ip;
		/* Periods are in ns of perf time when the recording says how
		 * to convert, else in TSC ticks.
		 */
		uint64_t now = o->o->have_tc && b->time ? perf_time(&o->o->tc, b->time) :
			       b->time;

		for (uint32_t i = 0; i < b->ninsn; i++) {
			int take;

			if (it->period_time && (it->period == 0 || it->timeless || !b->time)) {
				take = 1;
			} else if (it->period_time) {
				/* Like perf: a sample when the time enters a new
				 * period, counted from the first timestamp.
				 */
				if (!o->have_last)
					o->last_time = now, o->have_last = 1;
				take = now / it->period != o->last_time / it->period;
			} else {
				take = ++o->since >= (it->period ? it->period : 1);
			}
			if (take) {
				o->since = 0;
				o->last_time = now;
				sample_insn(o, b, ip, b->isize[i]);
			}
			ip += b->isize[i];
		}
	}
	if (!b->taken)
		return;
	int is_call = b->iclass == VMPT_IC_CALL || b->iclass == VMPT_IC_CALL_IND ||
		      b->iclass == VMPT_IC_FAR_CALL;
	int is_ret = b->iclass == VMPT_IC_RET || b->iclass == VMPT_IC_FAR_RET;

	if (is_ret && o->depth > 0)
		o->depth--;
	if (it->branches || (it->calls && is_call) || (it->returns && is_ret))
		sample_branch(o, b, b->end_ip, b->to, branch_flags(b));
	if (is_call)
		o->depth++;
}

/* perf's error line, plus the trace offset. */
static void print_error(struct out *o, const struct vmpt_flow_item *e, int code,
			const char *msg)
{
	outf(o, " instruction trace error type 1 time ");
	print_time(o, o->o, e->time, "");
	outf(o, " cpu %d pid %d tid %d ip %#" PRIx64 " offset %#" PRIx64
		" code %d: %s\n", o->o->cpu, o->o->pid, o->o->tid, e->ip,
		e->offset, code, msg);
}

static void on_event(struct out *o, const struct vmpt_flow_item *e)
{
	const struct itrace *it = &o->o->it;

	switch (e->ev) {
	case VMPT_EV_ERROR:
		if (it->errors)
			print_error(o, e, -e->err, vmpt_strerror(e->err));
		break;
	case VMPT_EV_OVERFLOW:
		if (it->errors)
			print_error(o, e, VMPT_ERR_OVERFLOW,
				    vmpt_strerror(-VMPT_ERR_OVERFLOW));
		break;
	case VMPT_EV_ENABLED:
		if (it->branches)
			sample_branch(o, e, 0, e->ip, "tr strt");
		break;
	case VMPT_EV_DISABLED:
		if (it->branches)
			sample_branch(o, e, e->ip, 0, "tr end");
		break;
	case VMPT_EV_ASYNC_DISABLED:
		if (it->branches)
			sample_branch(o, e, e->ip, 0, "tr end  async");
		break;
	case VMPT_EV_ASYNC_BRANCH:
		if (it->branches)
			sample_branch(o, e, e->ip, e->to, "hw int");
		break;
	default:
		break;
	}
}

static int out_init(struct out *o, const struct opts *op, FILE *f)
{
	static const cs_mode modes[3] = { CS_MODE_64, CS_MODE_32, CS_MODE_16 };

	memset(o, 0, sizeof(*o));
	o->f = f;
	o->o = op;
	o->buf = malloc(OUT_CAP);
	if (!o->buf)
		return -1;
	for (int m = 0; m < 3; m++) {
		if (cs_open(CS_ARCH_X86, modes[m], &o->cs[m]) != CS_ERR_OK)
			return -1;
		o->insn[m] = cs_malloc(o->cs[m]);
	}
	return 0;
}

static void out_fini(struct out *o)
{
	out_flush(o);
	free(o->buf);
	for (int m = 0; m < 3; m++) {
		if (o->insn[m])
			cs_free(o->insn[m], 1);
		cs_close(&o->cs[m]);
	}
}

static int decode(struct vmpt_flow *dec, uint64_t start, uint64_t stop,
		  struct out *o)
{
	struct vmpt_flow_item it;
	int ret;

	vmpt_flow_sync_at(dec, start, stop);
	while ((ret = vmpt_flow_next(dec, &it)) == 0) {
		if (it.kind == VMPT_FLOW_BLOCK)
			on_block(o, &it);
		else
			on_event(o, &it);
	}
	out_flush(o);
	return ret == -VMPT_ERR_EOS ? 0 : ret;
}

/* A decoding thread keeps its decoder (and so its block cache) from one
 * piece of the trace to the next; each piece's output goes to memory.
 */
struct worker {
	struct vmpt_flow *dec;
	struct out o;
	uint64_t start, stop;
	char *buf;
	size_t len;
	int ret;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	FILE *f = open_memstream(&w->buf, &w->len);

	if (!f) {
		w->ret = -VMPT_ERR_NOMEM;
		return NULL;
	}
	w->o.f = f;
	w->ret = decode(w->dec, w->start, w->stop, &w->o);
	fclose(f);
	return NULL;
}

/* Decode one stream; with -j, cut at PSBs into pieces of about 1 MiB (at
 * least 4 per thread), decoded jobs at a time and printed in trace order.
 * Each piece ends exactly where the next begins.
 */
static int run_stream(const struct vmpt_flow_config *base, const struct opts *op)
{
	size_t n_psbs = 0, pieces, size = (size_t)(base->end - base->begin);
	struct worker *w = NULL;
	uint64_t *psbs = NULL;
	int jobs = op->jobs, ret = 0;

	if (jobs > 1 && vmpt_flow_psb_offsets(base->begin, base->end, &psbs, &n_psbs) < 0)
		return -VMPT_ERR_NOMEM;
	if (jobs <= 1 || n_psbs < 2) {
		struct vmpt_flow *dec = vmpt_flow_new(base);
		struct out o;

		free(psbs);
		if (!dec || out_init(&o, op, stdout) < 0) {
			vmpt_flow_free(dec);
			return -VMPT_ERR_NOMEM;
		}
		ret = decode(dec, 0, 0, &o);
		out_fini(&o);
		vmpt_flow_free(dec);
		return ret;
	}
	if ((size_t)jobs > n_psbs)
		jobs = (int)n_psbs;
	pieces = size >> 20 > (size_t)jobs * 4 ? size >> 20 : (size_t)jobs * 4;
	if (pieces > n_psbs)
		pieces = n_psbs;
	w = calloc((size_t)jobs, sizeof(*w));
	if (!w) {
		free(psbs);
		return -VMPT_ERR_NOMEM;
	}
	for (int k = 0; k < jobs; k++) {
		w[k].dec = vmpt_flow_new(base);
		if (!w[k].dec || out_init(&w[k].o, op, NULL) < 0) {
			ret = -VMPT_ERR_NOMEM;
			jobs = k + 1;
			goto out;
		}
	}
	for (size_t done = 0; done < pieces; done += (size_t)jobs) {
		size_t n = pieces - done < (size_t)jobs ? pieces - done : (size_t)jobs;
		pthread_t th[n];

		for (size_t k = 0; k < n; k++) {
			size_t i = done + k;

			w[k].start = i ? psbs[i * n_psbs / pieces] : 0;
			w[k].stop = i + 1 < pieces ? psbs[(i + 1) * n_psbs / pieces] : 0;
			pthread_create(&th[k], NULL, worker_run, &w[k]);
		}
		for (size_t k = 0; k < n; k++) {
			pthread_join(th[k], NULL);
			fwrite(w[k].buf, 1, w[k].len, stdout);
			free(w[k].buf);
			w[k].buf = NULL;
			if (w[k].ret < 0 && !ret)
				ret = w[k].ret;
		}
	}
out:
	for (int k = 0; k < jobs; k++) {
		if (w[k].o.buf)
			out_fini(&w[k].o);
		vmpt_flow_free(w[k].dec);
	}
	free(w);
	free(psbs);
	return ret;
}

/* "FILE@ADDR" / "FILE:ADDR": split off the address. */
static int split_at(char *arg, uint64_t *addr)
{
	char *at = strrchr(arg, '@');
	char *end;

	if (!at)
		return 0;
	*at = '\0';
	errno = 0;
	*addr = strtoull(at + 1, &end, 0);
	if (errno || *end || end == at + 1)
		return -1;
	return 1;
}

/* Decoder settings from AUXTRACE_INFO and the intel_pt event's config. */
static void intel_pt_config(const struct vmpt_perf_data *pd,
			    const struct vmpt_perf_intel_pt_info *info,
			    struct vmpt_flow_config *cfg, struct opts *op)
{
	const uint64_t *priv = info->priv;
	uint64_t config = 0, mtc_mask = priv[VMPT_INTEL_PT_MTC_FREQ_BITS];

	for (size_t i = 0; i < pd->nr_attrs; i++)
		if (pd->attrs[i].attr.type == priv[VMPT_INTEL_PT_PMU_TYPE])
			config = pd->attrs[i].attr.config;
	cfg->retcomp = !(config & priv[VMPT_INTEL_PT_NORETCOMP_BIT]);
	if (mtc_mask)
		cfg->mtc_period = (uint8_t)((config & mtc_mask) >>
					    __builtin_ctzll(mtc_mask));
	cfg->tsc_ctc_ratio_n = (uint32_t)priv[VMPT_INTEL_PT_TSC_CTC_N];
	cfg->tsc_ctc_ratio_d = (uint32_t)priv[VMPT_INTEL_PT_TSC_CTC_D];
	cfg->max_nonturbo_ratio = (uint32_t)priv[VMPT_INTEL_PT_MAX_NONTURBO_RATIO];
	/* perf converts Intel PT's TSC with these (TIME_CONV may refine). */
	if (!op->have_tc && priv[VMPT_INTEL_PT_TIME_MULT]) {
		op->tc.time_shift = priv[VMPT_INTEL_PT_TIME_SHIFT];
		op->tc.time_mult = priv[VMPT_INTEL_PT_TIME_MULT];
		op->tc.time_zero = priv[VMPT_INTEL_PT_TIME_ZERO];
		op->have_tc = 1;
	}
}

/* An executable mapping of the sideband as code: the ELF placed as mapped
 * (a file that is no ELF, a JIT dump, maps raw).  root prefixes the path
 * (a guest's binaries live under guest/root); vdso names the file for
 * "[vdso]".  Missing binaries show up later as errors at their IPs.
 */
static void add_mapping(struct vmpt_image *img, const struct vmpt_perf_event *ev,
			const char *root, const char *vdso,
			const struct vmpt_asid *asid)
{
	const char *name = ev->mmap.filename;
	char path[4096];

	if (ev->type == PERF_RECORD_MMAP2 && !(ev->mmap.prot & 4))
		return;
	if (!strcmp(name, "[vdso]") && vdso)
		snprintf(path, sizeof(path), "%s", vdso);
	else if (name[0] == '/')
		snprintf(path, sizeof(path), "%s%s", root, name);
	else
		return;
	if (vmpt_image_add_elf_map(img, path, ev->mmap.start, ev->mmap.pgoff,
				   asid) == -VMPT_ERR_FORMAT)
		vmpt_image_add_raw(img, path, ev->mmap.pgoff, ev->mmap.len,
				   ev->mmap.start, asid);
}

/* What vmpt guest collected next to a recording (docs/guest.md): the
 * guest's sideband, binaries under root/, vdso and kcore_dir, as code of
 * the guest machine.
 */
static void add_guest(struct vmpt_image *img, const char *recording)
{
	struct vmpt_asid guest = { VMPT_MACHINE_GUEST, VMPT_ASID_ANY };
	char dir[4096], path[4096 + 32], root[4096 + 32], vdso[4096 + 32];
	struct vmpt_perf_data gpd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	struct stat st;

	/* DIR/ (perf's directory form) or FILE's directory. */
	if (stat(recording, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(dir, sizeof(dir), "%s/guest", recording);
	} else {
		const char *slash = strrchr(recording, '/');

		snprintf(dir, sizeof(dir), "%.*s%sguest",
			 slash ? (int)(slash - recording) : 0, recording,
			 slash ? "/" : "");
	}
	snprintf(path, sizeof(path), "%s/kcore_dir", dir);
	if (stat(path, &st) == 0 && vmpt_image_add_kcore_dir(img, path, &guest) < 0)
		fprintf(stderr, "vmpt script: %s: cannot load the guest kcore\n", path);
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	if (stat(path, &st) != 0)
		return;
	if (vmpt_perf_open(&gpd, path) < 0) {
		fprintf(stderr, "vmpt script: %s\n", gpd.errmsg);
		vmpt_perf_close(&gpd);
		return;
	}
	snprintf(root, sizeof(root), "%s/root", dir);
	snprintf(vdso, sizeof(vdso), "%s/vdso", dir);
	vmpt_perf_cursor_init(&gpd, &cur);
	while (vmpt_perf_next(&gpd, &cur, &ev) > 0)
		if (ev.type == PERF_RECORD_MMAP2 || ev.type == PERF_RECORD_MMAP)
			add_mapping(img, &ev, root, vdso, &guest);
	vmpt_perf_close(&gpd);
}

static int script_perf_data(const char *path, struct vmpt_flow_config *cfg,
			    struct vmpt_image *img, struct opts *op)
{
	struct vmpt_asid host = { VMPT_MACHINE_HOST, VMPT_ASID_ANY };
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	int ret;

	ret = vmpt_perf_open(&pd, path);
	if (ret < 0) {
		fprintf(stderr, "vmpt script: %s\n", pd.errmsg);
		vmpt_perf_close(&pd);
		return 1;
	}
	if (pd.kcore_dir && vmpt_image_add_kcore_dir(img, pd.kcore_dir, &host) < 0)
		fprintf(stderr, "vmpt script: %s: cannot load kcore_dir\n", pd.kcore_dir);
	add_guest(img, path);
	/* Sideband first: code images from the executable mappings. */
	vmpt_perf_cursor_init(&pd, &cur);
	while ((ret = vmpt_perf_next(&pd, &cur, &ev)) > 0) {
		if (ev.type == PERF_RECORD_MMAP2 || ev.type == PERF_RECORD_MMAP) {
			add_mapping(img, &ev, "", NULL, &host);
		} else if (ev.type == VMPT_PERF_RECORD_TIME_CONV) {
			op->tc = ev.time_conv;
			op->have_tc = 1;
		} else if (ev.type == VMPT_PERF_RECORD_AUXTRACE_INFO) {
			struct vmpt_perf_intel_pt_info info;

			if (vmpt_perf_intel_pt_info(&ev, &info) == 0)
				intel_pt_config(&pd, &info, cfg, op);
		}
	}
	vmpt_perf_cursor_init(&pd, &cur);
	while (ret >= 0 && (ret = vmpt_perf_next(&pd, &cur, &ev)) > 0) {
		if (ev.type != VMPT_PERF_RECORD_AUXTRACE)
			continue;
		cfg->begin = ev.auxtrace.data;
		cfg->end = ev.auxtrace.data + ev.auxtrace.size;
		op->cpu = (int)ev.auxtrace.cpu;
		op->tid = (int)ev.auxtrace.tid;
		ret = run_stream(cfg, op);
		if (ret < 0)
			fprintf(stderr, "vmpt script: %s\n", vmpt_strerror(ret));
	}
	if (ret < 0 && pd.errmsg[0])
		fprintf(stderr, "vmpt script: %s\n", pd.errmsg);
	vmpt_perf_close(&pd);
	return ret < 0 ? 1 : 0;
}

static void script_usage(FILE *out)
{
	fprintf(out,
		"usage: vmpt script [OPTIONS] [-i perf.data]\n"
		"       vmpt script --pt TRACE [--elf FILE[@BASE]] [--raw FILE@ADDR]\n"
		"                   [--pagecache PREFIX] [--kcore FILE] [OPTIONS]\n"
		"  --itrace=LETTERS  i[PERIOD] instructions, b branches, c calls, r returns,\n"
		"                    e errors, Z timeless (periods: i100us, i0ns, i1000i)\n"
		"  -F FIELDS         ip,addr,sym,symoff,dso,flags,insn,time,cpu,pid,tid,comm,ipc\n"
		"                    (+FIELDS adds, -FIELDS removes)\n"
		"  --call-trace      calls and returns, indented by depth\n"
		"  --insn-trace      every instruction with its disassembly\n"
		"  --filter A-B      the IP filter range the trace was recorded with\n"
		"  --retcomp         return compression was on (default off)\n"
		"  -j N              decode N pieces of the trace in parallel\n");
}

int cmd_script(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pt", required_argument, NULL, 'p' },
		{ "elf", required_argument, NULL, 'E' },
		{ "raw", required_argument, NULL, 'R' },
		{ "pagecache", required_argument, NULL, 'P' },
		{ "kcore", required_argument, NULL, 'K' },
		{ "itrace", required_argument, NULL, 'I' },
		{ "fields", required_argument, NULL, 'F' },
		{ "call-trace", no_argument, NULL, 'C' },
		{ "insn-trace", no_argument, NULL, 'T' },
		{ "filter", required_argument, NULL, 'f' },
		{ "retcomp", no_argument, NULL, 'r' },
		{ "input", required_argument, NULL, 'i' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct vmpt_asid any = vmpt_asid_any();
	struct vmpt_flow_config cfg = { 0 };
	struct opts op = { .cpu = -1, .pid = -1, .tid = -1, .jobs = 1 };
	const char *pt = NULL, *input = NULL;
	struct vmpt_image *img = vmpt_image_new();
	struct vmpt_file trace = { 0 };
	const char *fields = NULL;
	int c, ret = 0, status = 1;

	if (!img)
		return 1;
	parse_itrace("i100usbe", &op.it);
	op.it.insns = 0;
	op.it.branches = 1;
	while ((c = getopt_long(argc, argv, "F:i:j:h", longopts, NULL)) != -1) {
		uint64_t addr = VMPT_ELF_LINK_ADDR;
		const char *what = optarg;

		switch (c) {
		case 'p': pt = optarg; break;
		case 'i': input = optarg; break;
		case 'E':
			if (split_at(optarg, &addr) < 0)
				goto bad_arg;
			ret = vmpt_image_add_elf(img, optarg, addr, &any);
			break;
		case 'R':
			if (split_at(optarg, &addr) <= 0)
				goto bad_arg;
			ret = vmpt_image_add_raw(img, optarg, 0, 0, addr, &any);
			break;
		case 'P': ret = vmpt_image_add_pagecache(img, optarg, &any); break;
		case 'K': ret = vmpt_image_add_kcore(img, optarg, &any); break;
		case 'I':
			if (parse_itrace(optarg, &op.it) < 0)
				goto bad_arg;
			break;
		case 'F': fields = optarg; break;
		case 'C':
			op.call_trace = 1;
			op.it = (struct itrace){ .calls = 1, .returns = 1, .errors = 1 };
			break;
		case 'T':
			op.it = (struct itrace){ .insns = 1, .period_time = 1, .errors = 1 };
			op.fields |= F_INSN;
			op.disasm = 1;
			break;
		case 'f': {
			char *dash = strchr(optarg, '-');

			if (!dash || cfg.n_filters == 4)
				goto bad_arg;
			cfg.filter_a[cfg.n_filters] = strtoull(optarg, NULL, 0);
			cfg.filter_b[cfg.n_filters++] = strtoull(dash + 1, NULL, 0);
			break;
		}
		case 'r': cfg.retcomp = 1; break;
		case 'j':
			op.jobs = atoi(optarg);
			if (op.jobs < 1)
				goto bad_arg;
			break;
		case 'h':
			script_usage(stdout);
			status = 0;
			goto out;
		default:
			script_usage(stderr);
			status = 2;
			goto out;
		}
		if (ret < 0) {
			fprintf(stderr, "vmpt script: %s: %s%s%s\n", what, vmpt_strerror(ret),
				ret == -VMPT_ERR_IO ? ": " : "",
				ret == -VMPT_ERR_IO ? strerror(errno) : "");
			goto out;
		}
		continue;
bad_arg:
		fprintf(stderr, "vmpt script: bad argument '%s'\n", what);
		status = 2;
		goto out;
	}
	/* perf's defaults for Intel PT, less what raw mode cannot know. */
	op.fields |= op.it.insns ? F_IP | F_SYM | F_SYMOFF | F_DSO :
		     F_FLAGS | F_IP | F_SYM | F_SYMOFF | F_DSO | F_ADDR;
	if (op.call_trace)
		op.fields = F_SYM | F_DSO;
	if (fields && parse_fields(fields, &op.fields) < 0) {
		status = 2;
		goto out;
	}
	cfg.image = img;
	op.image = img;
	if (!pt) {
		status = script_perf_data(input ? input : "perf.data", &cfg, img, &op);
		goto out;
	}
	ret = vmpt_file_map(&trace, pt);
	if (ret < 0) {
		fprintf(stderr, "vmpt script: %s: %s\n", pt,
			ret == -VMPT_ERR_IO ? strerror(errno) : vmpt_strerror(ret));
		goto out;
	}
	cfg.begin = trace.data;
	cfg.end = trace.data + trace.size;
	ret = run_stream(&cfg, &op);
	if (ret < 0)
		fprintf(stderr, "vmpt script: %s: %s\n", pt, vmpt_strerror(ret));
	status = ret < 0;
	vmpt_file_unmap(&trace);
out:
	fflush(stdout);
	vmpt_image_free(img);
	return status;
}
