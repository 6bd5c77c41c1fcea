/* SPDX-License-Identifier: MIT */
/* A VM's vCPU threads and the host CPUs they run on: see
 * vmpt_guest_vcpus.h.
 */
#include "vmpt_guest_vcpus.h"
#include "vmpt/error.h"
#include "vmpt/vcpu.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void vmpt_guest_vcpus_init(struct vmpt_guest_vcpus *vc, uint32_t pid)
{
	memset(vc, 0, sizeof(*vc));
	vc->pid = pid;
}

void vmpt_guest_vcpus_free(struct vmpt_guest_vcpus *vc)
{
	for (unsigned i = 0; i < vc->nr; i++)
		free(vc->v[i].runs);
	free(vc->v);
	free(vc->switches);
	vc->switches = NULL;
	vc->v = NULL;
	vc->nr = 0;
}

static int grow(struct vmpt_guest_vcpus *vc, unsigned n)
{
	struct vmpt_guest_vcpu *v;

	if (n <= vc->nr)
		return 0;
	v = realloc(vc->v, n * sizeof(*v));
	if (!v)
		return -VMPT_ERR_NOMEM;
	memset(v + vc->nr, 0, (n - vc->nr) * sizeof(*v));
	vc->v = v;
	vc->nr = n;
	return 0;
}

/* "CPU n/ACCEL" as QEMU names vCPU threads (ACCEL: KVM, TCG, HVF, ...). */
static int vcpu_of_name(const char *comm, unsigned *n)
{
	const char *p = comm + 4;
	char *end;
	unsigned long v;

	if (strncmp(comm, "CPU ", 4) || !isdigit((unsigned char)*p))
		return 0;
	v = strtoul(p, &end, 10);
	if (*end != '/' || !isalnum((unsigned char)end[1]) || v >= VMPT_MAX_VCPUS)
		return 0;
	for (p = end + 1; *p; p++)
		if (!isalnum((unsigned char)*p))
			return 0;
	*n = (unsigned)v;
	return 1;
}

static int set_thread(struct vmpt_guest_vcpus *vc, unsigned n, uint32_t tid,
		      const char *where, char *err, size_t errlen)
{
	int ret = grow(vc, n + 1);

	if (ret < 0)
		return ret;
	if (vc->v[n].tid && vc->v[n].tid != tid) {
		snprintf(err, errlen, "%s: two threads run vCPU %u of pid %u: %u and %u",
			 where, n, vc->pid, vc->v[n].tid, tid);
		return -VMPT_ERR_FORMAT;
	}
	if (!vc->v[n].tid)
		vc->nr_threads++;
	vc->v[n].tid = tid;
	return 0;
}

int vmpt_guest_vcpus_comm(struct vmpt_guest_vcpus *vc, const struct vmpt_perf_event *ev,
			  const char *file, char *err, size_t errlen)
{
	char where[512];
	unsigned n;

	if (ev->type != PERF_RECORD_COMM || !vcpu_of_name(ev->comm.comm, &n))
		return 0;
	if (ev->comm.pid != vc->pid) {
		/* Remembered for the message when pid has none. */
		if (!vc->other_pid)
			vc->other_pid = ev->comm.pid;
		return 0;
	}
	snprintf(where, sizeof(where), "%s: offset %#llx", file,
		 (unsigned long long)ev->offset);
	snprintf(vc->source, sizeof(vc->source), "thread names");
	return set_thread(vc, n, ev->comm.tid, where, err, errlen);
}

