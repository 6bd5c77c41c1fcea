/* SPDX-License-Identifier: MIT */
/* vmpt report --json: the same numbers as the text, for scripts, in the
 * shape docs/report.schema.json describes (times in ns of perf time with
 * a perf.data's time conversion, else TSC ticks: "time_unit").
 */
#include "vmpt_report_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_stats(FILE *f, const struct report_stats *st)
{
	int first = 1;

	fprintf(f, "\"count\": %" PRIu64 ", \"with_entry\": %" PRIu64 ", \"host_total\": %"
		PRIu64 ", \"host_mean\": %" PRIu64 ", \"host_min\": %" PRIu64 ", \"host_p50\": %"
		PRIu64 ", \"host_p99\": %" PRIu64 ", \"host_max\": %" PRIu64
		", \"guest_total\": %" PRIu64 ", \"histogram\": [", st->count, st->with_time,
		st->total, st->with_time ? st->total / st->with_time : 0, st->min, st->p50,
		st->p99, st->max, st->guest_total);
	for (int b = 0; b < 40; b++) {
		if (!st->hist[b])
			continue;
		fprintf(f, "%s{\"from\": %" PRIu64 ", \"to\": %" PRIu64 ", \"count\": %" PRIu64 "}",
			first ? "" : ", ", b ? (uint64_t)1 << b : 0, (uint64_t)1 << (b + 1),
			st->hist[b]);
		first = 0;
	}
	fputc(']', f);
}

int report_print_exits_json(struct vmpt_report *r, FILE *f)
{
	struct report_stats all;
	struct rip_count *rips;
	long *v;
	size_t n;
	int first = 1;

	report_exit_stats(r, report_keep_all, 0, &all);
	fputs("{\n  \"report\": \"vm-exits\",\n  \"input\": ", f);
	json_str(f, r->o->input);
	fprintf(f, ",\n  \"time_unit\": \"%s\",\n  \"exits\": [", r->o->have_tc ? "ns" : "tsc");
	for (size_t i = 0; i < r->n_exits; i++) {
		const struct vmpt_vm_exit *x = &r->exits[i];
		const char *dso;
		char sym[256];
		int reason = report_exit_reason(x);

		if (!report_in_time(r, x->tsc))
			continue;
		report_guest_sym(r, x->rip, x->vmcs, sym, sizeof(sym), &dso);
		fprintf(f, "%s\n    {\"time\": %" PRIu64 ", \"tsc\": %" PRIu64 ", \"vcpu\": %d, "
			"\"pid\": %d, \"tid\": %d, \"vmcs\": %" PRIu64 ", \"rip\": %" PRIu64
			", \"symbol\": ", first ? "" : ",", report_ns(r, x->tsc), x->tsc, x->vcpu,
			x->pid, x->tid, x->vmcs, x->rip);
		first = 0;
		json_str(f, sym);
		fputs(", \"dso\": ", f);
		json_str(f, dso);
		fprintf(f, ", \"reason\": %d, \"reason_name\": ", reason);
		json_str(f, reason >= 0 ? vmpt_exit_reason_name(reason) : NULL);
		fprintf(f, ", \"source\": \"%s\", \"qualification\": ", report_source_name(x->source));
		if (x->has_qual)
			fprintf(f, "%" PRIu64, x->qual);
		else
			fputs("null", f);
		fputs(", \"vector\": ", f);
		if (x->vector >= 0)
			fprintf(f, "%d", x->vector);
		else
			fputs("null", f);
		fputs(", \"handler\": ", f);
		json_str(f, x->handler);
		fputs(", \"handler_reason\": ", f);
		if (x->handler_reason >= 0)
			fprintf(f, "%d", x->handler_reason);
		else
			fputs("null", f);
		fputs(", \"host_time\": ", f);
		if (x->entry_tsc)
			fprintf(f, "%" PRIu64 ", \"host_ticks\": %" PRIu64,
				report_ns(r, x->entry_tsc) - report_ns(r, x->tsc),
				x->entry_tsc - x->tsc);
		else
			fputs("null, \"host_ticks\": null", f);
		fputs(", \"guest_time\": ", f);
		if (x->prev_entry_tsc)
			fprintf(f, "%" PRIu64 ", \"guest_ticks\": %" PRIu64,
				report_ns(r, x->tsc) - report_ns(r, x->prev_entry_tsc),
				x->tsc - x->prev_entry_tsc);
		else
			fputs("null, \"guest_ticks\": null", f);
		fputc('}', f);
	}
	fputs("\n  ],\n  \"all\": {", f);
	json_stats(f, &all);
	fputs("},\n  \"by_reason\": [", f);
	n = report_distinct(r, report_reason_of, &v);
	for (size_t i = 0; i < n; i++) {
		struct report_stats st;

		report_exit_stats(r, report_keep_reason, v[i], &st);
		fprintf(f, "%s\n    {\"reason\": %ld, \"reason_name\": ", i ? "," : "", v[i]);
		json_str(f, v[i] >= 0 ? vmpt_exit_reason_name((int)v[i]) : NULL);
		fputs(", ", f);
		json_stats(f, &st);
		fputc('}', f);
	}
	free(v);
	fputs("\n  ],\n  \"by_vcpu\": [", f);
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
		fprintf(f, "%s\n    {\"vcpu\": %ld, \"tid\": %d, ", i ? "," : "", v[i], tid);
		json_stats(f, &st);
		fputc('}', f);
	}
	free(v);
	fputs("\n  ],\n  \"top_rips\": [", f);
	n = report_top_rips(r, &rips);
	for (size_t i = 0; i < n && i < r->o->top; i++) {
		const char *dso;
		char sym[256];

		report_guest_sym(r, rips[i].rip, rips[i].vmcs, sym, sizeof(sym), &dso);
		fprintf(f, "%s\n    {\"rip\": %" PRIu64 ", \"symbol\": ", i ? "," : "", rips[i].rip);
		json_str(f, sym);
		fputs(", \"dso\": ", f);
		json_str(f, dso);
		fprintf(f, ", \"count\": %" PRIu64 ", \"host_total\": %" PRIu64 "}", rips[i].count,
			rips[i].host);
	}
	free(rips);
	fputs("\n  ]\n}\n", f);
	return 0;
}

