/* SPDX-License-Identifier: MIT */
/* vmpt script's code images and the machines they serve: see
 * script_images.h.
 */
#include "script_images.h"
#include "vmpt/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "FILE@ADDR": split off the address.  1 split, 0 no '@', -1 bad (the
 * address part in err).
 */
static int split_at(char *arg, uint64_t *addr, char *err, size_t errlen)
{
	char *at = strrchr(arg, '@');
	char *end;

	if (!at)
		return 0;
	errno = 0;
	*addr = strtoull(at + 1, &end, 0);
	if (errno || *end || end == at + 1) {
		snprintf(err, errlen, "bad address '%s' after '@' (a number: "
			 "0x555555554000, say)", at + 1);
		return -1;
	}
	*at = '\0';
	return 1;
}

int script_images_parse(struct script_images *si, enum script_image_kind kind,
			int guest, char *arg, char *err, size_t errlen)
{
	struct script_image im = { kind, arg, VMPT_ELF_LINK_ADDR, 0 };
	int split = 0;
	void *v;

	if (kind == SCRIPT_IMAGE_ELF || kind == SCRIPT_IMAGE_RAW)
		split = split_at(arg, &im.addr, err, errlen);
	if (split < 0)
		return -VMPT_ERR_INVAL;
	if (kind == SCRIPT_IMAGE_RAW && !split) {
		snprintf(err, errlen, "needs the address the file is mapped at: "
			 "FILE@ADDR (%s@0x400000, say)", arg);
		return -VMPT_ERR_INVAL;
	}
	if (guest)
		im.guest = si->vmcs ? si->vmcs : VMPT_MACHINE_GUEST;
	v = realloc(si->v, (si->n + 1) * sizeof(*si->v));
	if (!v)
		return -VMPT_ERR_NOMEM;
	si->v = v;
	si->v[si->n++] = im;
	return 0;
}

int script_images_option(struct script_images *si, int c, char *arg, char *err,
			 size_t errlen)
{
	static const enum script_image_kind kinds[] = {
		SCRIPT_IMAGE_ELF, SCRIPT_IMAGE_RAW, SCRIPT_IMAGE_PAGECACHE, SCRIPT_IMAGE_KCORE,
		SCRIPT_IMAGE_VMLINUX,
	};
	const int n = sizeof(kinds) / sizeof(kinds[0]);
	int k = c - SCRIPT_IMAGE_OPT_ELF, ret;

	if (c == SCRIPT_IMAGE_OPT_GUEST_CODE) {
		si->guest_code = 1;
		return 1;
	}
	if (c == SCRIPT_IMAGE_OPT_VMCS) {
		ret = script_images_vmcs(si, arg);
		if (ret < 0)
			snprintf(err, errlen, "not a VMCS base address (a 4 KiB aligned "
				 "address as vmpt dump shows it, or any)");
		return ret < 0 ? ret : 1;
	}
	if (k < 0 || k >= 2 * n)
		return 0;
	ret = script_images_parse(si, kinds[k % n], k >= n, arg, err, errlen);
	return ret < 0 ? ret : 1;
}

int script_images_vmcs(struct script_images *si, const char *arg)
{
	char *end;
	uint64_t base;

	if (!strcmp(arg, "any")) {
		si->vmcs = 0;
		return 0;
	}
	errno = 0;
	base = strtoull(arg, &end, 0);
	/* A VMCS is a 4 KiB page: its base never clashes with the
	 * VMPT_MACHINE_* keys.
	 */
	if (errno || *end || end == arg || !base || (base & 0xfff))
		return -VMPT_ERR_INVAL;
	si->vmcs = base;
	return 0;
}

int script_images_have_guest(const struct script_images *si)
{
	if (si->guest_code)
		return 1;
	for (size_t i = 0; i < si->n; i++)
		if (si->v[i].guest)
			return 1;
	return 0;
}

static int add_one(const struct script_image *im, struct vmpt_image *img,
		   uint64_t machine)
{
	struct vmpt_asid asid = { machine, VMPT_ASID_ANY };

	switch (im->kind) {
	case SCRIPT_IMAGE_ELF:
		return vmpt_image_add_elf(img, im->path, im->addr, &asid);
	case SCRIPT_IMAGE_RAW:
		return vmpt_image_add_raw(img, im->path, 0, 0, im->addr, &asid);
	case SCRIPT_IMAGE_PAGECACHE:
		return vmpt_image_add_pagecache(img, im->path, &asid);
	case SCRIPT_IMAGE_KCORE:
		return vmpt_image_add_kcore(img, im->path, &asid);
	case SCRIPT_IMAGE_VMLINUX:
		if (!im->guest)
			asid.machine = VMPT_MACHINE_HOST;
		return vmpt_image_add_vmlinux(img, im->path, &asid);
	}
	return -VMPT_ERR_INVAL;
}

/* A page cache is two files: name the one that failed (errno kept). */
static const char *failed_file(const struct script_images *si, const char *path)
{
	static char name[4200];
	int saved = errno;

	for (size_t i = 0; i < si->n; i++) {
		if (si->v[i].path != path || si->v[i].kind != SCRIPT_IMAGE_PAGECACHE)
			continue;
		snprintf(name, sizeof(name), "%.4000s.addr", path);
		if (access(name, R_OK) == 0)
			snprintf(name, sizeof(name), "%.4000s.dump", path);
		errno = saved;
		return name;
	}
	return path;
}

int script_images_add(const struct script_images *si, struct vmpt_image *img,
		      const char **failed)
{
	uint64_t plain = script_images_have_guest(si) ? VMPT_MACHINE_HOST :
			 VMPT_ASID_ANY;
	int ret = 0;

	/* Host and guest sections never overlap in the image (their asids
	 * differ), so only the order within each machine matters: the
	 * command line's, the later winning.  The guest's own images go
	 * last, over --guest-code's.
	 */
	for (size_t i = 0; i < si->n && ret == 0; i++) {
		const struct script_image *im = &si->v[i];

		*failed = im->path;
		if (!im->guest)
			ret = add_one(im, img, plain);
		if (ret == 0 && !im->guest && si->guest_code &&
		    im->kind == SCRIPT_IMAGE_ELF)
			ret = add_one(im, img, VMPT_MACHINE_GUEST);
	}
	for (size_t i = 0; i < si->n && ret == 0; i++) {
		*failed = si->v[i].path;
		if (si->v[i].guest)
			ret = add_one(&si->v[i], img, si->v[i].guest);
	}
	if (ret == -VMPT_ERR_IO)
		*failed = failed_file(si, *failed);
	return ret;
}

void script_images_free(struct script_images *si)
{
	free(si->v);
	memset(si, 0, sizeof(*si));
}
