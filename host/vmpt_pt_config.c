/* SPDX-License-Identifier: MIT */
#include "vmpt/pt_config.h"
#include "vmpt/error.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A caps file that reads as a boolean; absent counts as supported, as in
 * perf (old kernels had no caps directory at all). */
static int cap_or(const struct vmpt_pmu *pmu, const char *cap, uint64_t dflt)
{
	uint64_t v;
	return vmpt_pmu_cap(pmu, cap, &v) ? (int)dflt : v != 0;
}

static uint64_t cap_bits(const struct vmpt_pmu *pmu, const char *cap)
{
	uint64_t v;
	return vmpt_pmu_cap(pmu, cap, &v) ? 0 : v;
}

/* The supported value nearest target from below (or the lowest above). */
static int pick_value(uint64_t bits, int target)
{
	int pick = -1;
	for (int pos = 0; pos < 64 && bits >> pos; pos++) {
		if (!((bits >> pos) & 1))
			continue;
		if (pos <= target || pick < 0)
			pick = pos;
		if (pos >= target)
			break;
	}
	return pick;
}

static uint64_t set_term(const struct vmpt_pmu_format *f, uint64_t config,
			 uint64_t value)
{
	uint64_t mask = vmpt_pmu_format_mask(f);
	return (config & ~mask) | ((value << f->lo) & mask);
}

static uint64_t get_term(const struct vmpt_pmu_format *f, uint64_t config)
{
	return (config & vmpt_pmu_format_mask(f)) >> f->lo;
}

static void set_if(const struct vmpt_pmu *pmu, uint64_t *config,
		   const char *term, uint64_t value)
{
	const struct vmpt_pmu_format *f = vmpt_pmu_format(pmu, term);
	if (f && f->field == 0)
		*config = set_term(f, *config, value);
}

uint64_t vmpt_pt_default_config(const struct vmpt_pmu *pmu)
{
	uint64_t config = 0;
	set_if(pmu, &config, "tsc", 1);
	uint64_t mtc_periods = 0;
	if (cap_or(pmu, "mtc", 1)) {
		mtc_periods = cap_bits(pmu, "mtc_periods");
		if (mtc_periods) {
			set_if(pmu, &config, "mtc", 1);
			set_if(pmu, &config, "mtc_period",
			       (uint64_t)pick_value(mtc_periods, 3));
		}
	}
	if (cap_or(pmu, "psb_cyc", 1) && mtc_periods) {
		uint64_t psb_periods = cap_bits(pmu, "psb_periods");
		if (psb_periods)
			set_if(pmu, &config, "psb_period",
			       (uint64_t)pick_value(psb_periods, 3));
	}
	if (vmpt_pmu_format(pmu, "pt") && vmpt_pmu_format(pmu, "branch")) {
		set_if(pmu, &config, "pt", 1);
		set_if(pmu, &config, "branch", 1);
	}
	return config;
}

void vmpt_pt_valid_str(uint64_t valid, char *buf, size_t len)
{
	size_t p = 0;
	buf[0] = '\0';
	for (int v = 0; v < 64;) {
		if (!((valid >> v) & 1)) {
			v++;
			continue;
		}
		int last = v;
		while (last + 1 < 64 && ((valid >> (last + 1)) & 1))
			last++;
		/* perf joins runs of three or more with '-', pairs with ',' */
		int n;
		if (last - v >= 2)
			n = snprintf(buf + p, len - p, "%s%d-%d", p ? "," : "", v, last);
		else if (last > v)
			n = snprintf(buf + p, len - p, "%s%d,%d", p ? "," : "", v, last);
		else
			n = snprintf(buf + p, len - p, "%s%d", p ? "," : "", v);
		if (n < 0 || (size_t)n >= len - p)
			return;
		p += (size_t)n;
		v = last + 1;
	}
}

static int fail(struct vmpt_pt_event *ev, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int fail(struct vmpt_pt_event *ev, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ev->error, sizeof(ev->error), fmt, ap);
	va_end(ap);
	return -VMPT_ERR_INVAL;
}

/* perf's check: the term's value must be a bit set in caps/CAPS (0 always
 * valid), and CAPS counts as empty when caps/SUPPORTED is 0. */
static int check_valid_values(const struct vmpt_pmu *pmu, struct vmpt_pt_event *ev,
			      const char *caps, const char *term,
			      const char *supported)
{
	const struct vmpt_pmu_format *f = vmpt_pmu_format(pmu, term);
	if (!f)
		return 0;
	uint64_t valid = cap_bits(pmu, caps);
	if (!cap_or(pmu, supported, 1))
		valid = 0;
	valid |= 1;
	uint64_t value = get_term(f, ev->attr.config);
	if (value < 64 && ((valid >> value) & 1))
		return 0;
	char list[256];
	vmpt_pt_valid_str(valid, list, sizeof(list));
	return fail(ev, "Invalid %s for %s. Valid values are: %s", term,
		    pmu->name, list);
}

