/* SPDX-License-Identifier: MIT */
/* Inside session/: what vmpt_session.c (the recording) gives
 * vmpt_session_decode.c (decoding it) beyond include/vmpt/session.h.
 */
#ifndef VMPT_SESSION_INT_H
#define VMPT_SESSION_INT_H

#include "vmpt/session.h"

/* vmpt_session_task, and the perf time until which the answer holds. */
void vmpt_session_task_until(const struct vmpt_session *s,
			     const struct vmpt_session_buffer *b, uint64_t time,
			     struct vmpt_task *t, uint64_t *until);

/* A binary found: path inside the directory root ("": on this host, as
 * is), for vmpt_path_open.
 */
struct session_binary {
	char root[4096];
	char path[4096];
	int temp;		/* a copy made here: unlink path once added */
};

/* Where the binary the recording mapped as name (build-id id, hex; ""
 * when not recorded) is here: out.  0 or -VMPT_ERR_NOT_FOUND; then
 * changed_id (41 bytes) is the build-id of a file found with another
 * one ("none": without), or "".
 */
int session_find_binary(struct vmpt_session *s, const char *name, const char *id,
			struct session_binary *out, char *changed_id);

/* vmpt_session_guest.c: the guest's tasks of a VM recording whose guest
 * side (dir: REC/guest or REC.guest) has the guest's sideband.  0 or a
 * negative vmpt_err with errmsg set.
 */
int session_guest_open(struct vmpt_session *s, const char *dir);
/* Fill t's guest part (t->tid the host thread) at host perf time `time`,
 * lowering *until to when it changes.
 */
void session_guest_task(const struct vmpt_session *s, struct vmpt_task *t, uint64_t time,
			uint64_t *until);

/* vmpt_session_poke.c: the TEXT_POKE records and when tracing started,
 * seen in the walk of the records (see: 0 or -VMPT_ERR_NOMEM), then
 * applied to the image (0, or a negative vmpt_err with errmsg set).
 */
struct session_pokes {
	struct vmpt_perf_event *ev;
	size_t n, cap;
	uint64_t start;
	int have_start;
};
int session_pokes_see(struct session_pokes *p, const struct vmpt_perf_event *ev);
int session_pokes_apply(struct vmpt_session *s, struct session_pokes *p);

/* vmpt_session_samples.c: value i (< ev->sample.nr_read) of a sample
 * that reads counters, as a sample of that counter's event: 1 (out), 0
 * (perf delivers none for it) or -VMPT_ERR_NOMEM.  The counters' last
 * values are r's.
 */
struct session_reads {
	uint64_t *id, *last;
	uint8_t *used;
	size_t n, cap;
};
int session_sample_value(struct session_reads *r, const struct vmpt_perf_data *pd,
			 const struct vmpt_perf_event *ev, uint64_t i, struct vmpt_perf_event *out);
void session_reads_free(struct session_reads *r);

/* vmpt_session_procs.c: a fork (from parent) or an exec of process pid,
 * seen in the walk of the records (0 or -VMPT_ERR_NOMEM); the processes
 * made of them and of the mappings, with the generations of their code,
 * once all are read (0 or -VMPT_ERR_NOMEM); a process (NULL: none); its
 * generations started before a record's time and file offset; when pid's
 * address space changes after `time` (UINT64_MAX: never); all freed by
 * session_procs_free.
 */
int session_proc_start(struct vmpt_session *s, int pid, int parent, int gen,
		       uint64_t time, uint64_t offset);
int session_procs_build(struct vmpt_session *s);
struct vmpt_session_proc *session_find_proc(const struct vmpt_session *s, int pid);
unsigned session_gens_before(const struct vmpt_session_proc *p, uint64_t time,
			     uint64_t offset);
uint64_t session_space_until(const struct vmpt_session *s, int pid, uint64_t time);
/* The address space `space` sees where it maps nothing: its process's
 * generation before, or its parent's at its fork (0: none).
 */
uint64_t session_space_before(const struct vmpt_session *s, uint64_t space);
void session_procs_free(struct vmpt_session *s);

/* vmpt_session_maps.c: keep a mapping (pid -1: the kernel's; data: of no
 * code) as read (0 or -VMPT_ERR_NOMEM); once all records are read, place
 * each in its generation's address space and add its code to the image
 * (0 or -VMPT_ERR_NOMEM).
 */
int session_keep_map(struct vmpt_session *s, const struct vmpt_perf_event *ev, int pid,
		     int data);
int session_maps_place(struct vmpt_session *s);
/* The kernel's mapping of addr: the last recorded one there, else, in the kernel's
 * half, the mapping below it (perf extends each to the next).
 */
const struct vmpt_session_map *kernel_map_in(const struct vmpt_session *s, uint64_t addr);
/* vmpt_session_kallsyms.c: load the running kernel's symbols when perf
 * would (see vmpt_session_kernel_sym): 0 or -VMPT_ERR_NOMEM.
 */
int session_kernel_symbols(struct vmpt_session *s);

/* Snapshot mode: the bytes of b to skip as the snapshot before it (a)
 * holds them (all of b: nothing new), and whether b goes on from a.
 */
size_t session_snapshot_skip(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
			     int have_tsc, int *consecutive);

/* A snapshot-mode queue's n buffers (indexes into s->bufs): the bytes of
 * each to skip and whether it goes on from the one before (calloc'd, the
 * caller frees), those with nothing new left out.
 */
int session_snapshot_plan(const struct vmpt_session *s, size_t *bufs, size_t *n,
			  size_t **skip, uint8_t **cont);

#endif
