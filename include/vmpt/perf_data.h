/* SPDX-License-Identifier: MIT */
/* perf.data: reading and writing the file perf record writes (perf 6.x
 * format; older files, pipe mode and the directory form are read too).
 * See docs/perf-data.md for the layout.
 */
#ifndef VMPT_PERF_DATA_H
#define VMPT_PERF_DATA_H

#include "vmpt/file.h"

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Record types perf adds to the kernel's (tools/lib/perf/include/perf/event.h). */
enum vmpt_perf_user_record {
	VMPT_PERF_RECORD_HEADER_ATTR = 64,
	VMPT_PERF_RECORD_HEADER_EVENT_TYPE = 65,
	VMPT_PERF_RECORD_HEADER_TRACING_DATA = 66,
	VMPT_PERF_RECORD_HEADER_BUILD_ID = 67,
	VMPT_PERF_RECORD_FINISHED_ROUND = 68,
	VMPT_PERF_RECORD_ID_INDEX = 69,
	VMPT_PERF_RECORD_AUXTRACE_INFO = 70,
	VMPT_PERF_RECORD_AUXTRACE = 71,
	VMPT_PERF_RECORD_AUXTRACE_ERROR = 72,
	VMPT_PERF_RECORD_THREAD_MAP = 73,
	VMPT_PERF_RECORD_CPU_MAP = 74,
	VMPT_PERF_RECORD_STAT_CONFIG = 75,
	VMPT_PERF_RECORD_STAT = 76,
	VMPT_PERF_RECORD_STAT_ROUND = 77,
	VMPT_PERF_RECORD_EVENT_UPDATE = 78,
	VMPT_PERF_RECORD_TIME_CONV = 79,
	VMPT_PERF_RECORD_HEADER_FEATURE = 80,
	VMPT_PERF_RECORD_COMPRESSED = 81,
	VMPT_PERF_RECORD_FINISHED_INIT = 82,
	VMPT_PERF_RECORD_COMPRESSED2 = 83,	/* newer perf: the data's size first */
};

/* Feature sections (bits of the file header's feature bitmap). */
enum vmpt_perf_feature {
	VMPT_PERF_FEAT_TRACING_DATA = 1,
	VMPT_PERF_FEAT_BUILD_ID = 2,
	VMPT_PERF_FEAT_HOSTNAME = 3,
	VMPT_PERF_FEAT_OSRELEASE = 4,
	VMPT_PERF_FEAT_VERSION = 5,
	VMPT_PERF_FEAT_ARCH = 6,
	VMPT_PERF_FEAT_NRCPUS = 7,
	VMPT_PERF_FEAT_CPUDESC = 8,
	VMPT_PERF_FEAT_CPUID = 9,
	VMPT_PERF_FEAT_TOTAL_MEM = 10,
	VMPT_PERF_FEAT_CMDLINE = 11,
	VMPT_PERF_FEAT_EVENT_DESC = 12,
	VMPT_PERF_FEAT_CPU_TOPOLOGY = 13,
	VMPT_PERF_FEAT_NUMA_TOPOLOGY = 14,
	VMPT_PERF_FEAT_BRANCH_STACK = 15,
	VMPT_PERF_FEAT_PMU_MAPPINGS = 16,
	VMPT_PERF_FEAT_GROUP_DESC = 17,
	VMPT_PERF_FEAT_AUXTRACE = 18,
	VMPT_PERF_FEAT_STAT = 19,
	VMPT_PERF_FEAT_CACHE = 20,
	VMPT_PERF_FEAT_SAMPLE_TIME = 21,
	VMPT_PERF_FEAT_MEM_TOPOLOGY = 22,
	VMPT_PERF_FEAT_CLOCKID = 23,
	VMPT_PERF_FEAT_DIR_FORMAT = 24,
	VMPT_PERF_FEAT_BPF_PROG_INFO = 25,
	VMPT_PERF_FEAT_BPF_BTF = 26,
	VMPT_PERF_FEAT_COMPRESSED = 27,
	VMPT_PERF_FEAT_CPU_PMU_CAPS = 28,
	VMPT_PERF_FEAT_CLOCK_DATA = 29,
	VMPT_PERF_FEAT_HYBRID_TOPOLOGY = 30,
	VMPT_PERF_FEAT_PMU_CAPS = 31,
	VMPT_PERF_FEAT_BITS = 256,
};

