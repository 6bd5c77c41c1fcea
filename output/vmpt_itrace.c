/* SPDX-License-Identifier: MIT */
/* The options that choose what perf script shows, in perf 6.1's grammar:
 * --itrace letters (tools/perf/util/auxtrace.c, itrace_parse_synth_opts)
 * and -F fields (builtin-script.c, parse_output_fields), so the strings
 * users and scripts give perf mean the same to vmpt.
 */
#include "vmpt/itrace.h"
#include "vmpt/script_output.h"
#include "vmpt/error.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITRACE_DEFAULT_PERIOD 100000	/* ns */
#define ITRACE_DEFAULT_CALLCHAIN_SZ 16
#define ITRACE_MAX_CALLCHAIN_SZ 1024
#define ITRACE_DEFAULT_LAST_BRANCH_SZ 64
#define ITRACE_MAX_LAST_BRANCH_SZ 1024

void vmpt_itrace_default(struct vmpt_itrace *it)
{
	memset(it, 0, sizeof(*it));
	it->branches = it->calls = 1;
	it->transactions = it->ptwrites = it->pwr_events = it->other_events = 1;
	it->intr_events = it->errors = 1;
	it->period_type = VMPT_ITRACE_PERIOD_INSNS;
	it->period = 1;
	it->callchain_sz = ITRACE_DEFAULT_CALLCHAIN_SZ;
	it->last_branch_sz = ITRACE_DEFAULT_LAST_BRANCH_SZ;
}

static int bad(char *err, size_t errlen, const char *s, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int bad(char *err, size_t errlen, const char *s, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "bad --itrace '%s': %s", s, what);
	return -VMPT_ERR_INVAL;
}

/* e and d take +x/-x flags (letters) after them. */
static int itrace_flags(const char **p, uint32_t *plus, uint32_t *minus)
{
	for (;;) {
		uint32_t *set;

		while (**p == ' ')
			++*p;
		if (**p != '+' && **p != '-')
			return 0;
		set = **p == '+' ? plus : minus;
		++*p;
		while (**p == ' ')
			++*p;
		if (**p < 'a' || **p > 'z')
			return -1;
		*set |= 1u << (**p - 'a');
		++*p;
	}
}

/* g[N] and l[N]: N from 1 to max.  0 or -1. */
static int itrace_size(const char **p, unsigned *sz, unsigned max)
{
	char *end;
	unsigned long v;

	while (**p == ' ' || **p == ',')
		++*p;
	if (!isdigit((unsigned char)**p))
		return 0;
	v = strtoul(*p, &end, 10);
	*p = end;
	if (!v || v > max)
		return -1;
	*sz = (unsigned)v;
	return 0;
}

