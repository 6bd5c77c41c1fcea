/* SPDX-License-Identifier: MIT */
/* vmpt guest maps: what the guest sideband says ran where, and whether
 * the code it maps is in the recording's sysroot for decoding.
 */
#include "vmpt/guest.h"
#include "vmpt/error.h"
#include "vmpt/perf_data.h"
#include "guest_sysroot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct comm {
	uint32_t tid;
	char name[16];
};

/* The comm of tid, as the sideband last named it. */
static const char *comm_of(const struct comm *comms, size_t nr, uint32_t tid)
{
	for (size_t i = nr; i-- > 0;)
		if (comms[i].tid == tid)
			return comms[i].name;
	return "?";
}

/* Is rel a regular file under dirfd, reached without symlinks? */
static int have_file(int dirfd, const char *rel)
{
	int fd = openat(dirfd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	int ok;

	if (fd < 0)
		return 0;
	ok = !fstat(fd, &st) && S_ISREG(st.st_mode);
	close(fd);
	return ok;
}

static int is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

int vmpt_guest_dir(const char *rec, char *gdir, size_t len, char *err, size_t errlen)
{
	char path[PATH_MAX + 16];
	struct stat st;

	snprintf(gdir, len, "%s/guest", rec);
	if (is_dir(gdir))
		return 0;
	snprintf(gdir, len, "%s.guest", rec);
	if (is_dir(gdir))
		return 0;
	/* a guest directory named itself: perf.data, and no perf data dir */
	snprintf(path, sizeof(path), "%s/perf.data", rec);
	if (is_dir(rec) && !stat(path, &st) && S_ISREG(st.st_mode)) {
		snprintf(gdir, len, "%s", rec);
		return 0;
	}
	snprintf(err, errlen, "%s: no guest data (neither %s/guest nor %s.guest; "
		 "vmpt record --guest or vmpt guest collect)", rec, rec, rec);
	return -VMPT_ERR_NOT_FOUND;
}

int vmpt_guest_maps(const char *rec, FILE *out, char *err, size_t errlen)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	struct comm *comms = NULL;
	size_t nr_comms = 0, cap = 0;
	char gdir[PATH_MAX], path[PATH_MAX + 16], rel[PATH_MAX];
	int dirfd, ret;

	ret = vmpt_guest_dir(rec, gdir, sizeof(gdir), err, errlen);
	if (ret)
		return ret;
	dirfd = open(gdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		snprintf(err, errlen, "%s: %s", gdir, strerror(errno));
		return -VMPT_ERR_IO;
	}
	snprintf(path, sizeof(path), "%s/perf.data", gdir);
	ret = vmpt_perf_open(&pd, path);
	if (ret) {
		snprintf(err, errlen, "%s", pd.errmsg);
		vmpt_perf_close(&pd);
		close(dirfd);
		return ret;
	}
	fprintf(out, "%-13s %-16s %-33s %s\n", "PID/TID", "COMM", "START-END", "FILE (STATE)");
	vmpt_perf_cursor_init(&pd, &cur);
	while ((ret = vmpt_perf_next(&pd, &cur, &ev)) > 0) {
		const char *name, *state, *why;
		char ids[32], range[48];

		if (ev.type == PERF_RECORD_COMM) {
			if (nr_comms == cap) {
				size_t ncap = cap ? 2 * cap : 256;
				struct comm *n = realloc(comms, ncap * sizeof(*n));

				if (!n) {
					ret = -VMPT_ERR_NOMEM;
					snprintf(err, errlen, "out of memory");
					break;
				}
				comms = n;
				cap = ncap;
			}
			comms[nr_comms].tid = ev.comm.tid;
			snprintf(comms[nr_comms].name, sizeof(comms[nr_comms].name), "%s",
				 ev.comm.comm);
			nr_comms++;
			continue;
		}
		if ((ev.type != PERF_RECORD_MMAP && ev.type != PERF_RECORD_MMAP2) ||
		    (ev.type == PERF_RECORD_MMAP2 && !(ev.mmap.prot & PROT_EXEC)))
			continue;
		name = ev.mmap.filename;
		if (!strcmp(name, "[vdso]"))
			state = have_file(dirfd, "vdso") ? "in guest/vdso" : "missing";
		else if (name[0] != '/' || !strncmp(name, "//anon", 6))
			state = "no file";
		else if (guest_sysroot_path(name, rel, sizeof(rel), &why))
			state = why;
		else {
			snprintf(path, sizeof(path), "root/%s", rel);
			state = have_file(dirfd, path) ? "in sysroot" : "missing";
		}
		snprintf(ids, sizeof(ids), "%u/%u", ev.mmap.pid, ev.mmap.tid);
		snprintf(range, sizeof(range), "%016" PRIx64 "-%016" PRIx64, ev.mmap.start,
			 ev.mmap.start + ev.mmap.len);
		fprintf(out, "%-13s %-16s %-33s %s (%s)\n", ids,
			comm_of(comms, nr_comms, ev.mmap.tid), range, name, state);
	}
	if (ret < 0 && ret != -VMPT_ERR_NOMEM)
		snprintf(err, errlen, "%s", pd.errmsg);
	free(comms);
	vmpt_perf_close(&pd);
	close(dirfd);
	return ret < 0 ? ret : 0;
}
