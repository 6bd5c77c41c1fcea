/* SPDX-License-Identifier: MIT */
/* perf script's sample filters: see script_filter.h. */
#include "script_filter.h"
#include "vmpt/error.h"
#include "vmpt/record.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "a,b,c" into strings. */
static int split_strs(const char *arg, char ***v, size_t *n)
{
	char *copy = strdup(arg), *tok, *save = NULL;

	if (!copy)
		return -VMPT_ERR_NOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char **nv = realloc(*v, (*n + 1) * sizeof(*nv));

		if (!nv || !(nv[*n] = strdup(tok))) {
			if (nv)
				*v = nv;
			free(copy);
			return -VMPT_ERR_NOMEM;
		}
		*v = nv;
		(*n)++;
	}
	free(copy);
	return 0;
}

/* "1,2,3" into ints, as perf's intlist. */
static int split_ints(const char *arg, int **v, size_t *n, char *why, size_t whylen)
{
	const char *p = arg;

	while (*p) {
		char *end;
		long x;
		int *nv;

		errno = 0;
		x = strtol(p, &end, 10);
		if (errno || end == p || (*end && *end != ',') || x < -1 || x > 0x7fffffff) {
			snprintf(why, whylen, "a list of numbers: 100,200");
			return -VMPT_ERR_INVAL;
		}
		nv = realloc(*v, (*n + 1) * sizeof(*nv));
		if (!nv)
			return -VMPT_ERR_NOMEM;
		*v = nv;
		nv[(*n)++] = (int)x;
		p = *end ? end + 1 : end;
	}
	return 0;
}

int script_filter_add(struct script_filter *sf, const char *opt, const char *arg,
		      char *why, size_t whylen)
{
	if (!strcmp(opt, "cpu")) {
		if (vmpt_parse_cpu_list(arg, sf->cpus, (int)sizeof(sf->cpus)) < 0) {
			snprintf(why, whylen, "a CPU list: 0-3,6");
			return -VMPT_ERR_INVAL;
		}
		sf->cpu_str = arg;
		return 0;
	}
	if (!strcmp(opt, "pid"))
		return split_ints(arg, &sf->pids, &sf->npids, why, whylen);
	if (!strcmp(opt, "tid"))
		return split_ints(arg, &sf->tids, &sf->ntids, why, whylen);
	if (!strcmp(opt, "comms"))
		return split_strs(arg, &sf->comms, &sf->ncomms);
	if (!strcmp(opt, "dsos"))
		return split_strs(arg, &sf->dsos, &sf->ndsos);
	if (!strcmp(opt, "symbols"))
		return split_strs(arg, &sf->syms, &sf->nsyms);
	if (!strcmp(opt, "time")) {
		/* Checked once the recording's time span is known. */
		sf->time_str = arg;
		return 0;
	}
	snprintf(why, whylen, "unknown filter");
	return -VMPT_ERR_INVAL;
}

/* perf's parse_nsec_time: "SEC[.FRACTION]", at most 9 fraction digits. */
static int parse_nsec(const char *s, uint64_t *ns)
{
	char frac[10];
	uint64_t sec;
	char *end;
	size_t n;

	if (!isdigit((unsigned char)*s))
		return -1;
	sec = strtoull(s, &end, 10);
	if (*end != '.' && *end)
		return -1;
	*ns = sec * 1000000000;
	if (!*end)
		return 0;
	n = strlen(++end);
	if (n > 9 || !n)
		return -1;
	memcpy(frac, end, n);
	memset(frac + n, '0', 9 - n);
	frac[9] = 0;
	for (size_t i = 0; i < 9; i++)
		if (!isdigit((unsigned char)frac[i]))
			return -1;
	*ns += strtoull(frac, NULL, 10);
	return 0;
}

/* "START,STOP", either part may be empty. */
static int parse_range(const char *s, uint64_t *from, uint64_t *to)
{
	const char *comma = strchr(s, ',');
	char start[64];

	*from = *to = 0;
	if (!comma || (size_t)(comma - s) >= sizeof(start))
		return -1;
	memcpy(start, s, (size_t)(comma - s));
	start[comma - s] = 0;
	if (start[0] && parse_nsec(start, from) < 0)
		return -1;
	if (comma[1] && parse_nsec(comma + 1, to) < 0)
		return -1;
	if (*to && *to < *from)
		return -1;
	return 0;
}

static int parse_percent(const char *s, double *pcnt)
{
	char *end;

	*pcnt = strtod(s, &end) / 100.0;
	return end != s && end[0] == '%' && !end[1] ? 0 : -1;
}

/* "A%/N" (the N-th slice of A%) or "A%-B%". */
static int percent_range(char *s, uint64_t first, uint64_t last, uint64_t *from,
			 uint64_t *to)
{
	double total = (double)(last - first), a, b;
	char *p;

	if ((p = strchr(s, '/'))) {
		char *end;
		long n;

		*p = 0;
		if (parse_percent(s, &a) < 0 || a <= 0.0)
			return -1;
		n = strtol(p + 1, &end, 10);
		if (*end || end == p + 1)
			return -1;
		b = a * (double)n;
		a = a * (double)(n - 1);
	} else if ((p = strchr(s, '-'))) {
		*p = 0;
		if (parse_percent(s, &a) < 0 || parse_percent(p + 1, &b) < 0)
			return -1;
	} else {
		if (parse_percent(s, &b) < 0)
			return -1;
		a = 0.0;
	}
	if (a < 0.0 || a > 1.0 || b < 0.0 || b > 1.0 || a > b)
		return -1;
	*from = first + (uint64_t)(total * a);
	*to = first + (uint64_t)(total * b);
	return 0;
}

