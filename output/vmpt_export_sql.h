/* SPDX-License-Identifier: MIT */
/* The tables of perf's export-to-sqlite.py and export-to-postgresql.py
 * (perf 6.1), filled as those scripts fill them from perf's db-export
 * callbacks, written through a database backend (vmpt_export_sqlite.c,
 * vmpt_export_postgresql.c).  Internal to output/.
 */
#ifndef VMPT_EXPORT_SQL_H
#define VMPT_EXPORT_SQL_H

#include "vmpt_export_int.h"

enum sql_table {
	ST_SELECTED_EVENTS, ST_MACHINES, ST_THREADS, ST_COMMS, ST_COMM_THREADS, ST_DSOS,
	ST_SYMBOLS, ST_BRANCH_TYPES, ST_SAMPLES, ST_CALL_PATHS, ST_CALLS, ST_PTWRITE, ST_CBR,
	ST_MWAIT, ST_PWRE, ST_EXSTOP, ST_PWRX, ST_CONTEXT_SWITCHES, ST_COUNT
};

enum sql_kind { SV_INT, SV_REAL, SV_TEXT };

struct sql_val {
	enum sql_kind kind;
	int64_t i;
	double d;
	const char *s;
};

struct export_sql;

/* A database: 0 or -1 with export_fail called. */
struct sql_backend {
	int pg;			/* PostgreSQL's dialect */
	int (*open)(struct export_sql *q);
	int (*exec)(struct export_sql *q, const char *stmt);
	int (*row)(struct export_sql *q, enum sql_table t, const struct sql_val *v, int n);
	/* The rows are all there (before the indexes and views). */
	int (*rows_done)(struct export_sql *q);
	/* Is the table empty (perf drops unused ones)?  1, 0 or -1. */
	int (*empty)(struct export_sql *q, const char *table);
	void (*close)(struct export_sql *q);
};

struct export_sql {
	struct vmpt_export *x;
	const struct sql_backend *be;
	void *db;		/* the backend's */
	int n_cols[ST_COUNT];
	uint64_t rows[ST_COUNT];
};

const char *sql_table_name(enum sql_table t);
/* "CREATE TABLE ..." of table t in the backend's dialect. */
int sql_create_table(struct export_sql *q, enum sql_table t, char *buf, size_t size);

extern const struct sql_backend export_sqlite_backend, export_postgresql_backend;

#endif