/* AUXTRACE_INFO types (perf's enum auxtrace_type). */
#define VMPT_PERF_AUXTRACE_INTEL_PT 1

/* AUX record flags (the kernel's PERF_AUX_FLAG_*). */
#define VMPT_PERF_AUX_TRUNCATED 0x01
#define VMPT_PERF_AUX_OVERWRITE 0x02
#define VMPT_PERF_AUX_PARTIAL 0x04
#define VMPT_PERF_AUX_COLLISION 0x08

/* The Intel PT private words of AUXTRACE_INFO, in perf's order
 * (tools/perf/util/intel-pt.h); a filter string may follow them.
 */
enum vmpt_perf_intel_pt_priv {
	VMPT_INTEL_PT_PMU_TYPE,
	VMPT_INTEL_PT_TIME_SHIFT,
	VMPT_INTEL_PT_TIME_MULT,
	VMPT_INTEL_PT_TIME_ZERO,
	VMPT_INTEL_PT_CAP_USER_TIME_ZERO,
	VMPT_INTEL_PT_TSC_BIT,
	VMPT_INTEL_PT_NORETCOMP_BIT,
	VMPT_INTEL_PT_HAVE_SCHED_SWITCH,
	VMPT_INTEL_PT_SNAPSHOT_MODE,
	VMPT_INTEL_PT_PER_CPU_MMAPS,
	VMPT_INTEL_PT_MTC_BIT,
	VMPT_INTEL_PT_MTC_FREQ_BITS,
	VMPT_INTEL_PT_TSC_CTC_N,
	VMPT_INTEL_PT_TSC_CTC_D,
	VMPT_INTEL_PT_CYC_BIT,
	VMPT_INTEL_PT_MAX_NONTURBO_RATIO,
	VMPT_INTEL_PT_FILTER_STR_LEN,
	VMPT_INTEL_PT_PRIV_MAX,
};

/* Most private words we keep from an AUXTRACE_INFO record. */
#define VMPT_PERF_AUXTRACE_PRIV_MAX 64

/* The trailer perf puts on non-sample records when sample_id_all is set
 * (and the identifying part of samples).  present holds the sample_type
 * bits that were there.
 */
struct vmpt_perf_sample_id {
	uint64_t present;	/* PERF_SAMPLE_TID|TIME|ID|STREAM_ID|CPU|IDENTIFIER */
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id;
	uint64_t stream_id;
	uint32_t cpu;
};

/* One event (perf_event_attr) and the ids of its kernel events. */
struct vmpt_perf_attr {
	struct perf_event_attr attr;	/* zero beyond the size in the file */
	uint32_t file_attr_size;	/* attr.size as found in the file */
	char *name;			/* from EVENT_DESC, or NULL */
	uint64_t *ids;
	size_t nr_ids;
};

/* One entry of ID_INDEX: where a kernel event id was opened.  Guest
 * machine pid and vcpu are set when the record has them (perf >= 5.19),
 * else -1.  machine_pid 0 is the host (perf's convention).  perf refuses
 * an ID_INDEX naming an id that no attr has.
 */
struct vmpt_perf_id_entry {
	uint64_t id, idx, cpu, tid;
	int64_t machine_pid, vcpu;
};

struct vmpt_perf_time_conv {
	uint64_t time_shift, time_mult, time_zero;
	uint64_t time_cycles, time_mask;	/* 0 in older (32-byte) records */
	uint8_t cap_user_time_zero, cap_user_time_short;
	uint8_t extended;			/* the record had the fields above */
};

/* The Intel PT AUXTRACE_INFO contents by name. */
struct vmpt_perf_intel_pt_info {
	uint64_t priv[VMPT_INTEL_PT_PRIV_MAX];	/* indexed by vmpt_perf_intel_pt_priv */
	const char *filter;			/* address filter string or NULL */
};

/* One parsed record.  Strings and data point into the mapped file (valid
 * until vmpt_perf_close); numbers are copied out.
 */
