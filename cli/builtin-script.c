/* SPDX-License-Identifier: MIT */
/* vmpt script: the instruction flow of a trace, printed the way perf script
 * prints Intel PT samples (--itrace, -F, its filters), from a perf.data or
 * from a raw trace with images given like ptxed's.
 */
#include "builtin.h"
#include "progress.h"
#include "script_images.h"
#include "script_filter.h"
#include "script_session.h"
#include "vmpt/error.h"
#include "vmpt/file.h"
#include "vmpt/flow.h"
#include "vmpt/image.h"
#include "vmpt/jobs.h"
#include "vmpt/packet.h"
#include "vmpt/perf_data.h"
#include "vmpt/script_output.h"
#include "vmpt/session.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* At the end on stderr, as perf's warning, with what vmpt knows more:
 * what was decoded, errors by cause, trace skipped, binaries missing.
 */
static void summary(struct vmpt_script *sc, const struct vmpt_session *s, int show_lost)
{
	struct vmpt_script_stats st;
	uint64_t errors = 0;
	const char *name;
	uint64_t n;
	int sep = 0;

	vmpt_script_get_stats(sc, &st);
	/* perf's warnings first (perf_session__warn_about_errors); lost
	 * sideband only when --show-lost-events does not show it.
	 */
	if (st.lost_records && !show_lost)
		fprintf(stderr, "Warning:\nProcessed %" PRIu64 " events and lost %" PRIu64
			" chunks!\n\nCheck IO/CPU overload!\n\n",
			(s ? s->n_records : 0) + st.synthesized, st.lost_records);
	if (st.aux_lost)
		fprintf(stderr, "Warning:\nAUX data lost %" PRIu64 " times out of %" PRIu64
			"!\n\n", st.aux_lost, st.aux);
	if (st.aux_partial)
		fprintf(stderr, "Warning:\nAUX data had gaps in it %" PRIu64 " times out of %"
			PRIu64 "!\n\nAre you running a KVM guest in the background?\n\n",
			st.aux_partial, st.aux);
	if (st.aux_collision)
		fprintf(stderr, "Warning:\nAUX data detected collision  %" PRIu64 " times out "
			"of %" PRIu64 "!\n\n", st.aux_collision, st.aux);
	if (st.other_unshown)
		fprintf(stderr, "vmpt script: %" PRIu64 " samples of other PMUs "
			"not printed (perf script prints them)\n",
			st.other_unshown);
	for (int i = 0; i < VMPT_ERR_COUNT; i++)
		errors += st.errors[i];
	/* perf counts the error events it made (--itrace e) and read. */
	if (st.error_events + st.recorded_errors)
		fprintf(stderr, "Warning:\n%" PRIu64 " instruction trace errors\n",
			st.error_events + st.recorded_errors);
	if (!errors && !st.lost)
		return;
	fprintf(stderr, "vmpt script: %" PRIu64 " instructions and %" PRIu64
		" branches decoded; errors:", st.insns, st.branches);
	for (int i = 0; i < VMPT_ERR_COUNT; i++)
		if (st.errors[i]) {
			fprintf(stderr, "%s %" PRIu64 " %s", sep ? "," : "", st.errors[i],
				vmpt_strerror(-i));
			sep = 1;
		}
	fprintf(stderr, "; %" PRIu64 " bytes of trace skipped\n", st.skipped);
	for (size_t i = 0; vmpt_script_missing(sc, i, &name, &n); i++) {
		const struct vmpt_session_map *m = NULL;

		for (size_t k = 0; s && k < s->n_maps; k++)
			if (!strcmp(s->maps[k].name, name))
				m = &s->maps[k];
		fprintf(stderr, "vmpt script: missing %s (build-id %s%s%s): %" PRIu64
			" error%s (vmpt archive on the recording machine, or --symfs)\n",
			name, m && m->build_id[0] ? m->build_id : "not recorded",
			m && m->changed_id[0] ? "; the file here has " : "",
			m && m->changed_id[0] ? m->changed_id : "", n, n == 1 ? "" : "s");
	}
}

static int settle_error(const char *err)
{
	fprintf(stderr, "vmpt script: %s\n", err);
	return 2;
}

/* perf.data; img holds the code given with --elf etc., cfg the --filter
 * ranges and a --retcomp/--noretcomp override of the recorded config.
 */
