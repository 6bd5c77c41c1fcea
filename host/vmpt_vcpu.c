/* SPDX-License-Identifier: MIT */
#include "vmpt/vcpu.h"
#include "vmpt/error.h"
#include "vmpt/pmu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int cmp_vcpu(const void *a, const void *b)
{
	const struct vmpt_vcpu *x = a, *y = b;
	return x->index != y->index ? (x->index > y->index) - (x->index < y->index)
				    : (x->tid > y->tid) - (x->tid < y->tid);
}

int vmpt_vcpus_parse_qmp(const char *json, struct vmpt_vcpus *out)
{
	const char *ret = strstr(json, "\"return\"");
	if (!ret)
		return -VMPT_ERR_FORMAT;
	const char *p = strchr(ret + 8, '[');
	if (!p)
		return -VMPT_ERR_FORMAT;
	out->nr = 0;
	int depth = 0;		/* 1 inside the array, 2 inside an entry */
	long index = -1, tid = -1;
	char key[32] = "";
	for (; *p; p++) {
		if (*p == '"') {
			const char *s = ++p;
			while (*p && *p != '"')
				p += (*p == '\\' && p[1]) ? 2 : 1;
			if (!*p)
				return -VMPT_ERR_FORMAT;
			const char *after = p + 1;
			while (*after == ' ')
				after++;
			if (depth == 2 && *after == ':') {
				size_t n = (size_t)(p - s);
				if (n >= sizeof(key))
					n = sizeof(key) - 1;
				memcpy(key, s, n);
				key[n] = '\0';
			}
			continue;
		}
		if (*p == '[' || *p == '{') {
			depth++;
			if (depth == 2)
				index = tid = -1;
		} else if (*p == ']' || *p == '}') {
			if (depth == 2 && *p == '}') {
				if (tid <= 0 || index < 0)
					return -VMPT_ERR_FORMAT;
				if (out->nr == VMPT_MAX_VCPUS)
					return -VMPT_ERR_UNSUPPORTED;
				out->vcpu[out->nr].index = (int)index;
				out->vcpu[out->nr].tid = (pid_t)tid;
				out->nr++;
			}
			if (--depth == 0)
				break;
		} else if (*p == ':' && depth == 2) {
			char *end;
			long v = strtol(p + 1, &end, 10);
			if (end != p + 1) {
				if (!strcmp(key, "cpu-index"))
					index = v;
				else if (!strcmp(key, "thread-id"))
					tid = v;
			}
			key[0] = '\0';
		}
	}
	if (depth)
		return -VMPT_ERR_FORMAT;
	qsort(out->vcpu, out->nr, sizeof(out->vcpu[0]), cmp_vcpu);
	return (int)out->nr;
}

static long ms_left(const struct timespec *deadline)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (deadline->tv_sec - now.tv_sec) * 1000 +
	       (deadline->tv_nsec - now.tv_nsec) / 1000000;
}

/* Read QMP lines until one holds "return" or "error" (events come too). */
static int qmp_reply(int fd, char *buf, size_t len, const struct timespec *deadline)
{
	size_t have = 0;
	for (;;) {
		char *nl;
		while ((nl = memchr(buf, '\n', have))) {
			*nl = '\0';
			if (strstr(buf, "\"return\"") || strstr(buf, "\"error\"") ||
			    strstr(buf, "\"QMP\""))
				return 0;
			size_t used = (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, have - used);
			have -= used;
		}
		if (have + 1 >= len)
			return -VMPT_ERR_FORMAT;
		long left = ms_left(deadline);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return -VMPT_ERR_REMOTE;
		ssize_t n = read(fd, buf + have, len - 1 - have);
		if (n <= 0)
			return -VMPT_ERR_REMOTE;
		have += (size_t)n;
	}
}

static int qmp_send(int fd, const char *cmd)
{
	size_t len = strlen(cmd);
	return write(fd, cmd, len) == (ssize_t)len ? 0 : -VMPT_ERR_IO;
}