struct vmpt_perf_event {
	uint32_t type;		/* PERF_RECORD_* or VMPT_PERF_RECORD_* */
	uint16_t misc;
	uint16_t size;
	uint64_t offset;	/* offset of the record header in its file */
	unsigned part;		/* its file: 0 the perf.data, N data.(N-1) */
	int compressed;		/* from the COMPRESSED record at offset, */
	uint64_t zpos;		/* at zpos of its file's decompressed stream */
	const uint8_t *raw;	/* the size bytes of the record */
	const struct vmpt_perf_attr *attr;	/* the event it belongs to, or NULL */
	struct vmpt_perf_sample_id sid;		/* present == 0 when none */
	union {
		/* MMAP and MMAP2 (maj..ino_generation only for MMAP2; build_id
		 * when misc has PERF_RECORD_MISC_MMAP_BUILD_ID). */
		struct {
			uint32_t pid, tid;
			uint64_t start, len, pgoff;
			uint32_t maj, min;
			uint64_t ino, ino_generation;
			uint32_t prot, flags;
			uint8_t build_id_size;
			uint8_t build_id[20];
			const char *filename;
		} mmap;
		struct { uint32_t pid, tid; const char *comm; } comm;
		/* FORK and EXIT */
		struct { uint32_t pid, ppid, tid, ptid; uint64_t time; } fork;
		/* SWITCH (no fields) and SWITCH_CPU_WIDE; out = misc SWITCH_OUT */
		struct { uint32_t next_prev_pid, next_prev_tid; uint8_t out, preempt; } sw;
		struct { uint32_t pid, tid; } itrace_start;
		struct { uint64_t aux_offset, aux_size, flags; } aux;
		struct { uint64_t id, lost; } lost;
		struct { uint64_t lost; } lost_samples;
		/* TEXT_POKE: kernel code at addr changed from old_len bytes to
		 * new_len bytes (both within the record). */
		struct {
			uint64_t addr;
			uint16_t old_len, new_len;
			const uint8_t *old_bytes, *new_bytes;
		} text_poke;
		/* SAMPLE: the fields sample_type has (others 0; period is the
		 * attr's sample_period when not sampled, as perf reports it);
		 * the callchain's nr_chain entries (PERF_CONTEXT_* markers
		 * among them) at chain, unaligned: read with
		 * vmpt_perf_sample_chain(). */
		struct {
			uint64_t ip, addr, period;
			uint64_t nr_chain;
			const uint8_t *chain;
			/* READ: nr_read counter values (a group's members, or
			 * one), read with vmpt_perf_sample_read(). */
			uint64_t nr_read;
			const uint8_t *read;
			/* RAW (a tracepoint's fields): raw_size bytes. */
			const uint8_t *raw_data;
			uint32_t raw_size;
			/* REGS_USER: the registers of attr.sample_regs_user,
			 * one u64 per bit from bit 0, unaligned (NULL: abi 0,
			 * none); STACK_USER: the user stack from the sampled
			 * stack pointer, stack_user_size bytes (perf record
			 * --call-graph dwarf).
			 */
			uint64_t regs_user_abi;
			const uint8_t *regs_user;
			const uint8_t *stack_user;
			uint64_t stack_user_size;
			/* WEIGHT or WEIGHT_STRUCT: the u64 as recorded (the
			 * struct's weight in bits 0-31, instruction latency
			 * in 32-47); DATA_SRC (perf_mem_data_src),
			 * PHYS_ADDR, DATA_PAGE_SIZE, CODE_PAGE_SIZE.
			 * TRANSACTION and CGROUP are stepped over.
			 */
			uint64_t weight, data_src, phys_addr;
			uint64_t data_page_size, code_page_size;
			/* REGS_INTR (perf record -I): as REGS_USER, the
			 * registers of attr.sample_regs_intr.
			 */
			uint64_t regs_intr_abi;
			const uint8_t *regs_intr;
		} sample;
		/* AUXTRACE: the data follows the record in the file. */
		struct {
			uint64_t size, offset, reference;
			uint32_t idx, tid, cpu;
			uint64_t data_offset;	/* offset of the data, same file */
			const uint8_t *data;	/* size bytes */
		} auxtrace;
		struct {
			uint32_t type;		/* VMPT_PERF_AUXTRACE_* */
			uint32_t nr_priv;
			uint64_t priv[VMPT_PERF_AUXTRACE_PRIV_MAX];
		} auxtrace_info;
		struct vmpt_perf_time_conv time_conv;
		/* ID_INDEX: read entries with vmpt_perf_id_index_entry(). */
		struct { uint64_t nr; uint8_t has_guest; } id_index;
		/* HEADER_ATTR (pipe mode): index into vmpt_perf_data.attrs. */
		struct { size_t attr_index; } header_attr;
		/* HEADER_FEATURE (pipe mode): the feature's payload. */
		struct { uint64_t feat_id; const uint8_t *data; uint64_t size; } feature;
	};
};