static int script_perf_data(const char *path, struct vmpt_image *img,
			    const struct vmpt_flow_config *cfg,
			    struct vmpt_script_opts *op, struct script_filter *sf,
			    int jobs)
{
	struct vmpt_session s;
	struct vmpt_script *sc = NULL;
	struct progress pg;
	char err[512];
	struct vmpt_session_opts so = { .symfs = sf->symfs, .warn = stderr,
					.no_guest_tasks = sf->no_guest_tasks };
	int ret = script_session_open(&s, "vmpt script", path, img, &so, op->guest_code,
				      ": a raw Intel PT trace? (did you mean --pt?)"), status = 1;

	if (ret < 0)
		goto out;
	if (!s.n_bufs && !s.n_samples && !op->show_task && !op->show_mmap &&
	    !op->show_switch && !op->show_lost) {
		fprintf(stderr, "vmpt script: no Intel PT data in %s; it holds %zu sideband "
			"records: see --show-task-events, --show-mmap-events, "
			"--show-switch-events\n", path, s.n_sb);
		goto out;
	}
	memcpy(s.cfg.filter_a, cfg->filter_a, sizeof(cfg->filter_a));
	memcpy(s.cfg.filter_b, cfg->filter_b, sizeof(cfg->filter_b));
	s.cfg.n_filters = cfg->n_filters;
	if (cfg->retcomp != VMPT_RETCOMP_AUTO)
		s.cfg.retcomp = cfg->retcomp;
	s.cfg.perf_resync = 1;	/* as perf after an error; raw traces: as libipt */
	op->image = s.image;
	op->have_tc = s.have_tc;
	op->tc = s.tc;
	op->map_of = vmpt_session_map_of;
	op->vdso_unread = vmpt_session_vdso_unread;
	op->kernel_sym = vmpt_session_kernel_sym;
	op->map_ctx = &s;
	/* Without libtraceevent the tracepoints' lines go without payload. */
	ret = vmpt_script_tp_open(&s.pd, &op->tp, err, sizeof(err));
	if (ret == -VMPT_ERR_NO_LIBRARY) {
		fprintf(stderr, "vmpt script: warning: %s\n", err);
	} else if (ret < 0) {
		fprintf(stderr, "vmpt script: %s: %s\n", path,
			ret == -VMPT_ERR_FORMAT ? err : vmpt_strerror(ret));
		goto out;
	} else if (vmpt_script_tp_formats_left_out(op->tp)) {
		size_t n = vmpt_script_tp_formats_left_out(op->tp);

		fprintf(stderr, "vmpt script: warning: %s: %zu event format%s of the tracing "
			"data crash%s libtraceevent: not read, %s events print no payload\n",
			path, n, n == 1 ? "" : "s", n == 1 ? "es" : "", n == 1 ? "its" : "their");
	}
	if (vmpt_script_opts_recording(op, &s.pd, s.intel_pt, s.have_info ? &s.info : NULL,
				       err, sizeof(err)) < 0) {
		status = settle_error(err);
		goto out;
	}
	if (script_filter_settle(sf, &s, op, err, sizeof(err)) < 0) {
		status = settle_error(err);
		goto out;
	}
	sc = vmpt_script_new(op);
	if (!sc) {
		fprintf(stderr, "vmpt script: %s\n", vmpt_strerror(-VMPT_ERR_NOMEM));
		goto out;
	}
	s.opts.progress = progress_start(&pg, "vmpt script");
	ret = vmpt_session_decode(&s, vmpt_script_consumer(sc), jobs, stdout);
	progress_end(&pg);
	if (ret == -VMPT_ERR_IO) {
		fprintf(stderr, "vmpt script: writing output: %s\n", strerror(errno));
		goto out;
	}
	if (ret < 0) {
		fprintf(stderr, "vmpt script: %s\n", s.errmsg);
		goto out;
	}
	summary(sc, &s, op->show_lost);
	status = 0;
out:
	vmpt_script_free(sc);
	vmpt_script_tp_free(op->tp);
	op->tp = NULL;
	vmpt_session_close(&s);
	return status;
}

