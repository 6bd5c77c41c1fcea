/* SPDX-License-Identifier: MIT */
/* perf's export-to-sqlite.py / export-to-postgresql.py tables from the
 * exporter's objects: the same rows for the same callbacks (perf's
 * db-export.c and trace-event-python.c), the "unknown" rows with id 0,
 * the branch types, the views perf's exported-sql-viewer.py reads, and
 * perf's last steps (indexes, comms.has_calls, unused tables dropped).
 */
#include "vmpt_export_sql.h"
#include "vmpt_script_stack.h"
#include "vmpt/error.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The columns as export-to-sqlite.py declares them (postgresql: the id
 * is a bigint, its primary key comes at the end; "transaction" keeps its
 * name; the flags of ptwrite, exstop and pwre are booleans).
 */
static const struct {
	const char *name, *cols;
	int n;
} tables[ST_COUNT] = {
	[ST_SELECTED_EVENTS] = { "selected_events", "name varchar(80)", 2 },
	[ST_MACHINES] = { "machines", "pid integer, root_dir varchar(4096)", 3 },
	[ST_THREADS] = { "threads", "machine_id bigint, process_id bigint, pid integer, "
			 "tid integer", 5 },
	[ST_COMMS] = { "comms", "comm varchar(16), c_thread_id bigint, c_time bigint, "
		       "exec_flag boolean", 5 },
	[ST_COMM_THREADS] = { "comm_threads", "comm_id bigint, thread_id bigint", 3 },
	[ST_DSOS] = { "dsos", "machine_id bigint, short_name varchar(256), "
		      "long_name varchar(4096), build_id varchar(64)", 5 },
	[ST_SYMBOLS] = { "symbols", "dso_id bigint, sym_start bigint, sym_end bigint, "
			 "binding integer, name varchar(2048)", 6 },
	[ST_BRANCH_TYPES] = { "branch_types", "name varchar(80)", 2 },
	[ST_SAMPLES] = { "samples", NULL, 25 },
	[ST_CALL_PATHS] = { "call_paths", "parent_id bigint, symbol_id bigint, ip bigint", 4 },
	[ST_CALLS] = { "calls", "thread_id bigint, comm_id bigint, call_path_id bigint, "
		       "call_time bigint, return_time bigint, branch_count bigint, "
		       "call_id bigint, return_id bigint, parent_call_path_id bigint, "
		       "flags integer, parent_id bigint, insn_count bigint, cyc_count bigint", 14 },
	[ST_PTWRITE] = { "ptwrite", "payload bigint, exact_ip BOOL", 3 },
	[ST_CBR] = { "cbr", "cbr integer, mhz integer, percent integer", 4 },
	[ST_MWAIT] = { "mwait", "hints integer, extensions integer", 3 },
	[ST_PWRE] = { "pwre", "cstate integer, subcstate integer, hw BOOL", 4 },
	[ST_EXSTOP] = { "exstop", "exact_ip BOOL", 2 },
	[ST_PWRX] = { "pwrx", "deepest_cstate integer, last_cstate integer, "
		      "wake_reason integer", 4 },
	[ST_CONTEXT_SWITCHES] = { "context_switches", "machine_id bigint, time bigint, "
				  "cpu integer, thread_out_id bigint, comm_out_id bigint, "
				  "thread_in_id bigint, comm_in_id bigint, flags integer", 9 },
};

const char *sql_table_name(enum sql_table t)
{
	return tables[t].name;
}