/* Features the kernel refuses with a bare EOPNOTSUPP when the CPU lacks
 * them; say which caps file decides. */
static const struct {
	const char *term, *cap;
} feature_caps[] = {
	{ "cyc", "psb_cyc" },
	{ "mtc", "mtc" },
	{ "ptw", "ptwrite" },
	{ "pwr_evt", "power_event_trace" },
	{ "event", "event_trace" },
	{ "notnt", "tnt_disable" },
};

static int check_features(const struct vmpt_pmu *pmu, struct vmpt_pt_event *ev)
{
	uint64_t config = ev->attr.config;
	for (size_t i = 0; i < sizeof(feature_caps) / sizeof(feature_caps[0]); i++) {
		const struct vmpt_pmu_format *f = vmpt_pmu_format(pmu, feature_caps[i].term);
		uint64_t have;
		if (!f || !get_term(f, config))
			continue;
		if (vmpt_pmu_cap(pmu, feature_caps[i].cap, &have) == 0 && !have)
			return fail(ev, "%s is not supported by %s on this machine "
				    "(caps/%s is 0)", feature_caps[i].term, pmu->name,
				    feature_caps[i].cap);
	}
	const struct vmpt_pmu_format *fup = vmpt_pmu_format(pmu, "fup_on_ptw");
	const struct vmpt_pmu_format *ptw = vmpt_pmu_format(pmu, "ptw");
	if (fup && get_term(fup, config) && !(ptw && get_term(ptw, config)))
		return fail(ev, "fup_on_ptw needs ptw (the kernel refuses it alone)");
	const struct vmpt_pmu_format *branch = vmpt_pmu_format(pmu, "branch");
	if (branch && !get_term(branch, config) && !cap_or(pmu, "psb_cyc", 1))
		return fail(ev, "branch=0 is not supported by %s on this machine "
			    "(caps/psb_cyc is 0)", pmu->name);
	return 0;
}

static int parse_value(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return end != s && !*end && !errno ? 0 : -1;
}

