/* SPDX-License-Identifier: MIT */
/* vmpt export sqlite: perf's export-to-sqlite.py tables in a new SQLite
 * file, one transaction, a prepared INSERT per table (as the script's
 * QSqlQuery), so that perf's exported-sql-viewer.py opens it.
 */
#include "vmpt_export_sql.h"
#include "vmpt/error.h"
#include "../lib/vmpt_dl.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* libsqlite3 is opened when this export runs, not at every vmpt start. */
#define LITE_FUNCS(X) X(sqlite3_bind_double) X(sqlite3_bind_int64) \
	X(sqlite3_bind_text) X(sqlite3_close) X(sqlite3_errmsg) X(sqlite3_exec) \
	X(sqlite3_finalize) X(sqlite3_open_v2) X(sqlite3_prepare_v2) X(sqlite3_reset) \
	X(sqlite3_step)
VMPT_DL_TABLE(lite_lib, LITE_FUNCS, "libsqlite3.so.0", "libsqlite3-0");

struct lite {
	sqlite3 *db;
	sqlite3_stmt *insert[ST_COUNT];
};

static int lite_fail(struct export_sql *q, const char *what)
{
	struct lite *l = q->db;

	export_fail(q->x, "%s: %s: %s", q->x->o->db, what,
		    l && l->db ? VMPT_DL(lite_lib, sqlite3_errmsg)(l->db) :
				 vmpt_strerror(-VMPT_ERR_NOMEM));
	return -1;
}

static int lite_exec(struct export_sql *q, const char *stmt)
{
	struct lite *l = q->db;

	if (VMPT_DL(lite_lib, sqlite3_exec)(l->db, stmt, NULL, NULL, NULL) != SQLITE_OK)
		return lite_fail(q, stmt);
	return 0;
}

static int lite_open(struct export_sql *q)
{
	struct lite *l = calloc(1, sizeof(*l));

	q->db = l;
	if (!l)
		return lite_fail(q, "opening");
	if (vmpt_dl_load(&lite_lib) < 0) {
		export_fail(q->x, "%s: opening: %s", q->x->o->db, vmpt_dl_errmsg(&lite_lib));
		return -1;
	}
	if (VMPT_DL(lite_lib, sqlite3_open_v2)(q->x->o->db, &l->db, SQLITE_OPEN_READWRITE |
			SQLITE_OPEN_CREATE | SQLITE_OPEN_EXCLUSIVE, NULL) != SQLITE_OK)
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
		if (VMPT_DL(lite_lib, sqlite3_prepare_v2)(l->db, sql, -1, &l->insert[t], NULL) != SQLITE_OK)
			return lite_fail(q, sql);
		st = l->insert[t];
	}
	for (int i = 0; i < n; i++) {
		int rc = v[i].kind == SV_INT ? VMPT_DL(lite_lib, sqlite3_bind_int64)(st, i + 1, v[i].i) :
			 v[i].kind == SV_REAL ? VMPT_DL(lite_lib, sqlite3_bind_double)(st, i + 1, v[i].d) :
			 VMPT_DL(lite_lib, sqlite3_bind_text)(st, i + 1, v[i].s, -1, SQLITE_STATIC);

		if (rc != SQLITE_OK)
			return lite_fail(q, sql_table_name(t));
	}
	if (VMPT_DL(lite_lib, sqlite3_step)(st) != SQLITE_DONE)
		return lite_fail(q, sql_table_name(t));
	VMPT_DL(lite_lib, sqlite3_reset)(st);
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
	/* No db: libsqlite3 may not be loaded. */
	if (l->db) {
		for (int t = 0; t < ST_COUNT; t++)
			VMPT_DL(lite_lib, sqlite3_finalize)(l->insert[t]);
		if (VMPT_DL(lite_lib, sqlite3_close)(l->db) != SQLITE_OK)
			lite_fail(q, "closing");
	}
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
