/* SPDX-License-Identifier: MIT */
/* vmpt record: the options, the main loop and how a recording ends.  The
 * loop polls the events' rings every 50 ms (or when the kernel wakes it),
 * reads them out (vmpt_record_write.c), keeps the tsc-offset series, and
 * stops on SIGINT/SIGTERM (*opts->stop), the control FIFO, --duration,
 * the end of the target, or a write error; then the events are disabled
 * and the rings read out once more before the file is closed.
 */
#include "vmpt_record_int.h"
#include "vmpt/error.h"
#include "vmpt/kcore.h"
#include "vmpt/sideband.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* tsc-offset values kept per recording: a guest writing its TSC all the
 * time is not followed further. */
#define MAX_TSC_VALUES 65536

int rec_fail(struct rec *r, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return code;
}

void rec_log(struct rec *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->o->log)
		return;
	va_start(ap, fmt);
	vfprintf(r->o->log, fmt, ap);
	va_end(ap);
}

uint64_t rec_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int clock_now(void *ctx, uint64_t *ns)
{
	return vmpt_perf_clock_now(ctx, ns);
}

/* Keep each vCPU's tsc-offset and scaling as it changes, with the time it
 * was first seen: the value holds from then (a change shows at the next
 * read, every 50 ms).
 */
static void poll_tsc(struct rec *r)
{
	if (vmpt_kvm_tsc_series_poll(&r->tsc, r->o->debugfs_root, r->target_pid,
				     clock_now, &r->clock))
		rec_log(r, "vmpt record: more than %zu tsc-offset values or %d vCPUs: "
			"later changes are not kept\n", r->tsc.max, VMPT_KVM_TSC_MAX_VCPUS);
}

static void handle_fifo(struct rec *r, int *stop)
{
	char buf[256];
	ssize_t n = read(r->fifo, buf, sizeof(buf) - 1);

	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *save = NULL, *cmd = strtok_r(buf, "\n", &save); cmd;
	     cmd = strtok_r(NULL, "\n", &save)) {
		if (!strcmp(cmd, "snapshot"))
			rec_write_snapshot(r);
		else if (!strcmp(cmd, "stop"))
			*stop = 1;
		else if (!strcmp(cmd, "enable"))
			rec_events_enable(r, 1);
		else if (!strcmp(cmd, "disable"))
			rec_events_enable(r, 0);
		else
			rec_log(r, "vmpt record: control: unknown command '%s' (snapshot, "
				"stop, enable, disable)\n", cmd);
	}
}

static int start_child(struct rec *r, int *go_fd)
{
	int pfd[2];
	pid_t child;

	if (pipe2(pfd, O_CLOEXEC))
		return rec_fail(r, -VMPT_ERR_IO, "pipe: %s", strerror(errno));
	child = fork();
	if (child < 0)
		return rec_fail(r, -VMPT_ERR_IO, "fork: %s", strerror(errno));
	if (!child) {
		char c;

		close(pfd[1]);
		/* Wait for the events, then exec: enable_on_exec starts them. */
		if (read(pfd[0], &c, 1) != 1)
			_exit(127);
		execvp(r->o->argv[0], r->o->argv);
		fprintf(stderr, "vmpt record: cannot run %s: %s\n", r->o->argv[0],
			strerror(errno));
		_exit(127);
	}
	close(pfd[0]);
	r->child = child;
	r->target_pid = child;
	*go_fd = pfd[1];
	return 0;
}

/* Everything before the events start: the output, kcore, the header
 * records and the sideband of what already runs.
 */
static int write_start(struct rec *r)
{
	const struct vmpt_record_opts *o = r->o;
	struct perf_event_header init = { .type = VMPT_PERF_RECORD_FINISHED_INIT,
					  .size = sizeof(init) };
	int rc;

	if ((rc = rec_write_open(r)))
		return rc;
	if (o->kcore) {
		struct vmpt_kcore_stats ks;
		char kerr[1024];
		const char *dir = vmpt_perf_writer_kcore_dir(r->w);

		rc = dir ? vmpt_kcore_copy(o->procfs_root, dir, &ks, kerr, sizeof(kerr))
			 : -VMPT_ERR_INTERNAL;
		if (rc)
			return rec_fail(r, rc, "--kcore: %s", dir ? kerr : "no kcore_dir");
		rec_log(r, "vmpt record: kcore_dir: %u segments, %" PRIu64 " bytes of "
			"kernel%s text\n", ks.nr_segments, ks.bytes,
			ks.modules_end ? " and module" : "");
	}
	if ((rc = rec_write_header(r)) || r->st->write_error)
		return rc;
	vmpt_sideband_kernel(o->procfs_root, rec_write_synth, r);
	if (r->target_pid > 0 && !r->command)
		vmpt_sideband_process(o->procfs_root, r->target_pid, rec_write_synth, r);
	/* perf: what was made up from /proc ends here (perf inject
	 * --guest-data starts injecting the guest's records at it). */
	rec_write_event(r, &init);
	rec_write_sync(r, 1);
	return 0;
}