/* One AUXTRACE index entry (the AUXTRACE feature section). */
struct vmpt_perf_auxtrace_index {
	uint64_t file_offset, size;
};

struct vmpt_perf_build_id {
	int32_t pid;
	uint16_t misc;
	uint8_t size;		/* 20 for sha1 */
	uint8_t id[20];
	char *filename;
};

/* What the feature sections say about the machine (read and written). */
struct vmpt_perf_env {
	char *hostname, *os_release, *version, *arch;
	char *cpudesc, *cpuid;		/* cpuid: "GenuineIntel,6,78,3" */
	uint32_t nr_cpus_online, nr_cpus_avail;
	uint64_t total_mem_kb;
	char **cmdline;			/* argv */
	uint32_t nr_cmdline;
	char *pmu_mappings;		/* "intel_pt=8,software=1" */
	struct vmpt_perf_build_id *build_ids;
	size_t nr_build_ids;
	int32_t clockid;		/* from CLOCK_DATA (read only); -1 when absent */
	/* SAMPLE_TIME (read only): perf time of the first and last sample,
	 * 0 when absent.
	 */
	uint64_t first_sample_time, last_sample_time;
};

/* An opened perf.data (file, pipe-mode file, or directory form). */
struct vmpt_perf_data {
	char *path;			/* as given */
	char *kcore_dir;		/* directory form: PATH/kcore_dir, or NULL */
	int pipe;			/* pipe-mode ("PERFILE2" + size 16) */
	/* Pipe mode: the HEADER_TRACING_DATA record's data (size 0: none). */
	const uint8_t *pipe_tracing;
	uint64_t pipe_tracing_size;
	int swapped;			/* other endianness: not supported */
	uint64_t data_offset, data_size;
	uint64_t features[VMPT_PERF_FEAT_BITS / 64];
	struct vmpt_perf_attr *attrs;
	size_t nr_attrs;
	/* vmpt_perf_attr_by_id's hash of every id (open addressing): the
	 * id and its attr's index + 1 (0: empty slot).
	 */
	uint64_t *id_hash;
	uint32_t *id_attr;
	size_t id_cap, id_used;
	struct vmpt_perf_env env;
	struct vmpt_perf_auxtrace_index *auxtrace_index;
	size_t nr_auxtrace_index;
	/* Error detail after a failure: "PATH: offset 0x...: what", or
	 * "PATH: strerror" when the file cannot be opened. */
	char errmsg[512];
	uint64_t err_offset;
	/* The file was cut (perf record killed, a disk full): what is there
	 * is read, warnmsg says where it ends ("" when whole).  truncated:
	 * in its data section, whose last record may be cut (the walk ends
	 * before it).
	 */
	char warnmsg[512];
	int truncated;
	int read_cut;			/* VMPT_PERF_READ_CUT */
	struct vmpt_file map;
	/* perf record --threads: DIR/data.0, data.1, ... hold records only
	 * (no header); the walk goes through them after the data section. */
	struct vmpt_file *parts;
	size_t nr_parts;
	const struct vmpt_file *cur_file;	/* the walk's file, for errors */
	struct vmpt_perf_zstd *zstd;	/* perf record -z: the decompressed records */
};

/* Open and check a perf.data: header, attrs, ids, feature sections (pipe
 * mode: the HEADER_ATTR/HEADER_FEATURE/HEADER_BUILD_ID records).  A
 * directory is read as perf's directory form (PATH/data, PATH/kcore_dir,
 * PATH/data.N of perf record --threads).
 * Returns 0 or a negative vmpt_err with pd->errmsg telling where.  Call
 * vmpt_perf_close in both cases.
 */
