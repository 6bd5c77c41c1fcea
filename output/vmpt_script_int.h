/* SPDX-License-Identifier: MIT */
/* vmpt script's formatter inside: the run (struct vmpt_script, shared by
 * its streams), one output stream per trace queue or worker (struct
 * vmpt_consumer), and a sample as perf synthesizes one.  Internal to
 * output/: vmpt_script_output.c turns flow items into samples,
 * vmpt_script_line.c lays them out.
 */
#ifndef VMPT_SCRIPT_INT_H
#define VMPT_SCRIPT_INT_H

#include "vmpt/script_output.h"
#include "vmpt_script_stack.h"
#include "vmpt/srcline.h"

#include <capstone/capstone.h>
#include <emmintrin.h>
#include <pthread.h>
#include <string.h>

#define SCRIPT_OUT_CAP (1u << 16)
/* In struct vmpt_task's vcpu while a sample is printed as the guest
 * task's (vmpt_script_line.c).
 */
#define GUEST_SAMPLE (1 << 30)
#define ITRACE_CHAIN_MAX 1024		/* perf's largest g size */
#define ITRACE_BRANCHES_MAX 1024	/* and l size */
/* The fast lines (script_fast_*): a symbol's text kept up to this, the
 * room a line takes at most.
 */
#define SYM_TEXT_MAX 480
#define FAST_LINE_MAX (2 * SYM_TEXT_MAX + 96)

/* A binary missing here (its mapping named by the sideband) and the
 * decoding errors inside it.
 */
struct script_missing {
	char *name;
	uint64_t errors;
};

struct vmpt_script {
	const struct vmpt_script_opts *o;
	struct vmpt_consumer_ops ops;
	pthread_mutex_t lock;		/* stats and missing, from closing streams */
	struct vmpt_script_stats stats;
	struct script_missing *missing;
	size_t n_missing;
	/* perf's thread stacks: --call-trace depth, g callchains, l branch
	 * stacks (one thread decodes when they are on).
	 */
	int use_stacks;
	struct script_stacks stacks;
	uint64_t num_events;		/* samples seen, for s (initial skip) */
	uint64_t time_first, time_prev;	/* --reltime, --deltatime (0: none yet) */
	/* Binaries missing here that a sample or the decoder met, as perf's
	 * dso data status: ERROR once looked up or read, and "seen" once
	 * the decoder found it so (its failures after that are silent).
	 */
	struct script_unread {
		char *name;
		uint8_t error, seen, looked_up;
	} *unread;
	size_t n_unread;
	int spacing;			/* callindent's column, as perf's static */
	/* data_src's column: the widest printed so far (perf's static),
	 * and srccode's source files and threads' last lines; under lock.
	 */
	int data_src_width;
	struct script_srccode *srccode;
};

/* One sample as perf's intel-pt.c synthesizes it. */
struct script_sample {
	enum vmpt_script_event ev;
	uint64_t ip, addr;
	uint32_t flags;			/* PF_* */
	uint64_t time;			/* TSC */
	uint64_t period;
	const struct vmpt_section *sec;	/* of ip, when known; else looked up */
	uint8_t mode;			/* of the instruction at ip */
	unsigned insn_len;		/* the instruction at ip: bytes shown */
	/* Where those bytes are when not at ip in sec (code_sec NULL). */
	const struct vmpt_section *code_sec;
	uint64_t code_ip;
	int guest, addr_guest;		/* machine of ip and of addr */
	uint64_t ipc_insns, ipc_cyc;	/* perf's IPC (0: none) */
	char synth[160];			/* the synth event's payload text */
	int synth_len;
};

/* perf's emulated PTWRITE being read (vmpt_script_eptw.c). */
#define SCRIPT_EPTW_ITEMS 256
struct script_eptw {
	int on;
	unsigned bits, n;		/* payload bits so far, items held */
	uint64_t ip, time, payload;
	struct vmpt_flow_item items[SCRIPT_EPTW_ITEMS];
};