/* Poll, read out, until something stops the recording. */
static int loop(struct rec *r)
{
	const struct vmpt_record_opts *o = r->o;
	uint64_t deadline = o->duration > 0 ? rec_now_ns() + (uint64_t)(o->duration * 1e9) : 0;
	struct pollfd *pfd = calloc(r->nr_maps + 1, sizeof(*pfd));
	int stop = 0, rc = 0;

	if (!pfd)
		return -VMPT_ERR_NOMEM;
	while (!stop) {
		size_t np = 0, live = 0;

		for (size_t i = 0; i < r->nr_maps; i++) {
			pfd[np].fd = r->maps[i].hup ? -1 : r->maps[i].fd;
			pfd[np++].events = POLLIN;
		}
		if (r->fifo >= 0) {
			pfd[np].fd = r->fifo;
			pfd[np++].events = POLLIN;
		}
		poll(pfd, np, 50);
		for (size_t i = 0; i < r->nr_maps; i++) {
			if (pfd[i].revents & (POLLHUP | POLLERR))
				r->maps[i].hup = 1;
			live += !r->maps[i].hup;
		}
		if (r->fifo >= 0 && (pfd[r->nr_maps].revents & POLLIN))
			handle_fifo(r, &stop);
		if (o->snapshot_request && *o->snapshot_request) {
			*o->snapshot_request = 0;
			rec_write_snapshot(r);
		}
		poll_tsc(r);
		if ((rc = rec_write_drain(r)))
			break;
		rec_write_sync(r, 0);
		if (o->stop && *o->stop)
			stop = 1;
		if (r->child > 0 &&
		    waitpid(r->child, &r->st->child_status, WNOHANG) == r->child) {
			r->child = -1;
			stop = 1;
		}
		if (!r->command && !live) {
			rec_log(r, "vmpt record: all traced threads have exited\n");
			stop = 1;
		}
		if (!r->command && (o->all_cpus || o->cpu_list) && r->target_pid > 0 &&
		    kill(r->target_pid, 0) && errno == ESRCH)
			stop = 1;
		if (deadline && rec_now_ns() >= deadline)
			stop = 1;
		if (r->st->write_error)
			stop = 1;
	}
	free(pfd);
	return rc;
}

static int run(struct rec *r)
{
	const struct vmpt_record_opts *o = r->o;
	int go_fd = -1, rc;

	if (o->argv && (rc = start_child(r, &go_fd)))
		return rc;
	if ((rc = rec_events_targets(r)) || (rc = rec_events_build(r)) ||
	    (rc = rec_events_open(r)) || (rc = write_start(r)) || r->st->write_error)
		goto kill_child;
	if (vmpt_perf_clock_open(&r->clock, &r->tc))
		rec_log(r, "vmpt record: perf's clock is not readable here (%s): "
			"tsc-offset changes are saved without their time\n", strerror(errno));
	poll_tsc(r);

	/* The command starts its events itself (enable_on_exec); a command
	 * that only times the recording starts once they are on. */
	if (!r->command)
		rec_events_enable(r, 1);
	if (o->argv) {
		if (write(go_fd, "g", 1) != 1) {
			rc = rec_fail(r, -VMPT_ERR_IO, "cannot start %s", o->argv[0]);
			goto kill_child;
		}
		close(go_fd);
		go_fd = -1;
	}
	rc = loop(r);
	rec_events_enable(r, 0);
	if (!rc && o->snapshot)
		rec_write_snapshot(r);	/* what the AUX areas hold at the end */
	if (!rc)
		rc = rec_write_drain(r);
	if (r->child > 0) {
		kill(r->child, SIGTERM);
		waitpid(r->child, NULL, 0);
		r->child = -1;
	}
	rec_write_tsc(r);
	return rc;

kill_child:
	if (go_fd >= 0)
		close(go_fd);
	if (r->child > 0) {
		kill(r->child, SIGKILL);
		waitpid(r->child, NULL, 0);
		r->child = -1;
	}
	return rc;
}