static int script_raw(const char *pt, struct vmpt_image *img, struct vmpt_flow_config *cfg,
		      struct vmpt_script_opts *op, int jobs)
{
	struct vmpt_task unknown = { .cpu = -1, .pid = -1, .tid = -1 };
	struct vmpt_buffer_ref ref = { .cpu = -1 };
	struct vmpt_script *sc;
	struct vmpt_file trace;
	int ret = vmpt_file_map(&trace, pt), status = 1;

	if (ret < 0) {
		fprintf(stderr, "vmpt script: %s: %s\n", pt,
			ret == -VMPT_ERR_IO ? strerror(errno) : vmpt_strerror(ret));
		return 1;
	}
	if (!trace.size || vmpt_perf_is_perf_data(trace.data, trace.size) ||
	    !vmpt_pkt_find_psb(trace.data, trace.data + trace.size)) {
		if (!trace.size)
			fprintf(stderr, "vmpt script: %s: empty file, no trace to decode\n", pt);
		else if (vmpt_perf_is_perf_data(trace.data, trace.size))
			fprintf(stderr, "vmpt script: %s: a perf.data, not a raw Intel PT "
				"trace (give it with -i)\n", pt);
		else
			fprintf(stderr, "vmpt script: %s: no PSB in its %zu bytes: this is "
				"not an Intel PT trace\n", pt, trace.size);
		vmpt_file_unmap(&trace);
		return 1;
	}
	cfg->image = img;
	op->image = img;
	cfg->begin = trace.data;
	cfg->end = trace.data + trace.size;
	cfg->release = !trace.read_in;	/* bounded memory */
	vmpt_script_opts_raw(op);
	sc = vmpt_script_new(op);
	if (!sc) {
		fprintf(stderr, "vmpt script: %s\n", vmpt_strerror(-VMPT_ERR_NOMEM));
	} else {
		struct progress pg;
		struct vmpt_progress hook = progress_start(&pg, "vmpt script");

		ret = vmpt_jobs_decode(cfg, vmpt_script_consumer(sc), &unknown, &ref, jobs,
				       stdout, &hook);
		progress_end(&pg);
		if (ret == -VMPT_ERR_IO)
			fprintf(stderr, "vmpt script: writing output: %s\n", strerror(errno));
		else if (ret < 0)
			fprintf(stderr, "vmpt script: %s: %s\n", pt, vmpt_strerror(ret));
		else
			summary(sc, NULL, 0);
		status = ret < 0;
		vmpt_script_free(sc);
	}
	vmpt_file_unmap(&trace);
	return status;
}

