/* SPDX-License-Identifier: MIT */
/* vmpt report's text: aligned tables for people (perf report --stdio's
 * '#' headers), for the VM exits (per reason, per vCPU, a histogram of
 * host times, the guest RIPs that exit most, every exit with --per-exit)
 * and for the hot spots.
 */
#include "vmpt_report_int.h"
#include "vmpt/error.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mean(const struct report_stats *st)
{
	return st->with_time ? st->total / st->with_time : 0;
}

/* The distinct values of f over the exits in time, ascending. */
static void print_time(struct vmpt_report *r, FILE *f, uint64_t tsc)
{
	uint64_t ns = report_ns(r, tsc);

	if (r->o->have_tc)
		fprintf(f, "%" PRIu64 ".%09" PRIu64, ns / 1000000000, ns % 1000000000);
	else
		fprintf(f, "%" PRIu64, tsc);
}

static void histogram(FILE *f, const struct report_stats *st)
{
	uint64_t most = 0;

	for (int b = 0; b < 40; b++)
		if (st->hist[b] > most)
			most = st->hist[b];
	for (int b = 0; b < 40; b++) {
		if (!st->hist[b])
			continue;
		fprintf(f, "  [%10" PRIu64 ", %10" PRIu64 ") %8" PRIu64 " ",
			b ? (uint64_t)1 << b : 0, (uint64_t)1 << (b + 1), st->hist[b]);
		for (uint64_t k = 0; k < (st->hist[b] * 40 + most - 1) / most; k++)
			fputc('#', f);
		fputc('\n', f);
	}
}

