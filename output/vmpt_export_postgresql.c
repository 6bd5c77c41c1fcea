/* SPDX-License-Identifier: MIT */
/* vmpt export postgresql: perf's export-to-postgresql.py tables in a new
 * PostgreSQL database over libpq.  As the script, it creates the database
 * (connected to "postgres" with the same other settings), keeps each
 * table's rows in a temporary file and COPYs them in at the end, then
 * adds the primary keys, the indexes and has_calls.  The server is the
 * one libpq's environment names (PGHOST, PGPORT, PGUSER).
 */
#include "vmpt_export_sql.h"
#include "vmpt/error.h"
#include "../lib/vmpt_dl.h"

#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libpq is opened when this export runs, not at every vmpt start. */
#define PQ_FUNCS(X) X(PQclear) X(PQconnectdbParams) X(PQerrorMessage) X(PQexec) \
	X(PQfinish) X(PQgetResult) X(PQputCopyData) X(PQputCopyEnd) X(PQresultStatus) \
	X(PQstatus)
VMPT_DL_TABLE(pq, PQ_FUNCS, "libpq.so.5", "libpq5");

struct pg {
	PGconn *conn;
	FILE *rows[ST_COUNT];
};

static int pg_fail(struct export_sql *q, const char *what, const char *why)
{
	export_fail(q->x, "%s: %s: %s", q->x->o->db, what, why);
	return -1;
}

static int pg_exec(struct export_sql *q, const char *stmt)
{
	struct pg *p = q->db;
	PGresult *r = VMPT_DL(pq, PQexec)(p->conn, stmt);
	ExecStatusType st = VMPT_DL(pq, PQresultStatus)(r);
	int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;

	if (!ok) {
		char why[512];

		snprintf(why, sizeof(why), "%s", VMPT_DL(pq, PQerrorMessage)(p->conn));
		why[strcspn(why, "\n")] = 0;
		VMPT_DL(pq, PQclear)(r);
		return pg_fail(q, stmt, why);
	}
	VMPT_DL(pq, PQclear)(r);
	return 0;
}

/* A database name is an identifier: letters, digits, '_' (as perf's
 * script takes it unquoted).
 */
static int good_name(const char *s)
{
	if (!*s || strlen(s) > 63)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      (*s >= 'A' && *s <= 'Z')))
			return 0;
	return 1;
}

static int pg_open(struct export_sql *q)
{
	const char *dbname = q->x->o->db;
	struct pg *p = calloc(1, sizeof(*p));
	const char *keys[] = { "dbname", NULL }, *vals[] = { "postgres", NULL };
	char stmt[128];

	q->db = p;
	if (!p)
		return pg_fail(q, "connecting", vmpt_strerror(-VMPT_ERR_NOMEM));
	if (!good_name(dbname))
		return pg_fail(q, "the database name", "letters, digits and '_' only");
	if (vmpt_dl_load(&pq) < 0)
		return pg_fail(q, "connecting", vmpt_dl_errmsg(&pq));
	p->conn = VMPT_DL(pq, PQconnectdbParams)(keys, vals, 0);
	if (VMPT_DL(pq, PQstatus)(p->conn) != CONNECTION_OK) {
		char why[512];

		snprintf(why, sizeof(why), "%s", VMPT_DL(pq, PQerrorMessage)(p->conn));
		why[strcspn(why, "\n")] = 0;
		return pg_fail(q, "connecting to the server", why);
	}
	snprintf(stmt, sizeof(stmt), "CREATE DATABASE %s", dbname);
	if (pg_exec(q, stmt) < 0)
		return -1;
	VMPT_DL(pq, PQfinish)(p->conn);
	vals[0] = dbname;
	p->conn = VMPT_DL(pq, PQconnectdbParams)(keys, vals, 0);
	if (VMPT_DL(pq, PQstatus)(p->conn) != CONNECTION_OK)
		return pg_fail(q, "connecting", VMPT_DL(pq, PQerrorMessage)(p->conn));
	for (int t = 0; t < ST_COUNT; t++) {
		p->rows[t] = tmpfile();
		if (!p->rows[t])
			return pg_fail(q, "a temporary file", strerror(errno));
	}
	return pg_exec(q, "SET client_min_messages TO WARNING");
}

