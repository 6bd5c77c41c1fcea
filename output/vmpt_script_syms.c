/* SPDX-License-Identifier: MIT */
/* The code and the symbols a stream has met, with their text.  A branch
 * line names two addresses, and on a random walk nearly every target is
 * another function, so a handful of recent answers is not enough:
 *  - the section at an address is kept by address and address space
 *    (the image is whole before decoding starts: the session adds every
 *    mapping when it opens);
 *  - the symbols are kept per symbol, with the text the fast lines copy,
 *    and found again from an address by a table of hints, each checked
 *    before it is believed.
 */
#include "vmpt_script_int.h"

#include <stdlib.h>
#include <string.h>

#define SYM_SLOTS 1024		/* symbols with their text */
#define HINT_SLOTS 4096		/* addresses -> the symbol last found there */
#define CODE_SLOTS 4096		/* addresses -> their section */

struct script_syms {
	struct code_seen {
		uint64_t vaddr;
		struct vmpt_asid space;
		const struct vmpt_section *sec;
		int used;
	} code[CODE_SLOTS];
	struct sym_seen *hint[HINT_SLOTS];
	struct sym_seen slot[SYM_SLOTS];
};

static size_t mix(uint64_t a, const struct vmpt_section *sec, unsigned bits)
{
	a ^= (uint64_t)(uintptr_t)sec >> 4;
	return (size_t)((a * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

static struct script_syms *syms_of(struct vmpt_consumer *c)
{
	return c->syms ? c->syms : (c->syms = calloc(1, sizeof(*c->syms)));
}

const struct vmpt_section *script_find(struct vmpt_consumer *c, uint64_t addr, int guest)
{
	struct vmpt_asid space = { VMPT_MACHINE_HOST, VMPT_ASID_ANY };
	struct script_syms *t;
	struct code_seen *e;

	if (!c->o->image)
		return NULL;
	if (guest) {
		space.machine = c->vmcs ? c->vmcs : VMPT_MACHINE_GUEST;
		if (c->task.guest_space)
			space.cr3 = c->task.guest_space;
	} else if (c->task.space)
		space.cr3 = c->task.space;
	if (!(t = syms_of(c)))
		return vmpt_image_find(c->o->image, &space, addr);
	e = &t->code[mix(addr ^ space.cr3 ^ space.machine, NULL, 12)];
	if (!e->used || e->vaddr != addr || e->space.cr3 != space.cr3 ||
	    e->space.machine != space.machine) {
		e->sec = vmpt_image_find(c->o->image, &space, addr);
		e->vaddr = addr;
		e->space = space;
		e->used = 1;
	}
	return e->sec;
}

static int covers(const struct sym_seen *e, const struct vmpt_section *sec, uint64_t ip)
{
	return e && e->sec == sec && ip - e->from < e->to - e->from;
}

static void fill(struct sym_seen *e, const struct vmpt_section *sec,
		 const struct vmpt_symbol *sym, uint64_t from, uint64_t to)
{
	e->sec = sec;
	e->sym = sym;
	e->from = from;
	e->to = to;
	e->text_f = 0;
	e->name_len = sym ? strlen(sym->name) : 0;
	e->dso_len = strlen(sec->name);
}

struct sym_seen *script_sym_find(struct vmpt_consumer *c, const struct vmpt_section *sec,
				 uint64_t ip)
{
	const struct vmpt_symbol *sym;
	struct script_syms *t;
	struct sym_seen **hint, *e = c->sym_prev;
	uint64_t from, to;

	if (!covers(e, sec, ip)) {
		if (!(t = syms_of(c))) {
			e = &c->seen_one;
			if (!covers(e, sec, ip)) {
				sym = vmpt_section_symbol_span(sec, ip, &from, &to);
				fill(e, sec, sym, from, to);
			}
			return e;
		}
		hint = &t->hint[mix(ip, sec, 12)];
		e = *hint;
		if (!covers(e, sec, ip)) {
			sym = vmpt_section_symbol_span(sec, ip, &from, &to);
			e = &t->slot[mix(from, sec, 10)];
			if (e->sec != sec || e->from != from || e->to != to)
				fill(e, sec, sym, from, to);
			*hint = e;
		}
	}
	c->sym_prev = c->sym_last;
	c->sym_last = e;
	return e;
}

void script_syms_free(struct vmpt_consumer *c)
{
	free(c->syms);
	c->syms = NULL;
	c->sym_last = c->sym_prev = NULL;
}
