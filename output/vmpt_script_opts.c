/* SPDX-License-Identifier: MIT */
/* vmpt script's options as perf script settles them: its defaults for
 * Intel PT, the --call-trace/--call-ret-trace/--insn-trace shortcuts, and
 * what a recording decides (the events perf synthesizes and their names,
 * the fields its samples carry).
 */
#include "vmpt/script_output.h"
#include "vmpt/error.h"

#include <stdio.h>
#include <string.h>

/* The fields perf prints by default: Intel PT's instructions, branches
 * and transactions are hardware events, its synth events have no period
 * but their payload.
 */
#define HW_DEFAULT (VMPT_F_COMM | VMPT_F_TID | VMPT_F_CPU | VMPT_F_TIME | \
		    VMPT_F_EVENT | VMPT_F_IP | VMPT_F_SYM | VMPT_F_SYMOFF | \
		    VMPT_F_DSO | VMPT_F_PERIOD)
#define SYNTH_DEFAULT ((HW_DEFAULT & ~VMPT_F_PERIOD) | VMPT_F_SYNTH)
#define TRACE_DEFAULT (VMPT_F_COMM | VMPT_F_TID | VMPT_F_CPU | VMPT_F_TIME | \
		       VMPT_F_EVENT | VMPT_F_TRACE)

void vmpt_script_opts_init(struct vmpt_script_opts *o)
{
	memset(o, 0, sizeof(*o));
	vmpt_itrace_default(&o->it);
	o->f.set[VMPT_OUT_HW] = HW_DEFAULT;
	o->f.set[VMPT_OUT_SYNTH] = SYNTH_DEFAULT;
	o->f.set[VMPT_OUT_TRACE] = TRACE_DEFAULT;
	o->f.set[VMPT_OUT_SW] = HW_DEFAULT;
	o->kernel_start = 1ULL << 63;
}

int vmpt_script_opts_shortcut(struct vmpt_script_opts *o, const char *name,
			      const char *arg)
{
	char err[256];
	const char *fields, *itrace;

	if (!strcmp(name, "call-trace")) {
		fields = "-ip,-addr,-event,-period,+callindent";
		itrace = "cewp";
		o->pad_dso = 50;
	} else if (!strcmp(name, "call-ret-trace")) {
		fields = "-ip,-addr,-event,-period,+callindent,+flags";
		itrace = "crewp";
	} else if (!strcmp(name, "insn-trace")) {
		fields = "+insn,-event,-period";
		itrace = "i0ns";
		if (arg && strcmp(arg, "disasm") && strcmp(arg, "raw"))
			return -VMPT_ERR_INVAL;
		o->disasm = arg && !strcmp(arg, "disasm");
	} else {
		return -VMPT_ERR_INVAL;
	}
	if (vmpt_script_fields_parse(fields, &o->f, err, sizeof(err)) < 0 ||
	    vmpt_itrace_parse(itrace, &o->it, err, sizeof(err)) < 0)
		return -VMPT_ERR_INTERNAL;
	o->ns = 1;
	return 0;
}

void vmpt_script_opts_raw(struct vmpt_script_opts *o)
{
	o->raw = 1;
	if (!o->f.user_set[VMPT_OUT_HW])
		o->f.set[VMPT_OUT_HW] = VMPT_F_IP | VMPT_F_SYM | VMPT_F_SYMOFF | VMPT_F_DSO;
	if (!o->f.user_set[VMPT_OUT_SYNTH])
		o->f.set[VMPT_OUT_SYNTH] = VMPT_F_IP | VMPT_F_SYM | VMPT_F_SYMOFF |
					   VMPT_F_DSO | VMPT_F_SYNTH;
}

/* perf's evsel__add_modifiers: ":u", ":kuH"... */
static void modifiers(const struct perf_event_attr *a, char *buf, size_t size)
{
	char m[16];
	size_t n = 0;
	unsigned guest_default = 0;

	if (a->exclude_kernel || a->exclude_user || a->exclude_hv) {
		if (!a->exclude_kernel)
			m[n++] = 'k';
		if (!a->exclude_user)
			m[n++] = 'u';
		if (!a->exclude_hv)
			m[n++] = 'h';
		guest_default = 1;
	}
	for (unsigned i = 0; i < a->precise_ip && i < 3; i++)
		m[n++] = 'p';
	if (a->precise_ip)
		guest_default = 1;
	if (a->exclude_host || a->exclude_guest == guest_default) {
		if (!a->exclude_host)
			m[n++] = 'H';
		if (!a->exclude_guest)
			m[n++] = 'G';
	}
	m[n] = 0;
	snprintf(buf, size, n ? ":%s" : "%s", m);
}

