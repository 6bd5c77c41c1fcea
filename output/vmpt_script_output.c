/* SPDX-License-Identifier: MIT */
/* perf script's lines for the instruction flow: --itrace picks the samples
 * (instructions, branches, calls, returns, errors), -F the columns.
 * Output goes through a buffer per stream: stdio's per-call cost would be
 * most of the time of printing every instruction.
 */
#include "vmpt/script_output.h"
#include "vmpt/error.h"

#include <capstone/capstone.h>
#include <stdarg.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const struct { const char *name; unsigned bit; } field_names[] = {
	{ "time", VMPT_F_TIME }, { "ip", VMPT_F_IP }, { "addr", VMPT_F_ADDR },
	{ "sym", VMPT_F_SYM }, { "symoff", VMPT_F_SYMOFF }, { "dso", VMPT_F_DSO },
	{ "flags", VMPT_F_FLAGS }, { "insn", VMPT_F_INSN }, { "cpu", VMPT_F_CPU },
	{ "pid", VMPT_F_PID }, { "tid", VMPT_F_TID }, { "comm", VMPT_F_COMM },
	{ "ipc", VMPT_F_IPC },
};

int vmpt_itrace_parse(const char *s, struct vmpt_itrace *it)
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
			return -VMPT_ERR_INVAL;
		}
	}
	return 0;
}

int vmpt_script_fields_parse(const char *s, unsigned *fields, size_t *bad_at)
{
	int add = *s == '+', del = *s == '-';
	const char *p = s + (add || del);
	unsigned set = 0;

	while (*p) {
		size_t len = strcspn(p, ","), i;

		for (i = 0; i < sizeof(field_names) / sizeof(field_names[0]); i++)
			if (strlen(field_names[i].name) == len &&
			    !strncmp(p, field_names[i].name, len))
				break;
		if (i == sizeof(field_names) / sizeof(field_names[0])) {
			*bad_at = (size_t)(p - s);
			return -VMPT_ERR_INVAL;
		}
		set |= field_names[i].bit;
		p += len + (p[len] == ',');
	}
	*fields = add ? *fields | set : del ? *fields & ~set : set;
	return 0;
}

const char *vmpt_script_field_name(size_t i)
{
	return i < sizeof(field_names) / sizeof(field_names[0]) ? field_names[i].name : NULL;
}

uint64_t vmpt_script_time(const struct vmpt_script_opts *opts, uint64_t tsc)
{
	return opts->have_tc ? vmpt_perf_tsc_to_time(&opts->tc, tsc) : tsc;
}

#define OUT_CAP (1u << 16)

struct vmpt_script_out {
	FILE *f;
	char *buf;
	size_t len;
	const struct vmpt_script_opts *o;
	struct vmpt_script_task task;
	csh cs[3];
	cs_insn *insn[3];
	/* The symbols looked up last, with their name lengths: a branch
	 * line names two, and the next line's source is mostly in the
	 * function of this one's target.
	 */
	struct sym_seen {
		const struct vmpt_section *sec;	/* NULL: unused */
		const struct vmpt_symbol *sym;
		uint64_t from, to;	/* addresses with this answer */
		size_t name_len, dso_len;
	} seen[4];
	unsigned seen_next;
	uint64_t since;		/* instructions since the last i sample */
	/* Time periods as perf counts them (period_next): TSC ticks, one
	 * per instruction since the last timestamp.
	 */
	uint64_t p_ticks, p_mask;	/* the period: a power of two */
	uint64_t p_ts, p_cnt;		/* the timestamp, insns since it */
	uint64_t p_last;		/* masked timestamp of the last sample */
	uint64_t p_left;		/* insns to the next sample; 0: unknown */
	int p_cont;			/* a sample per period from now on */
	/* perf times an instruction as of the branch before it: the trace
	 * that decides its block's branch is read after it ran.
	 */
	uint64_t insn_time, block_time;
	int have_block;
	/* Time periods: blocks ending in a direct branch wait for the next
	 * item, whose time perf's decoder already has while walking them
	 * (it reads the next packets first).
	 */
	struct vmpt_flow_item pending[64];
	unsigned n_pending;
	uint64_t next_time;
	/* The machine the trace is in (PIP.NR, VMCS), and the one the code
	 * before the last transfer ran in: perf prints a sample as of its
	 * source's machine (its target's when it has none), and a branch
	 * from one machine to the other as two samples.
	 */
	uint8_t nr, from_nr;
	uint64_t vmcs;
	/* The last block ended in a far branch where tracing stopped
	 * (TIP.PGD, its IP suppressed): perf's "tr end" names it.
	 */
	struct vmpt_flow_item stopped;
	int have_stopped;
	int depth;		/* for --call-trace */
	/* IPC as perf counts it: instructions so far, the estimated cycle
	 * count as of the last IPC point (flow.h, cyc_est), and instructions
	 * and cycles as of the last branch and instruction samples that
	 * showed an IPC (apart, as perf's).
	 */
	uint64_t insns, est_cyc;
	uint64_t br_insns, br_cyc, in_insns, in_cyc;
};