struct vmpt_consumer {
	struct vmpt_script *s;
	const struct vmpt_script_opts *o;
	FILE *f;
	char *buf;
	size_t len;
	uint64_t produced;
	int werr;			/* errno of a failed write */
	struct vmpt_task task;
	csh cs[3];
	cs_insn *insn[3];
	/* The symbols met so far (vmpt_script_syms.c), made at the first
	 * lookup, and the last two answers (a line's source is mostly in
	 * the function of the last line's target); one for when that
	 * allocation fails.
	 */
	struct script_syms *syms;
	struct sym_seen *sym_last, *sym_prev;
	struct sym_seen {
		const struct vmpt_section *sec;	/* NULL: unused */
		const struct vmpt_symbol *sym;
		uint64_t from, to;	/* addresses with this answer */
		size_t name_len, dso_len;
		/* Its text in the fast lines: " name" then " (dso)" as the
		 * fields text_f (0: none yet) want them, in machine
		 * text_guest of task text_mpid (a guest kernel's dso name).
		 */
		uint64_t text_f;
		unsigned name_part, text_len;
		int text_guest, text_mpid;
		char text[SYM_TEXT_MAX];
	} seen_one;
	/* Instruction samples: every Nth, or time periods as perf counts
	 * them (TSC ticks, one per instruction since the last timestamp).
	 */
	uint64_t since;
	uint64_t p_ticks, p_mask;
	uint64_t p_ts, p_cnt, p_last, p_left;
	int p_cont;
	uint64_t insn_time, block_time;
	int have_block;
	/* Time periods: blocks ending in a direct branch wait for the next
	 * item, whose time perf's decoder already has while walking them.
	 */
	struct vmpt_flow_item pending[64];
	unsigned n_pending;
	uint64_t next_time;
	/* The machine the trace is in (PIP.NR, VMCS) and the one the code
	 * before the last transfer ran in.
	 */
	uint8_t nr, from_nr;
	uint64_t vmcs;
	char guest_kernel[40];		/* "[guest.kernel.kallsyms.PID]" */
	unsigned last_iclass;		/* of the last instruction walked */
	uint64_t walk_to;		/* where the last block went */
	/* The last block ended in a far branch where tracing stopped. */
	struct vmpt_flow_item stopped;
	int have_stopped;
	/* IPC as perf counts it (see the comment in vmpt_script_output.c). */
	uint64_t insns, est_cyc;
	uint64_t br_insns, br_cyc, in_insns, in_cyc;
	uint64_t last_insn_cnt;		/* instruction samples' period */
	/* The sample of a branch the trace has not decided yet: perf has no
	 * state there when the trace then disagrees (an error at its ip).
	 */
	struct held_sample {
		int on;
		struct script_sample smp;
		uint64_t cyc, tot, prev_cnt;
		/* A fast line (smp has its ip, flags, time only): the text. */
		int fast;
		unsigned text_len;
		char text[FAST_LINE_MAX];
	} held;
	/* Samples print without struct script_sample (script_fast_*):
	 * nothing between them and the line (no filter, stack, skip or
	 * sample_fn) and no field but ip, addr, sym, symoff, dso.
	 */
	int fast;
	int branches_quiet;		/* no branch samples, no thread stacks */
	/* Blocks print nothing unless taken in a class not in quiet_taken
	 * (a bit per enum vmpt_iclass): script_stream_items folds them.
	 */
	int fold;
	uint32_t quiet_taken;
	unsigned cbr_seen;		/* perf shows a cbr sample on changes */
	/* A host task's columns printed last (script_print_start): what
	 * they were made of, and their text (len 0: none).
	 */
	struct script_task_cols {
		unsigned cols, len;
		int callchain, pid, tid, cpu;
		const char *comm;	/* comm_text, or NULL: none */
		char comm_text[64];
		char text[128];
	} task_cols;
	/* The time column printed last (print_time): its TSC and text. */
	uint64_t time_tsc;
	unsigned time_len;
	char time_text[48];
	/* The event column printed last (script_print_event): its name
	 * and text (len 0: none).
	 */
	const char *ev_of;
	unsigned ev_len;
	char ev_text[64];
	/* -F flags: the text of the flags printed last (len 0: none). */
	uint32_t flags_of;
	size_t flags_len;
	char flags_name[32];
	/* perf 6.1 prints a PWRE of its own (after HLT) with the payload
	 * of the last one bound to an MWAIT (its state's pwre_payload).
	 */
	uint64_t mwait_pwre;
	struct script_eptw eptw;
	/* An Event Trace CFE bound to its event's FUP, sampled with the
	 * flags of the event that follows.
	 */
	struct vmpt_flow_item cfe;
	int have_cfe;
	int after_ovf;			/* an overflow, tracing not on again yet */
	/* perf's ptq->timestamp, the time of its samples: forward only,
	 * but for its estimate on returns to user space (est_tsc), which
	 * counts 2 cycles per instruction since the last timestamp (ts_time,
	 * ts_insns) at the current core:bus ratio.
	 */
	uint64_t ptq_ts, ts_time, ts_insns;
	uint64_t undecided;	/* insns since the last trace-decided branch */
	unsigned cbr;
	uint64_t buf_offset;		/* file offset of the buffer's start */
	uint64_t queue_offset;		/* and its offset in the queue's trace */
	uint64_t trace_nr;		/* perf's buffer number, for the stacks */
	int64_t err_offset;		/* last error's offset, -1: none since */
	struct vmpt_script_stats stats;	/* this stream's, summed at close */
	struct script_missing *missing;
	size_t n_missing;
	struct script_srclines *srclines;	/* -F srcline's DWARF, per binary */
	struct vmpt_unwinder *unwinder;		/* --call-graph dwarf's, made on use */
};