static int apply_terms(const struct vmpt_pmu *pmu, struct vmpt_pt_event *ev,
		       char *terms)
{
	char *save = NULL;
	for (char *t = strtok_r(terms, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');
		uint64_t value = 1;
		if (eq) {
			*eq = '\0';
			if (parse_value(eq + 1, &value))
				return fail(ev, "invalid value '%s' for term '%s' of "
					    "pmu '%s'", eq + 1, t, pmu->name);
		}
		const struct vmpt_pmu_format *f = vmpt_pmu_format(pmu, t);
		if (!f || f->field != 0) {
			char valid[1024] = "";
			size_t p = 0;
			for (size_t i = 0; i < pmu->nr_formats && p < sizeof(valid); i++)
				p += (size_t)snprintf(valid + p, sizeof(valid) - p, "%s%s",
						      i ? "," : "", pmu->formats[i].name);
			return fail(ev, "unknown term '%s' for pmu '%s' (valid terms: %s)",
				    t, pmu->name, valid);
		}
		uint64_t max = vmpt_pmu_format_mask(f) >> f->lo;
		if (value > max)
			return fail(ev, "%s=%s: value too big for format, maximum is %"
				    PRIu64, t, eq + 1, max);
		ev->attr.config = set_term(f, ev->attr.config, value);
	}
	return 0;
}

static int apply_modifiers(struct vmpt_pt_event *ev, const char *mods,
			   const char *spec)
{
	int u = 0, k = 0;
	for (const char *m = mods; *m; m++) {
		if (*m == 'u')
			u = 1;
		else if (*m == 'k')
			k = 1;
		else
			return fail(ev, "unknown modifier '%c' in '%s' (vmpt takes u "
				    "and k)", *m, spec);
	}
	if (u || k) {
		/* perf: a modifier names what is kept; the hypervisor is never
		 * kept once one is given. */
		ev->attr.exclude_user = !u;
		ev->attr.exclude_kernel = !k;
		ev->attr.exclude_hv = 1;
	}
	return 0;
}

int vmpt_pt_event_parse(const struct vmpt_pmu *pmu, const char *spec,
			struct vmpt_pt_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->attr.size = sizeof(ev->attr);
	ev->attr.type = pmu->type;
	ev->attr.config = vmpt_pt_default_config(pmu);

	size_t nlen = strlen(pmu->name);
	if (strncmp(spec, pmu->name, nlen) ||
	    (spec[nlen] && spec[nlen] != '/' && spec[nlen] != ':'))
		return fail(ev, "'%s' is not a %s event (write %s/TERMS/MODIFIERS)",
			    spec, pmu->name, pmu->name);
	const char *rest = spec + nlen;
	char terms[1024] = "";
	const char *mods = "";
	if (*rest == '/') {
		const char *close = strchr(rest + 1, '/');
		if (!close)
			return fail(ev, "'%s': missing the closing '/'", spec);
		size_t tlen = (size_t)(close - rest - 1);
		if (tlen >= sizeof(terms))
			return fail(ev, "'%s': config terms too long", spec);
		memcpy(terms, rest + 1, tlen);
		terms[tlen] = '\0';
		mods = close + 1;
	} else if (*rest == ':') {
		mods = rest + 1;
	}
	int err = apply_terms(pmu, ev, terms);
	if (!err)
		err = apply_modifiers(ev, mods, spec);
	if (err)
		return err;

	const struct vmpt_pmu_format *pt = vmpt_pmu_format(pmu, "pt");
	if (pt && !get_term(pt, ev->attr.config)) {
		snprintf(ev->warning, sizeof(ev->warning),
			 "pt=0 doesn't make sense, forcing pt=1");
		ev->attr.config = set_term(pt, ev->attr.config, 1);
	}
	err = check_valid_values(pmu, ev, "cycle_thresholds", "cyc_thresh", "psb_cyc");
	if (!err)
		err = check_valid_values(pmu, ev, "mtc_periods", "mtc_period", "mtc");
	if (!err)
		err = check_valid_values(pmu, ev, "psb_periods", "psb_period", "psb_cyc");
	if (!err)
		err = check_features(pmu, ev);
	return err;
}

static int filter_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int filter_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -VMPT_ERR_INVAL;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int vmpt_pt_addr_filter(const struct vmpt_pmu *pmu, const char *spec,
			char *kernel, size_t kernel_len, char *err, size_t errlen)
{
	char copy[4096];
	if (strlen(spec) >= sizeof(copy))
		return filter_fail(err, errlen, "address filter too long");
	snprintf(copy, sizeof(copy), "%s", spec);
	uint64_t ranges = 0;
	int have_caps = vmpt_pmu_cap(pmu, "num_address_ranges", &ranges) == 0;
	size_t p = 0;
	int count = 0;
	kernel[0] = '\0';
	char *save = NULL;
	for (char *f = strtok_r(copy, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
		f = trim(f);
		if (!*f)
			continue;
		char *file = strchr(f, '@');
		if (file) {
			*file = '\0';
			file = trim(file + 1);
			if (!*file)
				return filter_fail(err, errlen, "address filter '%s': "
						   "empty file name after '@'", f);
		}
		char *sp = f + strcspn(f, " \t");
		if (!*sp)
			return filter_fail(err, errlen, "address filter '%s': expected "
					   "'filter|start|stop|tracestop ADDR[/SIZE][@FILE]'", f);
		*sp = '\0';
		const char *action = f;
		char *range = trim(sp + 1);
		const char *kaction;
		int needs_size;
		if (!strcmp(action, "filter"))
			kaction = "filter", needs_size = 1;
		else if (!strcmp(action, "tracestop"))
			kaction = "stop", needs_size = 1;
		else if (!strcmp(action, "start") || !strcmp(action, "stop"))
			kaction = action, needs_size = 0;
		else
			return filter_fail(err, errlen, "address filter: unknown action "
					   "'%s' (filter, start, stop or tracestop)", action);
		char *slash = strchr(range, '/');
		uint64_t addr, size = 0;
		if (slash)
			*slash = '\0';
		if (parse_value(trim(range), &addr))
			return filter_fail(err, errlen, "address filter: '%s' is not an "
					   "address (symbols are not looked up: give the "
					   "address, e.g. from nm)", trim(range));
		if (slash && (parse_value(trim(slash + 1), &size) || !size))
			return filter_fail(err, errlen, "address filter: bad size '%s'",
					   trim(slash + 1));
		if (needs_size && !slash)
			return filter_fail(err, errlen, "address filter: %s 0x%" PRIx64
					   " needs a size (ADDR/SIZE)", action, addr);
		if (!needs_size && slash)
			return filter_fail(err, errlen, "address filter: %s takes a single "
					   "address, not a range", action);
		count++;
		int n;
		if (slash)
			n = snprintf(kernel + p, kernel_len - p, "%s%s 0x%" PRIx64 "/0x%"
				     PRIx64 "%s%s", p ? "," : "", kaction, addr, size,
				     file ? "@" : "", file ? file : "");
		else
			n = snprintf(kernel + p, kernel_len - p, "%s%s 0x%" PRIx64 "%s%s",
				     p ? "," : "", kaction, addr, file ? "@" : "",
				     file ? file : "");
		if (n < 0 || (size_t)n >= kernel_len - p)
			return filter_fail(err, errlen, "address filter too long");
		p += (size_t)n;
	}
	if (!count)
		return filter_fail(err, errlen, "empty address filter");
	if (have_caps && ranges == 0)
		return filter_fail(err, errlen, "%s on this machine has no address "
				   "filters (caps/num_address_ranges is 0)", pmu->name);
	if (have_caps && (uint64_t)count > ranges)
		return filter_fail(err, errlen, "Too many address filters: %d given, "
				   "%s has %" PRIu64 " (caps/num_address_ranges)",
				   count, pmu->name, ranges);
	return count;
}