int report_print_exits_text(struct vmpt_report *r, FILE *f)
{
	const char *unit = r->o->have_tc ? "ns" : "ticks";
	struct report_stats all;
	uint64_t by_src[3] = { 0 }, both = 0, agree = 0;
	struct rip_count *rips;
	long *v;
	size_t n;

	report_exit_stats(r, report_keep_all, 0, &all);
	for (size_t i = 0; i < r->n_exits; i++) {
		const struct vmpt_vm_exit *x = &r->exits[i];

		if (!report_in_time(r, x->tsc))
			continue;
		by_src[x->source]++;
		if (x->source == VMPT_EXIT_SOURCE_EVENT_TRACE && x->handler) {
			both++;
			agree += x->handler_reason == x->reason;
		}
	}
	fprintf(f, "# vmpt report --vm-exits%s%s\n#\n", r->o->input ? " of " : "",
		r->o->input ? r->o->input : "");
	fprintf(f, "# %" PRIu64 " VM exits, %" PRIu64 " with their next VM entry; reasons from "
		"Event Trace: %" PRIu64 ", from KVM's handler: %" PRIu64 ", unknown: %" PRIu64
		"\n", all.count, all.with_time, by_src[VMPT_EXIT_SOURCE_EVENT_TRACE],
		by_src[VMPT_EXIT_SOURCE_HANDLER], by_src[VMPT_EXIT_SOURCE_NONE]);
	if (both)
		fprintf(f, "# Event Trace and the handler agree on %" PRIu64 " of %" PRIu64
			" exits\n", agree, both);
	if (!all.count)
		fprintf(f, "# no VM exit in the trace: no guest ran where it was traced\n");
	fprintf(f, "# host time: from the exit to the vCPU's next VM entry; guest time: "
		"from the VM entry before the exit (%s)\n#\n", unit);

	fprintf(f, "# %-26s %7s %12s %9s %9s %9s %9s %12s\n", "reason", "exits", "host total",
		"mean", "p50", "p99", "max", "guest total");
	n = report_distinct(r, report_reason_of, &v);
	for (size_t i = 0; i < n; i++) {
		struct report_stats st;
		char label[48];

		report_exit_stats(r, report_keep_reason, v[i], &st);
		report_reason_label((int)v[i], label, sizeof(label));
		fprintf(f, "  %-26s %7" PRIu64 " %12" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9"
			PRIu64 " %9" PRIu64 " %12" PRIu64 "\n", label, st.count, st.total,
			mean(&st), st.p50, st.p99, st.max, st.guest_total);
	}
	fprintf(f, "  %-26s %7" PRIu64 " %12" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64
		" %9" PRIu64 " %12" PRIu64 "\n#\n", "all", all.count, all.total, mean(&all),
		all.p50, all.p99, all.max, all.guest_total);
	free(v);

	fprintf(f, "# %-6s %8s %7s %12s %12s %7s %9s %9s\n", "vCPU", "tid", "exits",
		"host total", "guest total", "host %", "p50", "p99");
	n = report_distinct(r, report_vcpu_of, &v);
	for (size_t i = 0; i < n; i++) {
		struct report_stats st;
		int tid = -1;

		report_exit_stats(r, report_keep_vcpu, v[i], &st);
		for (size_t k = 0; k < r->n_exits; k++)
			if (r->exits[k].vcpu == v[i]) {
				tid = r->exits[k].tid;
				break;
			}
		fprintf(f, "  %-6ld %8d %7" PRIu64 " %12" PRIu64 " %12" PRIu64 " %6.1f%% %9"
			PRIu64 " %9" PRIu64 "\n", v[i], tid, st.count, st.total, st.guest_total,
			st.total + st.guest_total ?
			100.0 * (double)st.total / (double)(st.total + st.guest_total) : 0.0,
			st.p50, st.p99);
	}
	free(v);

	fprintf(f, "#\n# host time per exit (%s), all reasons\n", unit);
	histogram(f, &all);
	n = report_distinct(r, report_reason_of, &v);
	for (size_t i = 0; i < n && n > 1; i++) {
		struct report_stats st;
		char label[48];

		report_exit_stats(r, report_keep_reason, v[i], &st);
		report_reason_label((int)v[i], label, sizeof(label));
		fprintf(f, "# host time per exit (%s), %s\n", unit, label);
		histogram(f, &st);
	}
	free(v);

	n = report_top_rips(r, &rips);
	fprintf(f, "#\n# guest RIPs that exit most\n# %7s %12s %18s  %s\n", "exits", "host total",
		"guest RIP", "symbol");
	for (size_t i = 0; i < n && i < r->o->top; i++) {
		const char *dso = NULL;
		char sym[256];

		report_guest_sym(r, rips[i].rip, rips[i].vmcs, sym, sizeof(sym), &dso);
		fprintf(f, "  %7" PRIu64 " %12" PRIu64 " %18" PRIx64 "  %s (%s)\n", rips[i].count,
			rips[i].host, rips[i].rip, sym, dso ? dso : "[unknown]");
	}
	free(rips);

	if (!r->o->per_exit)
		return 0;
	fprintf(f, "#\n# %-18s %4s %7s %16s %-28s %-22s %10s %-11s %-26s %9s %9s\n", "time",
		"vCPU", "tid", "guest RIP", "symbol", "reason", "qual", "source", "handler",
		"host", "guest");
	for (size_t i = 0; i < r->n_exits; i++) {
		const struct vmpt_vm_exit *x = &r->exits[i];
		const char *dso;
		char sym[256], label[48], qual[24] = "-", host[24] = "-", guest[24] = "-";

		if (!report_in_time(r, x->tsc))
			continue;
		report_guest_sym(r, x->rip, x->vmcs, sym, sizeof(sym), &dso);
		report_reason_label(report_exit_reason(x), label, sizeof(label));
		if (x->has_qual)
			snprintf(qual, sizeof(qual), "%#" PRIx64, x->qual);
		if (x->entry_tsc)
			snprintf(host, sizeof(host), "%" PRIu64,
				 report_ns(r, x->entry_tsc) - report_ns(r, x->tsc));
		if (x->prev_entry_tsc)
			snprintf(guest, sizeof(guest), "%" PRIu64,
				 report_ns(r, x->tsc) - report_ns(r, x->prev_entry_tsc));
		fputs("  ", f);
		print_time(r, f, x->tsc);
		fprintf(f, " %4d %7d %16" PRIx64 " %-28s %-22s %10s %-11s %-26s %9s %9s\n",
			x->vcpu, x->tid, x->rip, sym, label, qual, report_source_name(x->source),
			x->handler ? x->handler : "-", host, guest);
	}
	return 0;
}