int sql_create_table(struct export_sql *q, enum sql_table t, char *buf, size_t size)
{
	int pg = q->be->pg, branches = q->x->o->branches_only;
	const char *cols = tables[t].cols;
	char samples[1024];
	char *p;
	int n;

	if (t == ST_SAMPLES) {
		snprintf(samples, sizeof(samples),
			 "evsel_id bigint, machine_id bigint, thread_id bigint, comm_id bigint, "
			 "dso_id bigint, symbol_id bigint, sym_offset bigint, ip bigint, "
			 "time bigint, cpu integer, to_dso_id bigint, to_symbol_id bigint, "
			 "to_sym_offset bigint, to_ip bigint, %sbranch_type integer, "
			 "in_tx boolean, call_path_id bigint, insn_count bigint, "
			 "cyc_count bigint, flags integer",
			 branches ? "" : pg ? "period bigint, weight bigint, transaction bigint, "
					      "data_src bigint, " :
					      "period bigint, weight bigint, transaction_ bigint, "
					      "data_src bigint, ");
		cols = samples;
	}
	n = snprintf(buf, size, "CREATE TABLE %s (id %s, %s)", tables[t].name,
		     !pg ? "integer NOT NULL PRIMARY KEY" :
		     t == ST_BRANCH_TYPES ? "integer NOT NULL" : "bigint NOT NULL", cols);
	if (n < 0 || (size_t)n >= size)
		return -1;
	/* sqlite keeps flags as integers, postgresql as booleans */
	while ((p = strstr(buf, "BOOL")))
		memcpy(p, pg ? "bool" : "int ", 4);
	return 0;
}

/* ---- Rows ---- */

#define I(v) ((struct sql_val){ .kind = SV_INT, .i = (int64_t)(v) })
#define R(v) ((struct sql_val){ .kind = SV_REAL, .d = (v) })
#define T(v) ((struct sql_val){ .kind = SV_TEXT, .s = (v) })

static void row(struct export_sql *q, enum sql_table t, const struct sql_val *v, int n)
{
	if (q->x->failed)
		return;
	q->rows[t]++;
	q->be->row(q, t, v, n);
}

static struct export_sql *sql(struct vmpt_export *x)
{
	return x->fmt;
}

static void sql_evsel(struct vmpt_export *x, uint64_t id, const char *name)
{
	struct sql_val v[] = { I(id), T(name) };

	row(sql(x), ST_SELECTED_EVENTS, v, 2);
}

static void sql_machine(struct vmpt_export *x, const struct export_machine *m)
{
	struct sql_val v[] = { I(m->db_id), I(m->pid), T("") };

	row(sql(x), ST_MACHINES, v, 3);
}

static void sql_thread(struct vmpt_export *x, const struct export_thread *t)
{
	struct sql_val v[] = { I(t->db_id), I(t->machine->db_id), I(t->main->db_id),
			       I(t->pid), I(t->tid) };

	row(sql(x), ST_THREADS, v, 5);
}

static void sql_comm(struct vmpt_export *x, const struct export_comm *c)
{
	struct sql_val v[] = { I(c->db_id), T(c->name), I(c->thread->db_id), I(c->time),
			       I(c->exec) };

	row(sql(x), ST_COMMS, v, 5);
}

static void sql_comm_thread(struct vmpt_export *x, uint64_t id, const struct export_comm *c,
			    const struct export_thread *t)
{
	struct sql_val v[] = { I(id), I(c->db_id), I(t->db_id) };

	row(sql(x), ST_COMM_THREADS, v, 3);
}

static void sql_dso(struct vmpt_export *x, const struct export_dso *d)
{
	struct sql_val v[] = { I(d->db_id), I(d->machine->db_id), T(d->short_name),
			       T(d->long_name), T(d->build_id) };

	row(sql(x), ST_DSOS, v, 5);
}

static void sql_symbol(struct vmpt_export *x, const struct export_sym *s)
{
	struct sql_val v[] = { I(s->db_id), I(s->dso->db_id), I(s->start), I(s->end),
			       I(s->binding), T(s->name) };

	row(sql(x), ST_SYMBOLS, v, 6);
}

static void sql_call_path(struct vmpt_export *x, const struct export_call_path *cp)
{
	struct sql_val v[] = { I(cp->db_id), I(cp->parent ? cp->parent->db_id : 0),
			       I(cp->sym ? cp->sym->db_id : 0), I(cp->ip) };

	if (!x->o->no_calls)
		row(sql(x), ST_CALL_PATHS, v, 4);
}

