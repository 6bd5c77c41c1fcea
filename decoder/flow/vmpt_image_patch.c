/* SPDX-License-Identifier: MIT */
/* Kernel code changed while it ran (text_poke: static keys, ftrace,
 * kprobes), written into the image's copy of it.
 */
#include "vmpt/image.h"
#include "vmpt/error.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Make [p, p + n) writable: a MAP_PRIVATE mapping's pages are copied on
 * write; heap pages are writable already and stay so.
 */
static int make_writable(const uint8_t *p, size_t n)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)p & ~(pg - 1);
	uintptr_t hi = ((uintptr_t)p + n + pg - 1) & ~(pg - 1);

	return mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) ? -VMPT_ERR_IO : 0;
}

int vmpt_image_patch(struct vmpt_image *img, const struct vmpt_asid *asid,
		     uint64_t vaddr, const uint8_t *bytes, size_t size)
{
	size_t done;

	if (!size || vaddr + size < vaddr)
		return -VMPT_ERR_INVAL;
	/* All or nothing: check the whole range is there first. */
	for (done = 0; done < size; ) {
		const struct vmpt_section *s = vmpt_image_find(img, asid, vaddr + done);

		if (!s)
			return -VMPT_ERR_NO_IMAGE;
		done += s->size - (vaddr + done - s->vaddr);
	}
	for (done = 0; done < size; ) {
		const struct vmpt_section *s = vmpt_image_find(img, asid, vaddr + done);
		uint64_t off = vaddr + done - s->vaddr, n = s->size - off;
		int ret;

		if (n > size - done)
			n = size - done;
		ret = make_writable(s->data + off, n);
		if (ret < 0)
			return ret;
		memcpy((uint8_t *)s->data + off, bytes + done, n);
		done += n;
	}
	return 0;
}