static const char *key_name(enum vmpt_report_key k)
{
	static const char *const names[VMPT_KEY_COUNT] = {
		[VMPT_KEY_MACHINE] = "Machine", [VMPT_KEY_COMM] = "Command",
		[VMPT_KEY_PID] = "Pid", [VMPT_KEY_TID] = "Tid",
		[VMPT_KEY_DSO] = "Shared Object", [VMPT_KEY_SYM] = "Symbol",
	};
	return names[k];
}

static int key_width(enum vmpt_report_key k)
{
	return k == VMPT_KEY_DSO ? 24 : k == VMPT_KEY_COMM ? 16 : k == VMPT_KEY_SYM ? 0 : 8;
}

int report_print_hot_text(struct vmpt_report *r, FILE *f)
{
	const struct vmpt_report_opts *o = r->o;
	int have_ipc = r->cycles > 0;

	fprintf(f, "# vmpt report%s%s\n#\n", o->input ? " of " : "", o->input ? o->input : "");
	fprintf(f, "# Instructions: %" PRIu64 "  Branches: %" PRIu64, r->insns, r->branches);
	if (have_ipc)
		fprintf(f, "  Cycles: %" PRIu64 "  IPC: %.2f", r->cycles,
			(double)r->insns / (double)r->cycles);
	fprintf(f, "\n#\n# %8s %12s %10s", "Overhead", "Instructions", "Branches");
	if (have_ipc)
		fprintf(f, " %12s %6s", "Cycles", "IPC");
	fprintf(f, "  %-7s", "Machine");
	for (int k = 0; k < o->nkeys; k++)
		if (o->keys[k] != VMPT_KEY_MACHINE)
			fprintf(f, "  %-*s", key_width(o->keys[k]), key_name(o->keys[k]));
	fputc('\n', f);
	for (size_t i = 0; i < r->n_rows; i++) {
		const struct report_row *row = &r->rows[i];
		double pct = r->insns ? 100.0 * (double)row->insns / (double)r->insns : 0;

		if (pct < o->percent_limit)
			continue;
		fprintf(f, "  %7.2f%% %12" PRIu64 " %10" PRIu64, pct, row->insns, row->branches);
		if (have_ipc && row->cycles)
			fprintf(f, " %12" PRIu64 " %6.2f", row->cycles,
				(double)row->insns / (double)row->cycles);
		else if (have_ipc)
			fprintf(f, " %12s %6s", "-", "-");
		fprintf(f, "  %-7s", row->guest ? "guest" : "host");
		for (int k = 0; k < o->nkeys; k++) {
			char num[16];
			const char *s = NULL;

			switch (o->keys[k]) {
			case VMPT_KEY_MACHINE: continue;
			case VMPT_KEY_COMM: s = row->comm ? row->comm : ":-1"; break;
			case VMPT_KEY_PID:
				snprintf(num, sizeof(num), "%d", row->pid);
				s = num;
				break;
			case VMPT_KEY_TID:
				snprintf(num, sizeof(num), "%d", row->tid);
				s = num;
				break;
			case VMPT_KEY_DSO:
				/* perf report's short name: the file's */
				s = row->dso ? row->dso : "[unknown]";
				if (s[0] != '[' && strrchr(s, '/'))
					s = strrchr(s, '/') + 1;
				break;
			case VMPT_KEY_SYM: s = row->sym ? row->sym : "[unknown]"; break;
			default: break;
			}
			fprintf(f, "  %-*s", key_width(o->keys[k]), s);
		}
		fputc('\n', f);
	}
	return 0;
}