static void sql_call_return(struct vmpt_export *x, const struct export_call_return *cr)
{
	struct sql_val v[] = {
		I(cr->db_id), I(cr->thread->db_id), I(cr->comm ? cr->comm->db_id : 0),
		I(cr->cp->db_id), I(cr->call_time), I(cr->return_time), I(cr->branch_count),
		I(cr->call_ref), I(cr->return_ref),
		I(cr->cp->parent ? cr->cp->parent->db_id : 0), I(cr->flags),
		I(cr->parent_db_id), I(cr->insn_count), I(cr->cyc_count),
	};

	if (!x->o->no_calls)
		row(sql(x), ST_CALLS, v, 14);
}

static void sql_context_switch(struct vmpt_export *x, uint64_t id, uint64_t machine_id,
			       uint64_t time, int cpu, uint64_t out_thread, uint64_t out_comm,
			       uint64_t in_thread, uint64_t in_comm, int flags)
{
	struct sql_val v[] = { I(id), I(machine_id), I(time), I(cpu), I(out_thread),
			       I(out_comm), I(in_thread), I(in_comm), I(flags) };

	row(sql(x), ST_CONTEXT_SWITCHES, v, 9);
}

/* perf's PERF_BRANCH_MASK: the flags that make a branch type. */
#define BRANCH_MASK (PF_BRANCH | PF_CALL | PF_RETURN | PF_CONDITIONAL | PF_SYSCALLRET | \
		     PF_ASYNC | PF_INTERRUPT | PF_TX_ABORT | PF_TRACE_BEGIN | PF_TRACE_END | \
		     PF_VMENTRY | PF_VMEXIT)

static void sql_sample(struct vmpt_export *x, const struct export_sample *es)
{
	const struct vmpt_script_sample *s = es->s;
	const struct vmpt_script_opts *o = x->o->script;
	const struct export_sym *f = es->sym, *t = es->to_sym;
	struct sql_val v[25];
	int n = 0;

	v[n++] = I(es->db_id);
	v[n++] = I(es->evsel_db_id);
	v[n++] = I(es->thread->machine->db_id);
	v[n++] = I(es->thread->db_id);
	v[n++] = I(es->comm ? es->comm->db_id : 0);
	v[n++] = I(f ? f->dso->db_id : 0);
	v[n++] = I(f ? f->db_id : 0);
	v[n++] = I(f ? s->ip - f->addr : 0);
	v[n++] = I(s->ip);
	v[n++] = I(es->time);
	v[n++] = I(s->task->cpu);
	v[n++] = I(t ? t->dso->db_id : 0);
	v[n++] = I(t ? t->db_id : 0);
	v[n++] = I(t ? s->addr - t->addr : 0);
	v[n++] = I(s->addr);
	if (!x->o->branches_only) {
		/* perf's synth samples (psb, cbr, ...) have period 1 */
		v[n++] = I(s->period ? s->period : 1);
		v[n++] = I(0);	/* weight, transaction, data_src: none in Intel PT's */
		v[n++] = I(0);
		v[n++] = I(0);
	}
	v[n++] = I(s->flags & BRANCH_MASK);
	v[n++] = I(!!(s->flags & PF_IN_TX));
	v[n++] = I(es->call_path_db_id);
	v[n++] = I(s->insn_cnt);
	v[n++] = I(s->cyc_cnt);
	v[n++] = I(s->flags);
	row(sql(x), ST_SAMPLES, v, n);
	if (s->ev == VMPT_SE_CBR && s->cbr) {
		/* perf 6.1's script divides with Python 3's '/': reals */
		double khz = (double)(s->cbr * o->cbr2khz);
		struct sql_val c[] = {
			I(es->db_id), I(s->cbr), R((khz + 500) / 1000),
			R(o->max_nonturbo ? ((double)s->cbr * 1000 / o->max_nonturbo + 5) / 10 : 0),
		};

		row(sql(x), ST_CBR, c, 4);
	}
}