int vmpt_itrace_parse(const char *s, struct vmpt_itrace *it, char *err, size_t errlen)
{
	const char *p = s;
	int period_set = 0, type_set = 0;
	char *end;

	memset(it, 0, sizeof(*it));
	it->callchain_sz = ITRACE_DEFAULT_CALLCHAIN_SZ;
	it->last_branch_sz = ITRACE_DEFAULT_LAST_BRANCH_SZ;
	while (*p) {
		int c = (unsigned char)*p++;

		switch (c) {
		case 'i':
			it->insns = 1;
			while (*p == ' ' || *p == ',')
				p++;
			if (!isdigit((unsigned char)*p))
				break;
			it->period = strtoull(p, &end, 10);
			period_set = 1;
			p = end;
			while (*p == ' ' || *p == ',')
				p++;
			switch (*p++) {
			case 'i':
				it->period_type = VMPT_ITRACE_PERIOD_INSNS;
				type_set = 1;
				break;
			case 't':
				it->period_type = VMPT_ITRACE_PERIOD_TICKS;
				type_set = 1;
				break;
			case 'm':
				it->period *= 1000;
				/* fall through */
			case 'u':
				it->period *= 1000;
				/* fall through */
			case 'n':
				if (*p++ != 's')
					return bad(err, errlen, s, "a period's unit is i, t, ns, "
						   "us or ms");
				it->period_type = VMPT_ITRACE_PERIOD_NS;
				type_set = 1;
				break;
			case '\0':
				p--;
				break;
			default:
				/* perf takes a bare number only at the end. */
				return bad(err, errlen, s, "'%c' after i's period: give its "
					   "unit first (i, t, ns, us or ms, e.g. i100ns)",
					   p[-1]);
			}
			break;
		case 'b': it->branches = 1; break;
		case 'c': it->branches = it->calls = 1; break;
		case 'r': it->branches = it->returns = 1; break;
		case 'x': it->transactions = 1; break;
		case 'w': it->ptwrites = 1; break;
		case 'p': it->pwr_events = 1; break;
		case 'o': it->other_events = 1; break;
		case 'I': it->intr_events = 1; break;
		case 'Z': it->timeless = 1; break;
		case 'e':
			it->errors = 1;
			if (itrace_flags(&p, &it->error_plus, &it->error_minus))
				return bad(err, errlen, s, "e's flags are +LETTER or "
					   "-LETTER (e-o: no overflow errors)");
			break;
		case 'g':
			it->callchain = 1;
			it->callchain_sz = ITRACE_DEFAULT_CALLCHAIN_SZ;
			if (itrace_size(&p, &it->callchain_sz, ITRACE_MAX_CALLCHAIN_SZ))
				return bad(err, errlen, s, "g's callchain size is 1 to %d",
					   ITRACE_MAX_CALLCHAIN_SZ);
			break;
		case 'l':
			it->last_branch = 1;
			it->last_branch_sz = ITRACE_DEFAULT_LAST_BRANCH_SZ;
			if (itrace_size(&p, &it->last_branch_sz, ITRACE_MAX_LAST_BRANCH_SZ))
				return bad(err, errlen, s, "l's branch stack size is 1 to %d",
					   ITRACE_MAX_LAST_BRANCH_SZ);
			break;
		case 's':
			it->initial_skip = strtoull(p, &end, 10);
			if (end == p)
				return bad(err, errlen, s, "s needs the number of samples "
					   "to skip (s10)");
			p = end;
			break;
		/* ARM SPE's cache, TLB and memory events: nothing in Intel PT,
		 * as for perf.
		 */
		case 'f': case 'm': case 't': case 'a': case 'M':
			break;
		case 'd': case 'q': case 'A': case 'G': case 'L': {
			static const char *const what[] = {
				['d'] = "the decoder's debug log", ['q'] = "quick decoding",
				['A'] = "approximate IPC",
				['G'] = "callchains added to other events",
				['L'] = "branch stacks added to other events",
			};

			snprintf(err, errlen, "--itrace '%s': '%c' (%s) is not supported "
				 "by vmpt", s, c, what[c]);
			return -VMPT_ERR_UNSUPPORTED;
		}
		case ' ':
		case ',':
			break;
		default:
			return bad(err, errlen, s, "unknown letter '%c'", c);
		}
	}
	if (it->insns) {
		if (!type_set)
			it->period_type = VMPT_ITRACE_PERIOD_NS;
		if (!period_set)
			it->period = ITRACE_DEFAULT_PERIOD;
	}
	return 0;
}

static const struct { const char *name; uint64_t bit; } field_names[] = {
	{ "comm", VMPT_F_COMM }, { "tid", VMPT_F_TID }, { "pid", VMPT_F_PID },
	{ "time", VMPT_F_TIME }, { "cpu", VMPT_F_CPU }, { "event", VMPT_F_EVENT },
	{ "ip", VMPT_F_IP }, { "sym", VMPT_F_SYM }, { "dso", VMPT_F_DSO },
	{ "addr", VMPT_F_ADDR }, { "symoff", VMPT_F_SYMOFF },
	{ "period", VMPT_F_PERIOD }, { "brstack", VMPT_F_BRSTACK },
	{ "brstacksym", VMPT_F_BRSTACKSYM }, { "callindent", VMPT_F_CALLINDENT },
	{ "insn", VMPT_F_INSN }, { "insnlen", VMPT_F_INSNLEN },
	{ "synth", VMPT_F_SYNTH }, { "ipc", VMPT_F_IPC }, { "disasm", VMPT_F_DISASM },
	{ "machine_pid", VMPT_F_MACHINE_PID }, { "vcpu", VMPT_F_VCPU },
	{ "vmcs", VMPT_F_VMCS },
	{ "srcline", VMPT_F_SRCLINE }, { "trace", VMPT_F_TRACE },
	{ "iregs", VMPT_F_IREGS }, { "uregs", VMPT_F_UREGS }, { "weight", VMPT_F_WEIGHT },
	{ "ins_lat", VMPT_F_INS_LAT }, { "data_src", VMPT_F_DATA_SRC },
	{ "phys_addr", VMPT_F_PHYS_ADDR }, { "data_page_size", VMPT_F_DATA_PAGE_SIZE },
	{ "code_page_size", VMPT_F_CODE_PAGE_SIZE }, { "misc", VMPT_F_MISC },
	{ "srccode", VMPT_F_SRCCODE },
};

const char *vmpt_script_field_name(size_t i)
{
	size_t n = sizeof(field_names) / sizeof(field_names[0]);

	return i < n ? field_names[i].name : i == n ? "flags" : NULL;
}

/* perf 6.1's other field names: known, not printed by vmpt.  (cgroup
 * and retire_lat are later perfs': 6.1 calls them invalid.)
 */
static const char *const perf_only_fields[] = {
	"bpf-output", "brstackinsn", "brstackoff", "metric", "tod", "brstackinsnlen",
};

