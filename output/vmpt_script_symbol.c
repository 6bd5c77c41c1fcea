/* SPDX-License-Identifier: MIT */
/* An address as perf script names it: " sym+off (dso)" and its source
 * line (sample__fprintf_sym), a callchain's frames with the functions
 * inlined there (sample__fprintf_callchain).  The symbols come from the
 * code in the image (vmpt_script_syms.c keeps those met), a kernel with
 * no code from this machine's kallsyms, the dso from the code or else
 * the recorded mapping.
 */
#include "vmpt_script_int.h"

#include <stdio.h>
#include <string.h>

/* The symbol at ip in sec (sym NULL: none there, or no sec). */
const struct sym_seen *script_sym_or_none(struct vmpt_consumer *c,
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
		 c->o->map_of(c->o->map_ctx, c->task.pid, c->task.space, addr, &map) == 0) {
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
void script_print_dso(struct vmpt_consumer *c, const char *name, size_t len)
{
	size_t pad = c->o->pad_dso;

	if (pad && len >= pad)
		len = pad - 1;
	script_out_mem(c, name, len);
	if (pad)
		script_out_spaces(c, (int)(pad - len));
}

/* A source line on a line of its own. */
static void put_srcline(struct vmpt_consumer *c, const char *text, size_t n)
{
	script_out_mem(c, "\n  ", 3);
	script_out_mem(c, text, n);
}

/* map__fprintf_srcline. */
void script_print_srcline(struct vmpt_consumer *c, const struct vmpt_section *sec,
			  uint64_t ip, int guest)
{
	char buf[4200];
	size_t n = script_srcline(c, sec, ip, guest, buf, sizeof(buf));

	if (n)
		put_srcline(c, buf, n);
}

/* " sym+off (dso)" as sample__fprintf_sym prints it, by the fields, then
 * the srcline.
 */
void script_print_sym_dso(struct vmpt_consumer *c, uint64_t f,
			  const struct vmpt_section *sec, uint64_t ip, int guest)
{
	const struct sym_seen *e;

	if (f & VMPT_F_SRCLINE) {
		script_print_sym_dso(c, f & ~VMPT_F_SRCLINE, sec, ip, guest);
		script_print_srcline(c, sec, ip, guest);
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
	e = script_sym_or_none(c, sec, ip);
	if (f & VMPT_F_SYM) {
		const char *name = e->sym ? e->sym->name : NULL;
		uint64_t from = e->from;	/* the symbol's address */

		/* No kernel code: this machine's kallsyms may name it. */
		if (!sec && !guest && ip && c->o->kernel_sym &&
		    c->o->kernel_sym(c->o->map_ctx, ip, &name, &from) < 0)
			name = NULL;
		script_out_char(c, ' ');
		if (name)
			script_out_mem(c, name, e->sym && name == e->sym->name ? e->name_len :
				       strlen(name));
		else
			script_out_mem(c, "[unknown]", 9);
		if ((f & VMPT_F_SYMOFF) && name) {
			script_out_mem(c, "+0x", 3);
			script_out_hex(c, ip - from);
		}
	}
	if (f & VMPT_F_DSO) {
		size_t len;
		const char *name = script_dso_name(c, sec, ip, guest, &len);

		script_out_mem(c, " (", 2);
		script_print_dso(c, name, len);
		script_out_char(c, ')');
	}
}

/* A callchain frame's address as perf prints it: relative to its
 * mapping in user space (the vdso's too; a binary missing here, by its
 * recorded mapping), as is in the kernel.
 */
static uint64_t frame_addr(const struct vmpt_consumer *c, const struct vmpt_section *sec,
			   uint64_t ip)
{
	struct vmpt_map_ref map;

	if (c->o->kernel_start && ip >= c->o->kernel_start)
		return ip;
	if (!sec) {
		/* Memory of no file (a JIT's) is addressed as is (perf's
		 * identity map_ip).
		 */
		if (!c->o->map_of ||
		    c->o->map_of(c->o->map_ctx, c->task.pid, c->task.space, ip, &map) < 0 ||
		    map.no_file || (map.name[0] == '[' && strcmp(map.name, "[vdso]")))
			return ip;
		return map.pgoff + (ip - map.start);
	}
	if (sec->name[0] == '[' && strcmp(sec->name, "[vdso]"))
		return ip;
	return sec->file_offset + (ip - sec->vaddr);
}

/* The source line perf keeps with a frame it unwound: addr2line's
 * record, printed as it is ("??:0" too).
 */
struct kept_line {
	int have;
	char text[4200];
};

static void keep_record(struct kept_line *kl, const struct vmpt_inline_frame *fr)
{
	kl->have = snprintf(kl->text, sizeof(kl->text), "%s:%u", fr->file ? fr->file : "??",
			    fr->line) > 0;
}

/* The frames of addr2line's records at a callchain's ip, as perf's
 * sample__fprintf_callchain prints them: a function of another name than
 * the ip's symbol as an inlined symbol (no dso, " (inlined)"), one of its
 * name as the symbol.  0: the last record is left to the caller (a
 * frame of the symbol).  kl (a frame unwound): the srclines are the
 * records', the last one's kept in kl.
 */
static int print_inlined(struct vmpt_consumer *c, uint64_t f, const struct vmpt_section *sec,
			 uint64_t ip, int guest, struct kept_line *kl)
{
	const struct vmpt_inline_frame *fr;
	const struct sym_seen *e = script_sym_or_none(c, sec, ip);
	size_t n = e->sym ? script_inlines(c, sec, ip, &fr) : 0;

	for (size_t k = 0; k < n; k++) {
		int same = fr[k].func && !strcmp(fr[k].func, e->sym->name);

		if (kl)
			keep_record(kl, &fr[k]);
		if (same && k == n - 1)
			return 0;
		script_out_char(c, '\t');
		script_out_hex16(c, frame_addr(c, sec, ip));
		if (same) {
			script_print_sym_dso(c, f & (VMPT_F_SYM | VMPT_F_SYMOFF | VMPT_F_DSO), sec, ip,
					     guest);
		} else if (f & VMPT_F_SYM) {
			script_out_char(c, ' ');
			script_outf(c, "%s", fr[k].func ? fr[k].func : "??");
			if (f & VMPT_F_SYMOFF) {
				script_out_mem(c, "+0x", 3);
				script_out_hex(c, ip - e->from);
			}
		}
		if ((f & VMPT_F_SRCLINE) && kl)
			put_srcline(c, kl->text, strlen(kl->text));
		else if (f & VMPT_F_SRCLINE)
			script_print_srcline(c, sec, ip, guest);
		if (!same)
			script_out_mem(c, " (inlined)", 10);
		script_out_char(c, '\n');
	}
	/* No DWARF there: addr2line's answer from the symbols. */
	if (!n && kl && e->sym)
		kl->have = script_srcline_record(c, sec, ip, kl->text, sizeof(kl->text)) > 0;
	return n > 0;
}

int script_chain_mode(uint64_t marker, unsigned *cpumode)
{
	switch (marker) {
	case SCRIPT_CONTEXT_HV:
		*cpumode = PERF_RECORD_MISC_HYPERVISOR;
		return 1;
	case SCRIPT_CONTEXT_KERNEL:
		*cpumode = PERF_RECORD_MISC_KERNEL;
		return 1;
	case SCRIPT_CONTEXT_USER:
		*cpumode = PERF_RECORD_MISC_USER;
		return 1;
	}
	return 0;
}

int script_unmapped_in_mode(struct vmpt_consumer *c, uint64_t addr, unsigned cpumode,
			    const struct vmpt_section **sec)
{
	*sec = NULL;
	if (cpumode != PERF_RECORD_MISC_KERNEL && cpumode != PERF_RECORD_MISC_USER)
		return 1;
	*sec = script_find(c, addr, 0);
	if (cpumode == PERF_RECORD_MISC_KERNEL)
		return *sec ? (*sec)->asid.cr3 != VMPT_ASID_ANY :
		       c->o->kernel_start && addr < c->o->kernel_start;
	return c->o->kernel_start && addr >= c->o->kernel_start &&
	       (!*sec || (*sec)->asid.cr3 == VMPT_ASID_ANY);
}

void script_print_unmapped(struct vmpt_consumer *c, uint64_t f)
{
	if (f & VMPT_F_SYM)
		script_out_mem(c, " [unknown]", 10);
	if (f & VMPT_F_DSO)
		script_out_mem(c, " ([unknown])", 12);
}

/* One callchain line (and the inlined functions' before it, with inlines;
 * unwound: perf's frame of a stack it unwound).
 */
static void print_frame(struct vmpt_consumer *c, uint64_t f, uint64_t ip, int guest,
			unsigned cpumode, int inlines, int unwound)
{
	struct kept_line kl;
	const struct vmpt_section *sec;

	kl.have = 0;

	if (guest)
		sec = script_find(c, ip, guest);
	else if (script_unmapped_in_mode(c, ip, cpumode, &sec)) {
		script_out_char(c, '\t');
		script_out_hex16(c, ip);
		script_print_unmapped(c, f);
		script_out_char(c, '\n');
		return;
	}
	if (inlines && sec && print_inlined(c, f, sec, ip, guest, unwound ? &kl : NULL))
		return;
	script_out_char(c, '\t');
	script_out_hex16(c, frame_addr(c, sec, ip));
	script_print_sym_dso(c, f & (VMPT_F_SYM | VMPT_F_SYMOFF | VMPT_F_DSO |
				     (kl.have ? 0 : VMPT_F_SRCLINE)), sec, ip, guest);
	if ((f & VMPT_F_SRCLINE) && kl.have)
		put_srcline(c, kl.text, strlen(kl.text));
	script_out_char(c, '\n');
}

void script_print_callchain(struct vmpt_consumer *c, uint64_t f, const uint64_t *chain,
			    size_t n, int guest, unsigned *cpumode)
{
	for (size_t i = 0; i < n; i++) {
		if (chain[i] >= SCRIPT_CONTEXT_MAX)
			script_chain_mode(chain[i], cpumode);
		else
			print_frame(c, f, chain[i], guest, *cpumode, c->o->inline_frames, 0);
	}
}

void script_print_unwound(struct vmpt_consumer *c, uint64_t f, const uint64_t *ips, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ips[i])
			print_frame(c, f, ips[i], 0, PERF_RECORD_MISC_USER, !c->o->no_inline, 1);
}