/* ---- Begin and end ---- */

static const struct { uint32_t type; const char *name; } branch_types[] = {
	{ 0, "no branch" },
	{ PF_BRANCH | PF_CALL, "call" },
	{ PF_BRANCH | PF_RETURN, "return" },
	{ PF_BRANCH | PF_CONDITIONAL, "conditional jump" },
	{ PF_BRANCH, "unconditional jump" },
	{ PF_BRANCH | PF_CALL | PF_INTERRUPT, "software interrupt" },
	{ PF_BRANCH | PF_RETURN | PF_INTERRUPT, "return from interrupt" },
	{ PF_BRANCH | PF_CALL | PF_SYSCALLRET, "system call" },
	{ PF_BRANCH | PF_RETURN | PF_SYSCALLRET, "return from system call" },
	{ PF_BRANCH | PF_ASYNC, "asynchronous branch" },
	{ PF_BRANCH | PF_CALL | PF_ASYNC | PF_INTERRUPT, "hardware interrupt" },
	{ PF_BRANCH | PF_TX_ABORT, "transaction abort" },
	{ PF_BRANCH | PF_TRACE_BEGIN, "trace begin" },
	{ PF_BRANCH | PF_TRACE_END, "trace end" },
	{ PF_BRANCH | PF_CALL | PF_VMENTRY, "vm entry" },
	{ PF_BRANCH | PF_CALL | PF_VMEXIT, "vm exit" },
};

/* The views exported-sql-viewer.py and perf's examples read; HEX(x) is
 * each dialect's hex text.
 */