/* perf's defaults, and checks of what was given. */
static int check_opts(struct rec *r, struct vmpt_record_opts *o)
{
	int targets = (o->pid > 0) + (o->domain != NULL);
	int root = geteuid() == 0;
	uint64_t avail, one_ring;
	int rc;

	if (!o->output)
		o->output = "perf.data";
	if (!o->event)
		o->event = "intel_pt//";
	if (!o->sysfs_root)
		o->sysfs_root = "/sys";
	if (!o->procfs_root)
		o->procfs_root = "/proc";
	if (!o->debugfs_root)
		o->debugfs_root = "/sys/kernel/debug";
	if (targets > 1 || (!targets && !o->argv && !o->all_cpus && !o->cpu_list))
		return rec_fail(r, -VMPT_ERR_INVAL, "give one target: --pid PID, "
				"--domain NAME or -- COMMAND (or -a / -C for CPUs)");
	r->command = o->argv && !targets && !o->all_cpus && !o->cpu_list;
	if (o->duration < 0)
		return rec_fail(r, -VMPT_ERR_INVAL, "--duration %g: not a time in "
				"seconds", o->duration);
	if (!o->data_pages)
		o->data_pages = root ? 64 : 16;
	if (!o->aux_pages)
		o->aux_pages = o->snapshot_size ? 0 : root ? 1024 : 32;
	if (o->snapshot_size) {
		/* perf: the AUX area is the snapshot size, a power of two */
		uint64_t pages = (o->snapshot_size + r->page - 1) / r->page, p2 = 1;

		while (p2 < pages)
			p2 <<= 1;
		o->aux_pages = (unsigned)p2;
	}
	if (o->data_pages & (o->data_pages - 1) || o->aux_pages & (o->aux_pages - 1))
		return rec_fail(r, -VMPT_ERR_INVAL, "-m: %u,%u pages: both counts must "
				"be powers of two", o->data_pages, o->aux_pages);
	rc = vmpt_record_output_check(o->output, o->kcore, &avail, r->err, r->errlen);
	if (rc)
		return rc;
	one_ring = ((uint64_t)o->data_pages + o->aux_pages) * r->page;
	if (avail < one_ring)
		rec_log(r, "vmpt record: %" PRIu64 " KiB free for %s: the recording stops "
			"when it is full\n", avail / 1024, o->output);
	return 0;
}

int vmpt_record(const struct vmpt_record_opts *opts, struct vmpt_record_stats *stats,
		char *err, size_t errlen)
{
	struct vmpt_record_opts o = *opts;
	struct rec r = { .o = &o, .st = stats, .err = err, .errlen = errlen,
			 .fifo = -1, .child = -1 };
	int rc;

	memset(stats, 0, sizeof(*stats));
	stats->child_status = -1;
	err[0] = '\0';
	r.page = (size_t)sysconf(_SC_PAGESIZE);
	r.clock.fd = -1;
	if ((rc = check_opts(&r, &o)))
		return rc;
	r.vcpus = calloc(1, sizeof(*r.vcpus));
	if (!r.vcpus || vmpt_kvm_tsc_series_init(&r.tsc, MAX_TSC_VALUES)) {
		free(r.vcpus);
		vmpt_kvm_tsc_series_free(&r.tsc);
		return -VMPT_ERR_NOMEM;
	}
	rc = rec_events_prepare(&r);
	if (!rc)
		rc = rec_tp_prepare(&r);
	if (!rc && o.control_fifo) {
		r.fifo = open(o.control_fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (r.fifo < 0)
			rc = rec_fail(&r, -VMPT_ERR_IO, "control FIFO %s: %s (create it "
				      "with mkfifo)", o.control_fifo, strerror(errno));
	}
	if (!rc) {
		rec_events_attrs(&r);
		rc = run(&r);
	}
	rc = rec_write_close(&r, rc);
	rec_events_close(&r);
	rec_tp_free(&r);
	free(r.vcpus);
	vmpt_kvm_tsc_series_free(&r.tsc);
	vmpt_perf_clock_close(&r.clock);
	if (r.fifo >= 0)
		close(r.fifo);
	return rc;
}