/* The name perf gives a recorded event without EVENT_DESC (a pipe's):
 * evsel__hw_names, evsel__sw_names, then the modifiers.
 */
void script_attr_name(const struct perf_event_attr *a, char *buf, size_t size)
{
	static const char *const hw[] = {
		"cycles", "instructions", "cache-references", "cache-misses", "branches",
		"branch-misses", "bus-cycles", "stalled-cycles-frontend",
		"stalled-cycles-backend", "ref-cycles",
	};
	static const char *const sw[] = {
		"cpu-clock", "task-clock", "page-faults", "context-switches", "cpu-migrations",
		"minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy",
		"bpf-output", "cgroup-switches",
	};
	char mod[16];
	const char *base = "unknown";

	modifiers(a, mod, sizeof(mod));
	if (a->type == PERF_TYPE_HARDWARE && a->config < sizeof(hw) / sizeof(hw[0]))
		base = hw[a->config];
	else if (a->type == PERF_TYPE_SOFTWARE && a->config < sizeof(sw) / sizeof(sw[0]))
		base = sw[a->config];
	snprintf(buf, size, "%s%s", base, mod);
}

const struct vmpt_perf_attr *script_first_of_type(const struct vmpt_perf_data *pd,
						  uint32_t type)
{
	/* perf passes over dummy events (sideband only, no samples). */
	for (size_t i = 0; pd && i < pd->nr_attrs; i++)
		if (pd->attrs[i].attr.type == type &&
		    !(type == PERF_TYPE_SOFTWARE && pd->attrs[i].attr.config == PERF_COUNT_SW_DUMMY))
			return &pd->attrs[i];
	return NULL;
}

/* The sample_type bit each field needs, in the order perf checks them
 * (evsel__check_attr); bit 0: the source line's check that ip is there.
 * aux: with AUXTRACE, perf prints the field of a sample without it (0).
 */
static const struct field_need {
	uint64_t field, bit;
	const char *attr, *name;
	int aux;
} field_needs[] = {
	{ VMPT_F_ADDR, PERF_SAMPLE_ADDR, "ADDR", "addr", 1 },
	{ VMPT_F_DATA_SRC, PERF_SAMPLE_DATA_SRC, "DATA_SRC", "data_src", 1 },
	{ VMPT_F_WEIGHT, PERF_SAMPLE_WEIGHT_TYPE, "WEIGHT", "weight", 1 },
	{ VMPT_F_SRCLINE | VMPT_F_SRCCODE, 0, NULL, NULL, 0 },
	{ VMPT_F_CPU, PERF_SAMPLE_CPU, "CPU", "cpu", 1 },
	{ VMPT_F_IREGS, PERF_SAMPLE_REGS_INTR, "IREGS", "iregs", 1 },
	{ VMPT_F_UREGS, PERF_SAMPLE_REGS_USER, "UREGS", "uregs", 0 },
	{ VMPT_F_PHYS_ADDR, PERF_SAMPLE_PHYS_ADDR, "PHYS_ADDR", "phys_addr", 1 },
	{ VMPT_F_DATA_PAGE_SIZE, PERF_SAMPLE_DATA_PAGE_SIZE, "DATA_PAGE_SIZE",
	  "data_page_size", 0 },
	{ VMPT_F_CODE_PAGE_SIZE, PERF_SAMPLE_CODE_PAGE_SIZE, "CODE_PAGE_SIZE",
	  "code_page_size", 0 },
	{ VMPT_F_INS_LAT, PERF_SAMPLE_WEIGHT_STRUCT, "WEIGHT_STRUCT", "ins_lat", 0 },
};

