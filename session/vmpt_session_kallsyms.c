/* SPDX-License-Identifier: MIT */
/* The running kernel's symbols for a recording made here, as perf takes
 * them when no vmlinux or kcore gives it the kernel (dso__find_kallsyms):
 * /proc/kallsyms when the recording's kernel has no build-id (the pipe
 * form) or this kernel's, else the build-id cache's copy.  Names only:
 * the kernel's code stays unknown without kcore.  Read at the first
 * lookup, under a lock (streams may look up from several threads).
 */
#include "vmpt_session_int.h"
#include "vmpt/build_id.h"
#include "vmpt/error.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct vmpt_session_map *kernel_map(const struct vmpt_session *s)
{
	for (size_t i = 0; i < s->n_maps; i++)
		if (s->maps[i].pid == -1 && !strcmp(s->maps[i].name, "[kernel.kallsyms]"))
			return &s->maps[i];
	return NULL;
}

static const struct vmpt_symbol *sym_named(const struct vmpt_session *s, const char *name)
{
	for (size_t i = 0; i < s->n_ksyms; i++)
		if (!strcmp(s->ksyms[i].name, name))
			return &s->ksyms[i];
	return NULL;
}

/* perf's symfs: "/" (after realpath) is none. */
static int symfs_given(const char *symfs)
{
	char *real;
	int root;

	if (!symfs)
		return 0;
	real = realpath(symfs, NULL);
	root = !strcmp(real ? real : symfs, "/");
	free(real);
	return !root;
}

int session_kernel_symbols(struct vmpt_session *s)
{
	const struct vmpt_asid host = { VMPT_MACHINE_HOST, VMPT_ASID_ANY };
	const struct vmpt_session_map *k = kernel_map(s);
	char here[41], cache[4096];

	/* perf tries no local file under --symfs; a vmlinux or kcore given
	 * names the kernel itself.
	 */
	if (!k || symfs_given(s->opts.symfs) || vmpt_image_find(s->image, &host, k->start))
		return 0;
	if (!k->build_id[0] || (vmpt_build_id_running_kernel(here) == 0 &&
				vmpt_build_id_equal(here, k->build_id)))
		snprintf(s->ksym_path, sizeof(s->ksym_path), "/proc/kallsyms");
	else if (vmpt_build_id_cache_dir(cache, sizeof(cache)) == 0)
		snprintf(s->ksym_path, sizeof(s->ksym_path), "%.4000s/[kernel.kallsyms]/%s/kallsyms",
			 cache, k->build_id);
	if (!s->ksym_path[0])
		return 0;
	s->ksym_text = k->pgoff;
	if (pthread_mutex_init(&s->ksym_lock, NULL)) {
		s->ksym_path[0] = 0;
		return -VMPT_ERR_NOMEM;
	}
	return 0;
}

/* Read the symbols on first use, as perf loads the kernel's (120 k lines
 * of /proc/kallsyms take tens of milliseconds): 0, or none there.
 */
static int load(struct vmpt_session *s)
{
	const struct vmpt_symbol *text;

	if (s->ksym_loaded)
		return s->n_ksyms ? 0 : -VMPT_ERR_NOT_FOUND;
	s->ksym_loaded = 1;
	if (vmpt_image_kallsyms(s->image, s->ksym_path, &s->ksyms, &s->n_ksyms) < 0) {
		s->n_ksyms = 0;		/* none: unnamed, as by perf */
		return -VMPT_ERR_NOT_FOUND;
	}
	/* The kernel's map starts at _text, its pgoff says where _text was
	 * (perf's ref_reloc_sym): the same kernel booted elsewhere.
	 */
	text = sym_named(s, "_text");
	if (s->ksym_text && text)
		s->ksym_delta = text->addr - s->ksym_text;
	return s->n_ksyms ? 0 : -VMPT_ERR_NOT_FOUND;
}

int vmpt_session_kernel_sym(void *ctx, uint64_t addr, const char **name, uint64_t *start)
{
	struct vmpt_session *s = ctx;
	const struct vmpt_session_map *m;
	size_t lo = 0, hi;
	uint64_t at;
	int ret;

	if (!s->ksym_path[0] || !(m = kernel_map_in(s, addr)) ||
	    strcmp(m->name, "[kernel.kallsyms]"))
		return -VMPT_ERR_NOT_FOUND;
	pthread_mutex_lock(&s->ksym_lock);
	ret = load(s);
	pthread_mutex_unlock(&s->ksym_lock);
	if (ret < 0)
		return ret;
	/* The last symbol at or below the address. */
	at = addr + s->ksym_delta;
	hi = s->n_ksyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ksyms[mid].addr <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || at - s->ksyms[lo - 1].addr >= s->ksyms[lo - 1].size)
		return -VMPT_ERR_NOT_FOUND;
	*name = s->ksyms[lo - 1].name;
	*start = s->ksyms[lo - 1].addr - s->ksym_delta;
	return 0;
}