int vmpt_perf_open(struct vmpt_perf_data *pd, const char *path);
/* VMPT_PERF_READ_CUT: a file cut off (perf record killed, a disk full) is
 * read up to where it ends, warnmsg saying so, instead of an error.
 */
#define VMPT_PERF_READ_CUT 1u
int vmpt_perf_open_flags(struct vmpt_perf_data *pd, const char *path, unsigned flags);
/* The same for a file mapped (or read from a pipe) already: pd takes it
 * over (file is left empty), vmpt_perf_close unmaps it.
 */
int vmpt_perf_open_mapped(struct vmpt_perf_data *pd, struct vmpt_file *file,
			  unsigned flags);
void vmpt_perf_close(struct vmpt_perf_data *pd);

/* Does this buffer start like a perf.data (file or pipe mode)? */
int vmpt_perf_is_perf_data(const uint8_t *buf, size_t size);

static inline int vmpt_perf_has_feature(const struct vmpt_perf_data *pd,
					unsigned feat)
{
	return feat < VMPT_PERF_FEAT_BITS &&
	       (pd->features[feat / 64] >> (feat % 64)) & 1;
}

/* Walk the records of the data section in file order, then those of the
 * data.N files of a threaded directory.
 */
struct vmpt_perf_cursor {
	uint64_t pos, end;
	unsigned part;		/* 0: the data section; N: parts[N - 1] */
	size_t attrs_seen;	/* HEADER_ATTR records passed (pipe mode) */
	/* In the records a COMPRESSED record holds (perf record -z): at zpos
	 * of the decompressed stream, up to zend (0: not in one).
	 */
	const uint8_t *zstream;
	uint64_t zlen, zpos, zend, zrecord;
};

void vmpt_perf_cursor_init(const struct vmpt_perf_data *pd,
			   struct vmpt_perf_cursor *cur);
/* A cursor whose next record is the one read before as ev (its offset,
 * part, compressed and zpos): 0, or a negative vmpt_err.
 */
int vmpt_perf_cursor_at(struct vmpt_perf_data *pd, struct vmpt_perf_cursor *cur,
			const struct vmpt_perf_event *ev);

/* Parse the next record.  Returns 1 with ev filled, 0 at the end, or a
 * negative vmpt_err (pd->errmsg names the offset).  The AUXTRACE data is
 * stepped over.  The records of a COMPRESSED record (perf record -z)
 * come in its place, each with the COMPRESSED record's offset and
 * ev->compressed set.
 */
int vmpt_perf_next(struct vmpt_perf_data *pd, struct vmpt_perf_cursor *cur,
		   struct vmpt_perf_event *ev);

/* Entry i of an ID_INDEX record. */
int vmpt_perf_id_index_entry(const struct vmpt_perf_event *ev, uint64_t i,
			     struct vmpt_perf_id_entry *entry);

/* Bytes of the sample_id trailer the records of attr carry (0 without
 * sample_id_all): what to cut off to rewrite a record's trailer.
 */
unsigned vmpt_perf_sample_id_size(const struct perf_event_attr *attr);

/* The raw bytes of a feature section of a file-mode perf.data (within the
 * mapped file); -VMPT_ERR_NOT_FOUND when the file has none.
 */
int vmpt_perf_feature_data(const struct vmpt_perf_data *pd, unsigned feat,
			   const uint8_t **data, uint64_t *size);

/* perf's tracing data (tracepoints' formats, vmpt/tracing_data.h): the
 * TRACING_DATA feature section, or a pipe's HEADER_TRACING_DATA record's
 * data.  -VMPT_ERR_NOT_FOUND when the recording has none.
 */
int vmpt_perf_tracing_data(const struct vmpt_perf_data *pd, const uint8_t **data,
			   uint64_t *size);

/* The attr an id belongs to, or NULL. */
const struct vmpt_perf_attr *vmpt_perf_attr_by_id(const struct vmpt_perf_data *pd,
						  uint64_t id);

/* The record type's name as perf script -D prints it ("MMAP2", "AUXTRACE"). */
const char *vmpt_perf_record_name(uint32_t type);

/* Value i (< ev->sample.nr_read) of a SAMPLE record's READ: the counter
 * and its event id (0 without PERF_FORMAT_ID).
 */
