/* SPDX-License-Identifier: MIT */
/* Guest sideband: a software dummy event on every CPU reporting mmap2,
 * comm, task and cpu-wide context switches, with a sample_id trailer
 * (tid, time, cpu, identifier) on each record, written as a perf.data
 * with TIME_CONV so guest perf time can be turned into guest TSC.  As
 * `perf record -a --sample-identifier --buildid-all` writes it: an id per
 * CPU and an ID_INDEX saying which (perf inject --guest-data takes the
 * guest CPU, the vCPU, from it), FINISHED_INIT after what was synthesized,
 * and the build-ids of the code mapped.
 */
#include "agent.h"
#include "guest_pack.h"
#include "vmpt/error.h"
#include "vmpt/perf_data.h"
#include "vmpt/pmu.h"
#include "vmpt/record.h"
#include "vmpt/sideband.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CPUS 1024

struct ring {
	int fd;
	uint64_t id;
	struct perf_event_mmap_page *page;
	uint8_t *data;
	uint64_t size;
};

struct recorder {
	struct ring rings[MAX_CPUS];
	int cpus[MAX_CPUS];
	size_t nr;
	size_t map_pages;
	struct perf_event_attr attr;
	struct vmpt_perf_writer *w;
	uint8_t *rec;		/* one record, unwrapped */
	uint64_t lost;
	struct agent_names exec_names;	/* files mapped executable */
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* The CPUs in /sys/devices/system/cpu/online, in order. */
static int online_cpus(int *cpus, size_t *nr)
{
	char list[1024];
	uint8_t set[MAX_CPUS];

	if (vmpt_read_small_file("/sys/devices/system/cpu/online", list, sizeof(list)) < 0)
		return -errno;
	if (vmpt_parse_cpu_list(list, set, MAX_CPUS) < 0)
		return -ENOENT;
	*nr = 0;
	for (int c = 0; c < MAX_CPUS; c++)
		if (set[c])
			cpus[(*nr)++] = c;
	return 0;
}

static int open_rings(struct recorder *r)
{
	long page = sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < r->nr; i++) {
		struct ring *ring = &r->rings[i];
		size_t len = (r->map_pages + 1) * (size_t)page;
		void *map;

		ring->fd = (int)syscall(SYS_perf_event_open, &r->attr, -1, r->cpus[i],
				       -1, PERF_FLAG_FD_CLOEXEC);
		if (ring->fd < 0) {
			fprintf(stderr, "vmpt-agent: perf_event_open(dummy, cpu %d): %s%s\n",
				r->cpus[i], strerror(errno),
				errno == EACCES || errno == EPERM ?
				" (run as root or through sudo -n)" : "");
			return -errno;
		}
		if (ioctl(ring->fd, PERF_EVENT_IOC_ID, &ring->id)) {
			fprintf(stderr, "vmpt-agent: PERF_EVENT_IOC_ID: %s\n", strerror(errno));
			return -errno;
		}
		map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, ring->fd, 0);
		if (map == MAP_FAILED) {
			fprintf(stderr, "vmpt-agent: mmap of the cpu %d ring: %s\n",
				r->cpus[i], strerror(errno));
			return -errno;
		}
		ring->page = map;
		ring->data = (uint8_t *)map + page;
		ring->size = r->map_pages * (uint64_t)page;
	}
	return 0;
}

static void close_rings(struct recorder *r)
{
	long page = sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < r->nr; i++) {
		if (r->rings[i].page)
			munmap(r->rings[i].page, (r->map_pages + 1) * (size_t)page);
		if (r->rings[i].fd > 0)
			close(r->rings[i].fd);
	}
}

static void copy_out(const struct ring *ring, uint64_t pos, void *dst, size_t n)
{
	uint64_t off = pos & (ring->size - 1);
	size_t first = n < ring->size - off ? n : (size_t)(ring->size - off);

	memcpy(dst, ring->data + off, first);
	memcpy((uint8_t *)dst + first, ring->data, n - first);
}

/* Remember the file of an executable MMAP or MMAP2 record for its
 * build-id.  0 or -VMPT_ERR_NOMEM.
 */
static int note_mapping(struct recorder *r, const uint8_t *rec, uint16_t size)
{
	const struct perf_event_header *h = (const void *)rec;
	size_t name_at;
	uint32_t prot;

	if (h->type == PERF_RECORD_MMAP) {
		if (h->misc & PERF_RECORD_MISC_MMAP_DATA)
			return 0;
		name_at = 40;
	} else if (h->type == PERF_RECORD_MMAP2) {
		name_at = 72;
		memcpy(&prot, rec + 64, 4);
		if (!(prot & PROT_EXEC))
			return 0;
	} else {
		return 0;
	}
	if (name_at >= size || rec[name_at] != '/' || !memchr(rec + name_at, 0, size - name_at))
		return 0;
	return agent_names_add(&r->exec_names, (const char *)rec + name_at) ?
		-VMPT_ERR_NOMEM : 0;
}

