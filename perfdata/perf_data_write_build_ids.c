/* SPDX-License-Identifier: MIT */
/* HEADER_BUILD_ID of what a recording maps (vmpt_perf_writer_opts
 * .build_ids): the writer notes the file of every executable MMAP and
 * MMAP2 it writes, and at close names each one's build-id, as perf record
 * does for AUX area recordings (all of them, hit or not): from the
 * record when MMAP2 carries it, else from the file as it is then.
 */
#include "perf_data_write.h"
#include "vmpt/build_id.h"
#include "vmpt/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MISC_MMAP_DATA (1 << 13)
#define MISC_MMAP_BUILD_ID (1 << 14)
#define PROT_EXEC_BIT 4

void pw_note_mapping(struct vmpt_perf_writer *w, const uint8_t *r, uint16_t size)
{
	uint32_t type = pd_u32(r);
	uint16_t misc = pd_u16(r + 4);
	size_t name_at = type == PERF_RECORD_MMAP2 ? 8 + 8 + 24 + 24 + 8 : 8 + 8 + 24;
	struct pw_mapped m = { 0 };
	const char *name;

	if ((type != PERF_RECORD_MMAP && type != PERF_RECORD_MMAP2) || size <= name_at)
		return;
	if (type == PERF_RECORD_MMAP ? (misc & MISC_MMAP_DATA) :
	    !(pd_u32(r + name_at - 8) & PROT_EXEC_BIT))
		return;
	name = (const char *)r + name_at;
	if (!memchr(name, 0, size - name_at) || (name[0] != '/' && strcmp(name, "[vdso]")))
		return;
	for (size_t i = 0; i < w->nr_mapped; i++)
		if (!strcmp(w->mapped[i].name, name))
			return;
	if (type == PERF_RECORD_MMAP2 && (misc & MISC_MMAP_BUILD_ID) && r[40] <= 20) {
		m.id_size = r[40];
		memcpy(m.id, r + 44, m.id_size);
		m.have_id = 1;
	}
	m.misc = (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL ?
		 PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER;
	m.name = strdup(name);
	if (!m.name)
		return;
	struct pw_mapped *v = realloc(w->mapped, (w->nr_mapped + 1) * sizeof(*v));

	if (!v) {
		free(m.name);
		return;
	}
	w->mapped = v;
	w->mapped[w->nr_mapped++] = m;
}

static int hex_to_id(const char *hex, uint8_t id[20], uint8_t *size)
{
	size_t n = strlen(hex) / 2;

	if (n > 20)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1;
		id[i] = (uint8_t)v;
	}
	*size = (uint8_t)n;
	return 0;
}

int pw_mapped_build_ids(struct vmpt_perf_writer *w)
{
	struct vmpt_perf_env *e = &w->env;

	for (size_t i = 0; i < w->nr_mapped; i++) {
		struct pw_mapped *m = &w->mapped[i];
		struct vmpt_perf_build_id *b;
		char hex[41];

		if (!m->have_id) {
			const uint8_t *vdso;
			size_t size;
			int ret = strcmp(m->name, "[vdso]") ? vmpt_build_id_of_file(m->name, hex) :
				  vmpt_vdso_image(&vdso, &size) < 0 ? -VMPT_ERR_NOT_FOUND :
				  vmpt_build_id_of_buffer(vdso, size, hex);

			/* Gone, or no build-id: nothing to name. */
			if (ret < 0 || hex_to_id(hex, m->id, &m->id_size) < 0)
				continue;
		}
		b = realloc(e->build_ids, (e->nr_build_ids + 1) * sizeof(*b));
		if (!b)
			return -VMPT_ERR_NOMEM;
		e->build_ids = b;
		b += e->nr_build_ids;
		memset(b, 0, sizeof(*b));
		b->pid = -1;	/* the host machine, as perf's HOST_KERNEL_ID */
		b->misc = m->misc;
		b->size = m->id_size;
		memcpy(b->id, m->id, m->id_size);
		b->filename = strdup(m->name);
		if (!b->filename)
			return -VMPT_ERR_NOMEM;
		e->nr_build_ids++;
	}
	return 0;
}
