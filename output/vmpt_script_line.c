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
		script_out_small(c, ": ", 2);
		return;
	}
	/* Lines in a row mostly share their time: its text is kept (not
	 * the difference to the line before).
	 */
	if (c->time_len && c->time_tsc == tsc && !o->deltatime) {
		script_out_small(c, c->time_text, c->time_len);
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
	uint64_t sec, usec;
	struct vmpt_script *s = c->s;

	/* as perf: the first time seen is 0 for both (unsigned differences) */
	if (c->o->reltime) {
		if (!s->time_first)
			s->time_first = ns;
		ns -= s->time_first;
	} else if (c->o->deltatime) {
		uint64_t t = s->time_prev ? ns - s->time_prev : 0;

		s->time_prev = ns;
		ns = t;
	}
	sec = ns / 1000000000;
	usec = ns % 1000000000 / 1000;
	if (c->o->ns) {
		/* "%5lu.%09lu: " */
		p -= script_dec_digits(p, ns % 1000000000 + 1000000000) - 1;
		*--p = '.';
		p -= script_dec_digits(p, sec);
		while (end - p < 15)	/* the seconds' width: 5 */
			*--p = ' ';
		script_out_mem(c, p, (size_t)(end - p));
		script_out_small(c, ": ", 2);
		return;
	}
	/* "%12s: " of "%lu.%06lu" */
	p -= script_dec_digits(p, usec + 1000000) - 1;	/* its leading zeros */
	*--p = '.';
	p -= script_dec_digits(p, sec);
	script_out_padded(c, p, (size_t)(end - p), 12, 0);
	script_out_small(c, ": ", 2);
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

/* perf's misc column: the record's cpumode and kind bits as letters,
 * each tested as (misc & bit) == bit (so hypervisor mode, 3, is "KUH"),
 * in 6 columns.
 */
static void print_misc(struct vmpt_consumer *c, const struct vmpt_perf_event *rec)
{
	static const struct { unsigned bits; char ch; } modes[] = {
		{ PERF_RECORD_MISC_KERNEL, 'K' }, { PERF_RECORD_MISC_USER, 'U' },
		{ PERF_RECORD_MISC_HYPERVISOR, 'H' }, { PERF_RECORD_MISC_GUEST_KERNEL, 'G' },
		{ PERF_RECORD_MISC_GUEST_USER, 'g' },
	};
	unsigned misc = rec ? rec->misc : 0;
	char text[8];
	size_t n = 0;

#define HAS(bit) ((misc & (bit)) == (bit))
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (HAS(modes[i].bits))
			text[n++] = modes[i].ch;
	switch (rec ? rec->type : PERF_RECORD_SAMPLE) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		if (HAS(PERF_RECORD_MISC_MMAP_DATA))
			text[n++] = 'M';
		break;
	case PERF_RECORD_COMM:
		if (HAS(PERF_RECORD_MISC_COMM_EXEC))
			text[n++] = 'E';
		break;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (HAS(PERF_RECORD_MISC_SWITCH_OUT)) {
			text[n++] = 'S';
			if (misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT)
				text[n++] = 'p';
		}
		break;
	default:
		break;
	}
#undef HAS
	script_out_small(c, text, n);
	/* perf's "%*s" of " " in 6 - n */
	script_out_spaces(c, n < 6 ? 6 - (int)n : 1);
}

/* perf_sample__fprintf_start: the columns before the event. */
void script_print_start(struct vmpt_consumer *c, uint64_t f, uint64_t time,
			int guest, int callchain, const struct vmpt_perf_event *rec)
{
	const struct vmpt_task *t = &c->task;
	int gtask = t->machine_pid > 0 && (t->vcpu & GUEST_SAMPLE);
	unsigned cols = f & (VMPT_F_COMM | VMPT_F_PID | VMPT_F_TID | VMPT_F_CPU);
	/* A host task's columns are kept as text while they stay. */
	int host = !guest && t->machine_pid <= 0;
	size_t start = 0;

	if (host && task_cols_kept(c, cols, callchain)) {
		script_out_small(c, c->task_cols.text, c->task_cols.len);
		if (f & VMPT_F_MISC)
			print_misc(c, rec);
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
		script_out_small(c, "VM:", 3);
		script_out_int(c, t->machine_pid, 5, 0);
		script_out_char(c, ' ');
	}
	if ((f & VMPT_F_VCPU) && gtask) {
		script_out_small(c, "VCPU:", 5);
		script_out_int(c, t->vcpu & ~GUEST_SAMPLE, 3, SCRIPT_ZERO);
		script_out_char(c, ' ');
	}
	if ((f & VMPT_F_VMCS) && guest && c->vmcs) {
		script_out_small(c, "VMCS:0x", 7);
		script_out_hex(c, c->vmcs);
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
		script_out_small(c, "] ", 2);
	}
	if (host)
		keep_task_cols(c, cols, callchain, start);
	if (f & VMPT_F_MISC)
		print_misc(c, rec);
	if (f & VMPT_F_TIME)
		print_time(c, time);
}