/* vmpt_script_line.c: layout. */
/* "%16lx", the way perf prints addresses, without printf, at p (16
 * bytes): the 16 nibbles spread into bytes and made digits at once
 * (SSE2, which every x86-64 has), then the leading zeros made spaces but
 * the last digit.
 */
static inline void script_hex16_at(char *p, uint64_t v)
{
	/* 16 bytes of 0xff then 16 of 0: a mask of the first n bytes. */
	static const uint8_t lead_mask[32] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	unsigned lead = v ? (unsigned)__builtin_clzll(v) / 4 : 15;
	__m128i x = _mm_cvtsi64_si128((long long)__builtin_bswap64(v));
	__m128i low4 = _mm_set1_epi8(0x0f);
	__m128i nib = _mm_unpacklo_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), low4),
					_mm_and_si128(x, low4));
	__m128i letter = _mm_and_si128(_mm_cmpgt_epi8(nib, _mm_set1_epi8(9)),
				       _mm_set1_epi8('a' - '0' - 10));
	__m128i digits = _mm_add_epi8(_mm_add_epi8(nib, _mm_set1_epi8('0')), letter);
	__m128i mask = _mm_loadu_si128((const __m128i *)(lead_mask + 16 - lead));

	_mm_storeu_si128((__m128i *)p, _mm_or_si128(_mm_andnot_si128(mask, digits),
						    _mm_and_si128(mask, _mm_set1_epi8(' '))));
}