uint64_t script_fields_sampled(uint64_t f, uint64_t named, uint64_t sample_type)
{
	/* No period is no reason: perf prints the attr's fixed one. */
	static const struct { uint64_t bit, fields; } need[] = {
		{ PERF_SAMPLE_IP, VMPT_F_IP | VMPT_F_SYM | VMPT_F_SYMOFF | VMPT_F_DSO |
				  VMPT_F_SRCLINE | VMPT_F_SRCCODE },
		{ PERF_SAMPLE_TID, VMPT_F_PID | VMPT_F_TID },
		{ PERF_SAMPLE_TIME, VMPT_F_TIME },
	};

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!(sample_type & need[i].bit))
			f &= ~(need[i].fields & ~named);
	for (size_t i = 0; i < sizeof(field_needs) / sizeof(field_needs[0]); i++)
		if (field_needs[i].bit && !(sample_type & field_needs[i].bit))
			f &= ~(field_needs[i].field & ~named);
	return f;
}

static int srcline_without_ip(char *err, size_t errlen)
{
	snprintf(err, errlen, "Display of source line number requested but sample IP is not\n"
		 "selected. Hence, no address to lookup the source line number.");
	return -VMPT_ERR_INVAL;
}

/* perf's error for fields f of event a, which it does not sample: those
 * -F asks for of every type (wild) are refused, but with AUXTRACE (aux)
 * the ones perf prints as 0; and the source line without ip.
 */
static int check_event(const struct vmpt_perf_attr *a, uint64_t f, uint64_t wild, int aux,
		       char *err, size_t errlen)
{
	char name[64];

	for (size_t k = 0; k < sizeof(field_needs) / sizeof(field_needs[0]); k++) {
		const struct field_need *n = &field_needs[k];

		if (!n->bit) {
			if ((f & n->field) && !(f & VMPT_F_IP))
				return srcline_without_ip(err, errlen);
			continue;
		}
		if (!(f & wild & n->field) || (a->attr.sample_type & n->bit) || (aux && n->aux))
			continue;
		if (!a->name)
			script_attr_name(&a->attr, name, sizeof(name));
		snprintf(err, errlen, "Samples for '%s' event do not have %s attribute "
			 "set. Cannot print '%s' field.", a->name ? a->name : name,
			 n->attr, n->name);
		return -VMPT_ERR_INVAL;
	}
	return 0;
}

/* perf checks the first event of each type, in the order of the types:
 * the recorded hardware, software and tracepoint events, then (as a type
 * of its own) the Intel PT event, for the fields -F asks of every type.
 */
static int unsampled_fields(const struct vmpt_script_opts *o, const struct vmpt_perf_data *pd,
			    const struct perf_event_attr *intel_pt, char *err, size_t errlen)
{
	static const struct { int out; uint32_t type; } types[] = {
		{ VMPT_OUT_HW, PERF_TYPE_HARDWARE }, { VMPT_OUT_SW, PERF_TYPE_SOFTWARE },
		{ VMPT_OUT_TRACE, PERF_TYPE_TRACEPOINT },
	};
	const struct vmpt_perf_attr *a;
	int ret;

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if ((a = script_first_of_type(pd, types[i].type)) &&
		    (ret = check_event(a, o->f.set[types[i].out], o->f.wild, !!intel_pt, err,
				       errlen)) < 0)
			return ret;
	/* Its fields are those -F asks of every type; the ip is checked
	 * with the types of Intel PT's samples.
	 */
	if (intel_pt && (a = script_first_of_type(pd, intel_pt->type)))
		return check_event(a, o->f.wild | VMPT_F_IP, o->f.wild, 1, err, errlen);
	return 0;
}

/* perf script shows the callchains' symbols of the events it synthesizes:
 * as it takes each new event's attr (process_attr), the first of a type
 * (with no recorded one of that type) adds ip and sym to the type's fields
 * (not those -F removed) when callchains are on and some event so far
 * samples a callchain or branch stack.  Callchains are on in a pipe, or
 * when a recorded event samples them, or with --itrace=g; -G turns them
 * off but for g.  Intel PT's branches come first, without callchain or
 * branch stack; its other events have them with g and l.
 */