/* perf's "insn: 41 57", then the disassembly (--insn-trace=disasm). */
static void print_insn(struct vmpt_consumer *c, uint64_t f, const struct script_sample *smp)
{
	const struct vmpt_section *s = smp->code_sec ? smp->code_sec : smp->sec;
	const uint8_t *code = NULL;
	size_t avail;
	uint64_t at = smp->code_sec ? smp->code_ip : smp->ip;

	if (!(f & (VMPT_F_INSN | VMPT_F_INSNLEN | VMPT_F_DISASM)))
		return;
	if (smp->insn_len && s && at - s->vaddr < s->size &&
	    s->size - (at - s->vaddr) >= smp->insn_len && s->data)
		code = s->data + (at - s->vaddr);
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
			memcpy(p + 1, &script_hex_pairs[2 * code[i]], 2);
		}
		c->len = (size_t)(p - c->buf);
	}
	avail = smp->insn_len;
	if (((f & VMPT_F_DISASM) || c->o->disasm) &&
	    cs_disasm_iter(c->cs[smp->mode], &code, &avail, &at, c->insn[smp->mode]))
		script_outf(c, "\t\t%s %s", c->insn[smp->mode]->mnemonic,
			    c->insn[smp->mode]->op_str);
}

static void print_ipc(struct vmpt_consumer *c, uint64_t f, const struct script_sample *smp)
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
static void print_callindent(struct vmpt_consumer *c, uint64_t f,
			     const struct script_sample *smp, size_t depth)
{
	const char *name = NULL;
	const struct sym_seen *e;
	uint64_t ip = 0;
	int len = 0;

	/* the return was popped: the call's depth (a guest sample's thread
	 * has no stack to pop)
	 */
	if ((smp->flags & PF_RETURN) && !smp->guest)
		depth++;
	if (smp->flags & (PF_CALL | PF_TRACE_BEGIN)) {
		e = script_sym_or_none(c, smp->addr ? script_find(c, smp->addr, smp->addr_guest) : NULL,
			   smp->addr);
		if (e->sym)
			name = e->sym->name;
		else
			ip = smp->addr;
	} else if (smp->flags & (PF_RETURN | PF_TRACE_END)) {
		e = script_sym_or_none(c, smp->sec, smp->ip);
		if (e->sym)
			name = e->sym->name;
		else
			ip = smp->ip;
	}
	if ((f & VMPT_F_DSO) && !(f & (VMPT_F_IP | VMPT_F_ADDR))) {
		size_t dlen;
		const char *dso = script_dso_name(c, smp->sec, smp->ip, smp->guest, &dlen);

		script_out_char(c, '(');
		script_print_dso(c, dso, dlen);
		script_out_mem(c, ")\t", 2);
	}
	if (name) {
		script_out_spaces(c, (int)depth * 4);
		script_out_mem(c, name, strlen(name));
		len = (int)depth * 4 + (int)strlen(name);
	} else if (ip) {
		script_out_spaces(c, (int)depth * 4);
		script_out_hex16(c, ip);
		len = (int)depth * 4 + 16;
	}
	if (len > c->s->spacing || (len && len < c->s->spacing - 52))
		c->s->spacing = (len + 4 + 31) / 32 * 32;
	if (len < c->s->spacing)
		script_out_spaces(c, c->s->spacing - len);
}