/* Move what the kernel wrote into the perf.data.  Returns records moved
 * or a negative vmpt_err.
 */
static int drain(struct recorder *r)
{
	int moved = 0;

	for (size_t i = 0; i < r->nr; i++) {
		struct ring *ring = &r->rings[i];
		uint64_t head = __atomic_load_n(&ring->page->data_head, __ATOMIC_ACQUIRE);
		uint64_t tail = ring->page->data_tail;

		while (tail < head) {
			struct perf_event_header hdr;
			int ret;

			copy_out(ring, tail, &hdr, sizeof(hdr));
			if (hdr.size < sizeof(hdr) || hdr.size > head - tail)
				break;	/* the kernel never does this; stop, don't loop */
			copy_out(ring, tail, r->rec, hdr.size);
			if (hdr.type == PERF_RECORD_LOST)
				r->lost += ((const uint64_t *)r->rec)[2];
			ret = note_mapping(r, r->rec, hdr.size);
			if (!ret)
				ret = vmpt_perf_write_event(r->w, r->rec);
			if (ret < 0)
				return ret;
			tail += hdr.size;
			moved++;
		}
		__atomic_store_n(&ring->page->data_tail, tail, __ATOMIC_RELEASE);
	}
	if (moved) {
		int ret = vmpt_perf_write_finished_round(r->w);

		if (ret < 0)
			return ret;
	}
	return moved;
}

static void set_all(struct recorder *r, unsigned long req)
{
	for (size_t i = 0; i < r->nr; i++)
		ioctl(r->rings[i].fd, req, 0);
}

struct synth {
	struct recorder *r;
	int ret;
};

/* Writes one record made up from /proc, with a sample_id trailer of time
 * 0 so it sorts before everything the kernel reports.
 */
static int synth_emit(void *ctx, struct vmpt_perf_event *ev)
{
	struct synth *s = ctx;

	ev->sid.present = s->r->attr.sample_type &
		(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
		 PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER);
	ev->sid.id = s->r->rings[0].id;
	ev->sid.cpu = (uint32_t)s->r->cpus[0];
	if ((ev->type == PERF_RECORD_MMAP2 || ev->type == PERF_RECORD_MMAP) &&
	    ev->mmap.filename[0] == '/' &&
	    agent_names_add(&s->r->exec_names, ev->mmap.filename)) {
		s->ret = -VMPT_ERR_NOMEM;
		return s->ret;
	}
	s->ret = vmpt_perf_write_record(s->r->w, ev);
	return s->ret;
}

/* What perf record -a synthesizes: the kernel map, a COMM for every
 * thread and the executable mappings of every process that was there
 * before us.
 */
static int synthesize(struct recorder *r)
{
	struct synth s = { .r = r };
	DIR *proc;
	struct dirent *de;

	vmpt_sideband_kernel("/proc", synth_emit, &s);
	proc = opendir("/proc");
	if (!proc)
		return s.ret;
	while (!s.ret && (de = readdir(proc))) {
		pid_t pid = (pid_t)strtoul(de->d_name, NULL, 10);

		/* a process that exited meanwhile has no task dir: skipped */
		if (pid > 0)
			vmpt_sideband_process("/proc", pid, synth_emit, &s);
	}
	closedir(proc);
	return s.ret < 0 ? s.ret : 0;
}

/* Which CPU each id counts on: perf inject --guest-data makes that the
 * vCPU of every record with the id.
 */
static int id_index(struct recorder *r)
{
	struct vmpt_perf_id_entry *e = calloc(r->nr, sizeof(*e));
	int ret;

	if (!e)
		return -VMPT_ERR_NOMEM;
	for (size_t i = 0; i < r->nr; i++)
		e[i] = (struct vmpt_perf_id_entry){
			.id = r->rings[i].id, .idx = i, .cpu = (uint64_t)r->cpus[i],
			.tid = (uint64_t)-1, .machine_pid = -1, .vcpu = -1,
		};
	ret = vmpt_perf_write_id_index(r->w, e, r->nr);
	free(e);
	return ret;
}

/* perf: the records made up from /proc end here. */
static int finished_init(struct recorder *r)
{
	struct perf_event_header h = { .type = VMPT_PERF_RECORD_FINISHED_INIT,
				       .size = sizeof(h) };

	return vmpt_perf_write_event(r->w, &h);
}

