/* SPDX-License-Identifier: MIT */
/* perf script's event samples, as perf's intel-pt.c synthesizes them from
 * the decoder's events: errors (with perf's codes and the file offset),
 * psb, cbr and power events, Event Trace (cfe/evd), ptwrite, and the
 * branch states of trace starts, ends and asynchronous branches.  The
 * instruction and branch samples are vmpt_script_output.c's.
 */
#include "vmpt_script_int.h"
#include "vmpt/error.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void error_line_at(struct vmpt_consumer *c, const struct vmpt_flow_item *e, int err,
			  uint64_t ns)
{
	const struct vmpt_script_filter *fl = &c->o->filter;
	uint64_t tsc = e->time;

	c->stats.errors[-err < VMPT_ERR_COUNT ? -err : VMPT_ERR_INTERNAL]++;
	c->err_offset = (int64_t)e->offset;
	if (err == -VMPT_ERR_NO_IMAGE && e->ip && c->o->map_of) {
		struct vmpt_map_ref map;

		if (c->o->map_of(c->o->map_ctx, c->task.pid, c->task.space, e->ip, &map) == 0) {
			size_t i;

			for (i = 0; i < c->n_missing; i++)
				if (!strcmp(c->missing[i].name, map.name))
					break;
			if (i == c->n_missing) {
				struct script_missing *m = realloc(c->missing,
								   (i + 1) * sizeof(*m));

				if (m && (m[i].name = strdup(map.name))) {
					m[i].errors = 0;
					c->missing = m;
					c->n_missing++;
				} else if (m) {
					c->missing = m;
				}
			}
			if (i < c->n_missing)
				c->missing[i].errors++;
			/* perf: a binary whose data status it saw to be
			 * ERROR fails silently (its decoder resyncs with no
			 * error).
			 */
			if (script_unread_silent(c, map.name))
				return;
		}
	}
	if (err == -VMPT_ERR_OVERFLOW)
		c->ts_insns = 0;	/* perf's intel_pt_overflow */
	if (err == -VMPT_ERR_LOOP)
		c->ts_insns += e->ninsn;	/* the block that closed the loop */
	if (err != -VMPT_ERR_LOST && e->time) {
		/* perf's est_timestamp at the error, which the queue takes. */
		uint64_t est = c->ts_insns << 1;

		if (c->cbr && c->o->max_nonturbo)
			est = est * c->o->max_nonturbo / c->cbr;
		c->ptq_ts = tsc = e->time + est;
	}
	if (!c->o->it.errors)
		return;
	if (err == -VMPT_ERR_OVERFLOW && (c->o->it.error_minus & (1u << ('o' - 'a'))))
		return;
	if (err == -VMPT_ERR_LOST && (c->o->it.error_minus & (1u << ('l' - 'a'))))
		return;
	c->stats.synthesized++;
	c->stats.error_events++;
	if (fl->ncpus && c->task.cpu >= 0 &&
	    (c->task.cpu >= fl->ncpus || !fl->cpus[c->task.cpu]))
		return;
	if (!ns && c->o->have_tc && tsc && !c->o->it.timeless)
		ns = vmpt_perf_tsc_to_time(&c->o->tc, tsc);
	if (ns && !script_ns_in_time(c, ns))
		return;
	if (c->o->sample_fn) {
		/* lost data has no TSC: only errors in the trace go on */
		struct vmpt_script_sample out = {
			.ev = VMPT_SE_COUNT, .task = &c->task, .ip = e->ip, .time = tsc,
			.guest = c->nr, .vmcs = c->vmcs, .trace_nr = c->trace_nr,
			.insns = c->insns, .err = err, .offset = c->buf_offset + e->offset,
		};

		if (err != -VMPT_ERR_LOST && tsc)
			c->o->sample_fn(c->o->sample_ctx, &out);
		return;
	}
	if (err == -VMPT_ERR_LOST)
		script_print_error(c, ns, 1, 0, UINT64_MAX, err);
	else
		script_print_error(c, tsc, 0, e->ip, c->buf_offset + e->offset, err);
}

