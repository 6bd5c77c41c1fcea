/* SPDX-License-Identifier: MIT */
/* perf script's sample lines when they hold no more than ip, addr, sym,
 * symoff and dso and nothing stands between a sample and its line (no
 * filter, thread stack, initial skip or sample_fn): the common
 * `-F ip` and `-F ip,addr,sym,dso` of every instruction or branch.  The
 * line is written straight into the stream's buffer, room for it made
 * once, a symbol's " name (dso)" kept as text with the symbol looked up
 * last (vmpt_script_line.c's sym_seen), no struct script_sample made.
 * The same bytes as vmpt_script_line.c's general path.
 */
#include "vmpt_script_int.h"

#include <string.h>

#define FAST_FIELDS (VMPT_F_IP | VMPT_F_ADDR | VMPT_F_SYM | VMPT_F_SYMOFF | VMPT_F_DSO)

int script_fast_ok(const struct vmpt_script *s)
{
	const struct vmpt_script_opts *o = s->o;
	const struct vmpt_script_filter *fl = &o->filter;
	uint64_t f = o->f.set[VMPT_OUT_HW];

	return !o->sample_fn && !s->use_stacks && !o->it.initial_skip && !o->f.flags &&
	       f && !(f & ~FAST_FIELDS) && !fl->ncpus && !fl->npids && !fl->ntids &&
	       !fl->ncomms && !fl->ndsos && !fl->nsyms && !fl->ntimes;
}

/* Room for a line in the buffer. */
static char *line_start(struct vmpt_consumer *c)
{
	if (c->len > SCRIPT_OUT_CAP - FAST_LINE_MAX)
		script_out_flush(c);
	return c->buf + c->len;
}

/* The line written up to p: its length. */
static int finish(struct vmpt_consumer *c, char *p)
{
	size_t start = c->len;

	c->len = (size_t)(p - c->buf);
	return (int)(c->len - start);
}

/* -F ip's line, " %16lx\n". */
static inline void ip_line(struct vmpt_consumer *c, uint64_t ip)
{
	char *p;

	if (c->len > SCRIPT_OUT_CAP - 32)
		script_out_flush(c);
	p = c->buf + c->len;
	p[0] = ' ';
	script_hex16_at(p + 1, ip);
	p[17] = '\n';
	c->len += 18;
}

/* e's text for fields f (sym, dso), made once: 0, or -1 when too long. */
static int sym_text(struct vmpt_consumer *c, struct sym_seen *e, uint64_t f,
		    int guest)
{
	size_t n = 0, len, pad = c->o->pad_dso;
	const char *name;

	if (e->text_f == f && e->text_guest == guest && e->text_mpid == c->task.machine_pid)
		return 0;
	e->text_f = 0;
	if (f & VMPT_F_SYM) {
		name = e->sym ? e->sym->name : "[unknown]";
		len = e->sym ? e->name_len : 9;
		if (len + 1 > SYM_TEXT_MAX)
			return -1;
		e->text[0] = ' ';
		memcpy(e->text + 1, name, len);
		n = len + 1;
	}
	e->name_part = (unsigned)n;
	if (f & VMPT_F_DSO) {
		name = script_dso_name(c, e->sec, 0, guest, &len);
		/* perf's scnprintf_pad, as print_dso. */
		if (pad && len >= pad)
			len = pad - 1;
		if (n + len + 3 + (pad ? pad - len : 0) > SYM_TEXT_MAX)
			return -1;
		memcpy(e->text + n, " (", 2);
		memcpy(e->text + n + 2, name, len);
		n += 2 + len;
		if (pad) {
			memset(e->text + n, ' ', pad - len);
			n += pad - len;
		}
		e->text[n++] = ')';
	}
	e->text_len = (unsigned)n;
	e->text_f = f;
	e->text_guest = guest;
	e->text_mpid = c->task.machine_pid;
	return 0;
}

/* n bytes of a symbol's text (of len in all) to p, which has room for
 * FAST_LINE_MAX: a short text as 64 bytes of fixed moves, not a call
 * (the bytes after it are written over next; the text holds 64).
 */
_Static_assert(SYM_TEXT_MAX >= 128, "copy_text reads 64 bytes from a text's middle");

static inline void copy_text(char *p, const char *text, size_t n, size_t len)
{
	if (len <= 64) {
		memcpy(p, text, 32);
		if (n > 32)
			memcpy(p + 32, text + 32, 32);
		return;
	}
	memcpy(p, text, n);
}