void vmpt_perf_sample_read(const struct vmpt_perf_event *ev, uint64_t i, uint64_t *id,
			   uint64_t *value);
/* Entry i (< ev->sample.nr_chain) of a SAMPLE record's callchain. */
uint64_t vmpt_perf_sample_chain(const struct vmpt_perf_event *ev, uint64_t i);

/* TSC <-> perf time (ns) with a TIME_CONV's values, as perf's tsc.c does
 * (cap_user_time_short: the TSC is extended from time_cycles by time_mask).
 */
uint64_t vmpt_perf_tsc_to_time(const struct vmpt_perf_time_conv *tc, uint64_t tsc);
uint64_t vmpt_perf_time_to_tsc(const struct vmpt_perf_time_conv *tc, uint64_t ns);

/* The Intel PT fields of an AUXTRACE_INFO record; -VMPT_ERR_FORMAT when it
 * is not Intel PT or too short.
 */
int vmpt_perf_intel_pt_info(const struct vmpt_perf_event *ev,
			    struct vmpt_perf_intel_pt_info *info);

/* ---- Writer ---- */

struct vmpt_perf_writer;

struct vmpt_perf_writer_opts {
	/* perf's directory form: PATH/ holding PATH/data (and kcore_dir,
	 * which the caller fills: see vmpt_perf_writer_kcore_dir). */
	unsigned dir : 1;
	/* HEADER_BUILD_ID naming the build-id of every executable file the
	 * written MMAP/MMAP2 records map (from MMAP2's own, or the file at
	 * close), as perf record does for AUX area tracing.
	 */
	unsigned build_ids : 1;
};

/* Create path (truncating it).  Nothing is written until the first record. */
int vmpt_perf_writer_open(struct vmpt_perf_writer **w, const char *path,
			  const struct vmpt_perf_writer_opts *opts);

/* Add an event with the ids of its kernel events, before the first record.
 * name goes to EVENT_DESC ("intel_pt//u", "dummy:u").
 */
int vmpt_perf_writer_add_attr(struct vmpt_perf_writer *w,
			      const struct perf_event_attr *attr,
			      const char *name, const uint64_t *ids, size_t nr_ids);

/* Set the machine description for the feature sections.  Fields left
 * NULL/0 are filled from this machine (uname, sysconf, /proc/cpuinfo) at
 * close; the env is copied.
 */
int vmpt_perf_writer_set_env(struct vmpt_perf_writer *w,
			     const struct vmpt_perf_env *env);

/* Append one complete record (perf_event_header first, size bytes,
 * multiple of 8), sample_id trailer included.  For AUXTRACE use
 * vmpt_perf_write_auxtrace.
 */
int vmpt_perf_write_event(struct vmpt_perf_writer *w, const void *record);

/* Append a record given as header and body (size counting the body
 * only, a multiple of 8) with a sample_id trailer from sid laid out by the
 * attr that has sid->id: how a record moves from one file's attrs to
 * another's.  -VMPT_ERR_INVAL when no attr has sid->id.
 */
int vmpt_perf_write_event_sid(struct vmpt_perf_writer *w, const void *record,
			      const struct vmpt_perf_sample_id *sid);

/* Keep a feature section the writer does not build itself (CPU_TOPOLOGY,
 * CACHE, CLOCK_DATA, ...) as the raw bytes given (copied), so a rewritten
 * recording describes its machine as the original did.  -VMPT_ERR_INVAL
 * for a feature the writer builds (build ids, env strings, EVENT_DESC,
 * AUXTRACE) or a second copy of one.
 */
int vmpt_perf_writer_copy_feature(struct vmpt_perf_writer *w, unsigned feat,
				  const void *data, uint64_t size);

/* Append a record built from ev (type, misc and the union fields for the
 * types vmpt_perf_event describes, except AUXTRACE), with a sample_id
 * trailer from ev->sid laid out by the attr of ev->sid.id (or the first
 * attr) when that attr has sample_id_all.
 */
int vmpt_perf_write_record(struct vmpt_perf_writer *w,
			   const struct vmpt_perf_event *ev);

