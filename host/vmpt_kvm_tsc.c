/* SPDX-License-Identifier: MIT */
#include "vmpt/kvm_tsc.h"
#include "vmpt/error.h"
#include "vmpt/pmu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int read_num(const char *dir, const char *name, int is_signed,
		    uint64_t *v)
{
	char path[4800], buf[64];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int n = vmpt_read_small_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	char *end;
	*v = is_signed ? (uint64_t)strtoll(buf, &end, 0) : strtoull(buf, &end, 0);
	return end != buf ? 0 : -VMPT_ERR_FORMAT;
}

int vmpt_kvm_tsc_read(const char *debugfs_root, pid_t pid,
		      struct vmpt_kvm_tsc *out, size_t max)
{
	char kvm[4096], prefix[32];
	snprintf(kvm, sizeof(kvm), "%s/kvm", debugfs_root);
	snprintf(prefix, sizeof(prefix), "%d-", (int)pid);
	DIR *d = opendir(kvm);
	if (!d)
		return errno == EACCES || errno == EPERM ? -VMPT_ERR_PERM
							 : -VMPT_ERR_NOT_FOUND;
	size_t n = 0;
	struct dirent *vm;
	while ((vm = readdir(d))) {
		if (strncmp(vm->d_name, prefix, strlen(prefix)))
			continue;
		char vmdir[4400];
		snprintf(vmdir, sizeof(vmdir), "%s/%s", kvm, vm->d_name);
		DIR *vd = opendir(vmdir);
		if (!vd)
			continue;
		struct dirent *vc;
		while ((vc = readdir(vd)) && n < max) {
			int id;
			char tail;
			if (sscanf(vc->d_name, "vcpu%d%c", &id, &tail) != 1)
				continue;
			char vcdir[4700];
			snprintf(vcdir, sizeof(vcdir), "%s/%s", vmdir, vc->d_name);
			uint64_t off, ratio, bits;
			if (read_num(vcdir, "tsc-offset", 1, &off))
				continue;
			struct vmpt_kvm_tsc *t = &out[n++];
			memset(t, 0, sizeof(*t));
			snprintf(t->vm, sizeof(t->vm), "%.31s", vm->d_name);
			t->vcpu = id;
			t->offset = (int64_t)off;
			if (!read_num(vcdir, "tsc-scaling-ratio", 0, &ratio) &&
			    !read_num(vcdir, "tsc-scaling-ratio-frac-bits", 0, &bits)) {
				t->has_ratio = 1;
				t->ratio = ratio;
				t->frac_bits = (unsigned)bits;
			}
		}
		closedir(vd);
	}
	closedir(d);
	return (int)n;
}

int vmpt_kvm_tsc_series_init(struct vmpt_kvm_tsc_series *s, size_t max)
{
	memset(s, 0, sizeof(*s));
	s->v = calloc(max, sizeof(*s->v));
	s->max = max;
	return s->v ? 0 : -VMPT_ERR_NOMEM;
}

void vmpt_kvm_tsc_series_free(struct vmpt_kvm_tsc_series *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int same_vcpu(const struct vmpt_kvm_tsc *a, const struct vmpt_kvm_tsc *b)
{
	return a->vcpu == b->vcpu && !strcmp(a->vm, b->vm);
}

static int same_value(const struct vmpt_kvm_tsc *a, const struct vmpt_kvm_tsc *b)
{
	return a->offset == b->offset && a->has_ratio == b->has_ratio &&
	       a->ratio == b->ratio && a->frac_bits == b->frac_bits;
}

int vmpt_kvm_tsc_series_poll(struct vmpt_kvm_tsc_series *s, const char *debugfs_root,
			     pid_t pid, int (*now)(void *ctx, uint64_t *ns), void *ctx)
{
	struct vmpt_kvm_tsc t[VMPT_KVM_TSC_MAX_VCPUS];
	uint64_t time = 0;
	int timed = -1;

	if (s->state < 0 || pid <= 0)
		return 0;
	int n = vmpt_kvm_tsc_read(debugfs_root, pid, t, VMPT_KVM_TSC_MAX_VCPUS);
	if (n < 0) {
		if (!s->state)
			s->state = n;
		return 0;
	}
	s->state = 1;
	for (int i = 0; i < n; i++) {
		size_t k = 0;
		while (k < s->nr_vcpus && !same_vcpu(&s->v[s->last[k]], &t[i]))
			k++;
		if (k < s->nr_vcpus && same_value(&s->v[s->last[k]], &t[i]))
			continue;
		if (s->nr == s->max || k == VMPT_KVM_TSC_MAX_VCPUS) {
			s->state = -VMPT_ERR_UNSUPPORTED;
			return 1;
		}
		/* one time for all the values this read found new */
		if (timed < 0)
			timed = !now(ctx, &time);
		t[i].has_time = timed;
		t[i].time = time;
		s->v[s->nr] = t[i];
		s->last[k] = s->nr++;
		if (k == s->nr_vcpus)
			s->nr_vcpus++;
	}
	return 0;
}

int vmpt_kvm_tsc_vm_dir(const char *debugfs_root, pid_t pid, char *dir, size_t len)
{
	char kvm[4096], prefix[32];
	struct dirent *vm;
	DIR *d;
	int ret = -VMPT_ERR_NOT_FOUND;

	snprintf(kvm, sizeof(kvm), "%s/kvm", debugfs_root);
	snprintf(prefix, sizeof(prefix), "%d-", (int)pid);
	d = opendir(kvm);
	while (d && (vm = readdir(d)))
		if (!strncmp(vm->d_name, prefix, strlen(prefix))) {
			snprintf(dir, len, "%s/%s", kvm, vm->d_name);
			ret = 0;
			break;
		}
	if (d)
		closedir(d);
	return ret;
}

int vmpt_kvm_tsc_write(const char *path, const struct vmpt_kvm_tsc *t, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		if (fd >= 0)
			close(fd);
		return -VMPT_ERR_IO;
	}
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "vm %s vcpu %d tsc-offset %" PRId64, t[i].vm, t[i].vcpu,
			t[i].offset);
		if (t[i].has_ratio)
			fprintf(f, " tsc-scaling-ratio %" PRIu64 " frac-bits %u",
				t[i].ratio, t[i].frac_bits);
		if (t[i].has_time)
			fprintf(f, " time %" PRIu64, t[i].time);
		fputc('\n', f);
	}
	int bad = ferror(f);
	return fclose(f) || bad ? -VMPT_ERR_IO : 0;
}