static void add_build_id(struct vmpt_perf_env *env, const char *name, uint16_t misc,
			 const uint8_t id[20], uint8_t len)
{
	struct vmpt_perf_build_id *b = &env->build_ids[env->nr_build_ids];

	b->pid = -1;	/* perf's host machine: the guest is its own host */
	b->misc = misc;
	b->size = len;
	memcpy(b->id, id, len);
	b->filename = (char *)name;
	env->nr_build_ids++;
}

/* HEADER_BUILD_ID: the kernel (its notes), the vdso and every file mapped
 * executable that has one.
 */
static int build_ids(struct recorder *r)
{
	struct vmpt_perf_env env = { .clockid = -1 };
	const uint8_t *vdso;
	uint8_t id[20], len, *notes;
	size_t size;
	int ret;

	env.build_ids = calloc(r->exec_names.nr + 2, sizeof(*env.build_ids));
	if (!env.build_ids)
		return -VMPT_ERR_NOMEM;
	if (!agent_read_file("/sys/kernel/notes", &notes, &size)) {
		if (!agent_build_id_notes(notes, size, id, &len))
			add_build_id(&env, "[kernel.kallsyms]", PERF_RECORD_MISC_KERNEL, id, len);
		free(notes);
	}
	if (!agent_vdso(&vdso, &size) && !agent_build_id_mem(vdso, size, id, &len))
		add_build_id(&env, "[vdso]", PERF_RECORD_MISC_USER, id, len);
	for (size_t i = 0; i < r->exec_names.cap; i++) {
		const char *name = r->exec_names.slots[i];

		if (name && !agent_build_id_file(name, id, &len))
			add_build_id(&env, name, PERF_RECORD_MISC_USER, id, len);
	}
	ret = vmpt_perf_writer_set_env(r->w, &env);
	free(env.build_ids);
	return ret;
}

static int time_conv(struct recorder *r)
{
	const struct perf_event_mmap_page *pg = r->rings[0].page;
	struct vmpt_perf_time_conv tc = {
		.time_shift = pg->time_shift,
		.time_mult = pg->time_mult,
		.time_zero = pg->time_zero,
		.time_cycles = pg->time_cycles,
		.time_mask = pg->time_mask,
		.cap_user_time_zero = pg->cap_user_time_zero,
		.cap_user_time_short = pg->cap_user_time_short,
		.extended = 1,
	};

	return vmpt_perf_write_time_conv(r->w, &tc);
}

static pid_t start_command(char **cmd)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	/* stdout carries the reply stream: the command talks to stderr. */
	dup2(2, 1);
	close(0);
	execvp(cmd[0], cmd);
	fprintf(stderr, "vmpt-agent: %s: %s\n", cmd[0], strerror(errno));
	_exit(127);
}

/* Until stdin closes (the host says stop), a signal, or the command ends.
 * The rings wake us when half full, so a busy guest loses nothing.
 */
static int record_loop(struct recorder *r, pid_t child)
{
	static struct pollfd pfd[MAX_CPUS + 1];

	pfd[0] = (struct pollfd){ .fd = 0, .events = POLLIN };
	for (size_t i = 0; i < r->nr; i++)
		pfd[i + 1] = (struct pollfd){ .fd = r->rings[i].fd, .events = POLLIN };
	for (;;) {
		int ret = drain(r);

		if (ret < 0)
			return ret;
		if (stop_signal)
			return 0;
		if (child > 0) {
			int status;

			if (waitpid(child, &status, WNOHANG) == child) {
				if (WIFEXITED(status))
					fprintf(stderr, "vmpt-agent: command exited with status %d\n",
						WEXITSTATUS(status));
				else
					fprintf(stderr, "vmpt-agent: command killed by signal %d\n",
						WTERMSIG(status));
				return 0;
			}
		}
		if (poll(pfd, r->nr + 1, 100) > 0 && pfd[0].revents) {
			char buf[256];
			ssize_t n = read(0, buf, sizeof(buf));

			if (n == 0 || (n < 0 && errno != EINTR)) {
				if (child <= 0)
					return 0;
				pfd[0].fd = -1;	/* keep going until the command ends */
			}
		}
	}
}

/* The finished perf.data as a reply stream on stdout. */
static int send_perf_data(const char *path)
{
	uint8_t *data;
	size_t size;
	int ret = agent_read_file(path, &data, &size);

	if (!ret) {
		ret = agent_pack_begin(stdout);
		if (!ret)
			ret = agent_pack_file(stdout, GUEST_PACK_PERF_DATA, data, size);
		if (!ret)
			ret = agent_pack_end(stdout);
		free(data);
	}
	return ret;
}