int script_time_parse(const char *s, uint64_t first, uint64_t last, uint64_t **from,
		      uint64_t **to)
{
	int percent = strchr(s, '%') != NULL;
	char *copy = strdup(s), *tok, *save = NULL;
	const char *delim = percent ? "," : " ";
	int n = 0;

	*from = *to = NULL;
	if (!copy)
		return -VMPT_ERR_NOMEM;
	for (tok = strtok_r(copy, delim, &save); tok; tok = strtok_r(NULL, delim, &save)) {
		uint64_t *nf = realloc(*from, (size_t)(n + 1) * sizeof(*nf)), *nt;

		if (!nf)
			goto nomem;
		*from = nf;
		nt = realloc(*to, (size_t)(n + 1) * sizeof(*nt));
		if (!nt)
			goto nomem;
		*to = nt;
		if ((percent ? percent_range(tok, first, last, &nf[n], &nt[n]) :
			       parse_range(tok, &nf[n], &nt[n])) < 0)
			goto bad;
		/* perf takes ranges in order, not overlapping. */
		if (n && (!nt[n - 1] || nt[n - 1] >= nf[n]))
			goto bad;
		n++;
	}
	free(copy);
	if (!n)
		goto bad_empty;
	return n;
nomem:
	free(copy);
	free(*from);
	free(*to);
	*from = *to = NULL;
	return -VMPT_ERR_NOMEM;
bad:
	free(copy);
bad_empty:
	free(*from);
	free(*to);
	*from = *to = NULL;
	return -VMPT_ERR_INVAL;
}

/* The recording's span for percentages: perf's SAMPLE_TIME, else (perf
 * refuses then) the first and last record times, the trace's bounds.
 */
static void time_span(const struct vmpt_session *s, uint64_t *first, uint64_t *last)
{
	*first = s->pd.env.first_sample_time;
	*last = s->pd.env.last_sample_time;
	if (*first || *last)
		return;
	*first = UINT64_MAX;
	for (size_t i = 0; i < s->n_sb; i++) {
		uint64_t t = s->sb[i].sid.time;

		if (!(s->sb[i].sid.present & PERF_SAMPLE_TIME) || !t)
			continue;
		if (t < *first)
			*first = t;
		if (t > *last)
			*last = t;
	}
	if (*first == UINT64_MAX)
		*first = 0;
}

int script_filter_settle(struct script_filter *sf, const struct vmpt_session *s,
			 struct vmpt_script_opts *op, char *err, size_t errlen)
{
	struct vmpt_script_filter *fl = &op->filter;

	if (sf->cpu_str) {
		int with_cpu = 0;

		for (size_t i = 0; i < s->pd.nr_attrs; i++)
			with_cpu |= !!(s->pd.attrs[i].attr.sample_type & PERF_SAMPLE_CPU);
		if (!with_cpu) {
			snprintf(err, errlen, "File does not contain CPU events. Remove "
				 "-C option to proceed.");
			return -VMPT_ERR_INVAL;
		}
		fl->cpus = sf->cpus;
		fl->ncpus = (int)sizeof(sf->cpus);
	}
	fl->pids = sf->pids;
	fl->npids = sf->npids;
	fl->tids = sf->tids;
	fl->ntids = sf->ntids;
	fl->comms = sf->comms;
	fl->ncomms = sf->ncomms;
	fl->dsos = sf->dsos;
	fl->ndsos = sf->ndsos;
	fl->syms = sf->syms;
	fl->nsyms = sf->nsyms;
	if (sf->time_str) {
		uint64_t first, last;
		int n;

		time_span(s, &first, &last);
		n = script_time_parse(sf->time_str, first, last, &sf->from, &sf->to);
		if (n < 0) {
			snprintf(err, errlen, "--time %s: invalid time string (START,STOP in "
				 "seconds.nanoseconds, several apart by spaces; or A%%/N, "
				 "A%%-B%%, apart by commas)", sf->time_str);
			return -VMPT_ERR_INVAL;
		}
		fl->time_from = sf->from;
		fl->time_to = sf->to;
		fl->ntimes = (size_t)n;
	}
	return 0;
}

void script_filter_free(struct script_filter *sf)
{
	for (size_t i = 0; i < sf->ncomms; i++)
		free(sf->comms[i]);
	for (size_t i = 0; i < sf->ndsos; i++)
		free(sf->dsos[i]);
	for (size_t i = 0; i < sf->nsyms; i++)
		free(sf->syms[i]);
	free(sf->comms);
	free(sf->dsos);
	free(sf->syms);
	free(sf->pids);
	free(sf->tids);
	free(sf->from);
	free(sf->to);
	memset(sf, 0, sizeof(*sf));
}
