/* SPDX-License-Identifier: MIT */
/* The recorded mappings (MMAP, MMAP2): kept to name what they map, their
 * code placed in the image in the address space of their process's
 * generation (vmpt_session_procs.c), and looked up as perf's maps of a
 * thread.
 *
 * A process's mappings as perf's thread holds them when the process maps
 * its vdso: perf 6.1's map__new finds the vdso's dso by the process's ELF
 * class, which it asks the binaries of its mappings for in address order
 * until one answers (machine__thread_dso_type).  A binary that cannot be
 * opened has its dso data status ERROR from then on, and the decoder's
 * failures in it are reported one time less (vmpt_script_stream.c).
 * After an exec these are the program and its interpreter.
 */
#include "vmpt_session_int.h"
#include "vmpt/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int push_map(struct vmpt_session_map **maps, size_t *n,
		    const struct vmpt_session_map *m)
{
	/* Doubling from 16. */
	if (!*n || (*n >= 16 && !(*n & (*n - 1)))) {
		struct vmpt_session_map *more = realloc(*maps, (*n ? 2 * *n : 16) * sizeof(*more));

		if (!more)
			return -VMPT_ERR_NOMEM;
		*maps = more;
	}
	(*maps)[(*n)++] = *m;
	return 0;
}

/* perf's is_anon_memory and is_no_dso_memory: memory of no file. */
static int no_file_memory(const char *name)
{
	return !strcmp(name, "//anon") || !strncmp(name, "/dev/zero", 9) ||
	       !strncmp(name, "/anon_hugepage", 14) || !strncmp(name, "[stack", 6) ||
	       !strncmp(name, "/SYSV", 5) || !strcmp(name, "[heap]");
}

/* Keep the mapping for naming code whose binary is missing here, with
 * its build-id (the record's, else HEADER_BUILD_ID's for its file); data
 * with neither.
 */
int session_keep_map(struct vmpt_session *s, const struct vmpt_perf_event *ev, int pid, int data)
{
	static const char hex[] = "0123456789abcdef";
	struct vmpt_session_map m = {
		.pid = pid, .start = ev->mmap.start, .len = ev->mmap.len,
		.pgoff = ev->mmap.pgoff, .name = ev->mmap.filename, .seq = s->n_maps,
		.time = ev->sid.present & PERF_SAMPLE_TIME ? ev->sid.time : 0,
		.offset = ev->offset,
	};
	const uint8_t *id = NULL;
	size_t n = 0;

	/* perf's kernel dso is "[kernel.kallsyms]", whatever its map's name
	 * ("[kernel.kallsyms]_text").
	 */
	if (!strncmp(m.name, "[kernel.kallsyms]", 17))
		m.name = "[kernel.kallsyms]";
	/* perf's map__new: code in anonymous memory, a stack, a heap or
	 * SysV shared memory is named for the JIT map perf reads its
	 * symbols from (data there keeps its name).
	 */
	if (data)
		return push_map(&s->data_maps, &s->n_data_maps, &m);
	if (no_file_memory(m.name))
		snprintf(m.anon_name, sizeof(m.anon_name), "/tmp/perf-%d.map",
			 (int)ev->mmap.pid);

	if (ev->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		id = ev->mmap.build_id;
		n = ev->mmap.build_id_size;
	}
	for (size_t i = 0; !id && i < s->pd.env.nr_build_ids; i++) {
		const struct vmpt_perf_build_id *b = &s->pd.env.build_ids[i];

		if (b->filename && !strcmp(b->filename, m.name)) {
			id = b->id;
			n = b->size;
		}
	}
	for (size_t i = 0; id && i < n && i < 20; i++) {
		m.build_id[2 * i] = hex[id[i] >> 4];
		m.build_id[2 * i + 1] = hex[id[i] & 15];
	}
	return push_map(&s->maps, &s->n_maps, &m);
}

/* A host mapping's code, from where the binary is found (named as the
 * recording names it).  A binary found nowhere is no error: its code
 * shows up as decoding errors, its mapping names it.
 */
static void host_code(struct vmpt_session *s, struct vmpt_session_map *m,
		      const struct vmpt_asid *asid)
{
	struct session_binary b;
	const char *root;

	if (session_find_binary(s, m->name, m->build_id, &b, m->changed_id) < 0) {
		int told = 0;

		for (const struct vmpt_session_map *o = s->maps; m->changed_id[0] && o < m; o++)
			told |= !strcmp(o->name, m->name) && o->changed_id[0];
		if (m->changed_id[0] && !told && s->opts.warn)
			fprintf(s->opts.warn, "vmpt: warning: %s has build-id %s, the "
				"recording's is %s: not used (the file changed since it "
				"was recorded)\n", m->name, m->changed_id, m->build_id);
		return;
	}
	m->found = 1;
	root = b.root[0] ? b.root : NULL;
	if (vmpt_image_add_elf_map_in(s->image, root, b.path, m->name, m->start,
				      m->pgoff, asid) == -VMPT_ERR_FORMAT)
		vmpt_image_add_raw_in(s->image, root, b.path, m->pgoff, m->len, m->start, asid);
	if (b.temp)
		unlink(b.path);
}