static void callchain_fields(struct vmpt_script_opts *o, const struct vmpt_perf_data *pd)
{
	const struct vmpt_itrace *it = &o->it;
	uint64_t combined = 0, chains = PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_BRANCH_STACK;
	uint64_t dwarf = PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER, synth = 0;
	int on = !o->hide_callchain && pd->pipe;

	for (size_t i = 0; i < pd->nr_attrs; i++) {
		combined |= pd->attrs[i].attr.sample_type;
		if (!o->hide_callchain && (pd->attrs[i].attr.sample_type & PERF_SAMPLE_CALLCHAIN))
			on = 1;
	}
	if (it->callchain)
		on = 1;
	if (!on)
		return;
	if (it->callchain)
		synth |= PERF_SAMPLE_CALLCHAIN;
	if (it->last_branch)
		synth |= PERF_SAMPLE_BRANCH_STACK;
	/* The first hardware event: branches, else instructions or
	 * transactions; the first synth event (ptwrite, power, evt).
	 */
	if (!script_first_of_type(pd, PERF_TYPE_HARDWARE) && (it->branches || it->insns ||
							      it->transactions)) {
		uint64_t st = combined | (it->branches ? 0 : synth);

		if ((st & chains) || (st & dwarf) == dwarf)
			o->f.set[VMPT_OUT_HW] |= (VMPT_F_IP | VMPT_F_SYM) & ~o->f.unset[VMPT_OUT_HW];
	}
	if (it->ptwrites || it->pwr_events || it->intr_events) {
		uint64_t st = combined | synth;

		if ((st & chains) || (st & dwarf) == dwarf)
			o->f.set[VMPT_OUT_SYNTH] |= (VMPT_F_IP | VMPT_F_SYM) &
						    ~o->f.unset[VMPT_OUT_SYNTH];
	}
}

