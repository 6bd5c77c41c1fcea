/* SPDX-License-Identifier: MIT */
/* The code images given on vmpt script's command line, and which machine
 * each one serves (docs/script.md, "Input"):
 * - plain images (--elf, --raw, --pagecache, --kcore) serve every machine,
 *   as long as no guest image is given; with one they are the host's;
 * - guest images (--guest-elf, --guest-raw, --guest-pagecache,
 *   --guest-kcore) serve the guest, or, after --vmcs BASE, the one guest
 *   whose VMCS packets carry BASE (--vmcs any: every guest again);
 * - --guest-code: the guest runs the --elf images' code too, at the same
 *   addresses (KVM selftests), and they are the host's as well;
 * - --vmlinux: the host kernel, named [kernel.kallsyms] as perf names it;
 *   --guestvmlinux the guest's, [guest.kernel.kallsyms].
 * Which machine a plain image serves depends on options after it, so the
 * images are collected first and added once all options are read.
 */
#ifndef VMPT_CLI_SCRIPT_IMAGES_H
#define VMPT_CLI_SCRIPT_IMAGES_H

#include "vmpt/image.h"

#include <stddef.h>
#include <stdint.h>

enum script_image_kind {
	SCRIPT_IMAGE_ELF,	/* FILE[@BASE] */
	SCRIPT_IMAGE_RAW,	/* FILE@ADDR */
	SCRIPT_IMAGE_PAGECACHE,	/* PREFIX */
	SCRIPT_IMAGE_KCORE,	/* FILE */
	SCRIPT_IMAGE_VMLINUX,	/* FILE: the host kernel (guest: the guest's) */
};

struct script_image {
	enum script_image_kind kind;
	const char *path;	/* the argument, "@ADDR" cut off */
	uint64_t addr;		/* ELF base or VMPT_ELF_LINK_ADDR; raw: address */
	uint64_t guest;		/* 0: a plain image; else the guest machine */
};

struct script_images {
	struct script_image *v;
	size_t n;
	uint64_t vmcs;		/* machine of the guest images that follow */
	int guest_code;		/* --guest-code */
};

/* The image options every decoding command takes, as getopt_long table
 * entries (SCRIPT_IMAGE_LONGOPTS in a command's table) and their values,
 * above any command's own.
 */
enum {
	SCRIPT_IMAGE_OPT_ELF = 0x1000, SCRIPT_IMAGE_OPT_RAW, SCRIPT_IMAGE_OPT_PAGECACHE,
	SCRIPT_IMAGE_OPT_KCORE, SCRIPT_IMAGE_OPT_VMLINUX, SCRIPT_IMAGE_OPT_GELF,
	SCRIPT_IMAGE_OPT_GRAW, SCRIPT_IMAGE_OPT_GPAGECACHE, SCRIPT_IMAGE_OPT_GKCORE,
	SCRIPT_IMAGE_OPT_GVMLINUX, SCRIPT_IMAGE_OPT_VMCS, SCRIPT_IMAGE_OPT_GUEST_CODE,
};
#define SCRIPT_IMAGE_LONGOPTS \
	{ "elf", required_argument, NULL, SCRIPT_IMAGE_OPT_ELF }, \
	{ "raw", required_argument, NULL, SCRIPT_IMAGE_OPT_RAW }, \
	{ "pagecache", required_argument, NULL, SCRIPT_IMAGE_OPT_PAGECACHE }, \
	{ "kcore", required_argument, NULL, SCRIPT_IMAGE_OPT_KCORE }, \
	{ "vmlinux", required_argument, NULL, SCRIPT_IMAGE_OPT_VMLINUX }, \
	{ "guest-elf", required_argument, NULL, SCRIPT_IMAGE_OPT_GELF }, \
	{ "guest-raw", required_argument, NULL, SCRIPT_IMAGE_OPT_GRAW }, \
	{ "guest-pagecache", required_argument, NULL, SCRIPT_IMAGE_OPT_GPAGECACHE }, \
	{ "guest-kcore", required_argument, NULL, SCRIPT_IMAGE_OPT_GKCORE }, \
	{ "guestvmlinux", required_argument, NULL, SCRIPT_IMAGE_OPT_GVMLINUX }, \
	{ "vmcs", required_argument, NULL, SCRIPT_IMAGE_OPT_VMCS }, \
	{ "guest-code", no_argument, NULL, SCRIPT_IMAGE_OPT_GUEST_CODE }

/* getopt's c and optarg if c is an image option: 1 taken, 0 not an image
 * option, or script_images_parse's error (err says why).
 */
int script_images_option(struct script_images *si, int c, char *arg, char *err,
			 size_t errlen);

/* One image option; arg (getopt's optarg) is edited in place and must
 * outlive si.  0, -VMPT_ERR_INVAL on a bad argument (err says what is
 * wrong with it), -VMPT_ERR_NOMEM.
 */
int script_images_parse(struct script_images *si, enum script_image_kind kind,
			int guest, char *arg, char *err, size_t errlen);

/* --vmcs BASE (the VMCS base address, as VMCS packets carry it) or "any". */
int script_images_vmcs(struct script_images *si, const char *arg);

/* Is any image or --guest-code for the guest? */
int script_images_have_guest(const struct script_images *si);

/* Add the images to img, each for the machines it serves.  0, or the
 * negative vmpt_err of the first that failed (errno kept), *failed
 * naming its file (a page cache's PREFIX.addr or PREFIX.dump).
 */
int script_images_add(const struct script_images *si, struct vmpt_image *img,
		      const char **failed);

void script_images_free(struct script_images *si);

#endif
