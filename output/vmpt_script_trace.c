/* SPDX-License-Identifier: MIT */
/* Tracepoints' payloads as perf script prints them (its -F trace,
 * event_format__fprintf): the recording's tracing data (event formats,
 * kallsyms, printk formats, saved comms) read into libtraceevent, which
 * prints a sample's raw fields with its event's print format.
 * libtraceevent is opened at the first recording that has tracepoints
 * (lib/vmpt_dl.h); perf 6.1 loads none of its plugins, nor does vmpt.
 *
 * The formats and the samples come from the same file: a sample's raw
 * data is checked against its format (fixed fields, and where dynamic
 * ones point) and printed from a copy ending in zeros, so that a string
 * without its NUL ends there.
 */
#include "vmpt_script_int.h"
#include "vmpt/error.h"
#include "vmpt/tracing_data.h"
#include "../lib/vmpt_dl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#define TEP_FUNCS(X)								\
	X(tep_alloc) X(tep_free) X(tep_set_file_bigendian) X(tep_set_long_size)	\
	X(tep_set_page_size) X(tep_parse_header_page) X(tep_parse_event)	\
	X(tep_register_function) X(tep_register_print_string)		\
	X(tep_register_comm) X(tep_find_event) X(tep_print_event)		\
	X(tep_set_loglevel) X(tep_set_function_resolver) X(tep_find_any_field)	\
	X(trace_seq_init) X(trace_seq_reset)		\
	X(trace_seq_destroy) X(trace_seq_terminate)
VMPT_DL_TABLE(tep_lib, TEP_FUNCS, "libtraceevent.so.1", "libtraceevent1");
#define TEP(f) VMPT_DL(tep_lib, f)

/* Zeros after a sample's copy: a string field without its NUL ends in
 * them (libtraceevent prints such strings with %s).
 */
#define PAD 8

struct vmpt_script_tp {
	struct tep_handle *tep;
	struct trace_seq seq;
	uint8_t *buf;		/* a sample's raw data, then PAD zeros */
	size_t cap;
	int swap;		/* the recording's byte order is not ours */
	size_t formats_left_out;	/* that crash libtraceevent */
	struct vmpt_consumer *c;	/* printing now */
};

/* A kernel address's function for %pS and the like, as perf's resolver
 * (machine__resolve_kernel_addr): the image's symbols, else this
 * machine's kallsyms (vmpt's script lines name kernel addresses so).
 */
static char *resolve(void *priv, unsigned long long *addrp, char **modp)
{
	struct vmpt_consumer *c = ((struct vmpt_script_tp *)priv)->c;
	uint64_t addr = *addrp, from;
	const struct vmpt_section *sec;
	const struct sym_seen *e;
	const char *name = NULL;

	if (!c || addr < c->o->kernel_start)
		return NULL;
	sec = script_find(c, addr, 0);
	e = script_sym_or_none(c, sec, addr);
	if (e->sym) {
		name = e->sym->name;
		from = e->from;
	} else if (sec || !c->o->kernel_sym ||
		   c->o->kernel_sym(c->o->map_ctx, addr, &name, &from) < 0) {
		return NULL;
	}
	*addrp = from;
	*modp = NULL;
	return (char *)name;
}

/* A text part as libtraceevent's parsers take it: NUL-terminated. */
static char *text(const struct vmpt_tracing_blob *b)
{
	char *s;

	if (b->size >= SIZE_MAX || !(s = malloc((size_t)b->size + 1)))
		return NULL;
	memcpy(s, b->data, (size_t)b->size);
	s[b->size] = 0;
	return s;
}

/* "ffffffff81000000 T name" and "...\t[module]" (kallsyms). */
static void kallsyms_line(struct tep_handle *tep, char *line)
{
	char *end, *mod;
	unsigned long long addr = strtoull(line, &end, 16);

	if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ' || !end[3])
		return;
	if ((mod = strchr(end + 3, '\t'))) {
		*mod++ = 0;
		if (*mod != '[' || !strchr(mod, ']'))
			mod = NULL;
		else
			*strchr(++mod, ']') = 0;
	}
	TEP(tep_register_function)(tep, end + 3, addr, mod);
}