int vmpt_vcpus_from_qmp(const char *socket_path, int timeout_ms,
			struct vmpt_vcpus *out, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(socket_path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "QMP socket path too long: %s", socket_path);
		return -VMPT_ERR_INVAL;
	}
	strcpy(sa.sun_path, socket_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		snprintf(err, errlen, "QMP %s: %s", socket_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -VMPT_ERR_REMOTE;
	}
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	/* a reply lists every vCPU: about 200 bytes each */
	size_t buflen = 1 << 20;
	char *buf = malloc(buflen);
	if (!buf) {
		close(fd);
		return -VMPT_ERR_NOMEM;
	}
	int rc = qmp_reply(fd, buf, buflen, &deadline);
	if (!rc && !strstr(buf, "\"QMP\""))
		rc = -VMPT_ERR_FORMAT;
	if (!rc)
		rc = qmp_send(fd, "{\"execute\":\"qmp_capabilities\"}\r\n");
	if (!rc)
		rc = qmp_reply(fd, buf, buflen, &deadline);
	if (!rc)
		rc = qmp_send(fd, "{\"execute\":\"query-cpus-fast\"}\r\n");
	if (!rc)
		rc = qmp_reply(fd, buf, buflen, &deadline);
	close(fd);
	if (rc) {
		snprintf(err, errlen, "QMP %s: no answer within %d ms (another "
			 "client connected? QMP serves one at a time)", socket_path,
			 timeout_ms);
		free(buf);
		return rc;
	}
	rc = vmpt_vcpus_parse_qmp(buf, out);
	if (rc <= 0) {
		snprintf(err, errlen, "QMP %s: unexpected query-cpus-fast reply: %.200s",
			 socket_path, buf);
		free(buf);
		return rc < 0 ? rc : -VMPT_ERR_NOT_FOUND;
	}
	free(buf);
	snprintf(out->source, sizeof(out->source), "QMP query-cpus-fast");
	out->kind = "qmp";
	return 0;
}

static int read_cmdline(const char *procfs_root, pid_t pid, char *buf, size_t len)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%d/cmdline", procfs_root, (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -VMPT_ERR_NOT_FOUND;
	ssize_t n = read(fd, buf, len - 2);
	close(fd);
	if (n < 0)
		return -VMPT_ERR_IO;
	buf[n] = buf[n + 1] = '\0';
	return (int)n;
}

/* "key=value" out of a QEMU option list "a=b,key=value,..." */
static int opt_value(const char *opts, const char *key, char *val, size_t len)
{
	size_t klen = strlen(key);
	for (const char *p = opts; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		if (!strncmp(p, key, klen) && p[klen] == '=') {
			const char *v = p + klen + 1;
			size_t n = strcspn(v, ",");
			if (n >= len)
				return -1;
			memcpy(val, v, n);
			val[n] = '\0';
			return 0;
		}
	}
	return -1;
}

int vmpt_qemu_qmp_socket(const char *procfs_root, pid_t pid, char *path, size_t len)
{
	char cmd[1 << 16];
	int n = read_cmdline(procfs_root, pid, cmd, sizeof(cmd));
	if (n < 0)
		return n;
	const char *args[1024];
	size_t nargs = 0;
	for (char *p = cmd; p < cmd + n && nargs < 1024; p += strlen(p) + 1)
		args[nargs++] = p;
	for (size_t i = 0; i + 1 < nargs; i++) {
		const char *a = args[i], *v = args[i + 1];
		if ((!strcmp(a, "-qmp") || !strcmp(a, "--qmp")) &&
		    !strncmp(v, "unix:", 5)) {
			size_t l = strcspn(v + 5, ",");
			if (l >= len)
				return -VMPT_ERR_INVAL;
			memcpy(path, v + 5, l);
			path[l] = '\0';
			return 0;
		}
	}
	/* -mon chardev=ID,mode=control with -chardev socket,id=ID,path=P */
	for (size_t i = 0; i + 1 < nargs; i++) {
		char id[128], mode[32];
		if (strcmp(args[i], "-mon") || opt_value(args[i + 1], "chardev", id, sizeof(id)) ||
		    opt_value(args[i + 1], "mode", mode, sizeof(mode)) || strcmp(mode, "control"))
			continue;
		for (size_t j = 0; j + 1 < nargs; j++) {
			char cid[128];
			if (strcmp(args[j], "-chardev") || strncmp(args[j + 1], "socket,", 7) ||
			    opt_value(args[j + 1] + 7, "id", cid, sizeof(cid)) || strcmp(cid, id))
				continue;
			if (!opt_value(args[j + 1] + 7, "path", path, len))
				return 0;
		}
	}
	return -VMPT_ERR_NOT_FOUND;
}