static void error_line(struct vmpt_consumer *c, const struct vmpt_flow_item *e, int err)
{
	error_line_at(c, e, err, 0);
}

void script_error_ns(struct vmpt_consumer *c, const struct vmpt_flow_item *e,
		     int err, uint64_t ns)
{
	error_line_at(c, e, err, ns);
}

/* A synth event's sample (psb, cbr, power events, ptwrite): its payload
 * text as perf_sample__fprintf_synth_* prints it.
 */
/* perf's flags of an event's state: the last instruction walked's kind
 * (intel_pt_prep_p_sample: none without an ip).
 */
static uint32_t state_flags(const struct vmpt_consumer *c, uint64_t ip)
{
	return ip ? script_insn_flags(c->last_iclass) : 0;
}

static void synth_sample(struct vmpt_consumer *c, enum vmpt_script_event ev,
			 const struct vmpt_flow_item *e, uint64_t ip, uint64_t time,
			 uint32_t flags, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

static void synth_sample(struct vmpt_consumer *c, enum vmpt_script_event ev,
			 const struct vmpt_flow_item *e, uint64_t ip, uint64_t time,
			 uint32_t flags, const char *fmt, ...)
{
	struct script_sample smp = {
		.ev = ev, .ip = ip, .time = time, .mode = e->mode, .guest = c->nr,
		.flags = ip ? flags : 0,
	};
	va_list ap;

	if (script_skipped(c))
		return;
	va_start(ap, fmt);
	smp.synth_len = vsnprintf(smp.synth, sizeof(smp.synth), fmt, ap);
	va_end(ap);
	if (smp.synth_len < 0)
		smp.synth_len = 0;
	else if ((size_t)smp.synth_len >= sizeof(smp.synth))
		smp.synth_len = sizeof(smp.synth) - 1;
	script_deliver(c, &smp);
}

/* A CBR sample when the ratio is new to the samples (perf's cbr_seen,
 * kept by the states sampled: none outside --time's ranges).
 */
void script_cbr_at(struct vmpt_consumer *c, unsigned cbr, uint64_t ip, uint64_t time,
		   unsigned mode, uint32_t flags)
{
	const struct vmpt_script_opts *o = c->o;
	unsigned freq = (unsigned)((cbr * o->cbr2khz + 500) / 1000);
	struct vmpt_flow_item e = { .kind = VMPT_FLOW_EVENT, .mode = (uint8_t)mode };

	if (!cbr || cbr == c->cbr_seen || !script_in_time(c, time))
		return;
	c->cbr_seen = cbr;
	if (!o->it.pwr_events)
		return;
	if (o->max_nonturbo)
		synth_sample(c, VMPT_SE_CBR, &e, ip, time, flags,
			     " cbr: %2u freq: %4u MHz (%3u%%) ", cbr, freq,
			     (5 + (1000 * cbr) / o->max_nonturbo) / 10);
	else
		synth_sample(c, VMPT_SE_CBR, &e, ip, time, flags, " cbr: %2u freq: %4u MHz ",
			     cbr, freq);
}

static void cbr_sample(struct vmpt_consumer *c, const struct vmpt_flow_item *e,
		       unsigned cbr, uint64_t ip, uint64_t time)
{
	script_cbr_at(c, cbr, ip, time, e->mode, state_flags(c, ip));
}


/* An Event Trace sample as perf_sample__fprintf_synth_evt prints it: the
 * CFE's type, IP bit and vector, then its EVDs in the packets' order.
 */
static void evt_sample(struct vmpt_consumer *c, const struct vmpt_flow_item *e,
		       const struct vmpt_flow_item *next)
{
	static const char *const cfe[32] = {
		NULL, "INTR", "IRET", "SMI", "RSM", "SIPI", "INIT", "VMENTRY", "VMEXIT",
		"VMEXIT_INTR", "SHUTDOWN", NULL, "UINTR", "UIRET",
	};
	static const char *const evd[64] = { "PFA", "VMXQ", "VMXR" };
	unsigned type = VMPT_CFE_TYPE(e->payload);
	uint64_t ip = e->ip;
	uint32_t flags;
	char text[160];
	int n;

	if (cfe[type])
		n = snprintf(text, sizeof(text), " cfe: %s IP: %u vector: %u", cfe[type],
			     e->ip_valid, VMPT_CFE_VECTOR(e->payload));
	else
		n = snprintf(text, sizeof(text), " cfe: %u IP: %u vector: %u", type,
			     e->ip_valid, VMPT_CFE_VECTOR(e->payload));
	for (uint32_t i = 0; i < e->ninsn && n > 0 && (size_t)n < sizeof(text); i++) {
		unsigned et = e->evd[i].type & 0x3f;

		if (evd[et])
			n += snprintf(text + n, sizeof(text) - (size_t)n, " %s: %#" PRIx64,
				      evd[et], e->evd[i].payload);
		else
			n += snprintf(text + n, sizeof(text) - (size_t)n, " EVD_%u: %#" PRIx64,
				      et, e->evd[i].payload);
	}
	/* perf's flags are its decoder state's: none for a CFE with a FUP
	 * of its own, the event's branch for one bound to its compound FUP
	 * (a VM exit, an interrupt, tracing stopping at one: the item after
	 * it), else the branch being walked.
	 */
	if (VMPT_CFE_IP_BIT(e->payload))
		flags = 0;
	else if (!e->ip_valid)
		flags = state_flags(c, ip);
	else if (next && next->kind == VMPT_FLOW_EVENT && next->ev == VMPT_EV_ASYNC_DISABLED)
		flags = PF_BRANCH | PF_ASYNC | PF_TRACE_END;
	else if (type == VMPT_CFE_VMEXIT || type == VMPT_CFE_VMEXIT_INTR)
		flags = PF_BRANCH | PF_CALL | PF_ASYNC | PF_VMEXIT;
	else
		flags = PF_BRANCH | PF_CALL | PF_ASYNC | PF_INTERRUPT;
	synth_sample(c, VMPT_SE_EVT, e, ip, script_state_time(c, e->time), flags, "%s", text);
}

/* perf_sample__fprintf_synth_ptwrite: the payload as text too when its
 * bytes are printable ASCII padded with NULs.  A FUP of its own (ip_bit)
 * is its state alone: no branch flags.
 */
static void ptwrite_sample(struct vmpt_consumer *c, const struct vmpt_flow_item *e,
			   uint64_t ip, uint64_t time, unsigned ip_bit, uint64_t v)
{
	char str[9] = "";
	int prt = 1, i;

	for (i = 0; i < 8 && ((v >> (8 * i)) & 0xff); i++)
		prt &= (v >> (8 * i) & 0xff) >= 0x20 && (v >> (8 * i) & 0xff) < 0x7f;
	for (; i < 8; i++)
		prt &= !((v >> (8 * i)) & 0xff);
	if (prt)
		memcpy(str, &v, 8);
	synth_sample(c, VMPT_SE_PTWRITE, e, ip, time, ip_bit ? 0 : state_flags(c, ip),
		     " IP: %u payload: %#" PRIx64 " %s ", ip_bit, v, str);
}

void script_ptwrite_sample(struct vmpt_consumer *c, uint64_t ip, uint64_t time,
			   uint64_t payload)
{
	struct vmpt_flow_item e = { .kind = VMPT_FLOW_EVENT, .ev = VMPT_EV_PTWRITE };

	ptwrite_sample(c, &e, ip, script_state_time(c, time), 0, payload);
}

void script_on_event(struct vmpt_consumer *c, const struct vmpt_flow_item *e)
{
	const struct vmpt_itrace *it = &c->o->it;

	script_settle_held(c, e);
	script_settle_cfe(c, e);
	script_track_time(c, e);
	if (e->cyc_est && e->cyc)
		c->est_cyc = e->cyc;
	if (c->err_offset >= 0 && e->ev != VMPT_EV_ERROR) {
		c->stats.skipped += e->offset - (uint64_t)c->err_offset;
		c->err_offset = -1;
	}
	switch (e->ev) {
	case VMPT_EV_ERROR:
		error_line(c, e, e->err);
		break;
	case VMPT_EV_OVERFLOW:
		c->stats.overflows++;
		/* perf counts anew since the timestamp, its period goes on */
		c->after_ovf = 1;
		c->p_cnt = 0;
		error_line(c, e, -VMPT_ERR_OVERFLOW);
		break;
	case VMPT_EV_PAGING:
		/* the machine the walk left: a VM exit right at the entry's
		 * target (no guest instruction ran) is still from the guest */
		c->from_nr = c->nr;
		c->nr = e->nr;
		break;
	case VMPT_EV_VMCS:
		c->vmcs = e->payload;
		break;
	case VMPT_EV_PSB: {
		/* perf's PSB state: its sample at the PSB+'s TSC, at the FUP
		 * in it (or 0); a new CBR in it is sampled with it.
		 */
		uint64_t ip = e->ip_valid ? e->ip : 0, t = script_state_time(c, e->time);

		/* perf walks to the FUP: no branch is the last walked, unless
		 * it stands there already (its psb sample has no flags).
		 */
		if (ip != c->walk_to)
			c->last_iclass = VMPT_IC_OTHER;
		if (it->pwr_events)
			synth_sample(c, VMPT_SE_PSB, e, ip, t, 0, " psb offs: %#" PRIx64,
				     c->queue_offset + e->payload);
		cbr_sample(c, e, (unsigned)e->to, ip, t);
		break;
	}
	case VMPT_EV_CBR:
		/* perf's decoder makes a state (and a time) of a new ratio
		 * only.
		 */
		if ((unsigned)e->payload != c->cbr_seen)
			cbr_sample(c, e, (unsigned)e->payload, e->ip, script_state_time(c, e->time));
		break;
	case VMPT_EV_PTWRITE: {
		/* perf's decoder returns a state at it, sampled or not: its
		 * time is the samples' from then on.
		 */
		uint64_t t = script_state_time(c, e->time);

		if (it->ptwrites)
			ptwrite_sample(c, e, e->ip, t, e->ip_valid, e->payload);
		break;
	}
	case VMPT_EV_MWAIT:
		if (it->pwr_events)
			synth_sample(c, VMPT_SE_MWAIT, e, e->ip, e->time,
				     state_flags(c, e->ip),
				     " hints: %#x extensions: %#x ",
				     (unsigned)(e->payload & 0xffffffff),
				     (unsigned)(e->payload >> 32));
		break;
	case VMPT_EV_PWRE: {
		uint64_t v = e->ip_valid ? e->payload : c->mwait_pwre;

		if (e->ip_valid)
			c->mwait_pwre = e->payload;
		if (it->pwr_events)
			synth_sample(c, VMPT_SE_PWRE, e, e->ip, e->time,
				     state_flags(c, e->ip),
				     " hw: %u cstate: %u sub-cstate: %u ",
				     (unsigned)(v >> 16 & 1), (unsigned)(v & 0xff),
				     (unsigned)(v >> 8 & 0xff));
		break;
	}
	case VMPT_EV_EXSTOP:
		if (it->pwr_events)
			synth_sample(c, VMPT_SE_EXSTOP, e, e->ip, e->time,
				     state_flags(c, e->ip),
				     " IP: %u ", e->ip_valid);
		break;
	case VMPT_EV_PWRX:
		if (it->pwr_events)
			synth_sample(c, VMPT_SE_PWRX, e, e->ip, e->time,
				     state_flags(c, e->ip),
				     " deepest cstate: %u last cstate: %u wake reason: %#x ",
				     (unsigned)(e->payload >> 8 & 0xf),
				     (unsigned)(e->payload & 0xf),
				     (unsigned)(e->payload >> 16 & 0xf));
		break;
	case VMPT_EV_CFE:
		/* bound to its event's FUP: its flags are the next item's */
		if (it->intr_events && e->ip_valid && !VMPT_CFE_IP_BIT(e->payload)) {
			c->cfe = *e;
			c->have_cfe = 1;
		} else if (it->intr_events) {
			evt_sample(c, e, NULL);
		}
		break;
	case VMPT_EV_ENABLED:
		/* perf's periods start anew when tracing does, but not at
		 * the FUP an overflow resumes at.
		 */
		if (!c->after_ovf)
			c->p_cont = 0;
		c->after_ovf = 0;
		/* A PSB+'s FUP is status, no trace start for perf. */
		if (e->payload == VMPT_ENABLED_PSB)
			break;
		script_branch_state(c, e, 0, e->ip, PF_BRANCH | PF_TRACE_BEGIN |
				    (e->payload == VMPT_ENABLED_RESYNC_END ? PF_TRACE_END : 0),
				    c->nr, c->nr, 0, e->time);
		break;
	case VMPT_EV_DISABLED:
		/* The branch that stopped it, to where it went (0: not said);
		 * a jcc's from is its target (perf 6.1 moves to the target
		 * before it takes the from of a conditional branch leaving
		 * the filter region).
		 */
		if (c->have_stopped)
			script_branch_state(c, &c->stopped,
					    c->stopped.iclass == VMPT_IC_JCC && e->ip_valid ? e->ip :
					    c->stopped.end_ip, e->ip_valid ? e->ip : 0,
					    script_insn_flags(c->stopped.iclass) | PF_TRACE_END, c->from_nr,
					    c->from_nr, c->stopped.ninsn ?
					    c->stopped.isize[c->stopped.ninsn - 1] : 0, e->time);
		else
			script_branch_state(c, e, e->ip, 0, PF_BRANCH | PF_TRACE_END, c->from_nr,
					    c->from_nr, 0, e->time);
		break;
	case VMPT_EV_ASYNC_DISABLED:
		script_branch_state(c, e, e->ip, 0, PF_BRANCH | PF_ASYNC | PF_TRACE_END, c->from_nr,
				    c->from_nr, 0, e->time);
		break;
	case VMPT_EV_ASYNC_BRANCH:
		if (c->from_nr == c->nr)
			script_branch_state(c, e, e->ip, e->to, PF_BRANCH | PF_CALL | PF_ASYNC |
					    PF_INTERRUPT, c->nr, c->nr, 0, e->time);
		else	/* a VM exit: perf 6.1.y's flags print as "bcyh" */
			script_branch_state(c, e, e->ip, e->to, c->from_nr ?
					    PF_BRANCH | PF_CALL | PF_ASYNC | PF_VMEXIT :
					    PF_BRANCH | PF_CALL | PF_ASYNC | PF_INTERRUPT,
					    c->from_nr, c->nr, 0, e->time);
		break;
	default:
		break;
	}
	/* perf's walk to a FUP or an interrupt's target walks no branch:
	 * the samples after it have no branch flags.
	 */
	if ((e->ip_valid && (e->ev == VMPT_EV_PTWRITE || e->ev == VMPT_EV_EXSTOP ||
			     e->ev == VMPT_EV_MWAIT || e->ev == VMPT_EV_PWRE)) ||
	    e->ev == VMPT_EV_ASYNC_BRANCH)
		c->last_iclass = VMPT_IC_OTHER;
}

/* A CFE bound to its event's FUP waited for the event (next). */
void script_settle_cfe(struct vmpt_consumer *c, const struct vmpt_flow_item *next)
{
	if (!c->have_cfe)
		return;
	c->have_cfe = 0;
	evt_sample(c, &c->cfe, next);
}
