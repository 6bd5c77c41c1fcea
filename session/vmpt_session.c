/* SPDX-License-Identifier: MIT */
/* A perf.data recording for decoding: buffers, images from the sideband,
 * settings, time conversion and who ran when.  See include/vmpt/session.h.
 */
#include "vmpt/session.h"
#include "vmpt_session_int.h"
#include "vmpt/correlate.h"
#include "vmpt/error.h"
#include "vmpt/path.h"
#include "vmpt/guest_tasks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int grow(void **arr, size_t n, size_t size)
{
	/* Powers of two: grow when n reaches one. */
	if (n & (n - 1) || !(n >= 16 || n == 0))
		return 0;
	void *p = realloc(*arr, (n ? 2 * n : 16) * size);

	if (!p)
		return -VMPT_ERR_NOMEM;
	*arr = p;
	return 0;
}

#define PUSH(arr, n, val) \
	(grow((void **)&(arr), (n), sizeof(*(arr))) < 0 ? -VMPT_ERR_NOMEM : \
	 ((arr)[(n)++] = (val), 0))

/* An executable mapping as code: the ELF placed as mapped (a file that is
 * no ELF, a JIT dump, maps raw).  root prefixes the path (a guest's
 * binaries live under guest/root); vdso names the file for "[vdso]".
 */
static void add_mapping(struct vmpt_image *img, const struct vmpt_perf_event *ev,
			const char *root, const char *vdso_root,
			const struct vmpt_asid *asid)
{
	const char *name = ev->mmap.filename;

	/* The guest names these files: each is opened inside root.  Without
	 * a root a relative path opens from here, as perf.
	 */
	if (!strcmp(name, "[vdso]") && vdso_root) {
		root = vdso_root;
		name = "vdso";
	} else if (name[0] != '/' && (root || name[0] == '[')) {
		return;
	}
	/* named as recorded: the guest's path, not its copy's */
	if (vmpt_image_add_elf_map_in(img, root, name, root ? ev->mmap.filename : NULL,
				      ev->mmap.start, ev->mmap.pgoff, asid) == -VMPT_ERR_FORMAT)
		vmpt_image_add_raw_in(img, root, name, ev->mmap.pgoff, ev->mmap.len,
				      ev->mmap.start, asid);
}

/* A recording's own directory (kcore_dir, a guest's): no symlink to
 * somewhere else.
 */
