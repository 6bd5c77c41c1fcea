/* SPDX-License-Identifier: MIT */
/* A sample's memory access fields as perf script 6.1 prints them:
 * data_src decoded in mem-events.c's words (perf_script__meminfo_scnprintf),
 * weight and ins_lat (perf record -W), phys_addr, data_page_size and
 * code_page_size.  A recorded sample has them from its record; the
 * samples perf synthesizes from Intel PT carry zeros.
 */
#include "vmpt_script_int.h"

#include <inttypes.h>
#include <stdio.h>

/* perf's data_src of a sample that does not sample it
 * (PERF_MEM_DATA_SRC_NONE: op, level, snoop, lock and TLB not available).
 */
#define DATA_SRC_NONE (PERF_MEM_S(OP, NA) | PERF_MEM_S(LVL, NA) | PERF_MEM_S(SNOOP, NA) | \
		       PERF_MEM_S(LOCK, NA) | PERF_MEM_S(TLB, NA))

/* perf's buffers for the decoded text and the field: 100 bytes each. */
#define MEM_TEXT 100

/* A bounded text, as perf's scnprintf calls into a buffer build it. */
struct text {
	char s[MEM_TEXT];
	size_t len;
};

static void put(struct text *t, const char *s)
{
	size_t n = strlen(s);

	if (n > sizeof(t->s) - 1 - t->len)
		n = sizeof(t->s) - 1 - t->len;
	memcpy(t->s + t->len, s, n);
	t->len += n;
	t->s[t->len] = 0;
}

/* Each set bit of m from bit 0 by names[], " or " between (perf's loops). */
static int put_bits(struct text *t, uint64_t m, const char *const *names, size_t n, int any)
{
	for (size_t i = 0; m && i < n; i++, m >>= 1) {
		if (!(m & 1))
			continue;
		if (any++)
			put(t, " or ");
		put(t, names[i]);
	}
	return any;
}

static uint64_t field(uint64_t v, unsigned shift, unsigned bits)
{
	return v >> shift & ((1ull << bits) - 1);
}

static void put_op(struct text *t, uint64_t ds)
{
	uint64_t op = field(ds, PERF_MEM_OP_SHIFT, 5);

	put(t, op & PERF_MEM_OP_NA ? "N/A" : op & PERF_MEM_OP_LOAD ? "LOAD" :
	       op & PERF_MEM_OP_STORE ? "STORE" : op & PERF_MEM_OP_PFETCH ? "PFETCH" :
	       op & PERF_MEM_OP_EXEC ? "EXEC" : "No");
}

/* perf 6.1's perf_mem__lvl_scnprintf: "Remote ", the hops or the level
 * bits, " or " the level number, hit or miss.
 */
static void put_lvl(struct text *t, uint64_t ds)
{
	static const char *const lvl[] = {
		"N/A", "HIT", "MISS", "L1", "LFB/MAB", "L2", "L3", "Local RAM",
		"Remote RAM (1 hop)", "Remote RAM (2 hops)", "Remote Cache (1 hop)",
		"Remote Cache (2 hops)", "I/O", "Uncached",
	};
	static const char *const lvlnum[16] = {
		[PERF_MEM_LVLNUM_CXL] = "CXL", [PERF_MEM_LVLNUM_IO] = "I/O",
		[PERF_MEM_LVLNUM_ANY_CACHE] = "Any cache", [PERF_MEM_LVLNUM_LFB] = "LFB/MAB",
		[PERF_MEM_LVLNUM_RAM] = "RAM", [PERF_MEM_LVLNUM_PMEM] = "PMEM",
		[PERF_MEM_LVLNUM_NA] = "N/A",
	};
	static const char *const hops[8] = {
		"N/A", "core, same node", "node, same socket", "socket, same board", "board",
	};
	uint64_t m = field(ds, PERF_MEM_LVL_SHIFT, 14);
	unsigned num = (unsigned)field(ds, PERF_MEM_LVLNUM_SHIFT, 4);
	unsigned hop = (unsigned)field(ds, PERF_MEM_HOPS_SHIFT, 3);
	size_t start = t->len;
	int any = 0;

	if (field(ds, PERF_MEM_REMOTE_SHIFT, 1))
		put(t, "Remote ");
	if (hop) {
		put(t, hops[hop] ? hops[hop] : "");
		put(t, " ");
	} else {
		any = put_bits(t, m & ~(uint64_t)(PERF_MEM_LVL_HIT | PERF_MEM_LVL_MISS), lvl,
			       sizeof(lvl) / sizeof(lvl[0]), 0);
	}
	if (num) {
		char l[16];

		if (any++)
			put(t, " or ");
		snprintf(l, sizeof(l), "L%u", num);
		put(t, lvlnum[num] ? lvlnum[num] : l);
	}
	if (t->len == start)
		put(t, "N/A");
	if (m & PERF_MEM_LVL_HIT)
		put(t, " hit");
	if (m & PERF_MEM_LVL_MISS)
		put(t, " miss");
}