static const char *const views[] = {
	"CREATE VIEW machines_view AS SELECT id, pid, root_dir, CASE WHEN id=0 THEN 'unknown' "
	"WHEN pid=-1 THEN 'host' ELSE 'guest' END AS host_or_guest FROM machines",
	"CREATE VIEW dsos_view AS SELECT id, machine_id, (SELECT host_or_guest FROM "
	"machines_view WHERE id = machine_id) AS host_or_guest, short_name, long_name, "
	"build_id FROM dsos",
	"CREATE VIEW symbols_view AS SELECT id, name, (SELECT short_name FROM dsos WHERE "
	"id=dso_id) AS dso, dso_id, sym_start, sym_end, CASE WHEN binding=0 THEN 'local' "
	"WHEN binding=1 THEN 'global' ELSE 'weak' END AS binding FROM symbols",
	"CREATE VIEW threads_view AS SELECT id, machine_id, (SELECT host_or_guest FROM "
	"machines_view WHERE id = machine_id) AS host_or_guest, process_id, pid, tid FROM "
	"threads",
	"CREATE VIEW comm_threads_view AS SELECT comm_id, (SELECT comm FROM comms WHERE id = "
	"comm_id) AS command, thread_id, (SELECT pid FROM threads WHERE id = thread_id) AS "
	"pid, (SELECT tid FROM threads WHERE id = thread_id) AS tid FROM comm_threads",
	"CALLS CREATE VIEW call_paths_view AS SELECT c.id, HEX(c.ip) AS ip, c.symbol_id, "
	"(SELECT name FROM symbols WHERE id = c.symbol_id) AS symbol, (SELECT dso_id FROM "
	"symbols WHERE id = c.symbol_id) AS dso_id, (SELECT dso FROM symbols_view WHERE id = "
	"c.symbol_id) AS dso_short_name, c.parent_id, HEX(p.ip) AS parent_ip, p.symbol_id AS "
	"parent_symbol_id, (SELECT name FROM symbols WHERE id = p.symbol_id) AS "
	"parent_symbol, (SELECT dso_id FROM symbols WHERE id = p.symbol_id) AS "
	"parent_dso_id, (SELECT dso FROM symbols_view WHERE id = p.symbol_id) AS "
	"parent_dso_short_name FROM call_paths c INNER JOIN call_paths p ON p.id = "
	"c.parent_id",
	"CALLS CREATE VIEW calls_view AS SELECT calls.id, thread_id, (SELECT pid FROM threads "
	"WHERE id = thread_id) AS pid, (SELECT tid FROM threads WHERE id = thread_id) AS tid, "
	"(SELECT comm FROM comms WHERE id = comm_id) AS command, call_path_id, HEX(ip) AS ip, "
	"symbol_id, (SELECT name FROM symbols WHERE id = symbol_id) AS symbol, call_time, "
	"return_time, return_time - call_time AS elapsed_time, branch_count, insn_count, "
	"cyc_count, IPC, call_id, return_id, CASE WHEN flags=0 THEN '' WHEN flags=1 THEN "
	"'no call' WHEN flags=2 THEN 'no return' WHEN flags=3 THEN 'no call/return' WHEN "
	"flags=6 THEN 'jump' ELSE FLAGS END AS flags, parent_call_path_id, calls.parent_id "
	"FROM calls INNER JOIN call_paths ON call_paths.id = call_path_id",
	"CREATE VIEW samples_view AS SELECT id, time, cpu, (SELECT pid FROM threads WHERE id = "
	"thread_id) AS pid, (SELECT tid FROM threads WHERE id = thread_id) AS tid, (SELECT "
	"comm FROM comms WHERE id = comm_id) AS command, (SELECT name FROM selected_events "
	"WHERE id = evsel_id) AS event, HEX(ip) AS ip_hex, (SELECT name FROM symbols WHERE id "
	"= symbol_id) AS symbol, sym_offset, (SELECT short_name FROM dsos WHERE id = dso_id) "
	"AS dso_short_name, HEX(to_ip) AS to_ip_hex, (SELECT name FROM symbols WHERE id = "
	"to_symbol_id) AS to_symbol, to_sym_offset, (SELECT short_name FROM dsos WHERE id = "
	"to_dso_id) AS to_dso_short_name, (SELECT name FROM branch_types WHERE id = "
	"branch_type) AS branch_type_name, in_tx, insn_count, cyc_count, IPC, flags FROM "
	"samples",
	"CREATE VIEW ptwrite_view AS SELECT ptwrite.id, time, cpu, HEX(payload) AS "
	"payload_hex, CASE WHEN exact_ip=FALSE THEN 'False' ELSE 'True' END AS exact_ip FROM "
	"ptwrite INNER JOIN samples ON samples.id = ptwrite.id",
	"CREATE VIEW cbr_view AS SELECT cbr.id, time, cpu, cbr, mhz, percent FROM cbr INNER "
	"JOIN samples ON samples.id = cbr.id",
	"CREATE VIEW context_switches_view AS SELECT context_switches.id, "
	"context_switches.machine_id, context_switches.time, context_switches.cpu, th_out.pid "
	"AS pid_out, th_out.tid AS tid_out, comm_out.comm AS comm_out, th_in.pid AS pid_in, "
	"th_in.tid AS tid_in, comm_in.comm AS comm_in, CASE WHEN context_switches.flags = 0 "
	"THEN 'in' WHEN context_switches.flags = 1 THEN 'out' WHEN context_switches.flags = 3 "
	"THEN 'out preempt' ELSE FLAGS END AS flags FROM context_switches INNER JOIN "
	"threads AS th_out ON th_out.id = context_switches.thread_out_id INNER JOIN threads AS "
	"th_in ON th_in.id = context_switches.thread_in_id INNER JOIN comms AS comm_out ON "
	"comm_out.id = context_switches.comm_out_id INNER JOIN comms AS comm_in ON comm_in.id "
	"= context_switches.comm_in_id",
};

