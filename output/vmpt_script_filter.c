/* SPDX-License-Identifier: MIT */
/* perf script's sample filters (-C, --pid, --tid, --comm, --dsos,
 * --symbols, --time) and --itrace's initial skip.
 */
#include "vmpt_script_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int script_in_list(const int *v, size_t n, int x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

int script_in_strs(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; s && i < n; i++)
		if (!strcmp(v[i], s))
			return 1;
	return 0;
}

/* Is the state at TSC tsc in --time's ranges (perf's decoder makes no
 * samples outside them)?
 */
int script_in_time(const struct vmpt_consumer *c, uint64_t tsc)
{
	if (!c->o->filter.ntimes || !c->o->have_tc)
		return 1;
	return script_ns_in_time(c, vmpt_perf_tsc_to_time(&c->o->tc, tsc));
}

int script_ns_in_time(const struct vmpt_consumer *c, uint64_t ns)
{
	const struct vmpt_script_filter *fl = &c->o->filter;

	for (size_t i = 0; i < fl->ntimes; i++)
		if (ns >= fl->time_from[i] && (!fl->time_to[i] || ns <= fl->time_to[i]))
			return 1;
	return !fl->ntimes;
}

/* perf script's --dsos and --symbols on the code at ip (sec: its
 * section, or NULL to look it up).
 */
int script_code_shown(struct vmpt_consumer *c, const struct vmpt_section *sec, uint64_t ip,
		      int guest)
{
	const struct vmpt_script_filter *fl = &c->o->filter;
	struct vmpt_map_ref map = { 0 };
	const char *name = NULL;

	if (!sec && ip)
		sec = script_find(c, ip, guest);
	if (sec)
		name = sec->name;
	else if (ip && c->o->map_of &&
		 c->o->map_of(c->o->map_ctx, c->task.pid, c->task.space, ip, &map) == 0)
		name = map.name;
	if (fl->ndsos) {
		const char *slash = name ? strrchr(name, '/') : NULL;

		/* perf matches the dso's short name (the file name) or its
		 * long one (the path).
		 */
		if (!name || (!script_in_strs(fl->dsos, fl->ndsos, name) &&
			      !(slash && name[0] != '[' &&
				script_in_strs(fl->dsos, fl->ndsos, slash + 1))))
			return 0;
	}
	if (fl->nsyms) {
		const struct vmpt_symbol *sym = NULL;
		uint64_t from, to;
		char addr[24];

		if (sec)
			sym = vmpt_section_symbol_span(sec, ip, &from, &to);
		if (!sym)
			return 0;
		snprintf(addr, sizeof(addr), "0x%" PRIx64, from);
		if (!script_in_strs(fl->syms, fl->nsyms, sym->name) &&
		    !script_in_strs(fl->syms, fl->nsyms, addr))
			return 0;
	}
	return 1;
}

/* perf script's -C, --pid, --tid, --comm, --dsos, --symbols and --time
 * on one sample (machine__resolve's filters).
 */
int script_shown(struct vmpt_consumer *c, const struct script_sample *smp)
{
	const struct vmpt_script_filter *fl = &c->o->filter;
	const struct vmpt_task *t = &c->task;

	if (fl->ncpus && t->cpu >= 0 && (t->cpu >= fl->ncpus || !fl->cpus[t->cpu]))
		return 0;
	if (fl->npids && !script_in_list(fl->pids, fl->npids, t->pid))
		return 0;
	if (fl->ntids && !script_in_list(fl->tids, fl->ntids, t->tid))
		return 0;
	if (fl->ncomms && !script_in_strs(fl->comms, fl->ncomms, smp->guest ? NULL : t->comm))
		return 0;
	if (!script_in_time(c, smp->time))
		return 0;
	return !(fl->ndsos || fl->nsyms) || script_code_shown(c, smp->sec, smp->ip, smp->guest);
}

/* perf's s option: the first N samples synthesized are not delivered. */
int script_skipped(struct vmpt_consumer *c)
{
	return c->o->it.initial_skip && c->s->num_events++ < c->o->it.initial_skip;
}