static void put_snoop(struct text *t, uint64_t ds)
{
	static const char *const snoop[] = { "N/A", "None", "Hit", "Miss", "HitM" };
	static const char *const snoopx[] = { "Fwd", "Peer" };
	size_t start = t->len;
	int any = put_bits(t, field(ds, PERF_MEM_SNOOP_SHIFT, 5), snoop,
			   sizeof(snoop) / sizeof(snoop[0]), 0);

	put_bits(t, field(ds, PERF_MEM_SNOOPX_SHIFT, 2), snoopx,
		 sizeof(snoopx) / sizeof(snoopx[0]), any);
	if (t->len == start)
		put(t, "N/A");
}

static void put_tlb(struct text *t, uint64_t ds)
{
	static const char *const tlb[] = { "N/A", "HIT", "MISS", "L1", "L2", "Walker", "Fault" };
	uint64_t m = field(ds, PERF_MEM_TLB_SHIFT, 7);
	size_t start = t->len;

	put_bits(t, m & ~(uint64_t)(PERF_MEM_TLB_HIT | PERF_MEM_TLB_MISS), tlb,
		 sizeof(tlb) / sizeof(tlb[0]), 0);
	if (t->len == start)
		put(t, "N/A");
	if (m & PERF_MEM_TLB_HIT)
		put(t, " hit");
	if (m & PERF_MEM_TLB_MISS)
		put(t, " miss");
}

static void put_blk(struct text *t, uint64_t ds)
{
	uint64_t m = field(ds, PERF_MEM_BLK_SHIFT, 3);

	if (!m || (m & PERF_MEM_BLK_NA)) {
		put(t, " N/A");
		return;
	}
	if (m & PERF_MEM_BLK_DATA)
		put(t, " Data");
	if (m & PERF_MEM_BLK_ADDR)
		put(t, " Addr");
}

/* "%16lx |OP ...|BLK ...", left-aligned in the widest such field printed
 * so far (perf's static maxlen).
 */
static void print_data_src(struct vmpt_consumer *c, uint64_t ds)
{
	struct text d = { .len = 0 }, out = { .len = 0 };
	uint64_t lock = field(ds, PERF_MEM_LOCK_SHIFT, 2);
	char hex[20];
	int width;

	put(&d, "|OP ");
	put_op(&d, ds);
	put(&d, "|LVL ");
	put_lvl(&d, ds);
	put(&d, "|SNP ");
	put_snoop(&d, ds);
	put(&d, "|TLB ");
	put_tlb(&d, ds);
	put(&d, "|LCK ");
	put(&d, lock & PERF_MEM_LOCK_NA ? "N/A" : lock & PERF_MEM_LOCK_LOCKED ? "Yes" : "No");
	put(&d, "|BLK ");
	put_blk(&d, ds);
	snprintf(hex, sizeof(hex), "%16" PRIx64 " ", ds);
	put(&out, hex);
	put(&out, d.s);
	pthread_mutex_lock(&c->s->lock);
	if ((int)out.len > c->s->data_src_width)
		c->s->data_src_width = (int)out.len;
	width = c->s->data_src_width;
	pthread_mutex_unlock(&c->s->lock);
	script_out_padded(c, out.s, out.len, width, SCRIPT_LEFT);
}

void script_print_mem_access(struct vmpt_consumer *c, uint64_t f, const struct vmpt_perf_event *ev)
{
	uint64_t st = ev ? ev->attr->attr.sample_type : 0;

	if (f & VMPT_F_DATA_SRC)
		print_data_src(c, !ev ? 0 : st & PERF_SAMPLE_DATA_SRC ? ev->sample.data_src :
				  DATA_SRC_NONE);
	/* WEIGHT_STRUCT's weight is its low 32 bits, its instruction
	 * latency the 16 above.
	 */
	if (f & VMPT_F_WEIGHT)
		script_out_u64(c, !ev ? 0 : st & PERF_SAMPLE_WEIGHT_STRUCT ?
			       (uint32_t)ev->sample.weight : ev->sample.weight, 16, 0);
	if (f & VMPT_F_INS_LAT)
		script_out_u64(c, ev && (st & PERF_SAMPLE_WEIGHT_STRUCT) ?
			       (uint16_t)(ev->sample.weight >> 32) : 0, 16, 0);
}

/* perf's get_page_size_name: unit_number__scnprintf, "N/A" for 0. */
static void print_page_size(struct vmpt_consumer *c, uint64_t size)
{
	static const char unit[] = "BKMG";
	int i = 0;

	if (!size) {
		script_out_small(c, " N/A", 4);
		return;
	}
	/* perf divides while the quotient is above 1: 1024 stays "1024B" */
	while (size / 1024 > 1 && i < 3) {
		size /= 1024;
		i++;
	}
	script_outf(c, " %" PRIu64 "%c", size, unit[i]);
}

void script_print_mem_pages(struct vmpt_consumer *c, uint64_t f, const struct vmpt_perf_event *ev)
{
	if (f & VMPT_F_PHYS_ADDR)
		script_outf(c, "%16" PRIx64, ev ? ev->sample.phys_addr : 0);
	if (f & VMPT_F_DATA_PAGE_SIZE)
		print_page_size(c, ev ? ev->sample.data_page_size : 0);
	if (f & VMPT_F_CODE_PAGE_SIZE)
		print_page_size(c, ev ? ev->sample.code_page_size : 0);
}