/* views[i] in the dialect: HEX(x), IPC and FLAGS written out. */
static int view_sql(struct export_sql *q, const char *v, char *buf, size_t size)
{
	static const char *const words[][3] = {
		/* word, sqlite, postgresql */
		{ "HEX(", "printf(\"%x\", ", "to_hex(" },
		{ "IPC", "CASE WHEN cyc_count=0 THEN CAST(0 AS FLOAT) ELSE "
			 "ROUND(CAST(insn_count AS FLOAT) / cyc_count, 2) END AS IPC",
			 "CASE WHEN cyc_count=0 THEN CAST(0 AS NUMERIC(20, 2)) ELSE "
			 "CAST((CAST(insn_count AS FLOAT) / cyc_count) AS NUMERIC(20, 2)) END AS IPC" },
		{ "ELSE FLAGS", "ELSE flags", "ELSE CAST(flags AS VARCHAR(11))" },
		{ "exact_ip=FALSE", "exact_ip=0", "exact_ip=FALSE" },
	};
	size_t n = 0;

	while (*v && n + 1 < size) {
		size_t k;

		for (k = 0; k < sizeof(words) / sizeof(words[0]); k++)
			if (!strncmp(v, words[k][0], strlen(words[k][0])))
				break;
		if (k < sizeof(words) / sizeof(words[0])) {
			int w = snprintf(buf + n, size - n, "%s", words[k][1 + q->be->pg]);

			if (w < 0 || (size_t)w >= size - n)
				return -1;
			n += (size_t)w;
			v += strlen(words[k][0]);
		} else {
			buf[n++] = *v++;
		}
	}
	buf[n] = 0;
	return *v ? -1 : 0;
}