static int own_dir(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_exec_map(const struct vmpt_perf_event *ev)
{
	return ev->type == PERF_RECORD_MMAP ||
	       (ev->type == PERF_RECORD_MMAP2 && (ev->mmap.prot & 4));
}

/* A guest's record merged into the host's recording (perf inject
 * --guest-data, vmpt correlate --guest-data give them a guest cpumode):
 * perf files its tasks and mappings under the guest machine, and a guest
 * tid or pid is no host one.
 */
static int guest_machine_record(const struct vmpt_perf_event *ev)
{
	unsigned cpumode = ev->misc & PERF_RECORD_MISC_CPUMODE_MASK;

	return cpumode == PERF_RECORD_MISC_GUEST_KERNEL || cpumode == PERF_RECORD_MISC_GUEST_USER;
}

/* The guest side of a VM recording: DIR/guest in perf's directory form,
 * FILE.guest beside a file.
 */
static void guest_dir(const char *recording, char *dir, size_t size)
{
	struct stat st;

	if (stat(recording, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(dir, size, "%s/guest", recording);
	else
		snprintf(dir, size, "%s.guest", recording);
}

/* What vmpt record --guest fetched with a recording (docs/guest.md): the
 * guest kernel from kcore_dir as code of the guest machine; without the
 * guest's tasks (--no-guest-tasks) also the binaries its sideband maps
 * (under root/, vdso) as code of any guest process.  A recording without
 * a guest side is no error.  *tasks: follow the guest's tasks.
 */
static int add_guest(struct vmpt_session *s, const char *recording, int *tasks)
{
	struct vmpt_asid guest = { VMPT_MACHINE_GUEST, VMPT_ASID_ANY };
	char dir[4096], path[4096 + 32], root[4096 + 32];
	struct vmpt_perf_data gpd;
	struct vmpt_file gf;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	struct stat st;
	int ret, have_kcore;

	guest_dir(recording, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/kcore_dir", dir);
	have_kcore = own_dir(path);
	if (have_kcore && (ret = vmpt_image_add_kcore_dir(s->image, path, &guest)) < 0) {
		snprintf(s->errmsg, sizeof(s->errmsg), "%.500s: %s", path,
			 vmpt_strerror(ret));
		return ret;
	}
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	if (lstat(path, &st) != 0)
		return 0;
	if (!have_kcore && s->opts.warn)
		fprintf(s->opts.warn, "vmpt: warning: %s/kcore_dir: %s: the guest kernel's code "
			"cannot be decoded (vmpt record --guest --kcore saves it)\n", dir,
			strerror(ENOENT));
	*tasks = !s->opts.no_guest_tasks;
	if (*tasks)
		return 0;
	ret = vmpt_path_map(&gf, dir, "perf.data");
	if (ret < 0) {
		snprintf(s->errmsg, sizeof(s->errmsg), "%.500s: %s", path,
			 ret == -VMPT_ERR_IO ? strerror(errno) : vmpt_strerror(ret));
		return ret;
	}
	ret = vmpt_perf_open_mapped(&gpd, &gf, 0);
	if (ret < 0) {
		snprintf(s->errmsg, sizeof(s->errmsg), "%.590s", gpd.errmsg);
		vmpt_perf_close(&gpd);
		return ret;
	}
	snprintf(root, sizeof(root), "%s/root", dir);
	vmpt_perf_cursor_init(&gpd, &cur);
	while ((ret = vmpt_perf_next(&gpd, &cur, &ev)) > 0)
		if (is_exec_map(&ev))
			add_mapping(s->image, &ev, root, dir, &guest);
	if (ret < 0)
		snprintf(s->errmsg, sizeof(s->errmsg), "%.590s", gpd.errmsg);
	vmpt_perf_close(&gpd);
	return ret;
}

/* Decoder settings from AUXTRACE_INFO and the intel_pt event's config. */
static void intel_pt_config(struct vmpt_session *s,
			    const struct vmpt_perf_intel_pt_info *info)
{
	const uint64_t *priv = info->priv;
	uint64_t config = 0, mtc_mask = priv[VMPT_INTEL_PT_MTC_FREQ_BITS];
	struct vmpt_flow_config *cfg = &s->cfg;

	for (size_t i = 0; i < s->pd.nr_attrs; i++)
		if (s->pd.attrs[i].attr.type == priv[VMPT_INTEL_PT_PMU_TYPE])
			config = s->pd.attrs[i].attr.config;
	cfg->retcomp = config & priv[VMPT_INTEL_PT_NORETCOMP_BIT] ?
		       VMPT_RETCOMP_OFF : VMPT_RETCOMP_ON;
	if (mtc_mask)
		cfg->mtc_period = (uint8_t)((config & mtc_mask) >>
					    __builtin_ctzll(mtc_mask));
	cfg->tsc_ctc_ratio_n = (uint32_t)priv[VMPT_INTEL_PT_TSC_CTC_N];
	cfg->tsc_ctc_ratio_d = (uint32_t)priv[VMPT_INTEL_PT_TSC_CTC_D];
	cfg->max_nonturbo_ratio = (uint32_t)priv[VMPT_INTEL_PT_MAX_NONTURBO_RATIO];
	/* RTIT_CTL's CYCThresh, bits 22:19, as perf's decoder reads it. */
	if (config & priv[VMPT_INTEL_PT_CYC_BIT])
		cfg->cyc_thresh = (uint8_t)((config >> 19) & 0xf);
	/* perf converts Intel PT's TSC with these (TIME_CONV may refine). */
	if (!s->have_tc && priv[VMPT_INTEL_PT_TIME_MULT]) {
		s->tc.time_shift = priv[VMPT_INTEL_PT_TIME_SHIFT];
		s->tc.time_mult = priv[VMPT_INTEL_PT_TIME_MULT];
		s->tc.time_zero = priv[VMPT_INTEL_PT_TIME_ZERO];
		s->have_tc = 1;
	}
}

static int sid_int(uint32_t v)
{
	return v == UINT32_MAX ? -1 : (int)v;
}

/* The process a mapping is of: -1 for the kernel's, every process's. */
static int map_pid(const struct vmpt_perf_event *ev)
{
	int pid = sid_int(ev->mmap.pid);

	return pid > 0 && (ev->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_KERNEL ?
	       pid : -1;
}

/* One sideband record: who runs where, names, forks, mappings. */
static int sideband(struct vmpt_session *s, const struct vmpt_perf_event *ev)
{
	struct vmpt_task_rec r = { 0 };
	uint64_t seq = s->n_comms + s->n_switches + s->n_forks;

	r.time = ev->sid.present & PERF_SAMPLE_TIME ? ev->sid.time : 0;
	r.cpu = ev->sid.present & PERF_SAMPLE_CPU ? sid_int(ev->sid.cpu) : -1;
	r.seq = seq;
	switch (ev->type) {
	case PERF_RECORD_COMM:
		r.pid = sid_int(ev->comm.pid);
		r.tid = sid_int(ev->comm.tid);
		r.comm = ev->comm.comm;
		if (ev->misc & PERF_RECORD_MISC_COMM_EXEC && r.pid > 0 &&
		    session_proc_start(s, r.pid, -1, 1, r.time, ev->offset) < 0)
			return -VMPT_ERR_NOMEM;
		return PUSH(s->comms, s->n_comms, r);
	case PERF_RECORD_FORK:
		r.pid = sid_int(ev->fork.pid);
		r.tid = sid_int(ev->fork.tid);
		r.ptid = sid_int(ev->fork.ptid);
		/* A new process, not a thread. */
		if (ev->fork.pid != ev->fork.ppid &&
		    session_proc_start(s, r.pid, sid_int(ev->fork.ppid), 0, r.time, ev->offset) < 0)
			return -VMPT_ERR_NOMEM;
		return PUSH(s->forks, s->n_forks, r);
	case PERF_RECORD_ITRACE_START:
		r.pid = sid_int(ev->itrace_start.pid);
		r.tid = sid_int(ev->itrace_start.tid);
		return r.cpu >= 0 ? PUSH(s->switches, s->n_switches, r) : 0;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (ev->sw.out) {
			/* Switching out names the task coming in. */
			r.pid = sid_int(ev->sw.next_prev_pid);
			r.tid = sid_int(ev->sw.next_prev_tid);
			return r.cpu >= 0 ? PUSH(s->switches, s->n_switches, r) : 0;
		}
		/* Switching in names itself in its sample id. */
		/* fall through */
	case PERF_RECORD_SWITCH:
		if (ev->type == PERF_RECORD_SWITCH && ev->sw.out)
			return 0;
		if (!(ev->sid.present & PERF_SAMPLE_TID) || r.cpu < 0)
			return 0;
		r.pid = sid_int(ev->sid.pid);
		r.tid = sid_int(ev->sid.tid);
		return PUSH(s->switches, s->n_switches, r);
	default:
		return 0;
	}
}


int vmpt_session_add_guest_code(struct vmpt_session *s)
{
	struct vmpt_asid guest = { VMPT_MACHINE_GUEST, VMPT_ASID_ANY };
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	int ret;

	/* perf gives the guest the maps of the process on the CPU when the
	 * guest first runs; the decoder does not look guest code up by
	 * host process, so with several processes mapping different code
	 * at one address the last mapping wins.
	 */
	vmpt_perf_cursor_init(&s->pd, &cur);
	while ((ret = vmpt_perf_next(&s->pd, &cur, &ev)) > 0)
		if (is_exec_map(&ev) && sid_int(ev.mmap.pid) > 0 &&
		    (ev.misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_KERNEL)
			add_mapping(s->image, &ev, NULL, NULL, &guest);
	if (ret < 0)
		snprintf(s->errmsg, sizeof(s->errmsg), "%.590s", s->pd.errmsg);
	return ret;
}

/* The records a consumer may show among the samples. */
static int shown_record(uint32_t type)
{
	switch (type) {
	case PERF_RECORD_COMM: case PERF_RECORD_FORK: case PERF_RECORD_EXIT:
	case PERF_RECORD_MMAP: case PERF_RECORD_MMAP2: case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: case PERF_RECORD_LOST: case PERF_RECORD_AUX:
	case PERF_RECORD_SAMPLE:	/* other events' (cycles, cpu-clock, ...) */
		return 1;
	default:
		return 0;
	}
}

/* A VM recording: its guest TSC packets read as the host TSCs the
 * correlator finds (the same computation as vmpt correlate's).  A
 * recording it cannot correlate (no TSC or MTC) decodes as it is; with
 * guest TSCs in it, s->corr stays to say so.
 */
static int correlate(struct vmpt_session *s, const char *path)
{
	struct vmpt_corr_config cfg = { 0 };
	uint64_t guest, patched;
	int vmx = 0, ret;

	/* A recording read from a pipe cannot be read again by the
	 * correlator: it decodes as it is.
	 */
	if (s->pd.map.read_in)
		return 0;
	/* No VMCS packet (02 c8) anywhere: no VMX, nothing to correlate. */
	for (size_t i = 0; i < s->n_bufs && !vmx; i++)
		vmx = memmem(s->bufs[i].data, s->bufs[i].size, "\x02\xc8", 2) != NULL;
	if (!vmx)
		return 0;
	ret = vmpt_corr_open(&s->corr, path, &cfg);

	if (ret == 0)
		ret = vmpt_corr_run(s->corr);
	if (ret == -VMPT_ERR_NOMEM)
		return ret;
	vmpt_corr_counts(s->corr, &guest, &patched);
	/* Nothing to say but for a VM recording it cannot correlate. */
	if (!guest || (ret < 0 && ret != -VMPT_ERR_UNSUPPORTED)) {
		vmpt_corr_free(s->corr);
		s->corr = NULL;
		return 0;
	}
	if (ret < 0)
		return 0;
	for (size_t i = 0; i < s->n_bufs; i++)
		s->bufs[i].tsc_patches = vmpt_corr_patches(s->corr, i);
	return 0;
}

int vmpt_session_open(struct vmpt_session *s, const char *path,
		      struct vmpt_image *img)
{
	return vmpt_session_open_opts(s, path, img, NULL);
}

int vmpt_session_open_opts(struct vmpt_session *s, const char *path,
			   struct vmpt_image *img, const struct vmpt_session_opts *opts)
{
	struct vmpt_asid host = { VMPT_MACHINE_HOST, VMPT_ASID_ANY };
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	struct session_pokes pokes = { 0 };
	struct session_reads reads = { 0 };
	char kdir[4096];
	int ret, tasks = 0;

	memset(s, 0, sizeof(*s));
	if (opts)
		s->opts = *opts;
	s->own_image = !img;
	s->image = img ? img : vmpt_image_new();
	if (!s->image) {
		snprintf(s->errmsg, sizeof(s->errmsg), "%s", vmpt_strerror(-VMPT_ERR_NOMEM));
		return -VMPT_ERR_NOMEM;
	}
	s->cfg.image = s->image;
	ret = vmpt_perf_open_flags(&s->pd, path, VMPT_PERF_READ_CUT);
	if (ret < 0) {
		snprintf(s->errmsg, sizeof(s->errmsg), "%.590s", s->pd.errmsg);
		return ret;
	}
	if (s->pd.kcore_dir && own_dir(s->pd.kcore_dir) &&
	    (ret = vmpt_image_add_kcore_dir(s->image, s->pd.kcore_dir, &host)) < 0) {
		snprintf(s->errmsg, sizeof(s->errmsg), "%.500s: %s", s->pd.kcore_dir,
			 vmpt_strerror(ret));
		return ret;
	}
	/* The kernel vmpt archive copied next to a recording of one file. */
	if (!s->pd.kcore_dir && vmpt_session_sysroot(path, kdir, sizeof(kdir) - 10) == 0) {
		strcat(kdir, "/kcore_dir");
		if (own_dir(kdir) &&
		    (ret = vmpt_image_add_kcore_dir(s->image, kdir, &host)) < 0) {
			snprintf(s->errmsg, sizeof(s->errmsg), "%.500s: %s", kdir,
				 vmpt_strerror(ret));
			return ret;
		}
	}
	ret = add_guest(s, path, &tasks);
	if (ret < 0)
		return ret;
	vmpt_perf_cursor_init(&s->pd, &cur);
	while ((ret = vmpt_perf_next(&s->pd, &cur, &ev)) > 0) {
		if (ev.type == PERF_RECORD_MMAP2 || ev.type == PERF_RECORD_MMAP) {
			if (guest_machine_record(&ev))
				;
			else
				ret = session_keep_map(s, &ev, map_pid(&ev), !is_exec_map(&ev));
		} else if (ev.type == VMPT_PERF_RECORD_TIME_CONV) {
			s->tc = ev.time_conv;
			s->have_tc = 1;
		} else if (ev.type == VMPT_PERF_RECORD_AUXTRACE_INFO) {
			if (vmpt_perf_intel_pt_info(&ev, &s->info) == 0) {
				s->have_info = 1;
				intel_pt_config(s, &s->info);
			}
		} else if (ev.type == VMPT_PERF_RECORD_AUXTRACE) {
			struct vmpt_session_buffer b = {
				.data = ev.auxtrace.data, .size = ev.auxtrace.size,
				.cpu = sid_int(ev.auxtrace.cpu),
				.tid = sid_int(ev.auxtrace.tid),
				.idx = ev.auxtrace.idx, .offset = ev.offset,
				.data_offset = ev.auxtrace.data_offset,
			};

			ret = PUSH(s->bufs, s->n_bufs, b);
		} else if (!guest_machine_record(&ev)) {
			ret = sideband(s, &ev);
		}
		if (ret == 0)
			ret = session_pokes_see(&pokes, &ev);
		/* An error a decoder reported before (perf inject keeps
		 * them): among the records at its time.
		 */
		if (ev.type == VMPT_PERF_RECORD_AUXTRACE_ERROR && ev.size >= 48) {
			uint32_t fmt;

			memcpy(&fmt, ev.raw + 28, 4);
			ev.sid.present = PERF_SAMPLE_TIME;
			ev.sid.time = 0;
			if (fmt)
				memcpy(&ev.sid.time, ev.raw + 40, 8);
		}
		s->n_records++;
		if (ret == 0 && ev.type == PERF_RECORD_SAMPLE && ev.sample.nr_read) {
			struct vmpt_perf_event one;

			for (uint64_t i = 0; ret >= 0 && i < ev.sample.nr_read; i++)
				if ((ret = session_sample_value(&reads, &s->pd, &ev, i, &one)) > 0) {
					ret = PUSH(s->sb, s->n_sb, one);
					s->n_samples++;
				}
		} else if (ret == 0 && (shown_record(ev.type) ||
					ev.type == VMPT_PERF_RECORD_AUXTRACE_ERROR)) {
			s->n_samples += ev.type == PERF_RECORD_SAMPLE;
			ret = PUSH(s->sb, s->n_sb, ev);
		}
		if (ret < 0)
			break;
	}
	session_reads_free(&reads);
	if (ret < 0) {
		free(pokes.ev);
		snprintf(s->errmsg, sizeof(s->errmsg), "%.590s",
			 s->pd.errmsg[0] ? s->pd.errmsg : vmpt_strerror(ret));
		return ret;
	}
	ret = session_maps_place(s);
	if (ret < 0) {
		free(pokes.ev);
		snprintf(s->errmsg, sizeof(s->errmsg), "%s", vmpt_strerror(ret));
		return ret;
	}
	ret = session_pokes_apply(s, &pokes);
	if (ret < 0)
		return ret;
	ret = session_kernel_symbols(s);
	if (ret < 0) {
		snprintf(s->errmsg, sizeof(s->errmsg), "kallsyms: %s", vmpt_strerror(ret));
		return ret;
	}
	for (size_t i = 0; s->have_info && i < s->pd.nr_attrs; i++)
		if (s->pd.attrs[i].attr.type == s->info.priv[VMPT_INTEL_PT_PMU_TYPE])
			s->intel_pt = &s->pd.attrs[i].attr;
	vmpt_task_recs_sort(s->comms, s->n_comms, sizeof(*s->comms), VMPT_TASK_BY_TID);
	vmpt_task_recs_sort(s->switches, s->n_switches, sizeof(*s->switches), VMPT_TASK_BY_CPU);
	vmpt_task_recs_sort(s->forks, s->n_forks, sizeof(*s->forks), VMPT_TASK_BY_TIME);
	ret = vmpt_task_recs_inherit_comms((void **)&s->comms, &s->n_comms, sizeof(*s->comms),
					   s->forks, s->n_forks);
	if (ret == 0)
		ret = correlate(s, path);
	if (ret < 0) {
		snprintf(s->errmsg, sizeof(s->errmsg), "%s", vmpt_strerror(ret));
	} else if (tasks) {
		guest_dir(path, kdir, sizeof(kdir));
		ret = session_guest_open(s, kdir);
	}
	if (s->pd.warnmsg[0] && s->opts.warn)
		fprintf(s->opts.warn, "vmpt: warning: %s\n", s->pd.warnmsg);
	return ret;
}

void vmpt_session_close(struct vmpt_session *s)
{
	if (s->ksym_path[0])
		pthread_mutex_destroy(&s->ksym_lock);
	vmpt_corr_free(s->corr);
	vmpt_guest_tasks_free(s->guest);
	vmpt_perf_close(&s->pd);
	if (s->own_image)
		vmpt_image_free(s->image);
	free(s->bufs);
	free(s->comms);
	free(s->switches);
	free(s->forks);
	session_procs_free(s);
	free(s->maps);
	free(s->maps_by_pid);
	free(s->data_maps);
	free(s->map_index.at);
	free(s->data_index.at);
	free(s->sb);
	memset(s, 0, sizeof(*s));
}

/* vmpt_session_task, and until when the answer holds. */
void vmpt_session_task_until(const struct vmpt_session *s, const struct vmpt_session_buffer *b,
		    uint64_t time, struct vmpt_task *t, uint64_t *until)
{
	const struct vmpt_task_rec *r;
	uint64_t until2;

	t->cpu = b->cpu;
	t->pid = t->tid = -1;
	t->comm = NULL;
	*until = UINT64_MAX;
	/* A CPU's buffer runs what its context switches say, even where
	 * the buffer names a thread (perf: the switches decide when the
	 * recording has them).
	 */
	if (b->cpu >= 0) {
		r = vmpt_task_recs_at(s->switches, s->n_switches, sizeof(*s->switches),
				      VMPT_TASK_BY_CPU, b->cpu, time, until);
		if (r)
			t->pid = r->pid, t->tid = r->tid;
	}
	if (t->tid < 0 && b->tid >= 0)
		t->tid = b->tid;
	if (t->tid >= 0) {
		r = vmpt_task_recs_at(s->comms, s->n_comms, sizeof(*s->comms),
				      VMPT_TASK_BY_TID, t->tid, time, &until2);
		if (r) {
			t->comm = r->comm;
			if (t->pid < 0)
				t->pid = r->pid;
		} else if (t->tid == 0) {
			/* perf's name for the idle task. */
			t->comm = "swapper";
			t->pid = 0;
		}
		if (until2 < *until)
			*until = until2;
	}
	t->space = t->pid > 0 ? vmpt_session_space(s, t->pid, time) : 0;
	/* The process execs, or maps its own code, later. */
	if (t->pid > 0 && (until2 = session_space_until(s, t->pid, time)) < *until)
		*until = until2;
	session_guest_task(s, t, time, until);
}

void vmpt_session_task(const struct vmpt_session *s,
		       const struct vmpt_session_buffer *b, uint64_t time,
		       struct vmpt_task *task)
{
	uint64_t until;

	vmpt_session_task_until(s, b, time, task, &until);
}

const char *vmpt_session_comm(const struct vmpt_session *s, int tid, uint64_t time)
{
	const struct vmpt_task_rec *r;
	uint64_t until;

	r = vmpt_task_recs_at(s->comms, s->n_comms, sizeof(*s->comms), VMPT_TASK_BY_TID,
			      tid, time, &until);
	if (r)
		return r->comm;
	return tid == 0 ? "swapper" : NULL;
}
