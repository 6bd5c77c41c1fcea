/* SPDX-License-Identifier: MIT */
/* perf script's line layout for one sample, column for column as perf
 * 6.1's builtin-script.c lays it out (perf_sample__fprintf_start,
 * process_event, perf_sample__fprintf_bts); the lines that are no samples
 * are vmpt_script_sideband.c's.  Output goes through a buffer per stream:
 * stdio's per-call cost would be most of the time of printing every
 * instruction.
 */
#include "vmpt_script_int.h"
#include "vmpt/error.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void out_spaces(struct vmpt_consumer *c, int n)
{
	if (n > 0)
		script_out_fill(c, ' ', (size_t)n);
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
static void out_hex(struct vmpt_consumer *c, uint64_t v)
{
	char tmp[18];
	unsigned n = hex_digits(tmp + sizeof(tmp), v);

	script_out_mem(c, tmp + sizeof(tmp) - n, n);
}

static inline void out_hex16(struct vmpt_consumer *c, uint64_t v)
{
	if (c->len > SCRIPT_OUT_CAP - 32)
		script_out_flush(c);
	script_hex16_at(c->buf + c->len, v);
	c->len += 16;
}

/* A short string (at most 256 bytes: a literal, a column's kept text),
 * no loop.
 */
static inline void out_small(struct vmpt_consumer *c, const char *str, size_t n)
{
	if (c->len > SCRIPT_OUT_CAP - 256)
		script_out_flush(c);
	memcpy(c->buf + c->len, str, n);
	c->len += n;
}

/* Flag names as perf_sample__sprintf_flags: the combination's name
 * ("%-15s" and a 4-wide in-transaction mark), "tr strt NAME" or
 * "tr end  NAME", else one letter per flag.
 */
static const char *flags_to_name(uint32_t flags)
{
	static const struct { uint32_t flags; const char *name; } names[] = {
		{ PF_BRANCH | PF_CALL, "call" },
		{ PF_BRANCH | PF_RETURN, "return" },
		{ PF_BRANCH | PF_CONDITIONAL, "jcc" },
		{ PF_BRANCH, "jmp" },
		{ PF_BRANCH | PF_CALL | PF_INTERRUPT, "int" },
		{ PF_BRANCH | PF_RETURN | PF_INTERRUPT, "iret" },
		{ PF_BRANCH | PF_CALL | PF_SYSCALLRET, "syscall" },
		{ PF_BRANCH | PF_RETURN | PF_SYSCALLRET, "sysret" },
		{ PF_BRANCH | PF_ASYNC, "async" },
		{ PF_BRANCH | PF_CALL | PF_ASYNC | PF_INTERRUPT, "hw int" },
		{ PF_BRANCH | PF_TX_ABORT, "tx abrt" },
		{ PF_BRANCH | PF_TRACE_BEGIN, "tr strt" },
		{ PF_BRANCH | PF_TRACE_END, "tr end" },
		{ PF_BRANCH | PF_CALL | PF_VMENTRY, "vmentry" },
		{ PF_BRANCH | PF_CALL | PF_VMEXIT, "vmexit" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].flags == flags)
			return names[i].name;
	return NULL;
}

void script_flags_name(uint32_t flags, char *buf, size_t size)
{
	const char *tx = flags & PF_IN_TX ? "(x)" : "";
	const char *chars = "bcrosyiABExgh";
	const char *name = flags_to_name(flags & ~PF_IN_TX);
	size_t pos = 0;

	if (name) {
		snprintf(buf, size, "%-15s%4s", name, tx);
		return;
	}
	if ((flags & PF_TRACE_BEGIN) &&
	    (name = flags_to_name(flags & ~(PF_IN_TX | PF_TRACE_BEGIN)))) {
		snprintf(buf, size, "tr strt %-7s%4s", name, tx);
		return;
	}
	if ((flags & PF_TRACE_END) &&
	    (name = flags_to_name(flags & ~(PF_IN_TX | PF_TRACE_END)))) {
		snprintf(buf, size, "tr end  %-7s%4s", name, tx);
		return;
	}
	for (unsigned i = 0; chars[i] && pos + 1 < size; i++)
		if (flags & (1u << i))
			buf[pos++] = chars[i];
	buf[pos] = 0;
}

/* Samples show microseconds unless --ns, error lines nanoseconds, as perf
 * script; a raw trace has no perf time: its TSC.
 */
static void print_time(struct vmpt_consumer *c, uint64_t tsc)
{
	const struct vmpt_script_opts *o = c->o;
	size_t start;

	if (!o->have_tc) {
		script_out_u64(c, tsc, 0, 0);
		out_small(c, ": ", 2);
		return;
	}
	/* Lines in a row mostly share their time: its text is kept. */
	if (c->time_len && c->time_tsc == tsc) {
		out_small(c, c->time_text, c->time_len);
		return;
	}
	/* room made first, so that the text is in one piece in the buffer */
	if (c->len > SCRIPT_OUT_CAP - 512)
		script_out_flush(c);
	start = c->len;
	script_print_ns(c, vmpt_perf_tsc_to_time(&o->tc, tsc));
	c->time_len = 0;
	if (c->len - start <= sizeof(c->time_text)) {
		c->time_len = (unsigned)(c->len - start);
		c->time_tsc = tsc;
		memcpy(c->time_text, c->buf + start, c->time_len);
	}
}

void script_print_ns(struct vmpt_consumer *c, uint64_t ns)
{
	char tmp[32], *end = tmp + sizeof(tmp), *p = end;
	uint64_t sec = ns / 1000000000, usec = ns % 1000000000 / 1000;

	if (c->o->ns) {
		/* "%5lu.%09lu: " */
		p -= script_dec_digits(p, ns % 1000000000 + 1000000000) - 1;
		*--p = '.';
		p -= script_dec_digits(p, sec);
		while (end - p < 15)	/* the seconds' width: 5 */
			*--p = ' ';
		script_out_mem(c, p, (size_t)(end - p));
		out_small(c, ": ", 2);
		return;
	}
	/* "%12s: " of "%lu.%06lu" */
	p -= script_dec_digits(p, usec + 1000000) - 1;	/* its leading zeros */
	*--p = '.';
	p -= script_dec_digits(p, sec);
	script_out_padded(c, p, (size_t)(end - p), 12, 0);
	out_small(c, ": ", 2);
}

/* The symbol at ip in sec (sym NULL: none there, or no sec). */
static const struct sym_seen *sym_at(struct vmpt_consumer *c,
				     const struct vmpt_section *sec, uint64_t ip)
{
	static const struct sym_seen none;

	return sec ? script_sym_at(c, sec, ip) : &none;
}

const char *script_dso_name(struct vmpt_consumer *c, const struct vmpt_section *sec,
			    uint64_t addr, int guest, size_t *len)
{
	struct vmpt_map_ref map;
	const char *name = "[unknown]";

	/* perf's name of a guest's kernel, once it knows the guest. */
	if (sec && guest && c->task.machine_pid > 0 && !strcmp(sec->name, "[kernel.kallsyms]")) {
		snprintf(c->guest_kernel, sizeof(c->guest_kernel),
			 "[guest.kernel.kallsyms.%d]", c->task.machine_pid);
		name = c->guest_kernel;
	} else if (sec)
		name = sec->name;
	else if (addr && !guest && c->o->map_of &&
		 c->o->map_of(c->o->map_ctx, c->task.pid, addr, &map) == 0) {
		name = map.name;
		/* perf loaded its symbols for the sample: a kernel's load
		 * leaves its data status ERROR, a user binary's does not
		 * (perf.data.intel_pt-4.14's errors are the same with and
		 * without samples).
		 */
		if (name[0] == '[')
			script_unread_looked_up(c, name);
	}
	*len = strlen(name);
	return name;
}

/* perf's scnprintf_pad: at most pad - 1 characters, spaces up to pad. */
static void print_dso(struct vmpt_consumer *c, const char *name, size_t len)
{
	size_t pad = c->o->pad_dso;

	if (pad && len >= pad)
		len = pad - 1;
	script_out_mem(c, name, len);
	if (pad)
		out_spaces(c, (int)(pad - len));
}

/* map__fprintf_srcline: the source line on a line of its own. */
static void print_srcline(struct vmpt_consumer *c, const struct vmpt_section *sec,
			  uint64_t ip)
{
	char buf[4200];
	size_t n = script_srcline(c, sec, ip, buf, sizeof(buf));

	if (n) {
		script_out_mem(c, "\n  ", 3);
		script_out_mem(c, buf, n);
	}
}

/* " sym+off (dso)" as sample__fprintf_sym prints it, by the fields, then
 * the srcline.
 */
void script_print_sym_dso(struct vmpt_consumer *c, unsigned f,
			  const struct vmpt_section *sec, uint64_t ip, int guest)
{
	const struct sym_seen *e;

	if (f & VMPT_F_SRCLINE) {
		script_print_sym_dso(c, f & ~VMPT_F_SRCLINE, sec, ip, guest);
		print_srcline(c, sec, ip);
		return;
	}
	if (!(f & (VMPT_F_SYM | VMPT_F_DSO)))
		return;
	/* The symbol's text, made once (vmpt_script_fast.c). */
	if (sec) {
		char *end;

		if (c->len > SCRIPT_OUT_CAP - FAST_LINE_MAX)
			script_out_flush(c);
		end = script_sym_dso_at(c, c->buf + c->len, f, sec, ip, guest);
		if (end) {
			c->len = (size_t)(end - c->buf);
			return;
		}
	}
	e = sym_at(c, sec, ip);
	if (f & VMPT_F_SYM) {
		script_out_char(c, ' ');
		if (e->sym)
			script_out_mem(c, e->sym->name, e->name_len);
		else
			script_out_mem(c, "[unknown]", 9);
		if ((f & VMPT_F_SYMOFF) && e->sym) {
			script_out_mem(c, "+0x", 3);
			out_hex(c, ip - e->from);	/* from: the symbol's address */
		}
	}
	if (f & VMPT_F_DSO) {
		size_t len;
		const char *name = script_dso_name(c, sec, ip, guest, &len);

		script_out_mem(c, " (", 2);
		print_dso(c, name, len);
		script_out_char(c, ')');
	}
}

/* The task's columns of a host sample (comm, pid/tid, cpu) as the last
 * line had them: their text, or 0.
 */
static int task_cols_kept(struct vmpt_consumer *c, unsigned cols, int callchain)
{
	const struct vmpt_task *t = &c->task;
	const struct script_task_cols *k = &c->task_cols;

	return k->len && k->cols == cols && k->callchain == callchain && k->pid == t->pid &&
	       k->tid == t->tid && k->cpu == t->cpu && !k->comm == !t->comm &&
	       (!t->comm || !strcmp(k->comm, t->comm));
}

static void keep_task_cols(struct vmpt_consumer *c, unsigned cols, int callchain,
			   size_t start)
{
	const struct vmpt_task *t = &c->task;
	struct script_task_cols *k = &c->task_cols;
	size_t n = c->len - start;

	k->len = 0;
	if (n > sizeof(k->text) || (t->comm && strlen(t->comm) >= sizeof(k->comm_text)))
		return;
	k->cols = cols;
	k->callchain = callchain;
	k->pid = t->pid;
	k->tid = t->tid;
	k->cpu = t->cpu;
	k->comm = NULL;
	if (t->comm)
		k->comm = strcpy(k->comm_text, t->comm);
	memcpy(k->text, c->buf + start, n);
	k->len = (unsigned)n;
}

/* perf_sample__fprintf_start: the columns before the event. */
void script_print_start(struct vmpt_consumer *c, unsigned f, uint64_t time,
			int guest, int callchain)
{
	const struct vmpt_task *t = &c->task;
	int gtask = t->machine_pid > 0 && (t->vcpu & GUEST_SAMPLE);
	unsigned cols = f & (VMPT_F_COMM | VMPT_F_PID | VMPT_F_TID | VMPT_F_CPU);
	/* A host task's columns are kept as text while they stay. */
	int host = !guest && t->machine_pid <= 0;
	size_t start = 0;

	if (host && task_cols_kept(c, cols, callchain)) {
		out_small(c, c->task_cols.text, c->task_cols.len);
		if (f & VMPT_F_TIME)
			print_time(c, time);
		return;
	}
	if (host) {
		/* room first, so that the text is in one piece in the buffer */
		if (c->len > SCRIPT_OUT_CAP - 1024)
			script_out_flush(c);
		start = c->len;
	}

	/* perf's machine_pid and vcpu: of the guest task's samples only. */
	if ((f & VMPT_F_MACHINE_PID) && gtask) {
		out_small(c, "VM:", 3);
		script_out_int(c, t->machine_pid, 5, 0);
		script_out_char(c, ' ');
	}
	if ((f & VMPT_F_VCPU) && gtask) {
		out_small(c, "VCPU:", 5);
		script_out_int(c, t->vcpu & ~GUEST_SAMPLE, 3, SCRIPT_ZERO);
		script_out_char(c, ' ');
	}
	if ((f & VMPT_F_VMCS) && guest && c->vmcs) {
		out_small(c, "VMCS:0x", 7);
		out_hex(c, c->vmcs);
		script_out_char(c, ' ');
	}
	if (f & VMPT_F_COMM) {
		char name[32];
		const char *comm = t->comm;

		/* perf names a thread without COMM ":TID"; guest code runs
		 * in a thread of the guest machine, which has no COMM but
		 * with --guest-code or the guest's sideband.
		 */
		if (guest && c->o->guest_code && t->pid > 0)
			snprintf(name, sizeof(name), "[guest/%d]", t->pid);
		else if (!comm || (guest && !gtask))
			snprintf(name, sizeof(name), ":%d", t->tid);
		if (!comm || (guest && !gtask))
			comm = name;
		script_out_padded(c, comm, strlen(comm), callchain ? 0 : 16, 0);
		script_out_char(c, ' ');
	}
	if ((f & VMPT_F_PID) && (f & VMPT_F_TID)) {
		script_out_int(c, t->pid, 5, 0);
		script_out_char(c, '/');
		script_out_int(c, t->tid, 5, SCRIPT_LEFT);
		script_out_char(c, ' ');
	} else if (f & (VMPT_F_PID | VMPT_F_TID)) {
		script_out_int(c, f & VMPT_F_PID ? t->pid : t->tid, 5, 0);
		script_out_char(c, ' ');
	}
	if (f & VMPT_F_CPU) {
		script_out_char(c, '[');
		script_out_int(c, t->cpu, 3, SCRIPT_ZERO);
		out_small(c, "] ", 2);
	}
	if (host)
		keep_task_cols(c, cols, callchain, start);
	if (f & VMPT_F_TIME)
		print_time(c, time);
}

/* perf's "insn: 41 57", then the disassembly (--insn-trace=disasm). */
static void print_insn(struct vmpt_consumer *c, unsigned f, const struct script_sample *smp)
{
	const struct vmpt_section *s = smp->sec;
	const uint8_t *code = NULL;
	size_t avail;
	uint64_t at = smp->ip;

	if (!(f & (VMPT_F_INSN | VMPT_F_INSNLEN | VMPT_F_DISASM)))
		return;
	if (smp->insn_len && s && smp->ip - s->vaddr < s->size &&
	    s->size - (smp->ip - s->vaddr) >= smp->insn_len && s->data)
		code = s->data + (smp->ip - s->vaddr);
	if (f & VMPT_F_INSNLEN)
		script_outf(c, " ilen: %u", code ? smp->insn_len : 0);
	if (!code)
		return;
	if (f & VMPT_F_INSN) {
		char *p;

		if (c->len > SCRIPT_OUT_CAP - 6 - 3 * 256)
			script_out_flush(c);
		p = c->buf + c->len;
		memcpy(p, " insn:", 6);
		p += 6;
		/* (an instruction is at most 15 bytes; its length a byte) */
		for (unsigned i = 0; i < smp->insn_len && i < 255; i++, p += 3) {
			p[0] = ' ';
			memcpy(p + 1, &hex_pairs[2 * code[i]], 2);
		}
		c->len = (size_t)(p - c->buf);
	}
	avail = smp->insn_len;
	if (((f & VMPT_F_DISASM) || c->o->disasm) &&
	    cs_disasm_iter(c->cs[smp->mode], &code, &avail, &at, c->insn[smp->mode]))
		script_outf(c, "\t\t%s %s", c->insn[smp->mode]->mnemonic,
			    c->insn[smp->mode]->op_str);
}

static void print_ipc(struct vmpt_consumer *c, unsigned f, const struct script_sample *smp)
{
	unsigned ipc;

	if (!(f & VMPT_F_IPC) || !smp->ipc_cyc || !smp->ipc_insns)
		return;
	ipc = (unsigned)(smp->ipc_insns * 100 / smp->ipc_cyc);	/* perf keeps 32 bits */
	script_outf(c, " \t IPC: %u.%02u (%" PRIu64 "/%" PRIu64 ") ", ipc / 100, ipc % 100,
		    smp->ipc_insns, smp->ipc_cyc);
}

/* perf_sample__fprintf_callindent: the call depth, then the function
 * called or returned from, in a column that keeps its width.
 */
static void print_callindent(struct vmpt_consumer *c, unsigned f,
			     const struct script_sample *smp, size_t depth)
{
	const char *name = NULL;
	const struct sym_seen *e;
	uint64_t ip = 0;
	int len = 0;

	if (smp->flags & PF_RETURN)
		depth++;	/* the return was popped: the call's depth */
	if (smp->flags & (PF_CALL | PF_TRACE_BEGIN)) {
		e = sym_at(c, smp->addr ? script_find(c, smp->addr, smp->addr_guest) : NULL,
			   smp->addr);
		if (e->sym)
			name = e->sym->name;
		else
			ip = smp->addr;
	} else if (smp->flags & (PF_RETURN | PF_TRACE_END)) {
		e = sym_at(c, smp->sec, smp->ip);
		if (e->sym)
			name = e->sym->name;
		else
			ip = smp->ip;
	}
	if ((f & VMPT_F_DSO) && !(f & (VMPT_F_IP | VMPT_F_ADDR))) {
		size_t dlen;
		const char *dso = script_dso_name(c, smp->sec, smp->ip, smp->guest, &dlen);

		script_out_char(c, '(');
		print_dso(c, dso, dlen);
		script_out_mem(c, ")\t", 2);
	}
	if (name) {
		out_spaces(c, (int)depth * 4);
		script_out_mem(c, name, strlen(name));
		len = (int)depth * 4 + (int)strlen(name);
	} else if (ip) {
		out_spaces(c, (int)depth * 4);
		out_hex16(c, ip);
		len = (int)depth * 4 + 16;
	}
	if (len > c->s->spacing || (len && len < c->s->spacing - 52))
		c->s->spacing = (len + 4 + 31) / 32 * 32;
	if (len < c->s->spacing)
		out_spaces(c, c->s->spacing - len);
}

/* A callchain frame's address as perf prints it: relative to its
 * mapping in user space (the vdso's too), as is in the kernel.
 */
static uint64_t frame_addr(const struct vmpt_consumer *c, const struct vmpt_section *sec,
			   uint64_t ip)
{
	if (!sec || (c->o->kernel_start && ip >= c->o->kernel_start) ||
	    (sec->name[0] == '[' && strcmp(sec->name, "[vdso]")))
		return ip;
	return sec->file_offset + (ip - sec->vaddr);
}

/* --inline: the frames of the functions inlined at a callchain's ip, as
 * perf's sample__fprintf_callchain prints inlined symbols (no dso, the
 * ip's srcline, " (inlined)"); 1 when the last one, the function they
 * are in, was printed too (its name is not its symbol's).
 */
static int print_inlined(struct vmpt_consumer *c, unsigned f, const struct vmpt_section *sec,
			 uint64_t ip)
{
	const struct vmpt_inline_frame *fr;
	const struct sym_seen *e = sym_at(c, sec, ip);
	size_t n = e->sym ? script_inlines(c, sec, ip, &fr) : 0;
	int last_too;

	if (!n)
		return 0;
	last_too = !fr[n - 1].func || strcmp(fr[n - 1].func, e->sym->name);
	for (size_t k = 0; k < n - !last_too; k++) {
		script_out_char(c, '\t');
		out_hex16(c, frame_addr(c, sec, ip));
		if (f & VMPT_F_SYM) {
			script_out_char(c, ' ');
			script_outf(c, "%s", fr[k].func ? fr[k].func : "??");
			if (f & VMPT_F_SYMOFF) {
				script_out_mem(c, "+0x", 3);
				out_hex(c, ip - e->from);
			}
		}
		if (f & VMPT_F_SRCLINE)
			print_srcline(c, sec, ip);
		script_out_mem(c, " (inlined)\n", 11);
	}
	return last_too;
}

void script_print_callchain(struct vmpt_consumer *c, unsigned f, const uint64_t *chain,
			    size_t n, int guest)
{
	for (size_t i = 0; i < n; i++) {
		const struct vmpt_section *sec;

		if (chain[i] >= SCRIPT_CONTEXT_USER)
			continue;	/* a context marker */
		sec = script_find(c, chain[i], guest);
		if (c->o->inline_frames && sec && print_inlined(c, f, sec, chain[i]))
			continue;
		script_out_char(c, '\t');
		out_hex16(c, frame_addr(c, sec, chain[i]));
		script_print_sym_dso(c, f & (VMPT_F_SYM | VMPT_F_SYMOFF | VMPT_F_DSO | VMPT_F_SRCLINE),
			      sec, chain[i], guest);
		script_out_char(c, '\n');
	}
}

static void print_brstack(struct vmpt_consumer *c, unsigned f,
			  const struct script_branch *br, size_t n, int guest)
{
	for (size_t i = 0; i < n; i++) {
		if (f & VMPT_F_BRSTACKSYM) {
			const struct vmpt_section *from = script_find(c, br[i].from, guest);
			const struct vmpt_section *to = script_find(c, br[i].to, guest);
			const struct sym_seen *e = sym_at(c, from, br[i].from);
			size_t len;
			const char *dso;

			if (e->sym)
				script_outf(c, "%s+0x%" PRIx64, e->sym->name, br[i].from - e->from);
			else
				script_out_mem(c, "[unknown]", 9);
			if (f & VMPT_F_DSO) {
				dso = script_dso_name(c, from, br[i].from, guest, &len);
				script_outf(c, "(%s)", dso);
			}
			script_out_char(c, '/');
			e = sym_at(c, to, br[i].to);
			if (e->sym)
				script_outf(c, "%s+0x%" PRIx64, e->sym->name, br[i].to - e->from);
			else
				script_out_mem(c, "[unknown]", 9);
			if (f & VMPT_F_DSO) {
				dso = script_dso_name(c, to, br[i].to, guest, &len);
				script_outf(c, "(%s)", dso);
			}
		} else {
			script_outf(c, " 0x%" PRIx64, br[i].from);
			if (f & VMPT_F_DSO) {
				size_t len;
				const char *dso = script_dso_name(c, script_find(c, br[i].from, guest),
							   br[i].from, guest, &len);

				script_outf(c, "(%s)", dso);
			}
			script_outf(c, "/0x%" PRIx64, br[i].to);
			if (f & VMPT_F_DSO) {
				size_t len;
				const char *dso = script_dso_name(c, script_find(c, br[i].to, guest),
							   br[i].to, guest, &len);

				script_outf(c, "(%s)", dso);
			}
		}
		script_outf(c, "/-/%c/%c/0/ ", br[i].in_tx ? 'X' : '-', br[i].abort ? 'A' : '-');
	}
}

struct script_extra {
	const uint64_t *chain;
	size_t nchain;
	const struct script_branch *br;
	size_t nbr;
	size_t depth;
};

static void print_sample_as(struct vmpt_consumer *c, const struct script_sample *in,
			    const struct script_extra *x);

/* A sample of guest code, or of a branch into it (the VM entry), is the
 * guest task's with the guest's sideband, as perf's intel_pt_prep_a_sample
 * gives it (from_ip in the guest, or to_ip): its pid/tid, and its comm
 * where the sample's machine is the guest (perf's cpumode: of ip, of addr
 * when ip is 0; a host instruction's machine is the host, which has no
 * such thread).
 */
static void print_sample(struct vmpt_consumer *c, const struct script_sample *in,
			 const struct script_extra *x)
{
	const struct vmpt_task saved = c->task;

	if (c->task.machine_pid > 0 &&
	    ((in->ip && in->guest) || (in->addr && in->addr_guest))) {
		c->task.pid = c->task.guest_pid;
		c->task.tid = c->task.guest_tid;
		c->task.comm = (in->ip ? in->guest : in->addr_guest) ? c->task.guest_comm : NULL;
		c->task.vcpu |= GUEST_SAMPLE;
		print_sample_as(c, in, x);
		c->task = saved;
		return;
	}
	print_sample_as(c, in, x);
}

static void print_sample_as(struct vmpt_consumer *c, const struct script_sample *in,
			    const struct script_extra *x)
{
	const struct vmpt_script_opts *o = c->o;
	int type = in->ev <= VMPT_SE_TRANSACTIONS ? VMPT_OUT_HW : VMPT_OUT_SYNTH;
	unsigned f = o->f.set[type];
	int bts = in->ev == VMPT_SE_BRANCHES;
	int callchain = x && x->nchain && (f & VMPT_F_IP);
	/* A copy only where the sample needs more than it has. */
	struct script_sample copy;
	const struct script_sample *smp = in;
	const struct vmpt_section *sec = in->sec;

	if (!f)
		return;		/* perf shows nothing of a type without fields */
	if (!sec && in->ip) {
		copy = *in;
		smp = &copy;
		sec = copy.sec = script_find(c, copy.ip, copy.guest);
	}
	/* perf shows the instruction an asynchronous event struck (it did
	 * not run).
	 */
	if ((in->flags & PF_ASYNC) && !in->insn_len && sec && sec->data &&
	    (f & (VMPT_F_INSN | VMPT_F_INSNLEN | VMPT_F_DISASM))) {
		const uint8_t *code = sec->data + (in->ip - sec->vaddr);
		size_t avail = sec->size - (in->ip - sec->vaddr);
		uint64_t at = in->ip;

		if (smp != &copy) {
			copy = *in;
			smp = &copy;
		}
		if (avail > 16)
			avail = 16;
		if (cs_disasm_iter(c->cs[copy.mode], &code, &avail, &at, c->insn[copy.mode]))
			copy.insn_len = c->insn[copy.mode]->size;
	}
	if (f & (VMPT_F_COMM | VMPT_F_PID | VMPT_F_TID | VMPT_F_CPU | VMPT_F_TIME))
		script_print_start(c, f, smp->time, smp->guest, callchain);
	if (f & VMPT_F_PERIOD) {
		script_out_u64(c, smp->period, 10, 0);
		script_out_char(c, ' ');
	}
	if (f & VMPT_F_EVENT)
		script_print_event(c, o->ev_name[smp->ev]);
	if (o->f.flags) {
		/* the name of the last flags: a line's are mostly the last's */
		if (!c->flags_len || c->flags_of != smp->flags) {
			script_flags_name(smp->flags, c->flags_name, sizeof(c->flags_name));
			c->flags_len = strlen(c->flags_name);
			c->flags_of = smp->flags;
		}
		out_small(c, "  ", 2);
		script_out_padded(c, c->flags_name, c->flags_len, 21, SCRIPT_LEFT);
		script_out_char(c, ' ');
	}
	if (bts) {
		if (f & VMPT_F_CALLINDENT)
			print_callindent(c, f, smp, x ? x->depth : 0);
		if (f & VMPT_F_IP) {
			script_out_char(c, ' ');
			out_hex16(c, smp->ip);
			script_print_sym_dso(c, f & ~VMPT_F_SRCLINE, smp->ip ? sec : NULL, smp->ip,
				      smp->guest);
		}
		if ((f & VMPT_F_ADDR) || !o->f.user_set[VMPT_OUT_HW]) {
			out_small(c, " => ", 4);
			out_hex16(c, smp->addr);
			if (f & (VMPT_F_SYM | VMPT_F_DSO))
				script_print_sym_dso(c, f & ~VMPT_F_SRCLINE, smp->addr ?
					      script_find(c, smp->addr, smp->addr_guest) : NULL,
					      smp->addr, smp->addr_guest);
		}
		print_ipc(c, f, smp);
		/* perf_sample__fprintf_bts: the srcline after the target. */
		if (f & VMPT_F_SRCLINE)
			print_srcline(c, smp->ip ? sec : NULL, smp->ip);
		if (f & (VMPT_F_INSN | VMPT_F_INSNLEN | VMPT_F_DISASM))
			print_insn(c, f, smp);
		script_out_char(c, '\n');
		return;
	}
	if (type == VMPT_OUT_SYNTH && (f & VMPT_F_SYNTH)) {
		script_out_mem(c, smp->synth, (size_t)smp->synth_len);
		if (smp->synth_len < 34)
			out_spaces(c, 34 - smp->synth_len);
	}
	if (f & VMPT_F_ADDR)
		out_hex16(c, smp->addr);
	if (f & VMPT_F_IP) {
		if (callchain) {
			script_out_char(c, '\n');
			script_print_callchain(c, f, x->chain, x->nchain, smp->guest);
		} else {
			script_out_char(c, ' ');
			out_hex16(c, smp->ip);
			script_print_sym_dso(c, f, smp->ip ? sec : NULL, smp->ip, smp->guest);
		}
	}
	if (x && x->nbr && (f & (VMPT_F_BRSTACK | VMPT_F_BRSTACKSYM)))
		print_brstack(c, f, x->br, x->nbr, smp->guest);
	print_insn(c, f, smp);
	print_ipc(c, f, smp);
	script_out_char(c, '\n');
}

/* "%*s: ": the event's name in the names' column. */
void script_print_event(struct vmpt_consumer *c, const char *name)
{
	if (!name)
		name = "";
	script_out_padded(c, name, strlen(name), c->o->name_width, 0);
	out_small(c, ": ", 2);
}

void script_print_sample(struct vmpt_consumer *c, const struct script_sample *smp)
{
	print_sample(c, smp, NULL);
}

void script_print_sample_x(struct vmpt_consumer *c, const struct script_sample *smp,
			   const uint64_t *chain, size_t nchain,
			   const struct script_branch *br, size_t nbr, size_t depth)
{
	struct script_extra x = { chain, nchain, br, nbr, depth };

	print_sample(c, smp, &x);
}