static void set_type(struct vmpt_script_fields *f, int type, int how, uint64_t bit)
{
	if (how < 0) {
		f->set[type] &= ~bit;
		f->named[type] &= ~bit;
		f->unset[type] |= bit;
	} else {
		f->set[type] |= bit;
		f->named[type] |= bit;
	}
	f->user_set[type] = 1;
}

int vmpt_script_fields_parse(const char *arg, struct vmpt_script_fields *f,
			     char *err, size_t errlen)
{
	enum { DEFAULT, SET, ADD, REMOVE } change = DEFAULT;
	char buf[1024], *tok, *save = NULL;
	const char *colon = strchr(arg, ':');
	int type = -1;

	if (strlen(arg) >= sizeof(buf)) {
		snprintf(err, errlen, "-F %.40s...: too long", arg);
		return -VMPT_ERR_INVAL;
	}
	/* "hw:ip,sym": the fields of one event type (Intel PT's
	 * instructions, branches and transactions are hw, its ptwrite,
	 * power and PSB events synth).
	 */
	if (colon) {
		size_t n = (size_t)(colon - arg);

		if (n == 2 && !strncmp(arg, "hw", 2))
			type = VMPT_OUT_HW;
		else if (n == 5 && !strncmp(arg, "synth", 5))
			type = VMPT_OUT_SYNTH;
		else if (n == 5 && !strncmp(arg, "trace", 5))
			type = VMPT_OUT_TRACE;
		else if (n == 2 && !strncmp(arg, "sw", 2))
			type = VMPT_OUT_SW;
		else if ((n == 5 && !strncmp(arg, "break", 5)) ||
			 (n == 3 && !strncmp(arg, "raw", 3)))
			type = VMPT_OUT_TYPES;	/* events vmpt prints none of */
		else {
			snprintf(err, errlen, "-F %s: invalid event type '%.*s' (hw, sw, "
				 "trace, raw, break, synth)", arg, (int)n, arg);
			return -VMPT_ERR_INVAL;
		}
		arg = colon + 1;
	} else if (!*arg) {
		snprintf(err, errlen, "-F: cannot set fields to 'none' for all event types");
		return -VMPT_ERR_INVAL;
	}
	strcpy(buf, arg);
	/* Without + or -, the fields replace the defaults. */
	if (!strchr(buf, '+') && !strchr(buf, '-')) {
		if (type == -1)
			f->wild = 0;
		for (int t = 0; t < VMPT_OUT_TYPES; t++) {
			if (type != -1 && type != t)
				continue;
			f->set[t] = 0;
			f->named[t] = 0;
			f->user_set[t] = 1;
		}
	}
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;
		int how;

		if (*tok == '+' || *tok == '-') {
			if (change == SET)
				goto badmix;
			change = *tok == '+' ? ADD : REMOVE;
			tok++;
		} else {
			if (change != SET && change != DEFAULT)
				goto badmix;
			change = SET;
		}
		how = change == REMOVE ? -1 : 1;
		if (!strcmp(tok, "flags")) {
			f->flags = change != REMOVE;
			continue;
		}
		for (i = 0; i < sizeof(field_names) / sizeof(field_names[0]); i++)
			if (!strcmp(tok, field_names[i].name))
				break;
		if (i == sizeof(field_names) / sizeof(field_names[0])) {
			for (size_t k = 0; k < sizeof(perf_only_fields) / sizeof(*perf_only_fields); k++)
				if (!strcmp(tok, perf_only_fields[k])) {
					snprintf(err, errlen, "-F: field '%s' is not "
						 "supported by vmpt", tok);
					return -VMPT_ERR_UNSUPPORTED;
				}
			snprintf(err, errlen, "-F: invalid field '%s' requested", tok);
			return -VMPT_ERR_INVAL;
		}
		if (type == VMPT_OUT_TYPES)
			continue;
		/* Only tracepoints have a payload: perf takes "trace" for
		 * them alone, and refuses it for one other type.
		 */
		if (field_names[i].bit == VMPT_F_TRACE && type != -1 && type != VMPT_OUT_TRACE) {
			snprintf(err, errlen, "'trace' not valid for %s events.",
				 type == VMPT_OUT_HW ? "hardware" : type == VMPT_OUT_SW ?
				 "software" : "synth");
			return -VMPT_ERR_INVAL;
		}
		for (int t = 0; t < VMPT_OUT_TYPES; t++)
			if ((type == -1 || type == t) &&
			    (field_names[i].bit != VMPT_F_TRACE || t == VMPT_OUT_TRACE))
				set_type(f, t, how, field_names[i].bit);
		if (type == -1 && how > 0)
			f->wild |= field_names[i].bit;
		else if (type == -1)
			f->wild &= ~field_names[i].bit;
	}
	return 0;
badmix:
	snprintf(err, errlen, "-F %s: cannot mix +-field with overridden fields", arg);
	return -VMPT_ERR_INVAL;
}
