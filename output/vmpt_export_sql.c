/* SPDX-License-Identifier: MIT */
#include "vmpt_export_int.h"