static void print_brstack(struct vmpt_consumer *c, uint64_t f,
			  const struct script_branch *br, size_t n, int guest)
{
	for (size_t i = 0; i < n; i++) {
		if (f & VMPT_F_BRSTACKSYM) {
			const struct vmpt_section *from = script_find(c, br[i].from, guest);
			const struct vmpt_section *to = script_find(c, br[i].to, guest);
			const struct sym_seen *e = script_sym_or_none(c, from, br[i].from);
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
			e = script_sym_or_none(c, to, br[i].to);
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
	uint64_t f = o->f.set[type];
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
	if (f & (VMPT_F_COMM | VMPT_F_PID | VMPT_F_TID | VMPT_F_CPU | VMPT_F_MISC | VMPT_F_TIME))
		script_print_start(c, f, smp->time, smp->guest, callchain, NULL);
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
		script_out_small(c, "  ", 2);
		script_out_padded(c, c->flags_name, c->flags_len, 21, SCRIPT_LEFT);
		script_out_char(c, ' ');
	}
	if (bts) {
		if (f & VMPT_F_CALLINDENT)
			print_callindent(c, f, smp, x ? x->depth : 0);
		if (f & VMPT_F_IP) {
			script_out_char(c, ' ');
			script_out_hex16(c, smp->ip);
			script_print_sym_dso(c, f & ~VMPT_F_SRCLINE, smp->ip ? sec : NULL, smp->ip,
				      smp->guest);
		}
		if ((f & VMPT_F_ADDR) || !o->f.user_set[VMPT_OUT_HW]) {
			script_out_small(c, " => ", 4);
			script_out_hex16(c, smp->addr);
			if (f & (VMPT_F_SYM | VMPT_F_DSO))
				script_print_sym_dso(c, f & ~VMPT_F_SRCLINE, smp->addr ?
					      script_find(c, smp->addr, smp->addr_guest) : NULL,
					      smp->addr, smp->addr_guest);
		}
		print_ipc(c, f, smp);
		/* perf_sample__fprintf_bts: the srcline after the target. */
		if (f & VMPT_F_SRCLINE)
			script_print_srcline(c, smp->ip ? sec : NULL, smp->ip, smp->guest);
		if (f & (VMPT_F_INSN | VMPT_F_INSNLEN | VMPT_F_DISASM))
			print_insn(c, f, smp);
		script_out_char(c, '\n');
		if (f & VMPT_F_SRCCODE)
			script_print_srccode(c, smp->ip ? sec : NULL, smp->ip, smp->guest);
		return;
	}
	if (type == VMPT_OUT_SYNTH && (f & VMPT_F_SYNTH)) {
		script_out_mem(c, smp->synth, (size_t)smp->synth_len);
		if (smp->synth_len < 34)
			script_out_spaces(c, 34 - smp->synth_len);
	}
	if (f & VMPT_F_ADDR)
		script_out_hex16(c, smp->addr);
	script_print_mem_access(c, f, NULL);
	if (f & VMPT_F_IP) {
		if (callchain) {
			unsigned mode = PERF_RECORD_MISC_USER;

			script_out_char(c, '\n');
			script_print_callchain(c, f, x->chain, x->nchain, smp->guest, &mode);
		} else {
			script_out_char(c, ' ');
			script_out_hex16(c, smp->ip);
			script_print_sym_dso(c, f, smp->ip ? sec : NULL, smp->ip, smp->guest);
		}
	}
	if (x && x->nbr && (f & (VMPT_F_BRSTACK | VMPT_F_BRSTACKSYM)))
		print_brstack(c, f, x->br, x->nbr, smp->guest);
	print_insn(c, f, smp);
	script_print_mem_pages(c, f, NULL);
	print_ipc(c, f, smp);
	script_out_char(c, '\n');
	if (f & VMPT_F_SRCCODE)
		script_print_srccode(c, smp->ip ? sec : NULL, smp->ip, smp->guest);
}

/* "%*s: ": the event's name in the names' column. */
void script_print_event(struct vmpt_consumer *c, const char *name)
{
	size_t start = c->len, n;

	if (!name)
		name = "";
	/* the same event as the line before: its column's text again */
	if (c->ev_len && c->ev_of == name) {
		script_out_small(c, c->ev_text, c->ev_len);
		return;
	}
	script_out_padded(c, name, strlen(name), c->o->name_width, 0);
	script_out_small(c, ": ", 2);
	n = c->len - start;
	c->ev_len = 0;
	if (c->len > start && n <= sizeof(c->ev_text)) {
		memcpy(c->ev_text, c->buf + start, n);
		c->ev_of = name;
		c->ev_len = (unsigned)n;
	}
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