static void script_usage(FILE *out)
{
	fprintf(out,
		"usage: vmpt script [OPTIONS] [-i perf.data]\n"
		"       vmpt script --pt TRACE [--elf FILE[@BASE]] [--raw FILE@ADDR]\n"
		"                   [--pagecache PREFIX] [--kcore FILE] [OPTIONS]\n"
		"images (any number, with --pt or a perf.data):\n"
		"  --elf FILE[@BASE], --raw FILE@ADDR, --pagecache PREFIX, --kcore FILE\n"
		"                    code of every machine; of the host once a guest\n"
		"                    image or --guest-code is given\n"
		"  --vmlinux FILE    the host kernel, named [kernel.kallsyms] as perf's\n"
		"  --guestvmlinux FILE  the guest kernel, [guest.kernel.kallsyms]\n"
		"  --guest-elf FILE[@BASE], --guest-raw FILE@ADDR,\n"
		"  --guest-pagecache PREFIX, --guest-kcore FILE\n"
		"                    code of the guest (PIP.NR=1)\n"
		"  --vmcs BASE|any   the guest images after it serve only the guest whose\n"
		"                    VMCS base address is BASE (any: every guest)\n"
		"  --guest-code      the guest runs the host program's code at the same\n"
		"                    addresses (KVM selftests, as perf's --guest-code)\n"
		"  --symfs DIR       look for the recording's binaries under DIR\n"
		"  --no-demangle     C++ and Rust names as mangled (perf's --demangle: on)\n"
		"  --demangle-kernel demangle kernel names too (off, as perf's)\n"
		"  --no-guest-tasks  a VM recording's guest code as any guest process's, not\n"
		"                    the task its guest sideband says runs (guest/perf.data)\n"
		"  --inline          callchain frames (g) of inlined functions, from DWARF\n"
		"                    (perf 6.1 shows none for Intel PT); --no-inline: none,\n"
		"                    not in stacks unwound (--call-graph dwarf) either\n"
		"output, as perf script's:\n"
		"  --itrace=LETTERS  i[PERIOD] instructions, b branches, c calls, r returns,\n"
		"                    x transactions, w ptwrite, p power events, I Event\n"
		"                    Trace, e errors,\n"
		"                    g[N] callchains, l[N] branch stacks, s[N] skip, Z\n"
		"                    timeless (default: cewxpoI; periods i100us, i5 (ns),\n"
		"                    i1000i, i4096t)\n"
		"  -F FIELDS         comm,tid,pid,time,cpu,event,ip,sym,symoff,dso,addr,\n"
		"                    period,flags,insn,insnlen,ipc,callindent,synth,brstack,\n"
		"                    brstacksym,disasm,srcline,srccode,machine_pid,vcpu,vmcs,\n"
		"                    trace,misc,iregs,uregs,weight,ins_lat,data_src,phys_addr,\n"
		"                    data_page_size,code_page_size (+FIELDS adds, -FIELDS\n"
		"                    removes; TYPE:FIELDS for hw, sw, trace, synth)\n"
		"  --call-trace, --call-ret-trace, --insn-trace[=disasm]\n"
		"  --ns              sample times in nanoseconds\n"
		"  --reltime         times since the first line's\n"
		"  --deltatime       times since the line before's\n"
		"  -G, --hide-call-graph  recorded samples' callchains not printed\n"
		"  --show-task-events, --show-mmap-events, --show-switch-events,\n"
		"  --show-lost-events   the sideband records among the samples\n"
		"filters, as perf script's:\n"
		"  -C, --cpu LIST  --pid LIST  --tid LIST  -c, --comms LIST  --dsos LIST\n"
		"  -S, --symbols LIST  --time START,STOP | PERCENT (several, space or comma)\n"
		"decoding:\n"
		"  --filter A-B      the IP filter range the trace was recorded with\n"
		"  --retcomp, --noretcomp\n"
		"                    return compression was on / off (default: as the\n"
		"                    trace shows it, or a perf.data's config)\n"
		"  -j N              decode N pieces of the trace in parallel\n");
}

