/* SPDX-License-Identifier: MIT */
#include "ipt_ref.h"

#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int push_ip(struct ref_trace *t, uint64_t ip)
{
	if (t->n_ips == t->cap_ips) {
		size_t cap = t->cap_ips ? t->cap_ips * 2 : 4096;
		uint64_t *p = realloc(t->ips, cap * sizeof(*p));

		if (!p)
			return -pte_nomem;
		t->ips = p;
		t->cap_ips = cap;
	}
	t->ips[t->n_ips++] = ip;
	return 0;
}

static int push_err(struct ref_trace *t, uint64_t offset, int code)
{
	if (t->n_errs == t->cap_errs) {
		size_t cap = t->cap_errs ? t->cap_errs * 2 : 16;
		struct ref_error *p = realloc(t->errs, cap * sizeof(*p));
		size_t *r;

		if (!p)
			return -pte_nomem;
		t->errs = p;
		r = realloc(t->run_end, cap * sizeof(*r));
		if (!r)
			return -pte_nomem;
		t->run_end = r;
		t->cap_errs = cap;
	}
	t->errs[t->n_errs].offset = offset;
	t->errs[t->n_errs].code = code;
	t->run_end[t->n_errs] = t->n_ips;
	t->n_errs++;
	return 0;
}

/* Every page of the cache becomes a file section of the .dump file. */
static int add_pagecache(struct pt_image *image, const char *prefix)
{
	char apath[4096], dpath[4096];
	uint64_t addr;
	uint64_t off = 0;
	FILE *f;
	int ret = 0;

	snprintf(apath, sizeof(apath), "%s.addr", prefix);
	snprintf(dpath, sizeof(dpath), "%s.dump", prefix);
	f = fopen(apath, "rb");
	if (!f)
		return -pte_bad_file;
	while (fread(&addr, sizeof(addr), 1, f) == 1) {
		ret = pt_image_add_file(image, dpath, off, 4096, NULL, addr);
		if (ret < 0)
			break;
		off += 4096;
	}
	fclose(f);
	return ret;
}

static int drain_events(struct pt_insn_decoder *dec, int status)
{
	while (status & pts_event_pending) {
		struct pt_event ev;

		status = pt_insn_event(dec, &ev, sizeof(ev));
		if (status < 0)
			return status;
	}
	return status;
}

int ipt_ref_decode(const uint8_t *trace, size_t size,
		   const char *const *pagecaches, size_t n_pagecaches,
		   const struct vmpt_image *img,
		   uint64_t filter_a, uint64_t filter_b, struct ref_trace *out)
{
	struct pt_insn_decoder *dec;
	struct pt_config config;
	struct pt_image *image;
	int status;

	memset(out, 0, sizeof(*out));
	pt_config_init(&config);
	config.begin = (uint8_t *)trace;
	config.end = (uint8_t *)trace + size;
	if (filter_a || filter_b) {
		config.addr_filter.config.ctl.addr0_cfg = 1; /* filter */
		config.addr_filter.addr0_a = filter_a;
		config.addr_filter.addr0_b = filter_b;
	}
	dec = pt_insn_alloc_decoder(&config);
	if (!dec)
		return -pte_nomem;
	image = pt_insn_get_image(dec);
	status = 0;
	for (size_t i = 0; i < n_pagecaches && status >= 0; i++)
		status = add_pagecache(image, pagecaches[i]);
	for (unsigned i = 0; img && i < vmpt_image_count(img) && status >= 0; i++) {
		const struct vmpt_section *s = vmpt_image_section(img, i);

		status = pt_image_add_file(image, s->name, s->file_offset, s->size,
					   NULL, s->vaddr);
	}
	if (status < 0) {
		pt_insn_free_decoder(dec);
		return status;
	}
	for (;;) {
		struct pt_insn insn;
		uint64_t offset = 0;

		status = pt_insn_sync_forward(dec);
		if (status < 0) {
			if (status == -pte_eos)
				break;
			pt_insn_get_offset(dec, &offset);
			push_err(out, offset, status);
			continue;
		}
		for (;;) {
			status = drain_events(dec, status);
			if (status < 0)
				break;
			if (status & pts_eos) {
				status = -pte_eos;
				break;
			}
			memset(&insn, 0, sizeof(insn));
			status = pt_insn_next(dec, &insn, sizeof(insn));
			if (insn.iclass != ptic_error && push_ip(out, insn.ip) < 0) {
				status = -pte_nomem;
				break;
			}
			if (status < 0)
				break;
		}
		if (status == -pte_eos)
			break;
		pt_insn_get_offset(dec, &offset);
		push_err(out, offset, status);
		if (status == -pte_nomem)
			break;
	}
	pt_insn_free_decoder(dec);
	return 0;
}

void ipt_ref_free(struct ref_trace *t)
{
	free(t->ips);
	free(t->errs);
	free(t->run_end);
	memset(t, 0, sizeof(*t));
}
