/* SPDX-License-Identifier: MIT */
/* vmpt export sqlite: perf's export-to-sqlite.py tables in a new SQLite
 * file, one transaction, a prepared INSERT per table (as the script's
 * QSqlQuery), so that perf's exported-sql-viewer.py opens it.
 */
#include "vmpt_export_sql.h"
#include "vmpt/error.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

struct lite {
	sqlite3 *db;
	sqlite3_stmt *insert[ST_COUNT];
};

static int lite_fail(struct export_sql *q, const char *what)
{
	struct lite *l = q->db;

	export_fail(q->x, "%s: %s: %s", q->x->o->db, what, l && l->db ? sqlite3_errmsg(l->db) :
		    vmpt_strerror(-VMPT_ERR_NOMEM));
	return -1;
}

static int lite_exec(struct export_sql *q, const char *stmt)
{
	struct lite *l = q->db;

	if (sqlite3_exec(l->db, stmt, NULL, NULL, NULL) != SQLITE_OK)
		return lite_fail(q, stmt);
	return 0;
}

static int lite_open(struct export_sql *q)
{
	struct lite *l = calloc(1, sizeof(*l));

	q->db = l;
	if (!l)
		return lite_fail(q, "opening");
	if (sqlite3_open_v2(q->x->o->db, &l->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			    SQLITE_OPEN_EXCLUSIVE, NULL) != SQLITE_OK)
		return lite_fail(q, "creating the database");
	if (lite_exec(q, "PRAGMA journal_mode = OFF") < 0)
		return -1;
	return lite_exec(q, "BEGIN TRANSACTION");
}

static int lite_row(struct export_sql *q, enum sql_table t, const struct sql_val *v, int n)
{
	struct lite *l = q->db;
	sqlite3_stmt *st = l->insert[t];

	if (!st) {
		char sql[256];
		int k = snprintf(sql, sizeof(sql), "INSERT INTO %s VALUES (?", sql_table_name(t));

		for (int i = 1; i < n; i++)
			k += snprintf(sql + k, sizeof(sql) - (size_t)k, ", ?");
		snprintf(sql + k, sizeof(sql) - (size_t)k, ")");
		if (sqlite3_prepare_v2(l->db, sql, -1, &l->insert[t], NULL) != SQLITE_OK)
			return lite_fail(q, sql);
		st = l->insert[t];
	}
	for (int i = 0; i < n; i++) {
		int rc = v[i].kind == SV_INT ? sqlite3_bind_int64(st, i + 1, v[i].i) :
			 v[i].kind == SV_REAL ? sqlite3_bind_double(st, i + 1, v[i].d) :
			 sqlite3_bind_text(st, i + 1, v[i].s, -1, SQLITE_STATIC);

		if (rc != SQLITE_OK)
			return lite_fail(q, sql_table_name(t));
	}
	if (sqlite3_step(st) != SQLITE_DONE)
		return lite_fail(q, sql_table_name(t));
	sqlite3_reset(st);
	return 0;
}

static int lite_rows_done(struct export_sql *q)
{
	return lite_exec(q, "END TRANSACTION");
}

static void lite_close(struct export_sql *q)
{
	struct lite *l = q->db;

	if (!l)
		return;
	for (int t = 0; t < ST_COUNT; t++)
		sqlite3_finalize(l->insert[t]);
	if (l->db && sqlite3_close(l->db) != SQLITE_OK)
		lite_fail(q, "closing");
	free(l);
	q->db = NULL;
}

const struct sql_backend export_sqlite_backend = {
	.pg = 0,
	.open = lite_open,
	.exec = lite_exec,
	.row = lite_row,
	.rows_done = lite_rows_done,
	.close = lite_close,
};