int cmd_script(int argc, char **argv)
{
	enum { O_PT = 256, O_ITRACE, O_CALL_TRACE,
	       O_CALLRET_TRACE, O_INSN_TRACE, O_FILTER, O_RETCOMP, O_NORETCOMP, O_NS, O_PID, O_TID,
	       O_DSOS, O_TIME, O_SYMFS, O_SHOW_TASK, O_SHOW_MMAP, O_SHOW_SWITCH,
	       O_SHOW_LOST, O_DEMANGLE, O_NO_DEMANGLE, O_DEMANGLE_KERNEL, O_NO_GUEST_TASKS,
	       O_INLINE, O_NO_INLINE, O_RELTIME, O_DELTATIME };
	static const struct option longopts[] = {
		{ "pt", required_argument, NULL, O_PT },
		SCRIPT_IMAGE_LONGOPTS,
		{ "symfs", required_argument, NULL, O_SYMFS },
		{ "demangle", no_argument, NULL, O_DEMANGLE },
		{ "no-demangle", no_argument, NULL, O_NO_DEMANGLE },
		{ "demangle-kernel", no_argument, NULL, O_DEMANGLE_KERNEL },
		{ "no-guest-tasks", no_argument, NULL, O_NO_GUEST_TASKS },
		{ "inline", no_argument, NULL, O_INLINE },
		{ "no-inline", no_argument, NULL, O_NO_INLINE },
		{ "itrace", optional_argument, NULL, O_ITRACE },
		{ "fields", required_argument, NULL, 'F' },
		{ "call-trace", no_argument, NULL, O_CALL_TRACE },
		{ "call-ret-trace", no_argument, NULL, O_CALLRET_TRACE },
		{ "insn-trace", optional_argument, NULL, O_INSN_TRACE },
		{ "filter", required_argument, NULL, O_FILTER },
		{ "retcomp", no_argument, NULL, O_RETCOMP },
		{ "noretcomp", no_argument, NULL, O_NORETCOMP },
		{ "input", required_argument, NULL, 'i' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "ns", no_argument, NULL, O_NS },
		{ "reltime", no_argument, NULL, O_RELTIME },
		{ "deltatime", no_argument, NULL, O_DELTATIME },
		{ "hide-call-graph", no_argument, NULL, 'G' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "pid", required_argument, NULL, O_PID },
		{ "tid", required_argument, NULL, O_TID },
		{ "comms", required_argument, NULL, 'c' },
		{ "dsos", required_argument, NULL, O_DSOS },
		{ "symbols", required_argument, NULL, 'S' },
		{ "time", required_argument, NULL, O_TIME },
		{ "show-task-events", no_argument, NULL, O_SHOW_TASK },
		{ "show-mmap-events", no_argument, NULL, O_SHOW_MMAP },
		{ "show-switch-events", no_argument, NULL, O_SHOW_SWITCH },
		{ "show-lost-events", no_argument, NULL, O_SHOW_LOST },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct script_images images = { 0 };
	struct script_filter sf = { 0 };
	struct vmpt_flow_config cfg = { 0 };
	struct vmpt_script_opts op;
	const char *pt = NULL, *input = NULL, *shortcut = NULL;
	struct vmpt_image *img = vmpt_image_new();
	const char *failed = NULL;
	unsigned demangle = VMPT_IMAGE_DEMANGLE;
	int itrace_given = 0, jobs = 1, c, ret = 0, status = 1;

	if (!img)
		return 1;
	vmpt_script_opts_init(&op);
	while ((c = getopt_long(argc, argv, "F:i:j:C:c:S:Gh", longopts, NULL)) != -1) {
		const char *what = optarg;
		const char *opt = NULL;
		char why[300] = "";

		for (size_t k = 0; longopts[k].name; k++)
			if (longopts[k].val == c)
				opt = longopts[k].name;
		ret = script_images_option(&images, c, optarg, why, sizeof(why));
		if (ret != 0) {
			if (ret > 0)
				ret = 0;
		} else switch (c) {
		case O_PT: pt = optarg; break;
		case 'i': input = optarg; break;
		case O_SYMFS: sf.symfs = optarg; break;
		case O_DEMANGLE: demangle |= VMPT_IMAGE_DEMANGLE; break;
		case O_NO_DEMANGLE: demangle &= ~VMPT_IMAGE_DEMANGLE; break;
		case O_DEMANGLE_KERNEL: demangle |= VMPT_IMAGE_DEMANGLE_KERNEL; break;
		case O_NO_GUEST_TASKS: sf.no_guest_tasks = 1; break;
		/* perf 6.1 adds inlined frames to unwound callchains only, not
		 * to Intel PT's (its default --inline changes nothing there):
		 * vmpt adds them when asked, as later perfs do.
		 */
		case O_INLINE: op.inline_frames = 1; op.no_inline = 0; break;
		case O_NO_INLINE: op.inline_frames = 0; op.no_inline = 1; break;
		/* As perf's: not Intel PT's callchains (--itrace=g). */
		case 'G': op.hide_callchain = 1; break;
		case O_ITRACE:
			/* perf 6.1: --itrace alone is its default (perf script's
			 * lines are the same with it and without).
			 */
			if (!optarg) {
				vmpt_itrace_default(&op.it);
				itrace_given = 1;
				break;
			}
			ret = vmpt_itrace_parse(optarg, &op.it, why, sizeof(why));
			if (ret < 0) {
				fprintf(stderr, "vmpt script: %s\n", why);
				status = 2;
				goto out;
			}
			itrace_given = 1;
			break;
		case 'F':
			ret = vmpt_script_fields_parse(optarg, &op.f, why, sizeof(why));
			if (ret < 0) {
				fprintf(stderr, "vmpt script: %s\n", why);
				status = 2;
				goto out;
			}
			break;
		case O_CALL_TRACE:
		case O_CALLRET_TRACE:
		case O_INSN_TRACE:
			if (shortcut && strcmp(shortcut, opt)) {
				fprintf(stderr, "vmpt script: --%s and --%s conflict: give "
					"one\n", shortcut, opt);
				status = 2;
				goto out;
			}
			shortcut = opt;
			ret = vmpt_script_opts_shortcut(&op, opt, optarg);
			if (ret < 0)
				snprintf(why, sizeof(why), "raw or disasm");
			itrace_given = 1;
			break;
		case O_FILTER: {
			char *dash = strchr(optarg, '-'), *end;

			snprintf(why, sizeof(why), "an IP range is START-END (0x400000-"
				 "0x427000), up to 4 of them");
			ret = -VMPT_ERR_INVAL;
			if (!dash || cfg.n_filters == 4)
				break;
			errno = 0;
			cfg.filter_a[cfg.n_filters] = strtoull(optarg, &end, 0);
			if (errno || end != dash)
				break;
			cfg.filter_b[cfg.n_filters] = strtoull(dash + 1, &end, 0);
			if (errno || *end || end == dash + 1)
				break;
			cfg.n_filters++;
			ret = 0;
			break;
		}
		case O_RETCOMP: cfg.retcomp = VMPT_RETCOMP_ON; break;
		case O_NORETCOMP: cfg.retcomp = VMPT_RETCOMP_OFF; break;
		case O_NS: op.ns = 1; break;
		case O_RELTIME: op.reltime = 1; break;
		case O_DELTATIME: op.deltatime = 1; break;
		case 'j': {
			char *end;

			jobs = (int)strtol(optarg, &end, 10);
			if (*end || jobs < 1 || jobs > 1024) {
				snprintf(why, sizeof(why), "a number of threads, 1 to 1024");
				ret = -VMPT_ERR_INVAL;
			}
			break;
		}
		case 'C': case O_PID: case O_TID: case 'c': case O_DSOS: case 'S': case O_TIME:
			ret = script_filter_add(&sf, opt, optarg, why, sizeof(why));
			break;
		case O_SHOW_TASK: op.show_task = 1; break;
		case O_SHOW_MMAP: op.show_mmap = 1; break;
		case O_SHOW_SWITCH: op.show_switch = 1; break;
		case O_SHOW_LOST: op.show_lost = 1; break;
		case 'h':
			script_usage(stdout);
			status = 0;
			goto out;
		default:
			script_usage(stderr);
			status = 2;
			goto out;
		}
		if (ret == -VMPT_ERR_INVAL)
			goto bad_arg;
		if (ret < 0) {
			fprintf(stderr, "vmpt script: %s\n", vmpt_strerror(ret));
			goto out;
		}
		continue;
bad_arg:
		if (why[0])
			fprintf(stderr, "vmpt script: --%s %s: %s\n", opt, what, why);
		else
			fprintf(stderr, "vmpt script: bad argument '%s'\n", what);
		status = 2;
		goto out;
	}
	if (optind < argc) {
		fprintf(stderr, "vmpt script: unexpected argument '%s'\n", argv[optind]);
		status = 2;
		goto out;
	}
	if (op.reltime && op.deltatime) {
		fprintf(stderr, "vmpt script: reltime and deltatime - the two don't get along "
			"well. Please limit to --reltime or --deltatime.\n");
		status = 2;
		goto out;
	}
	if (pt && input) {
		fprintf(stderr, "vmpt script: give --pt TRACE or -i PERF.DATA, not both\n");
		status = 2;
		goto out;
	}
	/* Raw traces keep vmpt's own default: branches and errors. */
	if (pt && !itrace_given)
		vmpt_itrace_parse("be", &op.it, NULL, 0);
	if (pt && !op.f.user_set[VMPT_OUT_HW] && !op.it.insns)
		op.f.flags = 1;
	op.guest_code = images.guest_code;
	vmpt_image_set_demangle(img, demangle);
	ret = script_images_add(&images, img, &failed);
	if (ret < 0) {
		fprintf(stderr, "vmpt script: %s: %s\n", failed,
			ret == -VMPT_ERR_IO ? strerror(errno) : vmpt_strerror(ret));
		goto out;
	}
	if (pt)
		status = script_raw(pt, img, &cfg, &op, jobs);
	else
		status = script_perf_data(input ? input : "perf.data", img, &cfg, &op, &sf,
					  jobs);
out:
	if ((fflush(stdout) != 0 || ferror(stdout)) && status == 0) {
		fprintf(stderr, "vmpt script: writing output: %s\n",
			strerror(errno ? errno : EIO));
		status = 1;
	}
	script_filter_free(&sf);
	script_images_free(&images);
	vmpt_image_free(img);
	return status;
}