/* One row in COPY's text format. */
static int pg_row(struct export_sql *q, enum sql_table t, const struct sql_val *v, int n)
{
	struct pg *p = q->db;
	FILE *f = p->rows[t];

	for (int i = 0; i < n; i++) {
		if (i)
			putc('\t', f);
		if (v[i].kind == SV_INT) {
			fprintf(f, "%" PRId64, v[i].i);
		} else if (v[i].kind == SV_REAL) {
			/* perf's script packs int() of its Python float */
			fprintf(f, "%" PRId64, (int64_t)v[i].d);
		} else {
			for (const char *s = v[i].s; *s; s++) {
				if (*s == '\\' || *s == '\t' || *s == '\n' || *s == '\r')
					fprintf(f, "\\%c", *s == '\t' ? 't' : *s == '\n' ? 'n' :
						*s == '\r' ? 'r' : '\\');
				else
					putc(*s, f);
			}
		}
	}
	putc('\n', f);
	if (ferror(f))
		return pg_fail(q, sql_table_name(t), strerror(errno));
	return 0;
}

static int copy_in(struct export_sql *q, enum sql_table t)
{
	struct pg *p = q->db;
	char buf[65536], stmt[128];
	PGresult *r;
	size_t n;

	snprintf(stmt, sizeof(stmt), "COPY %s FROM STDIN", sql_table_name(t));
	r = VMPT_DL(pq, PQexec)(p->conn, stmt);
	if (VMPT_DL(pq, PQresultStatus)(r) != PGRES_COPY_IN) {
		VMPT_DL(pq, PQclear)(r);
		return pg_fail(q, stmt, VMPT_DL(pq, PQerrorMessage)(p->conn));
	}
	VMPT_DL(pq, PQclear)(r);
	rewind(p->rows[t]);
	while ((n = fread(buf, 1, sizeof(buf), p->rows[t])) > 0)
		if (VMPT_DL(pq, PQputCopyData)(p->conn, buf, (int)n) != 1)
			return pg_fail(q, stmt, VMPT_DL(pq, PQerrorMessage)(p->conn));
	if (VMPT_DL(pq, PQputCopyEnd)(p->conn, NULL) != 1)
		return pg_fail(q, stmt, VMPT_DL(pq, PQerrorMessage)(p->conn));
	r = VMPT_DL(pq, PQgetResult)(p->conn);
	if (VMPT_DL(pq, PQresultStatus)(r) != PGRES_COMMAND_OK) {
		char why[512];

		snprintf(why, sizeof(why), "%s", VMPT_DL(pq, PQerrorMessage)(p->conn));
		why[strcspn(why, "\n")] = 0;
		VMPT_DL(pq, PQclear)(r);
		return pg_fail(q, stmt, why);
	}
	VMPT_DL(pq, PQclear)(r);
	while ((r = VMPT_DL(pq, PQgetResult)(p->conn)))
		VMPT_DL(pq, PQclear)(r);
	return 0;
}

static int pg_rows_done(struct export_sql *q)
{
	for (int t = 0; t < ST_COUNT; t++) {
		char stmt[128];

		if (q->x->o->no_calls && (t == ST_CALL_PATHS || t == ST_CALLS))
			continue;
		if (copy_in(q, t) < 0)
			return -1;
		snprintf(stmt, sizeof(stmt), "ALTER TABLE %s ADD PRIMARY KEY (id)",
			 sql_table_name(t));
		if (pg_exec(q, stmt) < 0)
			return -1;
	}
	return 0;
}

static void pg_close(struct export_sql *q)
{
	struct pg *p = q->db;

	if (!p)
		return;
	for (int t = 0; t < ST_COUNT; t++)
		if (p->rows[t])
			fclose(p->rows[t]);
	if (p->conn)	/* NULL too when libpq was not loaded */
		VMPT_DL(pq, PQfinish)(p->conn);
	free(p);
	q->db = NULL;
}

const struct sql_backend export_postgresql_backend = {
	.pg = 1,
	.open = pg_open,
	.exec = pg_exec,
	.row = pg_row,
	.rows_done = pg_rows_done,
	.close = pg_close,
};