int agent_record(int argc, char **argv)
{
	static struct recorder r;
	char path[] = "/tmp/vmpt-agent-XXXXXX";
	char **cmd = NULL;
	uint64_t *ids = NULL;
	pid_t child = 0;
	struct sigaction sa = { .sa_handler = on_signal };
	int fd, ret, status = 1;

	r.map_pages = 128;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-m") && i + 1 < argc) {
			r.map_pages = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--") && i + 1 < argc) {
			cmd = argv + i + 1;
			break;
		} else {
			fprintf(stderr, "usage: vmpt-agent record [-m PAGES] [-- CMD ARGS]\n");
			return 2;
		}
	}
	if (!r.map_pages || (r.map_pages & (r.map_pages - 1))) {
		fprintf(stderr, "vmpt-agent: -m takes a power of 2\n");
		return 2;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	ret = online_cpus(r.cpus, &r.nr);
	if (ret) {
		fprintf(stderr, "vmpt-agent: no online CPUs: %s\n", strerror(-ret));
		return 1;
	}
	vmpt_perf_sideband_attr(&r.attr);
	/* All of the guest, kernel included; enabled once every CPU is open. */
	r.attr.exclude_kernel = 0;
	r.attr.exclude_user = 0;
	r.attr.exclude_hv = 0;
	r.attr.comm_exec = 1;
	r.attr.disabled = 1;
	r.attr.enable_on_exec = 0;
	r.attr.watermark = 1;
	r.attr.wakeup_watermark = (uint32_t)(r.map_pages * (size_t)sysconf(_SC_PAGESIZE) / 2);
	r.rec = malloc(UINT16_MAX + 1);
	ids = calloc(r.nr, sizeof(*ids));
	fd = mkstemp(path);
	if (!r.rec || !ids || fd < 0) {
		fprintf(stderr, "vmpt-agent: %s\n", fd < 0 ? strerror(errno) : "out of memory");
		goto out;
	}
	close(fd);
	ret = vmpt_perf_writer_open(&r.w, path, NULL);
	if (ret < 0) {
		fprintf(stderr, "vmpt-agent: %s: %s\n", path, vmpt_strerror(ret));
		goto out;
	}
	if (open_rings(&r))
		goto out;
	for (size_t i = 0; i < r.nr; i++)
		ids[i] = r.rings[i].id;
	ret = vmpt_perf_writer_add_attr(r.w, &r.attr, "dummy", ids, r.nr);
	if (!ret)
		ret = id_index(&r);
	if (!ret)
		ret = time_conv(&r);
	set_all(&r, PERF_EVENT_IOC_ENABLE);
	if (!ret)
		ret = synthesize(&r);
	if (!ret)
		ret = finished_init(&r);
	if (ret < 0) {
		fprintf(stderr, "vmpt-agent: writing %s: %s\n", path, vmpt_strerror(ret));
		goto out;
	}
	printf("%s\n", GUEST_AGENT_READY);
	fflush(stdout);
	if (cmd)
		child = start_command(cmd);
	if (child < 0) {
		fprintf(stderr, "vmpt-agent: fork: %s\n", strerror(errno));
		goto out;
	}
	ret = record_loop(&r, child);
	set_all(&r, PERF_EVENT_IOC_DISABLE);
	if (ret >= 0)
		ret = drain(&r);
	if (ret < 0) {
		fprintf(stderr, "vmpt-agent: writing %s: %s\n", path, vmpt_strerror(ret));
		goto out;
	}
	if (r.lost)
		fprintf(stderr, "vmpt-agent: %llu sideband records lost (ring full; try -m)\n",
			(unsigned long long)r.lost);
	ret = build_ids(&r);
	if (ret < 0) {
		fprintf(stderr, "vmpt-agent: build-ids: %s\n", vmpt_strerror(ret));
		goto out;
	}
	ret = vmpt_perf_writer_close(r.w);
	r.w = NULL;
	if (ret < 0) {
		fprintf(stderr, "vmpt-agent: closing %s: %s\n", path, vmpt_strerror(ret));
		goto out;
	}
	ret = send_perf_data(path);
	if (ret)
		fprintf(stderr, "vmpt-agent: sending the perf.data: %s\n", strerror(-ret));
	else
		status = 0;
out:
	if (r.w)
		vmpt_perf_writer_close(r.w);
	close_rings(&r);
	unlink(path);
	free(ids);
	free(r.rec);
	agent_names_free(&r.exec_names);
	return status;
}
