/* SPDX-License-Identifier: MIT */
/* Two flow items alike field for field (the test items-batch and the
 * fuzz target fuzz-flow: walked and played back they must be).
 */
#ifndef VMPT_SAME_ITEM_H
#define VMPT_SAME_ITEM_H

#include "vmpt/flow.h"

#include <string.h>

static inline int same_item(const struct vmpt_flow_item *a, const struct vmpt_flow_item *b)
{
	if (a->kind != b->kind || a->mode != b->mode || a->iclass != b->iclass ||
	    a->taken != b->taken || a->ev != b->ev || a->ip_valid != b->ip_valid ||
	    a->nr != b->nr || a->err != b->err || a->ninsn != b->ninsn ||
	    a->sec != b->sec || a->ip != b->ip || a->end_ip != b->end_ip ||
	    a->to != b->to || a->payload != b->payload || a->offset != b->offset ||
	    a->time != b->time || a->cyc != b->cyc || a->cyc_est != b->cyc_est)
		return 0;
	return a->kind != VMPT_FLOW_BLOCK || !memcmp(a->isize, b->isize, a->ninsn);
}

#endif
