/* SPDX-License-Identifier: MIT */
/* A piece's state handed on (vmpt/jobs.h): what one decoder going on over
 * the trace would know at a PSB (time, paging, VMCS, mode), taken from the
 * decoder of the piece before and compared with what the next one started
 * from.
 */
#include "vmpt_flow_int.h"

#include <string.h>

/* vmpt_flow_carry's contents. */
struct carry {
	struct vmpt_time time;
	uint64_t cr3, vmcs, machine;
	uint8_t have_nr, nr, have_vmcs, mode;
};
_Static_assert(sizeof(struct carry) <= sizeof(struct vmpt_flow_carry),
	       "vmpt_flow_carry too small");

void vmpt_flow_carry_get(const struct vmpt_flow *dec, struct vmpt_flow_carry *c)
{
	struct carry k;

	/* Bytes compared as they are: padding zeroed, the time copied whole. */
	memset(c, 0, sizeof(*c));
	memset(&k, 0, sizeof(k));
	memcpy(&k.time, &dec->time, sizeof(k.time));
	k.cr3 = dec->cr3;
	k.vmcs = dec->vmcs;
	k.machine = dec->asid.machine;
	k.have_nr = dec->have_nr;
	k.nr = dec->nr;
	k.have_vmcs = dec->have_vmcs;
	k.mode = dec->mode;
	memcpy(c, &k, sizeof(k));
}

void vmpt_flow_carry_set(struct vmpt_flow *dec, const struct vmpt_flow_carry *c)
{
	struct carry k;

	memcpy(&k, c, sizeof(k));
	memcpy(&dec->time, &k.time, sizeof(dec->time));
	dec->cr3 = k.cr3;
	dec->vmcs = k.vmcs;
	dec->asid.machine = k.machine;
	dec->have_nr = k.have_nr;
	dec->nr = k.nr;
	dec->have_vmcs = k.have_vmcs;
	dec->mode = k.mode;
	dec->block_time = dec->time.tsc;
	dec->sec = NULL;
	dec->rec = NULL;
	dec->have_last = 0;
	vmpt_flow_update_asid(dec);
}

int vmpt_flow_carry_equal(const struct vmpt_flow_carry *a, const struct vmpt_flow_carry *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* The cycle count's state, which only a CYC packet reads (and the
 * counters, which say nothing of the trace).  A CBR sets base again only
 * when the ratio changes, so a new decoder's base after a PSB+ is
 * rarely the one decoder's: without this, nearly every timed piece was
 * decoded twice.
 */
static void cyc_state_copy(struct vmpt_time *to, const struct vmpt_time *from)
{
	to->base = from->base;
	to->cyc = from->cyc;
	to->have_base = from->have_base;
	to->have_calc = from->have_calc;
	to->calc_ratio = from->calc_ratio;
}

int vmpt_flow_carry_settle(const struct vmpt_flow_carry *before,
			   const struct vmpt_flow_carry *start, struct vmpt_flow_carry *end)
{
	struct carry a, b, e;
	uint32_t start_bases;

	memcpy(&a, before, sizeof(a));
	memcpy(&b, start, sizeof(b));
	memcpy(&e, end, sizeof(e));
	if (e.time.n_cyc)
		return vmpt_flow_carry_equal(before, start);
	start_bases = b.time.n_base;
	/* No CYC read: the cycle state decided nothing in the piece. */
	cyc_state_copy(&b.time, &a.time);
	b.time.n_cyc = a.time.n_cyc;
	b.time.n_base = a.time.n_base;
	if (memcmp(&a, &b, sizeof(a)))
		return 0;
	/* The one decoder's at the piece's end: the cycle state goes on
	 * from before it unless a CBR set it again in the piece.
	 */
	if (e.time.n_base == start_bases)
		cyc_state_copy(&e.time, &a.time);
	memcpy(end, &e, sizeof(e));
	return 1;
}