static void out_flush(struct vmpt_script_out *o)
{
	if (o->len && o->f)
		fwrite(o->buf, 1, o->len, o->f);
	o->len = 0;
}

static void outf(struct vmpt_script_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void outf(struct vmpt_script_out *o, const char *fmt, ...)
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

static void out_char(struct vmpt_script_out *o, char c)
{
	if (o->len == OUT_CAP)
		out_flush(o);
	o->buf[o->len++] = c;
}

static void out_mem(struct vmpt_script_out *o, const char *str, size_t n)
{
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

/* "%-21s " after two spaces, perf's flags column. */
static void out_flags(struct vmpt_script_out *o, const char *flags)
{
	size_t n = strlen(flags);

	if (n >= 21) {
		outf(o, "  %s ", flags);
		return;
	}
	if (o->len > OUT_CAP - 32)
		out_flush(o);
	memset(o->buf + o->len, ' ', 24);
	memcpy(o->buf + o->len + 2, flags, n);
	o->len += 24;
}

/* Two hex digits per byte value. */
static const char hex_pairs[513] =
	"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
	"404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
	"606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
	"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
	"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
	"c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
	"e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

/* The hex digits of v, no leading zeros, ending right before end;
 * returns how many.  Written in pairs: an odd count writes a 0 before.
 */
static unsigned hex_digits(char *end, uint64_t v)
{
	unsigned n = v ? (unsigned)(67 - __builtin_clzll(v)) / 4 : 1;

	for (unsigned k = 0; k < n; k += 2, v >>= 8)
		memcpy(end - k - 2, &hex_pairs[2 * (v & 0xff)], 2);
	return n;
}

/* "%lx" without printf. */
static void out_hex(struct vmpt_script_out *o, uint64_t v)
{
	char tmp[18];
	unsigned n = hex_digits(tmp + sizeof(tmp), v);

	out_mem(o, tmp + sizeof(tmp) - n, n);
}

/* " %16lx", the way perf prints addresses, without printf. */
static void out_hex16(struct vmpt_script_out *o, uint64_t v)
{
	char *p;

	if (o->len > OUT_CAP - 32)
		out_flush(o);
	p = o->buf + o->len;
	memset(p, ' ', 16);
	p[16 - hex_digits(p + 17, v)] = ' ';	/* an odd count's extra 0 */
	o->len += 17;
}

/* Samples show microseconds, error lines nanoseconds, as perf script. */
static void print_time(struct vmpt_script_out *o, const struct vmpt_script_opts *op, uint64_t tsc,
		       const char *sep)
{
	if (op->have_tc) {
		uint64_t ns = vmpt_perf_tsc_to_time(&op->tc, tsc);

		if (*sep && !op->ns)
			outf(o, "%5" PRIu64 ".%06" PRIu64 "%s", ns / 1000000000,
			     ns % 1000000000 / 1000, sep);
		else if (*sep)
			outf(o, "%5" PRIu64 ".%09" PRIu64 "%s", ns / 1000000000,
			     ns % 1000000000, sep);
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
	/* perf's decoder takes far calls, rets and jumps as near ones. */
	case VMPT_IC_FAR_CALL: return "call";
	case VMPT_IC_FAR_RET: return "return";
	case VMPT_IC_FAR_JMP: return "jmp";
	case VMPT_IC_INT: return "int";
	case VMPT_IC_SYSCALL: return "syscall";
	case VMPT_IC_IRET: return "iret";
	case VMPT_IC_SYSRET: return "sysret";
	case VMPT_IC_VMENTRY: return "vmentry";
	default: return "";
	}
}

/* The symbol at ip in sec (sym NULL: none there, or no sec), from the
 * ones seen last if it is one of them.
 */
static const struct sym_seen *sym_at(struct vmpt_script_out *o,
				     const struct vmpt_section *sec, uint64_t ip)
{
	const size_t n = sizeof(o->seen) / sizeof(o->seen[0]);
	struct sym_seen *e;

	static const struct sym_seen none;

	if (!sec)
		return &none;
	for (size_t i = 0; i < n; i++) {
		e = &o->seen[i];
		if (e->sec == sec && ip - e->from < e->to - e->from)
			return e;
	}
	e = &o->seen[o->seen_next++ % n];
	e->sec = sec;
	e->sym = vmpt_section_symbol_span(sec, ip, &e->from, &e->to);
	e->name_len = e->sym ? strlen(e->sym->name) : 0;
	e->dso_len = strlen(sec->name);
	return e;
}

static void print_sym(struct vmpt_script_out *o, const struct vmpt_section *sec, uint64_t ip)
{
	unsigned f = o->o->fields;
	const struct sym_seen *e;

	if (!(f & (VMPT_F_SYM | VMPT_F_DSO)))
		return;
	e = sym_at(o, sec, ip);
	if (f & VMPT_F_SYM) {
		out_char(o, ' ');
		if (e->sym)
			out_mem(o, e->sym->name, e->name_len);
		else
			out_mem(o, "[unknown]", 9);
		if ((f & VMPT_F_SYMOFF) && e->sym) {
			out_mem(o, "+0x", 3);
			out_hex(o, ip - e->sym->addr);
		}
	}
	if (f & VMPT_F_DSO) {
		out_mem(o, " (", 2);
		if (sec)
			out_mem(o, sec->name, e->dso_len);
		else
			out_mem(o, "[unknown]", 9);
		out_char(o, ')');
	}
}

/* The fields before the ip, as perf lays them out; guest: a sample of
 * guest code.
 */
static void print_head(struct vmpt_script_out *o, uint64_t time, int guest)
{
	const struct vmpt_script_opts *op = o->o;
	unsigned f = op->fields;

	const struct vmpt_script_task *t = &o->task;

	if (f & VMPT_F_COMM) {
		char unknown[32];

		/* perf names a thread without COMM ":TID"; guest code runs
		 * in a thread of the guest machine, which has no COMM but
		 * with --guest-code.
		 */
		if (guest && op->guest_code && t->pid > 0)
			snprintf(unknown, sizeof(unknown), "[guest/%d]", t->pid);
		else if (!t->comm || guest)
			snprintf(unknown, sizeof(unknown), ":%d", t->tid);
		outf(o, "%16s ", t->comm && !guest ? t->comm : unknown);
	}
	if (f & (VMPT_F_PID | VMPT_F_TID)) {
		if ((f & VMPT_F_PID) && (f & VMPT_F_TID))
			outf(o, "%5d/%-5d ", t->pid, t->tid);
		else
			outf(o, "%5d ", f & VMPT_F_PID ? t->pid : t->tid);
	}
	if (f & VMPT_F_CPU)
		outf(o, "[%03d] ", t->cpu);
	if ((f & VMPT_F_TIME) && !op->it.timeless)
		print_time(o, op, time, ": ");
}

/* perf's IPC since the last sample of the kind (last_*) that showed one:
 * cyc is the cycle count where perf's decoder samples IPC (0: it does
 * not), insns the instructions so far.
 */
static void print_ipc(struct vmpt_script_out *o, uint64_t cyc, uint64_t insns,
		      uint64_t *last_cyc, uint64_t *last_insns)
{
	uint64_t dc = cyc - *last_cyc, di = insns - *last_insns;
	unsigned ipc;

	if (!(o->o->fields & VMPT_F_IPC) || !cyc || !dc)
		return;
	*last_cyc = cyc;
	*last_insns = insns;
	if (!di)
		return;
	ipc = (unsigned)(di * 100 / dc);	/* perf 6.1 keeps it in 32 bits */
	outf(o, " \t IPC: %u.%02u (%" PRIu64 "/%" PRIu64 ") ", ipc / 100, ipc % 100, di, dc);
}

/* perf's "insn: 41 57", then (--insn-trace) the disassembly. */
static void print_insn(struct vmpt_script_out *o, const struct vmpt_flow_item *b,
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

/* Instruction sample at ip; cyc and insns: for its IPC. */
static void sample_insn(struct vmpt_script_out *o, const struct vmpt_flow_item *b,
			uint64_t ip, unsigned size, uint64_t cyc, uint64_t insns)
{
	unsigned f = o->o->fields;

	print_head(o, o->insn_time, o->nr);
	if (f & VMPT_F_FLAGS)
		out_flags(o, ip == b->end_ip ? branch_flags(b) : "");
	if (f & VMPT_F_IP)
		out_hex16(o, ip);
	if (f & VMPT_F_IP)
		print_sym(o, b->sec, ip);
	if (f & VMPT_F_INSN)
		print_insn(o, b, ip, size);
	print_ipc(o, cyc, insns, &o->in_cyc, &o->in_insns);
	out_char(o, '\n');
}

/* A branch from `from` to `to` (0: tracing starts or ends, or the other
 * machine's side), in the guest or the host.
 */
static void sample_branch(struct vmpt_script_out *o, const struct vmpt_flow_item *b,
			  uint64_t from, uint64_t to, const char *flags, int guest)
{
	const struct vmpt_image *img = o->o->image;
	struct vmpt_asid space = { VMPT_MACHINE_HOST, VMPT_ASID_ANY };

	if (guest)
		space.machine = o->vmcs ? o->vmcs : VMPT_MACHINE_GUEST;
	else if (o->task.space)
		space.cr3 = o->task.space;
	unsigned f = o->o->fields;

	print_head(o, b->time, guest);
	if (o->o->call_trace) {
		outf(o, "%*s", 2 * (o->depth > 0 ? o->depth : 0), "");
		print_sym(o, to ? vmpt_image_find(img, &space, to) : NULL, to);
		out_char(o, '\n');
		return;
	}
	if (f & VMPT_F_FLAGS)
		out_flags(o, flags);
	if (f & VMPT_F_IP) {
		out_hex16(o, from);
		print_sym(o, !from ? NULL : b->kind == VMPT_FLOW_BLOCK ? b->sec :
			  vmpt_image_find(img, &space, from), from);
	}
	if (f & VMPT_F_ADDR) {
		out_mem(o, " =>", 3);
		out_hex16(o, to);
		if (f & VMPT_F_IP)
			print_sym(o, to ? vmpt_image_find(img, &space, to) : NULL, to);
	}
	print_ipc(o, b->cyc_est ? o->est_cyc : b->cyc, o->insns, &o->br_cyc, &o->br_insns);
	out_char(o, '\n');
}

/* Instructions to the next time-period sample, as perf's decoder
 * counts them: the timestamp plus one tick per instruction since it; a
 * sample when that enters a new period (after the first one entered).
 */
static uint64_t period_next(struct vmpt_script_out *o)
{
	uint64_t ts = o->p_ts + o->p_cnt, masked = ts & o->p_mask;

	if (o->p_cont) {
		if (masked > o->p_last)
			return 1;
	} else {
		ts++;
		masked = ts & o->p_mask;
		if (masked > o->p_last) {
			o->p_last = masked;
			o->p_cont = 1;
		}
	}
	if (masked < o->p_last)
		return o->p_ticks;
	return o->p_ticks - (ts - masked);
}

static void period_sampled(struct vmpt_script_out *o)
{
	uint64_t masked = (o->p_ts + o->p_cnt) & o->p_mask;

	if (masked > o->p_last)
		o->p_last = masked;
	else
		o->p_last += o->p_ticks;
}

static void on_block(struct vmpt_script_out *o, const struct vmpt_flow_item *b)
{
	const struct vmpt_itrace *it = &o->o->it;
	/* Estimating, perf takes the count at a not taken jcc only when it
	 * samples that instruction (else its decoder has no state there).
	 */
	int est_point = b->cyc_est && b->cyc && (b->taken || b->iclass != VMPT_IC_JCC);

	o->from_nr = o->nr;
	o->insn_time = o->have_block ? o->block_time : b->time;
	o->block_time = b->time;
	o->have_block = 1;
	if (it->insns) {
		uint64_t ip = b->ip;
		int every = it->period_time &&
			    (!o->p_ticks || it->timeless || !b->time);

		if (it->period_time && o->next_time != o->p_ts) {
			o->p_ts = o->next_time;
			o->p_cnt = 0;
		}
		/* perf's walk stops at every branch and counts anew. */
		o->p_left = 0;
		for (uint32_t i = 0; i < b->ninsn; i++) {
			int take;

			if (every) {
				take = 1;
			} else if (it->period_time) {
				if (!o->p_left)
					o->p_left = period_next(o);
				o->p_cnt++;
				take = --o->p_left == 0;
				if (take)
					period_sampled(o);
			} else {
				take = ++o->since >= (it->period ? it->period : 1);
			}
			if (take) {
				int last = i + 1 == b->ninsn;
				uint64_t cyc = last ? b->cyc : 0;

				/* Estimating: the count of the last IPC point,
				 * at the last instruction the block's own.
				 */
				if (b->cyc_est) {
					if (last && b->cyc)
						o->est_cyc = b->cyc;
					cyc = o->est_cyc;
				}
				o->since = 0;
				sample_insn(o, b, ip, b->isize[i], cyc, o->insns + i + 1);
			}
			ip += b->isize[i];
		}
	}
	o->insns += b->ninsn;
	if (est_point)
		o->est_cyc = b->cyc;
	o->have_stopped = !b->taken && b->iclass != VMPT_IC_OTHER &&
			  b->iclass != VMPT_IC_JCC;
	if (o->have_stopped)
		o->stopped = *b;
	if (!b->taken)
		return;
	int is_call = b->iclass == VMPT_IC_CALL || b->iclass == VMPT_IC_CALL_IND ||
		      b->iclass == VMPT_IC_FAR_CALL || b->iclass == VMPT_IC_INT ||
		      b->iclass == VMPT_IC_SYSCALL;
	int is_ret = b->iclass == VMPT_IC_RET || b->iclass == VMPT_IC_FAR_RET ||
		     b->iclass == VMPT_IC_IRET || b->iclass == VMPT_IC_SYSRET;

	if (is_ret && o->depth > 0)
		o->depth--;
	int sampled = it->branches || (it->calls && is_call) || (it->returns && is_ret);

	if (sampled && b->iclass == VMPT_IC_VMENTRY && !o->nr) {
		/* Into the guest (its PIP comes after this block). */
		sample_branch(o, b, b->end_ip, 0, "vmentry", 0);
		sample_branch(o, b, 0, b->to, "vmentry", 1);
	} else if (sampled) {
		sample_branch(o, b, b->end_ip, b->to, branch_flags(b), o->nr);
	}
	if (is_call)
		o->depth++;
}

/* perf's error line, plus the trace offset. */
static void print_error(struct vmpt_script_out *o, const struct vmpt_flow_item *e, int code,
			const char *msg)
{
	outf(o, " instruction trace error type 1 time ");
	print_time(o, o->o, e->time, "");
	outf(o, " cpu %d pid %d tid %d ip %#" PRIx64 " offset %#" PRIx64
		" code %d: %s\n", o->task.cpu, o->task.pid, o->task.tid, e->ip,
		e->offset, code, msg);
}

static void on_event(struct vmpt_script_out *o, const struct vmpt_flow_item *e)
{
	const struct vmpt_itrace *it = &o->o->it;

	if (e->cyc_est && e->cyc)
		o->est_cyc = e->cyc;
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
	case VMPT_EV_PAGING:
		/* the machine the walk left: a VM exit right at the entry's
		 * target (no guest instruction ran) is still from the guest */
		o->from_nr = o->nr;
		o->nr = e->nr;
		break;
	case VMPT_EV_VMCS:
		o->vmcs = e->payload;
		break;
	case VMPT_EV_ENABLED:
		/* perf's periods start anew when tracing does. */
		o->p_cont = 0;
		if (it->branches)
			sample_branch(o, e, 0, e->ip, "tr strt", o->nr);
		break;
	case VMPT_EV_DISABLED:
		if (it->branches && o->have_stopped && !e->ip) {
			char flags[32];

			snprintf(flags, sizeof(flags), "tr end  %s", branch_flags(&o->stopped));
			sample_branch(o, &o->stopped, o->stopped.end_ip, 0, flags, o->from_nr);
		} else if (it->branches) {
			sample_branch(o, e, e->ip, 0, "tr end", o->from_nr);
		}
		break;
	case VMPT_EV_ASYNC_DISABLED:
		if (it->branches)
			sample_branch(o, e, e->ip, 0, "tr end  async", o->from_nr);
		break;
	case VMPT_EV_ASYNC_BRANCH:
		if (!it->branches)
			break;
		if (o->from_nr == o->nr) {
			sample_branch(o, e, e->ip, e->to, "hw int", o->nr);
			break;
		}
		/* A VM exit (perf 6.1.y prints its flags as "bcyh"). */
		sample_branch(o, e, e->ip, 0, o->from_nr ? "vmexit" : "hw int", o->from_nr);
		sample_branch(o, e, 0, e->to, o->from_nr ? "vmexit" : "hw int", o->nr);
		break;
	default:
		break;
	}
}


/* A PSB+ decides nothing: it waits with the blocks around it. */
static int decided_by_trace(const struct vmpt_flow_item *it)
{
	if (it->kind != VMPT_FLOW_BLOCK)
		return it->ev != VMPT_EV_PSB;
	return it->iclass != VMPT_IC_JMP && it->iclass != VMPT_IC_CALL &&
	       it->iclass != VMPT_IC_OTHER;
}

static void run_pending(struct vmpt_script_out *o, uint64_t next_time)
{
	o->next_time = next_time;
	for (unsigned i = 0; i < o->n_pending; i++) {
		if (o->pending[i].kind == VMPT_FLOW_BLOCK)
			on_block(o, &o->pending[i]);
		else
			on_event(o, &o->pending[i]);
	}
	o->n_pending = 0;
}

void vmpt_script_out_item(struct vmpt_script_out *o, const struct vmpt_flow_item *it)
{
	const struct vmpt_itrace *itr = &o->o->it;

	if (itr->insns && itr->period_time && o->p_ticks) {
		if (!decided_by_trace(it)) {
			if (o->n_pending == sizeof(o->pending) / sizeof(o->pending[0]))
				run_pending(o, o->pending[0].time);
			o->pending[o->n_pending++] = *it;
			return;
		}
		run_pending(o, it->time);
	}
	o->next_time = it->time;
	if (it->kind == VMPT_FLOW_BLOCK)
		on_block(o, it);
	else
		on_event(o, it);
}

void vmpt_script_out_restart(struct vmpt_script_out *o)
{
	o->p_cont = 0;
	o->p_last = 0;
	o->have_block = 0;
	/* A new decoder starts in the host. */
	o->nr = o->from_nr = 0;
	o->vmcs = 0;
}

void vmpt_script_out_drain(struct vmpt_script_out *o, uint64_t next_time)
{
	if (o->n_pending)
		run_pending(o, next_time ? next_time : o->pending[o->n_pending - 1].time);
}

void vmpt_script_out_flush(struct vmpt_script_out *o)
{
	out_flush(o);
}

void vmpt_script_out_set_file(struct vmpt_script_out *o, FILE *f)
{
	out_flush(o);
	o->f = f;
}

void vmpt_script_out_set_task(struct vmpt_script_out *o,
			      const struct vmpt_script_task *task)
{
	o->task = *task;
}

struct vmpt_script_out *vmpt_script_out_new(const struct vmpt_script_opts *opts,
					    FILE *f)
{
	static const cs_mode modes[3] = { CS_MODE_64, CS_MODE_32, CS_MODE_16 };
	struct vmpt_script_out *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->f = f;
	o->o = opts;
	o->task = (struct vmpt_script_task){ .cpu = -1, .pid = -1, .tid = -1 };
	if (opts->it.period_time && opts->it.period) {
		/* perf: the period in TSC ticks, rounded down to a power of
		 * two (raw traces: the period is in ticks already).
		 */
		uint64_t t = opts->it.period;

		if (opts->have_tc && opts->tc.time_mult)
			t = ((t / opts->tc.time_mult) << opts->tc.time_shift) +
			    ((t % opts->tc.time_mult) << opts->tc.time_shift) /
			    opts->tc.time_mult;
		while (t & (t - 1))
			t &= t - 1;
		o->p_ticks = t;
		o->p_mask = ~(t - 1);
	}
	o->buf = malloc(OUT_CAP);
	if (!o->buf) {
		free(o);
		return NULL;
	}
	for (int m = 0; m < 3; m++) {
		if (cs_open(CS_ARCH_X86, modes[m], &o->cs[m]) != CS_ERR_OK) {
			vmpt_script_out_free(o);
			return NULL;
		}
		o->insn[m] = cs_malloc(o->cs[m]);
	}
	return o;
}

void vmpt_script_out_free(struct vmpt_script_out *o)
{
	if (!o)
		return;
	vmpt_script_out_drain(o, 0);
	out_flush(o);
	free(o->buf);
	for (int m = 0; m < 3; m++) {
		if (o->insn[m])
			cs_free(o->insn[m], 1);
		if (o->cs[m])
			cs_close(&o->cs[m]);
	}
	free(o);
}

static int decode(struct vmpt_flow *dec, uint64_t start, uint64_t stop,
		  struct vmpt_script_out *o)
{
	const struct vmpt_flow_item *it;
	size_t n;
	int ret;

	vmpt_flow_sync_at(dec, start, stop);
	/* The piece's decoder starts in the host, and so does its output. */
	o->nr = o->from_nr = 0;
	o->vmcs = 0;
	while ((ret = vmpt_flow_next_items(dec, &it, &n)) == 0)
		for (size_t i = 0; i < n; i++)
			vmpt_script_out_item(o, &it[i]);
	vmpt_script_out_drain(o, 0);
	out_flush(o);
	return ret == -VMPT_ERR_EOS ? 0 : ret;
}

/* A decoding thread keeps its decoder (and so its block cache) from one
 * piece of the trace to the next; each piece's output goes to memory.
 */
struct worker {
	struct vmpt_flow *dec;
	struct vmpt_script_out *o;
	uint64_t start, stop;
	/* The piece's output: one stream, rewound for each piece, so its
	 * buffer (100 MB for a MiB of trace, every instruction) grows once.
	 */
	FILE *mem;
	char *buf;
	size_t len;
	int ret;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;

	if (!w->mem)
		w->mem = open_memstream(&w->buf, &w->len);
	else
		fseek(w->mem, 0, SEEK_SET);
	if (!w->mem) {
		w->ret = -VMPT_ERR_NOMEM;
		return NULL;
	}
	vmpt_script_out_set_file(w->o, w->mem);
	w->ret = decode(w->dec, w->start, w->stop, w->o);
	if (fflush(w->mem))
		w->ret = -VMPT_ERR_NOMEM;
	return NULL;
}

static struct vmpt_flow *new_decoder(const struct vmpt_flow_config *base,
				     uint64_t host_space)
{
	struct vmpt_flow *dec = vmpt_flow_new(base);

	if (dec && host_space)
		vmpt_flow_set_host_space(dec, host_space);
	return dec;
}

int vmpt_script_run(const struct vmpt_flow_config *base,
		    const struct vmpt_script_opts *opts,
		    const struct vmpt_script_task *task, uint64_t host_space,
		    int jobs, FILE *f)
{
	size_t n_psbs = 0, pieces, size = (size_t)(base->end - base->begin);
	struct vmpt_flow_config shared = *base;
	struct worker *w = NULL;
	uint64_t *psbs = NULL;
	int ret = 0;

	/* IPC counts from the sample before, which may be in another piece. */
	if (opts->fields & VMPT_F_IPC)
		jobs = 1;
	if (jobs > 1 && vmpt_flow_psb_offsets(base->begin, base->end, &psbs, &n_psbs) < 0)
		return -VMPT_ERR_NOMEM;
	if (jobs <= 1 || n_psbs < 2) {
		struct vmpt_flow *dec = new_decoder(base, host_space);
		struct vmpt_script_out *o = vmpt_script_out_new(opts, f);

		free(psbs);
		if (dec && o) {
			vmpt_script_out_set_task(o, task);
			ret = decode(dec, 0, 0, o);
		} else {
			ret = -VMPT_ERR_NOMEM;
		}
		vmpt_script_out_free(o);
		vmpt_flow_free(dec);
		return ret;
	}
	if ((size_t)jobs > n_psbs)
		jobs = (int)n_psbs;
	/* Pieces of about 128 KiB, at least 4 per thread, cut at PSBs: a
	 * piece's output waits in memory (every instruction of 128 KiB of
	 * trace can be 10 MB of text).
	 */
	pieces = size >> 17 > (size_t)jobs * 4 ? size >> 17 : (size_t)jobs * 4;
	if (pieces > n_psbs)
		pieces = n_psbs;
	/* One block cache for all workers: no code is disassembled twice. */
	if (!shared.cache)
		shared.cache = vmpt_bcache_new();
	w = calloc((size_t)jobs, sizeof(*w));
	if (!w || !shared.cache) {
		free(w);
		free(psbs);
		if (shared.cache != base->cache)
			vmpt_bcache_free(shared.cache);
		return -VMPT_ERR_NOMEM;
	}
	for (int k = 0; k < jobs; k++) {
		w[k].dec = new_decoder(&shared, host_space);
		w[k].o = vmpt_script_out_new(opts, NULL);
		if (!w[k].dec || !w[k].o) {
			ret = -VMPT_ERR_NOMEM;
			jobs = k + 1;
			goto out;
		}
		vmpt_script_out_set_task(w[k].o, task);
	}
	for (size_t done = 0; done < pieces; done += (size_t)jobs) {
		size_t n = pieces - done < (size_t)jobs ? pieces - done : (size_t)jobs;
		pthread_t th[n];

		for (size_t k = 0; k < n; k++) {
			size_t i = done + k;

			w[k].start = i ? psbs[i * n_psbs / pieces] : 0;
			w[k].stop = i + 1 < pieces ? psbs[(i + 1) * n_psbs / pieces] : 0;
			if (pthread_create(&th[k], NULL, worker_run, &w[k]) != 0) {
				worker_run(&w[k]);	/* no thread: do it here */
				th[k] = 0;
			}
		}
		for (size_t k = 0; k < n; k++) {
			if (th[k])
				pthread_join(th[k], NULL);
			fwrite(w[k].buf, 1, w[k].len, f);
			if (w[k].ret < 0 && !ret)
				ret = w[k].ret;
		}
	}
out:
	for (int k = 0; k < jobs; k++) {
		vmpt_script_out_free(w[k].o);
		vmpt_flow_free(w[k].dec);
		if (w[k].mem)
			fclose(w[k].mem);
		free(w[k].buf);
	}
	free(w);
	free(psbs);
	if (shared.cache != base->cache)
		vmpt_bcache_free(shared.cache);
	return ret;
}
