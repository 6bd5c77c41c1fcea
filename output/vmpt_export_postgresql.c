/* SPDX-License-Identifier: MIT */
#include "vmpt_export_sql.h"
const struct sql_backend export_postgresql_backend;