int report_print_hot_json(struct vmpt_report *r, FILE *f)
{
	static const char *const names[VMPT_KEY_COUNT] = {
		"machine", "comm", "pid", "tid", "dso", "sym",
	};
	const struct vmpt_report_opts *o = r->o;
	int first = 1;

	fputs("{\n  \"report\": \"hot-spots\",\n  \"input\": ", f);
	json_str(f, o->input);
	fputs(",\n  \"sort\": [", f);
	for (int k = 0; k < o->nkeys; k++)
		fprintf(f, "%s\"%s\"", k ? ", " : "", names[o->keys[k]]);
	fprintf(f, "],\n  \"instructions\": %" PRIu64 ",\n  \"branches\": %" PRIu64
		",\n  \"cycles\": %" PRIu64 ",\n  \"rows\": [", r->insns, r->branches, r->cycles);
	for (size_t i = 0; i < r->n_rows; i++) {
		const struct report_row *row = &r->rows[i];
		double pct = r->insns ? 100.0 * (double)row->insns / (double)r->insns : 0;

		if (pct < o->percent_limit)
			continue;
		fprintf(f, "%s\n    {\"percent\": %.4f, \"machine\": \"%s\"", first ? "" : ",",
			pct, row->guest ? "guest" : "host");
		first = 0;
		for (int k = 0; k < o->nkeys; k++) {
			switch (o->keys[k]) {
			case VMPT_KEY_COMM:
				fputs(", \"comm\": ", f);
				json_str(f, row->comm);
				break;
			case VMPT_KEY_PID: fprintf(f, ", \"pid\": %d", row->pid); break;
			case VMPT_KEY_TID: fprintf(f, ", \"tid\": %d", row->tid); break;
			case VMPT_KEY_DSO:
				fputs(", \"dso\": ", f);
				json_str(f, row->dso);
				break;
			case VMPT_KEY_SYM:
				fputs(", \"sym\": ", f);
				json_str(f, row->sym);
				break;
			default: break;
			}
		}
		fprintf(f, ", \"instructions\": %" PRIu64 ", \"branches\": %" PRIu64
			", \"cycles\": %" PRIu64 ", \"ipc\": ", row->insns, row->branches, row->cycles);
		if (row->cycles)
			fprintf(f, "%.4f}", (double)row->insns / (double)row->cycles);
		else
			fputs("null}", f);
	}
	fputs("\n  ]\n}\n", f);
	return 0;
}