static int sql_begin(struct vmpt_export *x)
{
	struct export_sql *q = x->fmt;
	char buf[4096];

	if (q->be->open(q) < 0)
		return -1;
	for (int t = 0; t < ST_COUNT; t++) {
		if (x->o->no_calls && (t == ST_CALL_PATHS || t == ST_CALLS))
			continue;
		if (sql_create_table(q, t, buf, sizeof(buf)) < 0 || q->be->exec(q, buf) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
		const char *v = views[i];

		if (!strncmp(v, "CALLS ", 6)) {
			if (x->o->no_calls)
				continue;
			v += 6;
		}
		if (view_sql(q, v, buf, sizeof(buf)) < 0 || q->be->exec(q, buf) < 0)
			return -1;
	}
	/* perf's rows for "unknown", id 0 */
	{
		struct sql_val z[25];

		for (int i = 0; i < 25; i++)
			z[i] = I(0);
		sql_evsel(x, 0, "unknown");
		row(q, ST_MACHINES, (struct sql_val[]){ I(0), I(0), T("unknown") }, 3);
		row(q, ST_THREADS, (struct sql_val[]){ I(0), I(0), I(0), I(-1), I(-1) }, 5);
		row(q, ST_COMMS, (struct sql_val[]){ I(0), T("unknown"), I(0), I(0), I(0) }, 5);
		row(q, ST_DSOS, (struct sql_val[]){ I(0), I(0), T("unknown"), T("unknown"), T("") },
		    5);
		row(q, ST_SYMBOLS, (struct sql_val[]){ I(0), I(0), I(0), I(0), I(0),
						       T("unknown") }, 6);
		row(q, ST_SAMPLES, z, x->o->branches_only ? 21 : 25);
		if (!x->o->no_calls) {
			row(q, ST_CALL_PATHS, z, 4);
			row(q, ST_CALLS, z, 14);
		}
	}
	for (size_t i = 0; i < sizeof(branch_types) / sizeof(branch_types[0]); i++)
		row(q, ST_BRANCH_TYPES, (struct sql_val[]){ I(branch_types[i].type),
							    T(branch_types[i].name) }, 2);
	for (size_t i = 0; i < sizeof(branch_types) / sizeof(branch_types[0]); i++) {
		uint32_t type = branch_types[i].type;
		char a[64], b[64];

		if (type == PF_BRANCH || (type & (PF_TRACE_BEGIN | PF_TRACE_END)))
			continue;
		snprintf(a, sizeof(a), "trace begin / %s", branch_types[i].name);
		snprintf(b, sizeof(b), "%s / trace end", branch_types[i].name);
		row(q, ST_BRANCH_TYPES, (struct sql_val[]){ I(type | PF_TRACE_BEGIN), T(a) }, 2);
		row(q, ST_BRANCH_TYPES, (struct sql_val[]){ I(type | PF_TRACE_END), T(b) }, 2);
	}
	return x->failed ? -1 : 0;
}

static int drop(struct export_sql *q, const char *table)
{
	char buf[128];

	snprintf(buf, sizeof(buf), "DROP VIEW %s_view", table);
	if (q->be->exec(q, buf) < 0)
		return -1;
	snprintf(buf, sizeof(buf), "DROP TABLE %s", table);
	return q->be->exec(q, buf);
}

/* perf's trace_end: indexes, has_calls, the unused tables dropped. */
static int sql_end(struct vmpt_export *x)
{
	struct export_sql *q = x->fmt;
	int pg = q->be->pg;

	if (q->be->rows_done(q) < 0)
		return -1;
	if (!x->o->no_calls &&
	    (q->be->exec(q, "CREATE INDEX pcpid_idx ON calls (parent_call_path_id)") < 0 ||
	     q->be->exec(q, "CREATE INDEX pid_idx ON calls (parent_id)") < 0 ||
	     q->be->exec(q, "ALTER TABLE comms ADD has_calls boolean") < 0 ||
	     q->be->exec(q, pg ? "UPDATE comms SET has_calls = TRUE WHERE comms.id IN "
				 "(SELECT DISTINCT comm_id FROM calls)" :
				 "UPDATE comms SET has_calls = 1 WHERE comms.id IN "
				 "(SELECT DISTINCT comm_id FROM calls)") < 0))
		return -1;
	if (!q->rows[ST_PTWRITE] && drop(q, "ptwrite") < 0)
		return -1;
	if (!q->rows[ST_MWAIT] && !q->rows[ST_PWRE] && !q->rows[ST_EXSTOP] && !q->rows[ST_PWRX]) {
		static const char *const power[] = { "mwait", "pwre", "exstop", "pwrx" };

		for (size_t i = 0; i < 4; i++) {
			char buf[64];

			snprintf(buf, sizeof(buf), "DROP TABLE %s", power[i]);
			if (q->be->exec(q, buf) < 0)
				return -1;
		}
		if (!q->rows[ST_CBR] && drop(q, "cbr") < 0)
			return -1;
	}
	if (!q->rows[ST_CONTEXT_SWITCHES] && drop(q, "context_switches") < 0)
		return -1;
	return 0;
}

static void sql_free(struct vmpt_export *x)
{
	struct export_sql *q = x->fmt;

	if (!q)
		return;
	q->be->close(q);
	free(q);
}

static int export_sql_begin(struct vmpt_export *x, const struct sql_backend *be)
{
	struct export_sql *q = calloc(1, sizeof(*q));

	if (!q) {
		export_fail(x, "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
		return -1;
	}
	q->x = x;
	q->be = be;
	x->fmt = q;
	return sql_begin(x);
}

static int sqlite_begin(struct vmpt_export *x)
{
	return export_sql_begin(x, &export_sqlite_backend);
}

static int postgresql_begin(struct vmpt_export *x)
{
	return export_sql_begin(x, &export_postgresql_backend);
}

#define SQL_OPS(begin_fn) {						\
	.begin = begin_fn, .evsel = sql_evsel, .machine = sql_machine,	\
	.thread = sql_thread, .comm = sql_comm,				\
	.comm_thread = sql_comm_thread, .dso = sql_dso,			\
	.symbol = sql_symbol, .call_path = sql_call_path,		\
	.sample = sql_sample, .call_return = sql_call_return,		\
	.context_switch = sql_context_switch,				\
	.end = sql_end, .free = sql_free,				\
}

const struct export_format_ops export_sqlite_ops = SQL_OPS(sqlite_begin);
const struct export_format_ops export_postgresql_ops = SQL_OPS(postgresql_begin);