/* Into the stream's buffer (vmpt_script_stream.c): written out when full. */
void script_out_flush(struct vmpt_consumer *c);
void script_outf(struct vmpt_consumer *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Room for up to n more bytes, the buffer written out first when full. */
static inline size_t script_out_room(struct vmpt_consumer *c, size_t n)
{
	if (c->len == SCRIPT_OUT_CAP)
		script_out_flush(c);
	return SCRIPT_OUT_CAP - c->len < n ? SCRIPT_OUT_CAP - c->len : n;
}

static inline void script_out_char(struct vmpt_consumer *c, char ch)
{
	if (c->len == SCRIPT_OUT_CAP)
		script_out_flush(c);
	c->buf[c->len++] = ch;
}

static inline void script_out_mem(struct vmpt_consumer *c, const char *str, size_t n)
{
	while (n) {
		size_t k = script_out_room(c, n);

		memcpy(c->buf + c->len, str, k);
		c->len += k;
		str += k;
		n -= k;
	}
}

/* printf's columns without printf (vmpt_script_fmt.c): right-aligned
 * in width, or SCRIPT_LEFT ('-'); SCRIPT_ZERO pads numbers with zeros
 * after the sign ('0').
 */
#define SCRIPT_LEFT 1u
#define SCRIPT_ZERO 2u
void script_out_padded(struct vmpt_consumer *c, const char *s, size_t len, int width,
		       unsigned how);
void script_out_u64(struct vmpt_consumer *c, uint64_t v, int width, unsigned how);
/* n copies of ch. */
void script_out_fill(struct vmpt_consumer *c, char ch, size_t n);
/* The decimal digits of v ending right before end: how many. */
unsigned script_dec_digits(char *end, uint64_t v);
/* "%lx" without printf. */
void script_out_hex(struct vmpt_consumer *c, uint64_t v);
/* Two hex digits per byte value. */
extern const char script_hex_pairs[513];
void script_out_int(struct vmpt_consumer *c, int64_t v, int width, unsigned how);

static inline void script_out_spaces(struct vmpt_consumer *c, int n)
{
	if (n > 0)
		script_out_fill(c, ' ', (size_t)n);
}

/* A short string (at most 256 bytes: a literal, a column's kept text),
 * no loop.
 */
static inline void script_out_small(struct vmpt_consumer *c, const char *str, size_t n)
{
	if (c->len > SCRIPT_OUT_CAP - 256)
		script_out_flush(c);
	memcpy(c->buf + c->len, str, n);
	c->len += n;
}

/* "%16lx" without printf. */
static inline void script_out_hex16(struct vmpt_consumer *c, uint64_t v)
{
	if (c->len > SCRIPT_OUT_CAP - 32)
		script_out_flush(c);
	script_hex16_at(c->buf + c->len, v);
	c->len += 16;
}

/* vmpt_script_symbol.c: the symbol at ip in sec (sym NULL: none there,
 * or no sec); a dso's name padded as perf's; the srcline on a line of
 * its own; " sym+off (dso)" by the fields f, then the srcline.
 */
const struct sym_seen *script_sym_or_none(struct vmpt_consumer *c,
					  const struct vmpt_section *sec, uint64_t ip);
void script_print_dso(struct vmpt_consumer *c, const char *name, size_t len);
/* addr2line's record of a user address as perf keeps it for a frame it
 * unwound: "file:line" even when unknown ("??:0"); 0 when addr2line names
 * no function there.
 */
size_t script_srcline_record(struct vmpt_consumer *c, const struct vmpt_section *sec,
			     uint64_t ip, char *buf, size_t cap);
void script_print_srcline(struct vmpt_consumer *c, const struct vmpt_section *sec,
			  uint64_t ip, int guest);

void script_print_event(struct vmpt_consumer *c, const char *name);
void script_print_sample(struct vmpt_consumer *c, const struct script_sample *smp);
/* The same with a callchain (g), a branch stack (l) and the call depth
 * (callindent).
 */
void script_print_sample_x(struct vmpt_consumer *c, const struct script_sample *smp,
			   const uint64_t *chain, size_t nchain,
			   const struct script_branch *br, size_t nbr, size_t depth);
/* perf's error line; time in TSC, or perf ns with time_ns; offset the
 * packet's in its file (UINT64_MAX: none, as for lost data).
 */
void script_print_error(struct vmpt_consumer *c, uint64_t time, int time_ns,
			uint64_t ip, uint64_t offset, int err);
/* perf_sample__fprintf_start: the columns before the event (the sample's
 * and a sideband line's); misc from the record rec (NULL: a sample perf
 * synthesizes, its misc 0).
 */
void script_print_start(struct vmpt_consumer *c, uint64_t f, uint64_t time,
			int guest, int callchain, const struct vmpt_perf_event *rec);
void script_print_sideband(struct vmpt_consumer *c, const struct vmpt_perf_event *ev);
/* A sample of another event (cycles, cpu-clock, ...) as perf prints it;
 * tracepoints' and PMUs' own are counted, not printed.
 */
void script_print_other_sample(struct vmpt_consumer *c, const struct vmpt_perf_event *ev);
/* A tracepoint sample's payload (vmpt_script_trace.c). */
void script_print_trace(struct vmpt_consumer *c, const struct vmpt_perf_event *ev);
/* The recording's first event of a type (NULL: none). */
const struct vmpt_perf_attr *script_first_of_type(const struct vmpt_perf_data *pd,
						  uint32_t type);
/* Fields f less those a sample_type does not carry, unless named. */
uint64_t script_fields_sampled(uint64_t f, uint64_t named, uint64_t sample_type);
/* perf's name of an event without EVENT_DESC. */
void script_attr_name(const struct perf_event_attr *a, char *buf, size_t size);
/* " sym+off (dso)" of ip by the fields f, then the srcline. */
void script_print_sym_dso(struct vmpt_consumer *c, uint64_t f,
			  const struct vmpt_section *sec, uint64_t ip, int guest);
/* perf script's --dsos and --symbols on the code at ip (sec NULL: looked up). */
int script_code_shown(struct vmpt_consumer *c, const struct vmpt_section *sec, uint64_t ip,
		      int guest);
/* perf's dso data status of a binary missing here: a sample looked it
 * up (script_unread_looked_up), or the decoder failed to read it
 * (script_unread_silent: 1 when perf's decoder passes over it silently,
 * its status ERROR and seen before).
 */
void script_unread_looked_up(struct vmpt_consumer *c, const char *name);
int script_unread_silent(struct vmpt_consumer *c, const char *name);
/* A perf time as perf script prints it (--ns or microseconds). */
void script_print_ns(struct vmpt_consumer *c, uint64_t ns);
/* Is perf time ns in --time's ranges (all, without --time)? */
int script_ns_in_time(const struct vmpt_consumer *c, uint64_t ns);
/* x among the n of v. */
int script_in_list(const int *v, size_t n, int x);
int script_in_strs(char *const *v, size_t n, const char *s);
/* perf's callchain lines: a context marker sets *cpumode (start with
 * PERF_RECORD_MISC_USER as perf), in whose maps the host's addresses
 * after it are looked up.
 */
void script_print_callchain(struct vmpt_consumer *c, uint64_t f, const uint64_t *chain,
			    size_t n, int guest, unsigned *cpumode);
/* The frames of a user stack unwound (vmpt/unwind.h) as perf prints
 * them: a zero address skipped, user mode, the inlined functions' frames
 * too (perf's --inline is on for these).
 */
void script_print_unwound(struct vmpt_consumer *c, uint64_t f, const uint64_t *ips, size_t n);
/* perf script's --max-stack: the frames of a stack unwound at most. */
#define SCRIPT_MAX_STACK 127
/* The frames of the sample's user stack, unwound: how many put in ips. */
size_t script_unwind(struct vmpt_consumer *c, const struct vmpt_perf_event *ev, uint64_t *ips,
		     size_t max);
/* The cpumode a callchain context marker sets; 0 for one perf does not
 * know (a guest's, a corrupt one), for which it drops the whole chain.
 */
int script_chain_mode(uint64_t marker, unsigned *cpumode);
/* Is host address addr in no map of cpumode for perf's thread__find_map
 * (*sec: its section, else NULL)?  A process's code is not in kernel
 * mode's maps, nor the kernel's in user mode's; other modes (hypervisor,
 * unknown, a guest's without perf's guest options) have none.
 */
int script_unmapped_in_mode(struct vmpt_consumer *c, uint64_t addr, unsigned cpumode,
			    const struct vmpt_section **sec);
/* " [unknown] ([unknown])" by the fields: an address perf finds no map for. */
void script_print_unmapped(struct vmpt_consumer *c, uint64_t f);
/* A recorded AUXTRACE_ERROR as perf_event__fprintf_auxtrace_error. */
void script_print_recorded_error(struct vmpt_consumer *c, const struct vmpt_perf_event *ev);
/* The section of code at addr in machine guest (0: host) of c's task. */
const struct vmpt_section *script_find(struct vmpt_consumer *c, uint64_t addr, int guest);
/* perf's "%-15s%4s"-style name of sample flags (perf_sample__sprintf_flags). */
void script_flags_name(uint32_t flags, char *buf, size_t size);

/* The fast lines (c->fast): an instruction sample, of machine guest
 * (its code sec, NULL: looked up), addr its branch's target (0: none);
 * a branch sample from `from` (its code sec) to `to`.  The line's
 * length, or -1 when it needs the general path (nothing written then).
 * script_fast_held: the held sample's text (held.fast) is delivered.
 */
/* The symbol at ip in sec (not NULL; sym NULL: none there). */
struct sym_seen *script_sym_find(struct vmpt_consumer *c, const struct vmpt_section *sec,
				 uint64_t ip);
static inline struct sym_seen *script_sym_at(struct vmpt_consumer *c,
					     const struct vmpt_section *sec, uint64_t ip)
{
	struct sym_seen *e = c->sym_last;

	if (e && e->sec == sec && ip - e->from < e->to - e->from)
		return e;
	return script_sym_find(c, sec, ip);
}
void script_syms_free(struct vmpt_consumer *c);
/* The dso perf names for an address: its code's, else the mapping's
 * (a binary missing here), else [unknown].
 */
const char *script_dso_name(struct vmpt_consumer *c, const struct vmpt_section *sec,
			    uint64_t addr, int guest, size_t *len);
int script_fast_ok(const struct vmpt_script *s);
/* " sym+off (dso)" of ip in sec at p, which has room for FAST_LINE_MAX,
 * from the symbol's text: the end, or NULL where vmpt_script_line.c must
 * print it (no section; a name too long).
 */
char *script_sym_dso_at(struct vmpt_consumer *c, char *p, uint64_t f,
			const struct vmpt_section *sec, uint64_t ip, int guest);
int script_fast_insn(struct vmpt_consumer *c, const struct vmpt_section *sec, uint64_t ip,
		     uint64_t addr, int guest);
int script_fast_branch(struct vmpt_consumer *c, const struct vmpt_section *sec,
		       uint64_t from, int from_guest, uint64_t to, int to_guest);
void script_fast_held(struct vmpt_consumer *c);
/* The lines of n instructions in a row from *ip (their sizes isize),
 * none at a branch (no addr): how many were written, *ip moved past them.
 */
uint32_t script_fast_run(struct vmpt_consumer *c, const struct vmpt_section *sec,
			 const uint8_t *isize, uint64_t *ip, uint32_t n, int guest);

/* A sample's fields after its synth payload and addr (data_src, weight,
 * ins_lat), after its ip (iregs, uregs), before its end (phys_addr,
 * data_page_size, code_page_size), as perf prints them: of the recorded
 * sample ev, or NULL for one perf synthesizes (zeros, no registers).
 * vmpt_script_mem.c, vmpt_script_regs.c.
 */
void script_print_mem_access(struct vmpt_consumer *c, uint64_t f,
			     const struct vmpt_perf_event *ev);
void script_print_regs(struct vmpt_consumer *c, uint64_t f, const struct vmpt_perf_event *ev);
void script_print_mem_pages(struct vmpt_consumer *c, uint64_t f,
			    const struct vmpt_perf_event *ev);
/* vmpt_script_srccode.c: after a sample's line, its source line's text
 * (-F srccode) at ip in sec (NULL: none), as c's task's thread; the run's
 * files freed.
 */
void script_print_srccode(struct vmpt_consumer *c, const struct vmpt_section *sec, uint64_t ip,
			  int guest);
void script_srccode_free(struct vmpt_script *s);

/* vmpt_script_srcline.c: perf's srcline text for ip in sec (NULL: in
 * the host's recorded mappings), "file:line" or "dso[addr]" (its length;
 * 0: none), and the stream's DWARF freed.
 */
size_t script_srcline(struct vmpt_consumer *c, const struct vmpt_section *sec, uint64_t ip,
		      int guest, char *buf, size_t cap);
void script_srclines_free(struct vmpt_consumer *c);
/* The source file's path (as the DWARF names it) and line of ip in sec
 * for perf's srccode: 0, or -1 (none; the kernel's, the vdso's and a
 * JIT map's are not asked, as perf's).
 */
int script_srccode_line(struct vmpt_consumer *c, const struct vmpt_section *sec, uint64_t ip,
			const char **path, unsigned *line);
/* The inline chain at ip in sec, innermost first (vmpt/srcline.h). */
size_t script_inlines(struct vmpt_consumer *c, const struct vmpt_section *sec, uint64_t ip,
		      const struct vmpt_inline_frame **frames);

/* Shared by the samples of each item (vmpt_script_output.c) and the
 * blocks folded (vmpt_script_fold.c).
 */
/* perf's est_tsc: a branch from the kernel (or from nowhere, a trace
 * start) into user space takes the time estimated from the instructions
 * since the last timestamp, 2 cycles each at the core:bus ratio.
 */
static inline int script_est_branch(const struct vmpt_consumer *c, uint64_t from, uint64_t to)
{
	const struct vmpt_script_opts *o = c->o;

	return o->est_tsc && to && to < o->kernel_start &&
	       (!from || from >= o->kernel_start);
}

static inline int script_branch_filtered(const struct vmpt_itrace *it, uint32_t flags)
{
	uint32_t want = 0;

	/* perf 6.1: c shows calls, asynchronous branches and trace ends,
	 * r returns and trace starts; b alone everything.
	 */
	if (it->calls)
		want |= PF_CALL | PF_ASYNC | PF_TRACE_END;
	if (it->returns)
		want |= PF_RETURN | PF_TRACE_BEGIN;
	return want && !(want & flags);
}

/* Did tracing stop at this block's last instruction (a far branch whose
 * TIP.PGD suppressed its target)?
 */
static inline int script_stopped_at(const struct vmpt_flow_item *b)
{
	/* (an untaken jcc goes on to `to`; one that ended the trace has 0) */
	return !b->taken && b->iclass != VMPT_IC_OTHER && (b->iclass != VMPT_IC_JCC || !b->to);
}

/* Where the last block left the flow: its class, its target, and the
 * block itself where tracing stopped at its end.
 */
static inline void script_block_left(struct vmpt_consumer *c, const struct vmpt_flow_item *b)
{
	c->last_iclass = b->iclass;
	c->walk_to = b->to;
	c->have_stopped = script_stopped_at(b);
	if (c->have_stopped)
		c->stopped = *b;
}

/* A PSB+ decides nothing: it waits with the blocks around it. */
static inline int script_decided_by_trace(const struct vmpt_flow_item *it)
{
	if (it->kind != VMPT_FLOW_BLOCK)
		return it->ev != VMPT_EV_PSB;
	return it->iclass != VMPT_IC_JMP && it->iclass != VMPT_IC_CALL &&
	       it->iclass != VMPT_IC_OTHER;
}

/* vmpt_script_output.c: the samples of the items of one stream. */
void script_stream_item(struct vmpt_consumer *c, const struct vmpt_flow_item *it);
/* n items in a row (vmpt_consumer_ops.items), PTWRITE emulation's or not. */
void script_stream_items(struct vmpt_consumer *c, const struct vmpt_flow_item *it, size_t n);
/* vmpt_script_fold.c: a folded item's state. */
void script_apply_folded(struct vmpt_consumer *c, const struct vmpt_flow_item *f);
/* The time perf's state takes from its estimate at item it, next to
 * come (vmpt_consumer_ops.estimate).
 */
int script_stream_estimate(struct vmpt_consumer *c, const struct vmpt_flow_item *it,
			   uint64_t *time);
/* vmpt_consumer_ops.fold: blocks that print nothing, folded on a
 * decoding thread.
 */
size_t script_stream_fold(const struct vmpt_consumer *c, struct vmpt_flow_item *sum,
			  const struct vmpt_flow_item *it, size_t n);
/* Which taken blocks print nothing, a bit per enum vmpt_iclass: 0 when
 * none is folded.
 */
uint32_t script_fold_mask(const struct vmpt_script_opts *o, int use_stacks);
/* The items held back are due (next_time: the next item's, 0: none). */
void script_stream_drain(struct vmpt_consumer *c, uint64_t next_time);
/* The sample of an undecided branch, delivered unless next is an error
 * at its instruction (NULL: no next item in this stream).
 */
void script_settle_held(struct vmpt_consumer *c, const struct vmpt_flow_item *next);
/* An error line at perf time ns (lost data has no packet). */
void script_error_ns(struct vmpt_consumer *c, const struct vmpt_flow_item *e,
		     int err, uint64_t ns);
/* A ptwrite sample without a FUP (IP: 0) at ip, as perf's. */
void script_ptwrite_sample(struct vmpt_consumer *c, uint64_t ip, uint64_t time,
			   uint64_t payload);

/* Shared by the samples of blocks (vmpt_script_output.c) and of events
 * (vmpt_script_events.c).
 */
/* --time's ranges hold tsc. */
int script_in_time(const struct vmpt_consumer *c, uint64_t tsc);
/* --itrace's initial skip leaves this sample out (counting it). */
int script_skipped(struct vmpt_consumer *c);
/* perf script's filters (vmpt_script_filter.c) pass this sample. */
int script_shown(struct vmpt_consumer *c, const struct script_sample *smp);
/* The time of a perf decoder state's samples: it goes forward only. */
uint64_t script_state_time(struct vmpt_consumer *c, uint64_t t);
/* perf's timestamp_insn_cnt and CBR, kept per item. */
void script_track_time(struct vmpt_consumer *c, const struct vmpt_flow_item *it);
/* One sample, through the filters, with its callchain and branch stack. */
void script_deliver(struct vmpt_consumer *c, const struct script_sample *smp);
/* perf's sample flags of an instruction class. */
uint32_t script_insn_flags(unsigned iclass);
/* A branch state: the thread stack first, then its sample(s). */
void script_branch_state(struct vmpt_consumer *c, const struct vmpt_flow_item *b,
			 uint64_t from, uint64_t to, uint32_t flags, int from_guest,
			 int to_guest, unsigned insn_len, uint64_t time);
/* vmpt_script_events.c: an event item's samples and state. */
void script_on_event(struct vmpt_consumer *c, const struct vmpt_flow_item *e);
/* A CBR sample when the ratio is new to the samples. */
void script_cbr_at(struct vmpt_consumer *c, unsigned cbr, uint64_t ip, uint64_t time,
		   unsigned mode, uint32_t flags);
/* A CFE bound to its event's FUP waited for the event (next). */
void script_settle_cfe(struct vmpt_consumer *c, const struct vmpt_flow_item *next);

/* vmpt_script_eptw.c: the stream's items with perf's emulated PTWRITE. */
void script_eptw_item(struct vmpt_consumer *c, const struct vmpt_flow_item *it);
void script_eptw_drain(struct vmpt_consumer *c, uint64_t next_time);

/* Instruction samples by time (ticks, ns) rather than by count. */
int script_time_period(const struct vmpt_consumer *c);

#endif