/* " sym+off (dso)" of ip in sec at p (fields f): the end, NULL when the
 * general path must print it (no section: the mapping names the dso).
 * p has room for FAST_LINE_MAX.
 */
char *script_sym_dso_at(struct vmpt_consumer *c, char *p, uint64_t f,
			const struct vmpt_section *sec, uint64_t ip, int guest)
{
	struct sym_seen *e;

	if (!(f & (VMPT_F_SYM | VMPT_F_DSO)))
		return p;
	if (!sec)
		return NULL;
	e = script_sym_at(c, sec, ip);
	if (sym_text(c, e, f & (VMPT_F_SYM | VMPT_F_DSO), guest) < 0)
		return NULL;
	if ((f & VMPT_F_SYMOFF) && (f & VMPT_F_SYM) && e->sym) {
		uint64_t off = ip - e->from;
		unsigned k = off ? (unsigned)(67 - __builtin_clzll(off)) / 4 : 1;

		copy_text(p, e->text, e->name_part, e->text_len);
		p += e->name_part;
		memcpy(p, "+0x", 3);
		p += 3 + k;
		for (char *d = p; k--; off >>= 4)
			*--d = "0123456789abcdef"[off & 15];
		copy_text(p, e->text + e->name_part, e->text_len - e->name_part, e->text_len);
		return p + e->text_len - e->name_part;
	}
	copy_text(p, e->text, e->text_len, e->text_len);
	return p + e->text_len;
}

int script_fast_insn(struct vmpt_consumer *c, const struct vmpt_section *sec, uint64_t ip,
		     uint64_t addr, int guest)
{
	uint64_t f = c->o->f.set[VMPT_OUT_HW];
	char *p;

	if (f == VMPT_F_IP) {	/* the common case first */
		ip_line(c, ip);
		return 18;
	}
	p = line_start(c);
	if (f & VMPT_F_ADDR) {
		script_hex16_at(p, addr);
		p += 16;
	}
	if (f & VMPT_F_IP) {
		*p++ = ' ';
		script_hex16_at(p, ip);
		p += 16;
		if (f & (VMPT_F_SYM | VMPT_F_DSO)) {
			if (!sec && ip)
				sec = script_find(c, ip, guest);
			if (!(p = script_sym_dso_at(c, p, f, ip ? sec : NULL, ip, guest)))
				return -1;
		}
	}
	*p++ = '\n';
	return finish(c, p);
}

uint32_t script_fast_run(struct vmpt_consumer *c, const struct vmpt_section *sec,
			 const uint8_t *isize, uint64_t *ip, uint32_t n, int guest)
{
	uint64_t at = *ip;
	uint32_t i = 0;

	if (c->o->f.set[VMPT_OUT_HW] == VMPT_F_IP) {
		/* -F ip: " %16lx\n" each. */
		for (; i < n; at += isize[i], i++)
			ip_line(c, at);
	} else {
		for (; i < n && script_fast_insn(c, sec, at, 0, guest) >= 0; at += isize[i], i++)
			;
	}
	*ip = at;
	return i;
}

int script_fast_branch(struct vmpt_consumer *c, const struct vmpt_section *sec,
		       uint64_t from, int from_guest, uint64_t to, int to_guest)
{
	const struct vmpt_script_opts *o = c->o;
	uint64_t f = o->f.set[VMPT_OUT_HW];
	char *p = line_start(c);

	if (f & VMPT_F_IP) {
		*p++ = ' ';
		script_hex16_at(p, from);
		p += 16;
		if (f & (VMPT_F_SYM | VMPT_F_DSO)) {
			if (!sec && from)
				sec = script_find(c, from, from_guest);
			if (!(p = script_sym_dso_at(c, p, f, from ? sec : NULL, from, from_guest)))
				return -1;
		}
	}
	/* perf shows the target unless -F named the fields without it. */
	if ((f & VMPT_F_ADDR) || !o->f.user_set[VMPT_OUT_HW]) {
		memcpy(p, " => ", 4);
		script_hex16_at(p + 4, to);
		p += 20;
		if ((f & (VMPT_F_SYM | VMPT_F_DSO)) &&
		    !(p = script_sym_dso_at(c, p, f, to ? script_find(c, to, to_guest) : NULL, to,
				     to_guest)))
			return -1;
	}
	*p++ = '\n';
	return finish(c, p);
}

void script_fast_held(struct vmpt_consumer *c)
{
	char *p = line_start(c);

	memcpy(p, c->held.text, c->held.text_len);
	c->len += c->held.text_len;
	c->stats.synthesized++;
}