/* The address space a process's mapping is in: its generation's (a
 * mapping starting one is in it).  code: it maps code (a process mapping
 * data only still runs its parent's).
 */
static void place(struct vmpt_session *s, struct vmpt_session_map *m, int code)
{
	struct vmpt_session_proc *p = m->pid > 0 ? session_find_proc(s, m->pid) : NULL;
	unsigned gen;

	if (!p)
		return;
	gen = session_gens_before(p, m->time, m->offset + 1);
	m->space = vmpt_pid_space(m->pid, gen);
	if (code && !gen && (!p->has_maps || m->time < p->maps_from)) {
		p->maps_from = m->time;
		p->has_maps = 1;
	}
}

/* The index's order: pid, address space, address, file order. */
static int by_space(const void *a, const void *b, void *arg)
{
	const struct vmpt_session_map *maps = arg;
	size_t i = *(const size_t *)a, k = *(const size_t *)b;
	const struct vmpt_session_map *x = &maps[i], *y = &maps[k];

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->space != y->space)
		return x->space < y->space ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return i < k ? -1 : i > k;
}

static int index_maps(struct vmpt_session_map *maps, size_t n,
		      struct vmpt_session_map_index *ix)
{
	ix->at = malloc((n + 1) * sizeof(*ix->at));
	if (!ix->at)
		return -VMPT_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		ix->at[i] = i;
		if (maps[i].len > ix->max_len)
			ix->max_len = maps[i].len;
	}
	if (n)
		qsort_r(ix->at, n, sizeof(*ix->at), by_space, maps);
	ix->n = n;
	return 0;
}

int session_maps_place(struct vmpt_session *s)
{
	int ret = session_procs_build(s);

	if (ret < 0)
		return ret;
	for (size_t i = 0; i < s->n_maps; i++) {
		struct vmpt_asid asid = { VMPT_MACHINE_HOST, VMPT_ASID_ANY };

		place(s, &s->maps[i], 1);
		if (s->maps[i].space)
			asid.cr3 = s->maps[i].space;
		host_code(s, &s->maps[i], &asid);
	}
	for (size_t i = 0; i < s->n_data_maps; i++)
		place(s, &s->data_maps[i], 0);
	/* Where a generation's, or a fork's, code is not its own. */
	for (size_t i = 0; i < s->n_procs; i++) {
		const struct vmpt_session_proc *p = &s->procs[i];

		for (unsigned gen = 0; gen <= p->n_gens; gen++) {
			struct vmpt_asid space = { VMPT_MACHINE_HOST, vmpt_pid_space(p->pid, gen) };
			uint64_t before = session_space_before(s, space.cr3);

			if (before && vmpt_image_inherit(s->image, &space, before) < 0)
				return -VMPT_ERR_NOMEM;
		}
	}
	ret = index_maps(s->maps, s->n_maps, &s->map_index);
	return ret < 0 ? ret : index_maps(s->data_maps, s->n_data_maps, &s->data_index);
}