int vmpt_vcpus_from_proc(const char *procfs_root, pid_t pid,
			 struct vmpt_vcpus *out, char *err, size_t errlen)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%d/task", procfs_root, (int)pid);
	DIR *d = opendir(path);
	if (!d) {
		snprintf(err, errlen, "%s: %s (no such process?)", path, strerror(errno));
		return -VMPT_ERR_NOT_FOUND;
	}
	out->nr = 0;
	out->pid = pid;
	struct dirent *de;
	while ((de = readdir(d)) && out->nr < VMPT_MAX_VCPUS) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		char cpath[4500], comm[64], accel[32];
		int index;
		snprintf(cpath, sizeof(cpath), "%s/%s/comm", path, de->d_name);
		if (vmpt_read_small_file(cpath, comm, sizeof(comm)) < 0)
			continue;
		if (sscanf(comm, "CPU %d/%31s", &index, accel) != 2)
			continue;
		out->vcpu[out->nr].index = index;
		out->vcpu[out->nr].tid = (pid_t)atoi(de->d_name);
		out->nr++;
	}
	closedir(d);
	if (!out->nr) {
		snprintf(err, errlen, "no thread of process %d is named 'CPU N/KVM' "
			 "(start QEMU with -name ...,debug-threads=on)", (int)pid);
		return -VMPT_ERR_NOT_FOUND;
	}
	qsort(out->vcpu, out->nr, sizeof(out->vcpu[0]), cmp_vcpu);
	snprintf(out->source, sizeof(out->source), "/proc thread names");
	out->kind = "thread-names";
	return 0;
}

int vmpt_vcpus_for_pid(const char *procfs_root, pid_t pid, const char *qmp,
		       struct vmpt_vcpus *out, char *err, size_t errlen)
{
	char sock[4096], qerr[512] = "";
	const char *qmp_path = qmp;
	if (!qmp_path && !vmpt_qemu_qmp_socket(procfs_root, pid, sock, sizeof(sock)))
		qmp_path = sock;
	if (qmp_path) {
		if (!vmpt_vcpus_from_qmp(qmp_path, 3000, out, qerr, sizeof(qerr))) {
			out->pid = pid;
			return 0;
		}
	} else {
		snprintf(qerr, sizeof(qerr), "no QMP socket on the command line of "
			 "process %d", (int)pid);
	}
	char perr[512];
	int rc = vmpt_vcpus_from_proc(procfs_root, pid, out, perr, sizeof(perr));
	if (rc)
		snprintf(err, errlen, "cannot find the vCPU threads of process %d: "
			 "%s; %s", (int)pid, qerr, perr);
	return rc;
}

int vmpt_vcpus_write(const char *path, const struct vmpt_vcpus *v)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	int bad;

	if (!f) {
		if (fd >= 0)
			close(fd);
		return -VMPT_ERR_IO;
	}
	for (size_t i = 0; i < v->nr; i++)
		fprintf(f, "vcpu %d tid %d source %s\n", v->vcpu[i].index, (int)v->vcpu[i].tid,
			v->kind ? v->kind : "unknown");
	bad = ferror(f);
	return fclose(f) || bad ? -VMPT_ERR_IO : 0;
}
