/* SPDX-License-Identifier: MIT */
/* The EVD packets of the flow decoder's CFE items (Event Trace), internal
 * to the flow decoder: one stable copy of each distinct sequence, so an
 * item's evd stays valid as long as its decoder, however long the output
 * keeps the item, and a trace of many VM exits with few distinct reasons
 * and qualifications costs few copies.
 */
#ifndef VMPT_EVD_STORE_H
#define VMPT_EVD_STORE_H

#include "vmpt/flow.h"

/* One per decoder, freed with it; not shared between threads. */
struct vmpt_evd_store;

/* NULL: no memory. */
struct vmpt_evd_store *vmpt_evd_store_new(void);
void vmpt_evd_store_free(struct vmpt_evd_store *s);

/* The stored copy of evd[0..n) (n > 0); NULL: no memory. */
const struct vmpt_evd *vmpt_evd_store_intern(struct vmpt_evd_store *s,
					     const struct vmpt_evd *evd,
					     unsigned n);

#endif
