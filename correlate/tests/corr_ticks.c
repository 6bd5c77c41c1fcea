/* SPDX-License-Identifier: MIT */
/* Decoded times to the TSC tick: every flow item (blocks and events) of a
 * VM recording, decoded with the correlator's patch lists, carries the
 * same TSC time as the same item of the recording synthesized without
 * offsets (whose TSC packets hold the truth's host TSCs), and the same
 * kind, address and trace offset.  Host and guest kernel images as vmpt
 * script takes them (--vmlinux, --guest-elf).
 *   usage: corr_ticks REC ZERO VMX_KERNEL GUEST_KERNEL
 * Prints the items and guest items compared; exit 1 at the first
 * difference.
 */
#include "vmpt/correlate.h"
#include "vmpt/error.h"
#include "vmpt/flow.h"
#include "vmpt/image.h"
#include "vmpt/session.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

struct times {
	struct vmpt_flow_item *it;
	size_t n, cap;
};

static int decode(const char *path, struct vmpt_image *img, struct times *t)
{
	struct vmpt_session s;
	int ret = vmpt_session_open(&s, path, img);

	for (size_t b = 0; ret == 0 && b < s.n_bufs; b++) {
		struct vmpt_flow_config cfg = s.cfg;
		const struct vmpt_flow_item *items;
		struct vmpt_flow *dec;
		size_t n;

		cfg.begin = s.bufs[b].data;
		cfg.end = s.bufs[b].data + s.bufs[b].size;
		if (s.bufs[b].tsc_patches.n)
			cfg.tsc_patches = &s.bufs[b].tsc_patches;
		dec = vmpt_flow_new(&cfg);
		if (!dec) {
			ret = -VMPT_ERR_NOMEM;
			break;
		}
		while ((ret = vmpt_flow_next_items(dec, &items, &n)) == 0) {
			for (size_t i = 0; i < n; i++) {
				if (t->n == t->cap) {
					size_t cap = t->cap ? 2 * t->cap : 4096;
					void *p = realloc(t->it, cap * sizeof(*t->it));

					if (!p) {
						vmpt_flow_free(dec);
						vmpt_session_close(&s);
						return -VMPT_ERR_NOMEM;
					}
					t->it = p;
					t->cap = cap;
				}
				t->it[t->n++] = items[i];
			}
		}
		if (ret == -VMPT_ERR_EOS)
			ret = 0;
		vmpt_flow_free(dec);
	}
	if (ret < 0)
		fprintf(stderr, "corr_ticks: %s: %s\n", path,
			s.errmsg[0] ? s.errmsg : vmpt_strerror(ret));
	vmpt_session_close(&s);
	return ret;
}

int main(int argc, char **argv)
{
	struct vmpt_asid host = { VMPT_MACHINE_HOST, VMPT_ASID_ANY };
	struct vmpt_asid guest = { VMPT_MACHINE_GUEST, VMPT_ASID_ANY };
	struct times a = { 0 }, z = { 0 };
	struct vmpt_image *img = vmpt_image_new();
	size_t guest_items = 0, errors = 0;
	int nr = 0, status = 1;

	if (argc != 5 || !img) {
		fprintf(stderr, "usage: corr_ticks REC ZERO VMX_KERNEL GUEST_KERNEL\n");
		vmpt_image_free(img);
		return 2;
	}
	if (vmpt_image_add_vmlinux(img, argv[3], &host) < 0 ||
	    vmpt_image_add_elf(img, argv[4], VMPT_ELF_LINK_ADDR, &guest) < 0) {
		fprintf(stderr, "corr_ticks: cannot load the kernels\n");
		vmpt_image_free(img);
		return 2;
	}
	if (decode(argv[1], img, &a) < 0 || decode(argv[2], img, &z) < 0)
		goto out;
	if (a.n != z.n) {
		fprintf(stderr, "corr_ticks: %zu items, without offsets %zu\n", a.n, z.n);
		goto out;
	}
	for (size_t i = 0; i < a.n; i++) {
		const struct vmpt_flow_item *x = &a.it[i], *y = &z.it[i];

		if (x->kind == VMPT_FLOW_EVENT && x->ev == VMPT_EV_PAGING)
			nr = x->nr;
		if (x->kind == VMPT_FLOW_EVENT && x->ev == VMPT_EV_ERROR &&
		    !errors++)
			fprintf(stderr, "corr_ticks: error at ip %#" PRIx64 " trace offset %#"
				PRIx64 ": %s\n", x->ip, x->offset, vmpt_strerror(x->err));
		if (x->kind != y->kind || x->ip != y->ip || x->offset != y->offset ||
		    x->time != y->time) {
			fprintf(stderr, "corr_ticks: item %zu (ip %#" PRIx64 ", trace offset %#"
				PRIx64 "): time %#" PRIx64 ", without offsets %#" PRIx64 "\n",
				i, x->ip, x->offset, x->time, y->time);
			goto out;
		}
		guest_items += (size_t)nr;
	}
	if (errors) {
		fprintf(stderr, "corr_ticks: %zu decoding errors\n", errors);
		goto out;
	}
	printf("%zu items (%zu in the guest) at the truth's TSC, to the tick\n", a.n,
	       guest_items);
	status = 0;
out:
	free(a.it);
	free(z.it);
	vmpt_image_free(img);
	return status;
}