int vmpt_script_opts_recording(struct vmpt_script_opts *o, const struct vmpt_perf_data *pd,
			       const struct perf_event_attr *intel_pt,
			       const struct vmpt_perf_intel_pt_info *info,
			       char *err, size_t errlen)
{
	static const char *const fixed[VMPT_SE_COUNT] = {
		[VMPT_SE_TRANSACTIONS] = "transactions", [VMPT_SE_PTWRITE] = "ptwrite",
		[VMPT_SE_CBR] = "cbr", [VMPT_SE_PSB] = "psb", [VMPT_SE_MWAIT] = "mwait",
		[VMPT_SE_PWRE] = "pwre", [VMPT_SE_EXSTOP] = "exstop",
		[VMPT_SE_PWRX] = "pwrx", [VMPT_SE_EVT] = "evt",
	};
	static char names[2][32];
	const struct vmpt_itrace *it = &o->it;
	uint64_t sample_type = intel_pt ? intel_pt->sample_type : 0;
	int per_cpu = info && info->priv[VMPT_INTEL_PT_PER_CPU_MMAPS];
	int timeless = 1, width = 0, ret;
	int have[VMPT_SE_COUNT] = { 0 };
	const struct vmpt_perf_attr *hw;

	o->pd = pd;
	if (intel_pt) {
		modifiers(intel_pt, o->ev_mod, sizeof(o->ev_mod));
		snprintf(names[0], sizeof(names[0]), "instructions%s", o->ev_mod);
		snprintf(names[1], sizeof(names[1]), "branches%s", o->ev_mod);
		/* perf decodes timeless without TSC packets or without a
		 * time conversion, or when asked (Z).
		 */
		timeless = it->timeless || !info || !info->priv[VMPT_INTEL_PT_TSC_BIT] ||
			   !(intel_pt->config & info->priv[VMPT_INTEL_PT_TSC_BIT]) ||
			   !info->priv[VMPT_INTEL_PT_CAP_USER_TIME_ZERO] ||
			   !(sample_type & PERF_SAMPLE_TIME);
		have[VMPT_SE_INSTRUCTIONS] = it->insns;
		have[VMPT_SE_BRANCHES] = it->branches;
		have[VMPT_SE_TRANSACTIONS] = it->transactions;
		have[VMPT_SE_PTWRITE] = it->ptwrites;
		have[VMPT_SE_CBR] = have[VMPT_SE_PSB] = it->pwr_events;
		/* Power events exist with the pwr_evt bit (0x10) only. */
		have[VMPT_SE_MWAIT] = have[VMPT_SE_PWRE] = have[VMPT_SE_EXSTOP] =
			have[VMPT_SE_PWRX] = it->pwr_events && (intel_pt->config & 0x10);
		/* Event Trace samples with the event bit (31) only. */
		have[VMPT_SE_EVT] = it->intr_events && (intel_pt->config & (1ull << 31));
	}
	o->ev_name[VMPT_SE_INSTRUCTIONS] = names[0];
	o->ev_name[VMPT_SE_BRANCHES] = names[1];
	for (int e = VMPT_SE_TRANSACTIONS; e < VMPT_SE_COUNT; e++)
		o->ev_name[e] = fixed[e];
	/* perf's column is as wide as the longest name in its evlist: the
	 * recorded events and those it synthesized.
	 */
	for (size_t i = 0; i < pd->nr_attrs; i++) {
		char name[64];
		int len;

		if (pd->attrs[i].name)
			len = (int)strlen(pd->attrs[i].name);
		else
			script_attr_name(&pd->attrs[i].attr, name, sizeof(name)), len = (int)strlen(name);
		if (len > width)
			width = len;
	}
	for (int e = 0; e < VMPT_SE_COUNT; e++)
		if (have[e] && (int)strlen(o->ev_name[e]) > width)
			width = (int)strlen(o->ev_name[e]);
	o->name_width = width;
	if (info) {
		uint64_t mnt = info->priv[VMPT_INTEL_PT_MAX_NONTURBO_RATIO];

		if (o->have_tc && o->tc.time_mult) {
			uint64_t ns = 1000000000, tsc_freq;

			tsc_freq = ((ns / o->tc.time_mult) << o->tc.time_shift) +
				   ((ns % o->tc.time_mult) << o->tc.time_shift) / o->tc.time_mult;
			if (!mnt)
				mnt = (tsc_freq + 50000000) / 100000000;
			if (mnt)
				o->cbr2khz = tsc_freq / mnt / 1000;
		}
		o->max_nonturbo = (uint32_t)mnt;
	}
	/* Fields the samples do not carry: gone from the defaults, an error
	 * when asked for (perf's words; cpu of a per-thread recording is
	 * allowed, as perf allows it with AUXTRACE), the recorded events'
	 * first.  Without Intel PT there are no Intel PT samples to settle:
	 * the sideband keeps its fields.
	 */
	if ((ret = unsampled_fields(o, pd, intel_pt, err, errlen)) < 0 || !intel_pt)
		return ret;
	if (timeless)
		o->it.timeless = 1;
	o->est_tsc = !timeless;
	for (int t = 0; t < VMPT_OUT_TRACE; t++) {
		const char *ev = o->ev_name[t == VMPT_OUT_HW ?
					    (it->insns ? VMPT_SE_INSTRUCTIONS : VMPT_SE_BRANCHES) :
					    VMPT_SE_CBR];

		if (timeless && (o->f.set[t] & VMPT_F_TIME)) {
			if (o->f.named[t] & VMPT_F_TIME) {
				snprintf(err, errlen, "Samples for '%s' event do not have "
					 "TIME attribute set. Cannot print 'time' field.", ev);
				return -VMPT_ERR_INVAL;
			}
			o->f.set[t] &= ~VMPT_F_TIME;
		}
		if (!per_cpu && !(o->f.named[t] & VMPT_F_CPU))
			o->f.set[t] &= ~VMPT_F_CPU;
		/* perf checks the first hardware event it finds for the type
		 * of Intel PT's instructions and branches: a recorded one
		 * (cycles) decides, before those it synthesizes.
		 */
		if (t == VMPT_OUT_HW && (hw = script_first_of_type(pd, PERF_TYPE_HARDWARE)))
			o->f.set[t] = script_fields_sampled(o->f.set[t], o->f.named[t],
							    hw->attr.sample_type);
		/* The samples perf synthesizes carry no more than the Intel
		 * PT event samples, those fields it prints as 0 aside.
		 */
		for (size_t k = 0; k < sizeof(field_needs) / sizeof(field_needs[0]); k++)
			if (field_needs[k].bit && !field_needs[k].aux &&
			    !(sample_type & field_needs[k].bit))
				o->f.set[t] &= ~field_needs[k].field;
		if ((o->f.set[t] & (VMPT_F_SRCLINE | VMPT_F_SRCCODE)) && !(o->f.set[t] & VMPT_F_IP))
			return srcline_without_ip(err, errlen);
		if ((o->f.set[t] & VMPT_F_SYMOFF) && !(o->f.set[t] & VMPT_F_SYM)) {
			snprintf(err, errlen, "Display of offsets requested but symbol is "
				 "notselected.");
			return -VMPT_ERR_INVAL;
		}
	}
	callchain_fields(o, pd);
	return 0;
}