/* "0xffffffff8281a98f : \"format\"" (printk formats), the format given
 * with its quotes as perf gives it.  libtraceevent strips them reading
 * two characters before the end: shorter ones are left out.
 */
static void printk_line(struct tep_handle *tep, char *line)
{
	char *end;
	unsigned long long addr = strtoull(line, &end, 16);

	if (end != line && !strncmp(end, " : ", 3) && strlen(end + 3) >= 4)
		TEP(tep_register_print_string)(tep, end + 3, addr);
}

/* "PID COMM" (saved command lines). */
static void comm_line(struct tep_handle *tep, char *line)
{
	char *end;
	long pid = strtol(line, &end, 10);

	if (end != line && *end == ' ' && end[1] && pid >= 0 && pid <= INT32_MAX)
		TEP(tep_register_comm)(tep, end + 1, (int)pid);
}

/* The table a text part fills, a line at a time.  vmpt reads the lines
 * itself: libtraceevent's own readers of these parts read past the end
 * of a last line cut after "ADDR :" (fuzz-session).  Lines that do not
 * read are left out, as perf leaves them.
 */
static int load_text(struct tep_handle *tep, const struct vmpt_tracing_blob *b,
		     void (*line_fn)(struct tep_handle *, char *))
{
	char *s, *line, *nl;

	if (!b->size)
		return 0;
	if (!(s = text(b)))
		return -VMPT_ERR_NOMEM;
	for (line = s; line; line = nl) {
		if ((nl = strchr(line, '\n')))
			*nl++ = 0;
		if (*line)
			line_fn(tep, line);
	}
	free(s);
	return 0;
}

