/* SPDX-License-Identifier: MIT */
#include "vmpt/sideband.h"
#include "vmpt/error.h"
#include "vmpt/pmu.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int cmp_tid(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

int vmpt_sideband_process(const char *procfs_root, pid_t pid,
			  vmpt_sideband_emit emit, void *ctx)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%d/task", procfs_root, (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -VMPT_ERR_NOT_FOUND;
	int tids[4096], nr = 0, count = 0;
	struct dirent *de;
	while ((de = readdir(d)) && nr < 4096)
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
			tids[nr++] = atoi(de->d_name);
	closedir(d);
	qsort(tids, (size_t)nr, sizeof(tids[0]), cmp_tid);
	for (int i = 0; i < nr; i++) {
		char cpath[4500], comm[64];
		snprintf(cpath, sizeof(cpath), "%s/%d/comm", path, tids[i]);
		if (vmpt_read_small_file(cpath, comm, sizeof(comm)) < 0)
			continue;	/* exited meanwhile */
		struct vmpt_perf_event ev = { .type = PERF_RECORD_COMM,
					      .misc = PERF_RECORD_MISC_USER };
		ev.comm.pid = ev.sid.pid = (uint32_t)pid;
		ev.comm.tid = ev.sid.tid = (uint32_t)tids[i];
		ev.comm.comm = comm;
		if (emit(ctx, &ev))
			return count;
		count++;
	}

	snprintf(path, sizeof(path), "%s/%d/maps", procfs_root, (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return count;
	char line[4608];
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end, pgoff, ino;
		unsigned maj, min;
		char perms[8];
		int used = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 "%n",
			   &start, &end, perms, &pgoff, &maj, &min, &ino, &used) != 7 ||
		    strlen(perms) != 4 || perms[2] != 'x')
			continue;
		char *name = line + used;
		name += strspn(name, " \t");
		name[strcspn(name, "\n")] = '\0';
		if (!*name)
			name = "//anon";	/* perf's name for anonymous code */
		struct vmpt_perf_event ev = { .type = PERF_RECORD_MMAP2,
					      .misc = PERF_RECORD_MISC_USER };
		ev.mmap.pid = ev.mmap.tid = ev.sid.pid = ev.sid.tid = (uint32_t)pid;
		ev.mmap.start = start;
		ev.mmap.len = end - start;
		ev.mmap.pgoff = pgoff;
		ev.mmap.maj = maj;
		ev.mmap.min = min;
		ev.mmap.ino = ino;
		ev.mmap.prot = (perms[0] == 'r' ? PROT_READ : 0) |
			       (perms[1] == 'w' ? PROT_WRITE : 0) | PROT_EXEC;
		ev.mmap.flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
		ev.mmap.filename = name;
		if (emit(ctx, &ev))
			break;
		count++;
	}
	fclose(f);
	return count;
}

int vmpt_sideband_kernel(const char *procfs_root, vmpt_sideband_emit emit, void *ctx)
{
	char path[4200], line[512];
	snprintf(path, sizeof(path), "%s/kallsyms", procfs_root);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	uint64_t text = 0;
	while (fgets(line, sizeof(line), f)) {
		uint64_t addr;
		char type, name[256];
		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) == 3 &&
		    !strcmp(name, "_text")) {
			text = addr;
			break;
		}
	}
	fclose(f);
	if (!text)
		return 0;
	struct vmpt_perf_event ev = { .type = PERF_RECORD_MMAP,
				      .misc = PERF_RECORD_MISC_KERNEL };
	ev.mmap.pid = ev.sid.pid = (uint32_t)-1;
	ev.mmap.start = text;
	ev.mmap.len = ~0ULL - text;
	ev.mmap.pgoff = text;
	ev.mmap.filename = "[kernel.kallsyms]_text";
	return emit(ctx, &ev) ? 0 : 1;
}

int64_t vmpt_perf_salvage(const char *output, uint64_t *kept_bytes)
{
	char path[4200];
	struct stat sb;
	if (stat(output, &sb))
		return -VMPT_ERR_NOT_FOUND;
	snprintf(path, sizeof(path), S_ISDIR(sb.st_mode) ? "%s/data" : "%s", output);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	uint8_t hdr[56];
	if (fd < 0)
		return -VMPT_ERR_IO;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) ||
	    pread(fd, hdr, sizeof(hdr), 0) != sizeof(hdr) || memcmp(hdr, "PERFILE2", 8)) {
		close(fd);
		return -VMPT_ERR_FORMAT;
	}
	uint64_t data_offset, pos, size = (uint64_t)sb.st_size;
	memcpy(&data_offset, hdr + 40, 8);
	int64_t records = 0;
	for (pos = data_offset; pos + 8 <= size; records++) {
		struct perf_event_header h;
		uint64_t end, aux = 0;
		if (pread(fd, &h, sizeof(h), (off_t)pos) != sizeof(h) || h.size < sizeof(h))
			break;
		end = pos + h.size;
		/* AUXTRACE: its data (size, padded by the writer) follows */
		if (h.type == VMPT_PERF_RECORD_AUXTRACE &&
		    pread(fd, &aux, 8, (off_t)pos + 8) == 8)
			end += aux;
		if (end > size)
			break;
		pos = end;
	}
	uint64_t data_size = pos > data_offset ? pos - data_offset : 0;
	/* the feature sections come after the data: none survive the cut */
	static const uint8_t no_features[VMPT_PERF_FEAT_BITS / 8];
	int ok = pos >= data_offset && !ftruncate(fd, (off_t)pos) &&
		 pwrite(fd, &data_size, 8, 48) == 8 &&
		 pwrite(fd, no_features, sizeof(no_features), 72) == sizeof(no_features);
	close(fd);
	*kept_bytes = data_size;
	return ok ? records : -VMPT_ERR_IO;
}
