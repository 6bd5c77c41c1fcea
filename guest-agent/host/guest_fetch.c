/* SPDX-License-Identifier: MIT */
/* What vmpt guest fetches: the binaries the guest's sideband maps, its
 * kernel (kcore_dir), asked of vmpt-agent in one request, each file kept
 * under DIR/guest/root (guest_sysroot.c), within the session's limits.
 */
#include "guest_session_int.h"
#include "vmpt/error.h"
#include "vmpt/perf_data.h"
#include "guest_sysroot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <libssh/libssh.h>
#include <limits.h>
#include <libssh/sftp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The files to ask for: a guest name and where it goes under DIR/guest. */
struct fetch_list {
	struct guest_pack_request *reqs;
	size_t nr, cap;
};

/* Most distinct guest files one fetch asks for: a guest naming more is
 * not describing real processes.
 */
#define FETCH_MAX_FILES 100000

static int fetch_add(struct fetch_list *l, const char *name, char *dest)
{
	char *copy = strdup(name);

	if (!dest || !copy)
		goto nomem;
	if (l->nr == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct guest_pack_request *r = realloc(l->reqs, cap * sizeof(*r));

		if (!r)
			goto nomem;
		l->reqs = r;
		l->cap = cap;
	}
	l->reqs[l->nr++] = (struct guest_pack_request){ .name = copy, .dest = dest, .dirfd = -1 };
	return 0;
nomem:
	free(copy);
	free(dest);
	return -VMPT_ERR_NOMEM;
}

static void fetch_free(struct fetch_list *l)
{
	for (size_t i = 0; i < l->nr; i++) {
		free((char *)l->reqs[i].name);
		free((char *)l->reqs[i].dest);
	}
	free(l->reqs);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct guest_pack_request *)a)->name,
		      ((const struct guest_pack_request *)b)->name);
}

/* Each name once (a library is mapped by every process), from index first on. */
static void fetch_unique(struct fetch_list *l, size_t first)
{
	size_t out = first;

	qsort(l->reqs + first, l->nr - first, sizeof(*l->reqs), by_name);
	for (size_t i = first; i < l->nr; i++) {
		if (out > first && !strcmp(l->reqs[out - 1].name, l->reqs[i].name)) {
			free((char *)l->reqs[i].name);
			free((char *)l->reqs[i].dest);
			continue;
		}
		l->reqs[out++] = l->reqs[i];
	}
	l->nr = out;
}

/* The guest files the sideband maps executable: the code a trace runs. */
static int binaries_from_sideband(struct vmpt_guest *g, const char *gdir,
				  struct fetch_list *l, unsigned *rejected)
{
	struct vmpt_perf_data pd;
	struct vmpt_perf_cursor cur;
	struct vmpt_perf_event ev;
	char *path = guest_join(gdir, "/perf.data", ""), rel[PATH_MAX];
	size_t first = l->nr;
	int ret;

	if (!path)
		return guest_set_err(g, -VMPT_ERR_NOMEM, "out of memory");
	ret = vmpt_perf_open(&pd, path);
	free(path);
	if (ret) {
		guest_set_err(g, ret, "%s", pd.errmsg);
		vmpt_perf_close(&pd);
		return ret;
	}
	vmpt_perf_cursor_init(&pd, &cur);
	while ((ret = vmpt_perf_next(&pd, &cur, &ev)) > 0) {
		const char *name = ev.mmap.filename, *why;

		if (ev.type != PERF_RECORD_MMAP && ev.type != PERF_RECORD_MMAP2)
			continue;
		if (ev.type == PERF_RECORD_MMAP2 && !(ev.mmap.prot & PROT_EXEC))
			continue;
		if (!strcmp(name, "[vdso]")) {
			ret = fetch_add(l, GUEST_PACK_VDSO, strdup("vdso"));
		} else if (name[0] != '/' || !strncmp(name, "//anon", 6)) {
			continue;	/* anonymous, [heap], memfd: no file */
		} else if (guest_sysroot_path(name, rel, sizeof(rel), &why)) {
			if ((*rejected)++ < 20)
				guest_log(g, "vmpt: guest path rejected: '%s': %s\n", name, why);
			continue;
		} else {
			ret = fetch_add(l, name, guest_join("root/", rel, ""));
		}
		if (ret)
			break;
		/* Every process maps the same libraries: keep the list short. */
		if (l->nr - first >= 2 * FETCH_MAX_FILES)
			fetch_unique(l, first);
	}
	if (ret == -VMPT_ERR_NOMEM)
		guest_set_err(g, ret, "out of memory");
	else if (ret < 0)
		guest_set_err(g, ret, "%s", pd.errmsg);
	vmpt_perf_close(&pd);
	if (ret < 0)
		return ret;
	fetch_unique(l, first);
	if (l->nr - first > FETCH_MAX_FILES)
		return guest_set_err(g, -VMPT_ERR_FORMAT,
				     "the guest sideband names %zu files, more than %d",
				     l->nr - first, FETCH_MAX_FILES);
	if (*rejected > 20)
		guest_log(g, "vmpt: %u guest paths rejected in all\n", *rejected);
	return 0;
}