/* ix's first position at or after (pid, space) (after: 1, past it). */
static size_t index_at(const struct vmpt_session_map *maps,
		       const struct vmpt_session_map_index *ix, int pid, uint64_t space,
		       int after)
{
	size_t lo = 0, hi = ix->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct vmpt_session_map *m = &maps[ix->at[mid]];

		if (m->pid < pid || (m->pid == pid && (m->space < space ||
						       (after && m->space == space))))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The last mapping (in file order) of pid holding addr: in address space
 * `space` (the kernel's: 0), or with any, in any of pid's.  *below: the
 * mapping at the highest address at or below addr there (NULL: none).
 */
static const struct vmpt_session_map *last_map_in(const struct vmpt_session_map *maps,
						 const struct vmpt_session_map_index *ix,
						 int pid, uint64_t space, int any, uint64_t addr,
						 const struct vmpt_session_map **below)
{
	size_t lo = index_at(maps, ix, pid, any ? 0 : space, 0);
	size_t hi = index_at(maps, ix, pid, any ? UINT64_MAX : space, 1);
	size_t best = SIZE_MAX, first = lo;

	if (below)
		*below = NULL;
	if (any) {
		for (size_t i = lo; i < hi; i++)
			if (addr - maps[ix->at[i]].start < maps[ix->at[i]].len &&
			    (best == SIZE_MAX || ix->at[i] > best))
				best = ix->at[i];
		return best == SIZE_MAX ? NULL : &maps[best];
	}
	/* The first mapping above addr; the ones holding it are below. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (maps[ix->at[mid]].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (below && lo > first)
		*below = &maps[ix->at[lo - 1]];
	for (size_t i = lo; i-- > first && addr - maps[ix->at[i]].start < ix->max_len;)
		if (addr - maps[ix->at[i]].start < maps[ix->at[i]].len &&
		    (best == SIZE_MAX || ix->at[i] > best))
			best = ix->at[i];
	return best == SIZE_MAX ? NULL : &maps[best];
}

const struct vmpt_session_map *kernel_map_in(const struct vmpt_session *s, uint64_t addr)
{
	const struct vmpt_session_map *below;
	const struct vmpt_session_map *m = last_map_in(s->maps, &s->map_index, -1, 0, 0, addr,
						       &below);

	/* perf's kernel maps end where the next begins (the last never):
	 * the kernel's text map holds its init text and what follows.
	 */
	if (!m && addr >> 63 && below && below->start >> 63)
		m = below;
	return m;
}

/* The mapping of addr in the address space (the process's, then the
 * ones it sees through: its generation's predecessor, its parent's at
 * the fork; without a space, the process's last and its parents'), then
 * the kernel's; of code, else of data.
 */
static const struct vmpt_session_map *map_of(const struct vmpt_session *s, int pid,
					     uint64_t space, uint64_t addr, int data)
{
	const struct vmpt_session_map *maps = data ? s->data_maps : s->maps;
	const struct vmpt_session_map_index *ix = data ? &s->data_index : &s->map_index;
	const struct vmpt_session_map *m = NULL;
	uint64_t in = space;

	for (int depth = 0, p = space ? -1 : pid; !m && depth < 64 && (in || p > 0); depth++) {
		if (in) {
			m = last_map_in(maps, ix, vmpt_space_pid(in), in, 0, addr, NULL);
			in = session_space_before(s, in);
		} else {
			const struct vmpt_session_proc *proc = session_find_proc(s, p);

			m = last_map_in(maps, ix, p, 0, 1, addr, NULL);
			p = proc ? proc->parent : -1;
		}
	}
	if (!m)
		m = data ? last_map_in(maps, ix, -1, 0, 0, addr, NULL) : kernel_map_in(s, addr);
	return m || data ? m : map_of(s, pid, space, addr, 1);
}

int vmpt_session_map_of(void *ctx, int pid, uint64_t space, uint64_t addr,
			struct vmpt_map_ref *map)
{
	const struct vmpt_session *s = ctx;
	const struct vmpt_session_map *m = map_of(s, pid, space, addr, 0);

	if (!m)
		return -VMPT_ERR_NOT_FOUND;
	map->name = m->anon_name[0] ? m->anon_name : m->name;
	map->start = m->start;
	map->pgoff = m->pgoff;
	map->build_id = m->build_id[0] ? m->build_id : NULL;
	map->no_file = m->anon_name[0] || no_file_memory(m->name);
	return 0;
}

/* maps_by_pid's order: by pid, then address (the order perf asks them
 * in), then file order.
 */
static int by_pid_start(const void *a, const void *b, void *arg)
{
	const struct vmpt_session_map *maps = arg;
	const struct vmpt_session_map *x = &maps[*(const size_t *)a];
	const struct vmpt_session_map *y = &maps[*(const size_t *)b];

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The first index of pid's maps in s->maps_by_pid. */
static size_t first_of(const struct vmpt_session *s, int pid)
{
	size_t lo = 0, hi = s->n_maps;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->maps[s->maps_by_pid[mid]].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t vmpt_session_vdso_unread(void *ctx, const struct vmpt_perf_event *ev,
				const char **names, size_t max)
{
	struct vmpt_session *s = ctx;
	size_t from, to, vdso = SIZE_MAX, n = 0;
	int pid;

	if (!s->n_maps)
		return 0;
	if (!s->maps_by_pid) {
		if (!(s->maps_by_pid = malloc(s->n_maps * sizeof(size_t))))
			return 0;
		for (size_t i = 0; i < s->n_maps; i++)
			s->maps_by_pid[i] = i;
		qsort_r(s->maps_by_pid, s->n_maps, sizeof(size_t), by_pid_start, s->maps);
	}
	pid = ev->mmap.pid == UINT32_MAX ? -1 : (int)ev->mmap.pid;
	if (pid <= 0)
		return 0;
	from = to = first_of(s, pid);
	while (to < s->n_maps && s->maps[s->maps_by_pid[to]].pid == pid)
		to++;
	/* The vdso's mapping keeps the record's name. */
	for (size_t i = from; i < to; i++)
		if (s->maps[s->maps_by_pid[i]].name == ev->mmap.filename)
			vdso = s->maps_by_pid[i];
	if (vdso == SIZE_MAX)
		return 0;
	/* The process's mappings before it, in address order. */
	for (size_t i = from; i < to; i++) {
		const struct vmpt_session_map *m = &s->maps[s->maps_by_pid[i]];

		/* perf asks file-backed dsos only ("//anon" is one to it). */
		if (s->maps_by_pid[i] >= vdso || m->name[0] != '/')
			continue;
		if (m->found)
			break;
		if (n < max)
			names[n++] = m->name;
	}
	return n;
}