/* The header and the formats (those of skip[] unset) into tep. */
static int parse_formats(struct tep_handle *tep, const struct vmpt_tracing_data *td,
			 const uint8_t *skip)
{
	char *page;

	TEP(tep_set_file_bigendian)(tep, td->big_endian ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	TEP(tep_set_long_size)(tep, td->long_size);
	TEP(tep_set_page_size)(tep, (int)td->page_size);
	if (!(page = text(&td->header_page)))
		return -VMPT_ERR_NOMEM;
	TEP(tep_parse_header_page)(tep, page, (unsigned long)td->header_page.size,
				   td->long_size);
	free(page);
	/* A format libtraceevent cannot read still names its event, whose
	 * payload it then prints as "[FAILED TO PARSE]".
	 */
	for (size_t i = 0; i < td->n_formats; i++)
		if (!skip || !skip[i])
			TEP(tep_parse_event)(tep, (const char *)td->formats[i].text.data,
					     (unsigned long)td->formats[i].text.size,
					     td->formats[i].system);
	return 0;
}

/* Do the formats (one, only: >= 0) parse in a child without killing it? */
static int parses(const struct vmpt_tracing_data *td, const uint8_t *skip, long only)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return 0;
	if (pid == 0) {
		struct tep_handle *tep = TEP(tep_alloc)();
		struct vmpt_tracing_data one = *td;
		int null = open("/dev/null", O_WRONLY);

		/* its death says enough: no report of it on our stderr */
		if (null >= 0)
			dup2(null, 2);

		if (only >= 0) {
			one.formats = &td->formats[only];
			one.n_formats = 1;
			skip = NULL;
		}
		_exit(tep && parse_formats(tep, &one, skip) == 0 ? 0 : 1);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* libtraceevent crashes on some hostile formats (1.7: a print format
 * naming a field its event lacks): the formats are read in a child first;
 * when that dies, each alone, and the ones that kill it are left out (their
 * events unknown); when the rest still do, no format is read.  0, or
 * -VMPT_ERR_NOMEM; skip[] marks the ones left out.
 */
static int sort_out_formats(const struct vmpt_tracing_data *td, uint8_t **skipp, size_t *n_out)
{
	uint8_t *skip;

	*skipp = NULL;
	*n_out = 0;
	if (!td->n_formats || parses(td, NULL, -1))
		return 0;
	skip = calloc(td->n_formats, 1);
	if (!skip)
		return -VMPT_ERR_NOMEM;
	for (size_t i = 0; i < td->n_formats; i++)
		if (!parses(td, NULL, (long)i)) {
			skip[i] = 1;
			(*n_out)++;
		}
	if (!parses(td, skip, -1)) {
		memset(skip, 1, td->n_formats);
		*n_out = td->n_formats;
	}
	*skipp = skip;
	return 0;
}

static int load(struct vmpt_script_tp *tp, const struct vmpt_tracing_data *td)
{
	struct tep_handle *tep = tp->tep;
	uint8_t *skip;
	int ret;

	if ((ret = sort_out_formats(td, &skip, &tp->formats_left_out)) < 0 ||
	    (ret = parse_formats(tep, td, skip)) < 0) {
		free(skip);
		return ret;
	}
	free(skip);
	if ((ret = load_text(tep, &td->kallsyms, kallsyms_line)) < 0 ||
	    (ret = load_text(tep, &td->printk, printk_line)) < 0)
		return ret;
	return load_text(tep, &td->cmdlines, comm_line);
}

static int has_tracepoints(const struct vmpt_perf_data *pd)
{
	for (size_t i = 0; i < pd->nr_attrs; i++)
		if (pd->attrs[i].attr.type == PERF_TYPE_TRACEPOINT)
			return 1;
	return 0;
}

int vmpt_script_tp_open(const struct vmpt_perf_data *pd, struct vmpt_script_tp **out,
			char *err, size_t errlen)
{
	struct vmpt_tracing_data td;
	struct vmpt_script_tp *tp;
	const uint8_t *data;
	uint64_t size, off;
	const char *what;
	int ret;

	*out = NULL;
	if (!has_tracepoints(pd) || vmpt_perf_tracing_data(pd, &data, &size) < 0)
		return 0;
	ret = vmpt_tracing_data_parse(data, size, &td, &off, &what);
	if (ret == -VMPT_ERR_FORMAT) {
		snprintf(err, errlen, "offset %#llx: tracing data: %s does not read as perf's",
			 (unsigned long long)(data - pd->map.data + off), what);
		return ret;
	}
	if (ret < 0)
		return ret;
	if ((ret = vmpt_dl_load(&tep_lib)) < 0) {
		snprintf(err, errlen, "tracepoints' payloads not printed: %s",
			 vmpt_dl_errmsg(&tep_lib));
		vmpt_tracing_data_free(&td);
		return ret;
	}
	TEP(tep_set_loglevel)(TEP_LOG_NONE);
	tp = calloc(1, sizeof(*tp));
	if (!tp || !(tp->tep = TEP(tep_alloc)())) {
		free(tp);
		vmpt_tracing_data_free(&td);
		return -VMPT_ERR_NOMEM;
	}
	TEP(trace_seq_init)(&tp->seq);
	/* perf script sets its resolver before it reads the data, so a
	 * pipe's tracing data, read later, prints kernel addresses bare.
	 */
	if (!pd->pipe)
		TEP(tep_set_function_resolver)(tp->tep, resolve, tp);
	tp->swap = td.big_endian != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
	ret = load(tp, &td);
	vmpt_tracing_data_free(&td);
	if (ret < 0) {
		vmpt_script_tp_free(tp);
		return ret;
	}
	*out = tp;
	return 0;
}

size_t vmpt_script_tp_formats_left_out(const struct vmpt_script_tp *tp)
{
	return tp ? tp->formats_left_out : 0;
}

void vmpt_script_tp_free(struct vmpt_script_tp *tp)
{
	if (!tp)
		return;
	TEP(trace_seq_destroy)(&tp->seq);
	TEP(tep_free)(tp->tep);
	free(tp->buf);
	free(tp);
}

const char *vmpt_script_tp_name(struct vmpt_script_tp *tp, uint64_t id, char *buf,
				size_t size)
{
	struct tep_event *e = tp && id <= INT32_MAX ? TEP(tep_find_event)(tp->tep, (int)id) : NULL;

	if (!e)
		return NULL;
	snprintf(buf, size, "%s:%s", e->system, e->name);
	return buf;
}

/* A sample's raw data as the checks of its fields and print arguments read it. */
struct raw {
	struct tep_event *e;
	const uint8_t *data;
	uint32_t size;
	int swap;
};

/* The numeric field f (1, 2, 4 or 8 bytes, within the data: fields_fit). */
static int field_value(const struct raw *r, const struct tep_format_field *f, uint64_t *v)
{
	uint8_t b[8];

	if (!f || (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8))
		return -1;
	memcpy(b, r->data + f->offset, (size_t)f->size);
	*v = 0;
	for (int i = 0; i < f->size; i++)
		*v |= (uint64_t)b[r->swap ? f->size - 1 - i : i] << (8 * i);
	return 0;
}

/* Where the dynamic field f's bytes are. */
static int dynamic_bytes(const struct raw *r, const struct tep_format_field *f, uint64_t *at,
			 uint64_t *len)
{
	uint64_t loc;

	if (!f || !(f->flags & TEP_FIELD_IS_DYNAMIC) || f->size != 4 ||
	    field_value(r, f, &loc) < 0)
		return -1;
	/* __rel_loc: from the end of the field */
	*at = (loc & 0xffff) +
	      (f->flags & TEP_FIELD_IS_RELATIVE ? (uint64_t)f->offset + (uint64_t)f->size : 0);
	*len = (loc >> 16) & 0xffff;
	return 0;
}

/* Do fields lie within the data, and what dynamic ones point at? */
static int fields_fit(const struct raw *r, const struct tep_format_field *f)
{
	uint64_t at, len;

	for (; f; f = f->next) {
		if (f->offset < 0 || f->size < 0 || (uint64_t)f->offset + (uint64_t)f->size > r->size)
			return 0;
		if ((f->flags & TEP_FIELD_IS_DYNAMIC) &&
		    (dynamic_bytes(r, f, &at, &len) < 0 || at + len > r->size))
			return 0;
	}
	return 1;
}

static struct tep_format_field *arg_field(const struct raw *r, struct tep_print_arg *a)
{
	if (!a->field.field)
		a->field.field = TEP(tep_find_any_field)(r->e, a->field.name);
	return a->field.field;
}

/* The value of a length argument: numbers, fields, a dynamic array's
 * length, and + - * / of those (the kernel's formats use no more).
 */
static int eval(const struct raw *r, struct tep_print_arg *a, uint64_t *v, int depth)
{
	uint64_t x, y;
	char *end;

	if (!a || depth > 16)
		return -1;
	switch (a->type) {
	case TEP_PRINT_ATOM:
		*v = strtoull(a->atom.atom, &end, 0);
		return end != a->atom.atom && !*end ? 0 : -1;
	case TEP_PRINT_FIELD:
		return field_value(r, arg_field(r, a), v);
	case TEP_PRINT_DYNAMIC_ARRAY_LEN:
		return dynamic_bytes(r, a->dynarray.field, &x, v);
	case TEP_PRINT_TYPE:
		return eval(r, a->typecast.item, v, depth + 1);
	case TEP_PRINT_OP:
		if (!a->op.op || !a->op.op[0] || a->op.op[1] || eval(r, a->op.left, &x, depth + 1) ||
		    eval(r, a->op.right, &y, depth + 1))
			return -1;
		switch (a->op.op[0]) {
		case '+': *v = x + y; return 0;
		case '-': *v = x - y; return 0;
		case '*': *v = x * y; return 0;
		case '/': return y ? (*v = x / y, 0) : -1;
		default: return -1;
		}
	default:
		return -1;
	}
}

/* Where the bytes an argument prints from are: a field, a dynamic array. */
static int arg_bytes(const struct raw *r, struct tep_print_arg *a, uint64_t *at, uint64_t *len)
{
	struct tep_format_field *f;

	if (a && a->type == TEP_PRINT_FIELD && (f = arg_field(r, a))) {
		*at = (uint64_t)f->offset;
		*len = (uint64_t)f->size;
		return 0;
	}
	if (a && a->type == TEP_PRINT_DYNAMIC_ARRAY && !a->dynarray.index)
		return dynamic_bytes(r, a->dynarray.field, at, len);
	return -1;
}

static int arg_fits(const struct raw *r, struct tep_print_arg *a, int depth);

static int args_fit(const struct raw *r, struct tep_print_arg *a, int depth)
{
	for (; a; a = a->next)
		if (!arg_fits(r, a, depth))
			return 0;
	return 1;
}

/* Does what argument a prints lie within the data?  libtraceevent
 * prints __print_hex(REC->insn, REC->len)'s len bytes whatever insn's
 * size (kvm:kvm_emulate_insn): the length is checked here.
 */
static int arg_fits(const struct raw *r, struct tep_print_arg *a, int depth)
{
	uint64_t at, len, n, el;

	if (depth > 16)
		return 0;
	switch (a->type) {
	case TEP_PRINT_HEX:
	case TEP_PRINT_HEX_STR:
		return !arg_bytes(r, a->hex.field, &at, &len) && !eval(r, a->hex.size, &n, 0) &&
		       n <= r->size && at <= r->size - n;
	case TEP_PRINT_INT_ARRAY:
		return !arg_bytes(r, a->int_array.field, &at, &len) &&
		       !eval(r, a->int_array.count, &n, 0) && !eval(r, a->int_array.el_size, &el, 0) &&
		       (!el || n <= r->size / el) && at <= r->size - n * el;
	case TEP_PRINT_DYNAMIC_ARRAY:
		/* an element picked by index: not in the kernel's formats */
		return !a->dynarray.index;
	case TEP_PRINT_OP:
		return (!a->op.left || arg_fits(r, a->op.left, depth + 1)) &&
		       (!a->op.right || arg_fits(r, a->op.right, depth + 1));
	case TEP_PRINT_TYPE:
		return !a->typecast.item || arg_fits(r, a->typecast.item, depth + 1);
	case TEP_PRINT_FLAGS:
		return !a->flags.field || arg_fits(r, a->flags.field, depth + 1);
	case TEP_PRINT_SYMBOL:
		return !a->symbol.field || arg_fits(r, a->symbol.field, depth + 1);
	case TEP_PRINT_FUNC:
		return args_fit(r, a->func.args, depth + 1);
	default:
		return 1;
	}
}

void script_print_trace(struct vmpt_consumer *c, const struct vmpt_perf_event *ev)
{
	struct vmpt_script_tp *tp = c->o->tp;
	uint32_t size = ev->sample.raw_size;
	struct tep_record rec;
	struct tep_event *e;
	struct raw raw;

	if (!tp || !ev->sample.raw_data || ev->attr->attr.config > INT32_MAX ||
	    !(e = TEP(tep_find_event)(tp->tep, (int)ev->attr->attr.config)))
		return;
	raw = (struct raw){ e, ev->sample.raw_data, size, tp->swap };
	if (!fields_fit(&raw, e->format.common_fields) || !fields_fit(&raw, e->format.fields) ||
	    !args_fit(&raw, e->print_fmt.args, 0)) {
		script_outf(c, "[%u bytes that do not fit the format of %s:%s]", size,
			    e->system, e->name);
		return;
	}
	if (tp->cap < (size_t)size + PAD) {
		uint8_t *b = realloc(tp->buf, (size_t)size + PAD);

		if (!b)
			return;
		tp->buf = b;
		tp->cap = (size_t)size + PAD;
	}
	memcpy(tp->buf, ev->sample.raw_data, size);
	memset(tp->buf + size, 0, PAD);
	memset(&rec, 0, sizeof(rec));
	rec.cpu = (int)ev->sid.cpu;
	rec.size = (int)size;
	rec.data = tp->buf;
	tp->c = c;
	TEP(trace_seq_reset)(&tp->seq);
	TEP(tep_print_event)(tp->tep, &tp->seq, &rec, "%s", TEP_PRINT_INFO);
	TEP(trace_seq_terminate)(&tp->seq);
	tp->c = NULL;
	script_out_mem(c, tp->seq.buffer, tp->seq.len);
}