/* Append an AUXTRACE record and its data (padded to 8 bytes as perf
 * does: the size field counts the padding), and note it for the AUXTRACE
 * index.  offset is the data's offset in the AUX area, reference perf's
 * (a TSC or counter value), idx the mmap index (the cpu in per-cpu mode).
 */
int vmpt_perf_write_auxtrace(struct vmpt_perf_writer *w, const void *data,
			     uint64_t size, uint64_t offset, uint64_t reference,
			     uint32_t idx, uint32_t tid, uint32_t cpu);

/* The same with the data in pieces (an AUX ring that wrapped). */
struct iovec;
int vmpt_perf_write_auxtrace_iov(struct vmpt_perf_writer *w,
				 const struct iovec *iov, int iovcnt,
				 uint64_t offset, uint64_t reference,
				 uint32_t idx, uint32_t tid, uint32_t cpu);

/* Append an AUXTRACE_INFO for Intel PT (priv words + filter string). */
int vmpt_perf_write_intel_pt_info(struct vmpt_perf_writer *w,
				  const struct vmpt_perf_intel_pt_info *info);

/* Append a TIME_CONV record. */
int vmpt_perf_write_time_conv(struct vmpt_perf_writer *w,
			      const struct vmpt_perf_time_conv *tc);

/* Append an ID_INDEX record of the entries given (with guest fields when
 * any entry has machine_pid/vcpu >= 0; then machine_pid -1 is written as
 * 0, the host).
 */
int vmpt_perf_write_id_index(struct vmpt_perf_writer *w,
			     const struct vmpt_perf_id_entry *entries, size_t nr);

/* Append a FINISHED_ROUND record (perf sorts by time within rounds). */
int vmpt_perf_write_finished_round(struct vmpt_perf_writer *w);

/* PATH/kcore_dir in the directory form (created), or NULL. */
const char *vmpt_perf_writer_kcore_dir(struct vmpt_perf_writer *w);

/* Bytes of records written so far (for reports of what was kept). */
uint64_t vmpt_perf_writer_data_size(const struct vmpt_perf_writer *w);

/* Records taken so far (buffered or written). */
uint64_t vmpt_perf_writer_records(const struct vmpt_perf_writer *w);

/* Write out what is buffered and set the header's data size to it, so
 * that a writer killed after this leaves a file perf reads up to here
 * (without features: they are written at close).  Call it between
 * records.  0 or -VMPT_ERR_IO (errno set), which sticks as any write error.
 */
int vmpt_perf_writer_sync(struct vmpt_perf_writer *w);

/* Write the feature sections and the final header, close and free w.
 * On error, what was written stays (a file perf can still read as far as
 * the header allows) and the error is returned; w is freed either way.
 */
int vmpt_perf_writer_close(struct vmpt_perf_writer *w);

/* ---- Intel PT helpers (synthesizer, recorder) ---- */

/* An intel_pt attr as perf record sets it up: sample_type
 * IP|TID|TIME|CPU|IDENTIFIER, sample_period 1, sample_id_all,
 * exclude_guest, disabled, enable_on_exec; config holds the format bits.
 */
void vmpt_perf_intel_pt_attr(struct perf_event_attr *attr, uint32_t pmu_type,
			     uint64_t config);

/* The dummy sideband attr perf adds for intel_pt (mmap2, comm, task,
 * context_switch, sample_id_all, same sample_type).
 */
void vmpt_perf_sideband_attr(struct perf_event_attr *attr);

/* Fill the Intel PT info words as perf would for these settings:
 * pmu_type, the TIME_CONV values, and from config the tsc/noretcomp/mtc/cyc
 * bit positions (perf's defaults for the intel_pt format: tsc=10,
 * noretcomp=11, mtc=9, mtc_period=14-17, cyc=1), tsc_ctc ratio,
 * max_nonturbo_ratio, per_cpu_mmaps.
 */
void vmpt_perf_intel_pt_info_init(struct vmpt_perf_intel_pt_info *info,
				  uint32_t pmu_type,
				  const struct vmpt_perf_time_conv *tc,
				  uint32_t tsc_ctc_n, uint32_t tsc_ctc_d,
				  uint32_t max_nonturbo_ratio, int per_cpu_mmaps);

#ifdef __cplusplus
}
#endif

#endif