/* After a fetch that stopped: what it kept, whole, is said with the error. */
static void kept_files(struct vmpt_guest *g, const struct fetch_list *l, const char *gdir)
{
	uint64_t bytes = 0;
	unsigned files = 0;
	size_t len = strlen(g->err);

	for (size_t i = 0; i < l->nr; i++) {
		if (l->reqs[i].size) {
			files++;
			bytes += l->reqs[i].size;
		}
	}
	if (files)
		snprintf(g->err + len, sizeof(g->err) - len, "; %s keeps the %u file%s (%"
			 PRIu64 " bytes) fetched before", gdir, files, files == 1 ? "" : "s",
			 bytes);
	else
		snprintf(g->err + len, sizeof(g->err) - len, "; no file of this fetch "
			 "is kept");
}

int vmpt_guest_fetch(struct vmpt_guest *g, const char *gdir, unsigned what,
		     struct vmpt_guest_fetch_stats *stats)
{
	uint64_t avail;
	struct fetch_list l = { 0 };
	char *cmd = NULL, *names = NULL;
	size_t names_len = 0;
	ssh_channel ch = NULL;
	FILE *nf;
	int dirfd = -1, ret = 0;

	memset(stats, 0, sizeof(*stats));
	if (what & VMPT_GUEST_FETCH_KCORE) {
		ret = fetch_add(&l, GUEST_PACK_KCORE, strdup("kcore_dir/kcore"));
		if (!ret)
			ret = fetch_add(&l, GUEST_PACK_KALLSYMS, strdup("kcore_dir/kallsyms"));
		if (!ret)
			ret = fetch_add(&l, GUEST_PACK_MODULES, strdup("kcore_dir/modules"));
		if (ret)
			guest_set_err(g, ret, "out of memory");
	}
	if (!ret && (what & VMPT_GUEST_FETCH_BINARIES))
		ret = binaries_from_sideband(g, gdir, &l, &stats->rejected);
	if (ret || !l.nr)
		goto out;
	dirfd = guest_open_dir(g, gdir);
	if (dirfd < 0) {
		ret = dirfd;
		goto out;
	}
	avail = guest_pack_free_space(dirfd);
	if (avail < g->lim.min_free) {
		ret = guest_set_err(g, -VMPT_ERR_IO, "%s has %" PRIu64 " bytes free, less than "
				    "the %" PRIu64 " kept free: no guest files fetched", gdir,
				    avail, g->lim.min_free);
		goto out;
	}
	nf = open_memstream(&names, &names_len);
	for (size_t i = 0; nf && i < l.nr; i++) {
		l.reqs[i].dirfd = dirfd;
		fprintf(nf, "%s\n", l.reqs[i].name);
	}
	cmd = guest_join(g->agent, " pack", "");
	if (!nf || fclose(nf) || !cmd) {
		ret = guest_set_err(g, -VMPT_ERR_NOMEM, "out of memory");
		goto out;
	}
	ret = guest_exec(g, cmd, &ch);
	if (ret)
		goto out;
	if (VMPT_DL(guest_ssh_lib, ssh_channel_write)(ch, names, (uint32_t)names_len) != (int)names_len) {
		ret = guest_set_err(g, -VMPT_ERR_IO, "sending the file list to %s: %s", g->host,
				    VMPT_DL(guest_ssh_lib, ssh_get_error)(g->s));
		VMPT_DL(guest_ssh_lib, ssh_channel_free)(ch);
		goto out;
	}
	VMPT_DL(guest_ssh_lib, ssh_channel_send_eof)(ch);
	g->lim.dir = gdir;
	ret = guest_receive(g, ch, l.reqs, l.nr, 0, "vmpt-agent pack");
	if (ret) {
		kept_files(g, &l, gdir);
		goto out;
	}
	for (size_t i = 0; i < l.nr; i++) {
		if (!l.reqs[i].missing_errno) {
			stats->files++;
			stats->bytes += l.reqs[i].size;
			continue;
		}
		if (!strcmp(l.reqs[i].name, GUEST_PACK_KCORE) ||
		    !strcmp(l.reqs[i].name, GUEST_PACK_KALLSYMS)) {
			guest_strip_newline(g->stderr_tail);
			ret = guest_set_err(g, -VMPT_ERR_REMOTE, "the guest gave no %s: %s%s%s",
					    l.reqs[i].name, strerror(l.reqs[i].missing_errno),
					    g->stderr_len ? ": " : "", g->stderr_tail);
			break;
		}
		stats->missing++;
		guest_log(g, "vmpt: the guest has no %s: %s\n", l.reqs[i].name,
			  strerror(l.reqs[i].missing_errno));
	}
out:
	if (dirfd >= 0)
		close(dirfd);
	free(cmd);
	free(names);
	fetch_free(&l);
	return ret;
}

int vmpt_guest_finish(struct vmpt_guest *g, const char *recording, unsigned what,
		      struct vmpt_guest_fetch_stats *stats)
{
	struct stat st;
	char *gdir;
	int ret;

	/* Inside perf's directory form, beside a perf.data file: never a
	 * guest/ shared by every recording in a directory.
	 */
	gdir = !stat(recording, &st) && S_ISDIR(st.st_mode) ? guest_join(recording, "/guest", "")
							    : guest_join(recording, ".guest", "");
	if (!gdir)
		return guest_set_err(g, -VMPT_ERR_NOMEM, "out of memory");
	ret = vmpt_guest_stop(g, gdir);
	if (!ret && what)
		ret = vmpt_guest_fetch(g, gdir, what, stats);
	free(gdir);
	return ret;
}
