/* SPDX-License-Identifier: MIT */
/* perf's --itrace options: which samples the instruction trace makes
 * (perf-intel-pt(1), "--itrace"), parsed with perf 6.1's grammar so a
 * string perf accepts means the same here.  Plain data: callers fill and
 * read it field by field.
 */
#ifndef VMPT_ITRACE_H
#define VMPT_ITRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vmpt_itrace_period {
	VMPT_ITRACE_PERIOD_NS,		/* perf's default: i5 is i5ns */
	VMPT_ITRACE_PERIOD_INSNS,	/* i1000i */
	VMPT_ITRACE_PERIOD_TICKS,	/* i4096t: TSC ticks */
};

struct vmpt_itrace {
	unsigned insns : 1;		/* i */
	unsigned branches : 1;		/* b (also set by c and r, as perf) */
	unsigned calls : 1;		/* c: calls, async, trace ends */
	unsigned returns : 1;		/* r: returns, trace begins */
	unsigned transactions : 1;	/* x */
	unsigned ptwrites : 1;		/* w */
	unsigned pwr_events : 1;	/* p: psb, cbr, mwait, pwre, exstop, pwrx */
	unsigned intr_events : 1;	/* I: Event Trace (evt) */
	unsigned other_events : 1;	/* o */
	unsigned errors : 1;		/* e */
	unsigned callchain : 1;		/* g[N] */
	unsigned last_branch : 1;	/* l[N] */
	unsigned timeless : 1;		/* Z */
	/* e-o (no overflow errors), e-l (no lost-data errors): bit c - 'a'. */
	uint32_t error_minus, error_plus;
	enum vmpt_itrace_period period_type;
	uint64_t period;		/* i: 100000 ns unless given */
	unsigned callchain_sz;		/* g: 16 */
	unsigned last_branch_sz;	/* l: 64 */
	uint64_t initial_skip;		/* sN: the first N samples are not shown */
};

/* What perf script synthesizes without --itrace: calls, transactions,
 * ptwrites, power events (psb, cbr), Event Trace and errors.
 */
void vmpt_itrace_default(struct vmpt_itrace *it);

/* Parse LETTERS as perf 6.1 does: "i100us", "cr", "e-o", "g32", "s5",
 * "i5" (nanoseconds).  0, or -VMPT_ERR_INVAL with err saying which letter
 * or period is wrong; -VMPT_ERR_UNSUPPORTED for letters perf knows that
 * vmpt does not do (d, q, A, G, L), err naming the letter.
 */
int vmpt_itrace_parse(const char *s, struct vmpt_itrace *it, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
