/* SPDX-License-Identifier: MIT */
#include "vmpt_export_int.h"
const struct export_format_ops export_perfetto_ops;