int vmpt_guest_vcpus_read_map(struct vmpt_guest_vcpus *vc, const char *path,
			      char *err, size_t errlen)
{
	char line[256], source[32] = "";
	unsigned lineno = 0;
	int ret = 0, fd;
	struct stat st;
	FILE *f;

	/* Only a regular file: the map sits in a recording from elsewhere. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: %s", path,
			 fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return -VMPT_ERR_IO;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -VMPT_ERR_NOMEM;
	}
	for (unsigned i = 0; i < vc->nr; i++)
		vc->v[i].tid = 0;
	vc->nr_threads = 0;
	while (!ret && fgets(line, sizeof(line), f)) {
		unsigned n, tid;
		char src[32], where[300];
		int used = 0;

		lineno++;
		snprintf(where, sizeof(where), "%s:%u", path, lineno);
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s: line too long", where);
			ret = -VMPT_ERR_FORMAT;
		} else if (sscanf(line, "vcpu %u tid %u source %31s %n", &n, &tid, src,
				  &used) != 3 || line[used] || n >= VMPT_MAX_VCPUS || !tid ||
			   (strcmp(src, "qmp") && strcmp(src, "libvirt") &&
			    strcmp(src, "thread-names"))) {
			snprintf(err, errlen,
				 "%s: expected 'vcpu N tid T source qmp|libvirt|thread-names'",
				 where);
			ret = -VMPT_ERR_FORMAT;
		} else {
			ret = set_thread(vc, n, tid, where, err, errlen);
			snprintf(source, sizeof(source), "%s", src);
		}
	}
	if (!ret && ferror(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		ret = -VMPT_ERR_IO;
	}
	fclose(f);
	if (!ret)
		snprintf(vc->source, sizeof(vc->source), "%s", source);
	return ret;
}

int vmpt_guest_vcpus_of_tid(const struct vmpt_guest_vcpus *vc, uint32_t tid)
{
	for (unsigned i = 0; tid && i < vc->nr; i++)
		if (vc->v[i].tid == tid)
			return (int)i;
	return -1;
}

static int add_run(struct vmpt_guest_vcpu *v, const struct vmpt_guest_run *run)
{
	if (v->nr_runs == v->cap_runs) {
		size_t cap = v->cap_runs ? 2 * v->cap_runs : 64;
		struct vmpt_guest_run *r = realloc(v->runs, cap * sizeof(*r));

		if (!r)
			return -VMPT_ERR_NOMEM;
		v->runs = r;
		v->cap_runs = cap;
	}
	v->runs[v->nr_runs++] = *run;
	return 0;
}

int vmpt_guest_vcpus_switch(struct vmpt_guest_vcpus *vc, const struct vmpt_perf_event *ev,
			    uint64_t seq)
{
	const uint64_t need = PERF_SAMPLE_CPU | PERF_SAMPLE_TIME | PERF_SAMPLE_TID;
	struct vmpt_guest_switch *sw;
	uint32_t tid;

	if ((ev->type != PERF_RECORD_SWITCH && ev->type != PERF_RECORD_SWITCH_CPU_WIDE) ||
	    (ev->sid.present & need) != need)
		return 0;
	if (!ev->sw.out && ev->sid.pid == vc->pid)
		tid = ev->sid.tid;
	else if (ev->sw.out && ev->type == PERF_RECORD_SWITCH_CPU_WIDE &&
		 ev->sw.next_prev_pid == vc->pid)
		tid = ev->sw.next_prev_tid;
	else
		return 0;
	if (vc->nr_switches == vc->cap_switches) {
		size_t cap = vc->cap_switches ? 2 * vc->cap_switches : 256;

		sw = realloc(vc->switches, cap * sizeof(*sw));
		if (!sw)
			return -VMPT_ERR_NOMEM;
		vc->switches = sw;
		vc->cap_switches = cap;
	}
	vc->switches[vc->nr_switches++] = (struct vmpt_guest_switch){
		tid, { ev->sid.time, seq, ev->sid.cpu } };
	return 0;
}

static int cmp_run(const void *a, const void *b)
{
	const struct vmpt_guest_run *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

int vmpt_guest_vcpus_sort(struct vmpt_guest_vcpus *vc)
{
	for (size_t i = 0; i < vc->nr_switches; i++) {
		int n = vmpt_guest_vcpus_of_tid(vc, vc->switches[i].tid);

		if (n >= 0 && add_run(&vc->v[n], &vc->switches[i].run) < 0)
			return -VMPT_ERR_NOMEM;
	}
	free(vc->switches);
	vc->switches = NULL;
	vc->nr_switches = vc->cap_switches = 0;
	for (unsigned i = 0; i < vc->nr; i++)
		if (vc->v[i].nr_runs > 1)
			qsort(vc->v[i].runs, vc->v[i].nr_runs, sizeof(*vc->v[i].runs),
			      cmp_run);
	return 0;
}

uint32_t vmpt_guest_vcpus_host_cpu(const struct vmpt_guest_vcpus *vc, unsigned vcpu,
				   uint64_t t)
{
	const struct vmpt_guest_vcpu *v;
	size_t lo = 0, hi;

	if (vcpu >= vc->nr)
		return 0;
	v = &vc->v[vcpu];
	hi = v->nr_runs;
	/* The first run after t; the one before it is the answer. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v->runs[mid].time <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? v->runs[lo - 1].cpu : 0;
}
