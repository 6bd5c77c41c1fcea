/* SPDX-License-Identifier: MIT */
/* The flow decoder's event items of a raw trace, written as the
 * synthesizer's truth (P.events, docs/synthesizer.md) has them, so a test
 * compares them line for line: "KIND IP DETAIL", IP "-" where the event
 * binds to none.  Event Trace (cfe), PTWRITE (ptw), power (mwait, pwre,
 * exstop, pwrx) and frequency changes (cbr: a CBR other than the one
 * before); with --insns, the executed instructions too ("i IP").
 *
 * usage: flow_events [--host FILE] [--guest FILE] [--elf FILE[@BASE]]
 *                    [--cbr RATIO] [--insns] TRACE
 *
 * --host and --guest are kernels at their link addresses, the host's and
 * the guest's (the VM scenario has both at one address); --elf a program
 * (a PIE at BASE); --cbr the ratio the trace starts with.
 */
#include "vmpt/error.h"
#include "vmpt/file.h"
#include "vmpt/flow.h"
#include "vmpt/image.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *cfe_name(unsigned type)
{
	static const char *const names[] = {
		[VMPT_CFE_INTR] = "INTR", [VMPT_CFE_IRET] = "IRET", [VMPT_CFE_SMI] = "SMI",
		[VMPT_CFE_RSM] = "RSM", [VMPT_CFE_SIPI] = "SIPI", [VMPT_CFE_INIT] = "INIT",
		[VMPT_CFE_VMENTRY] = "VMENTRY", [VMPT_CFE_VMEXIT] = "VMEXIT",
		[VMPT_CFE_VMEXIT_INTR] = "VMEXIT_INTR", [VMPT_CFE_SHUTDOWN] = "SHUTDOWN",
	};

	return type < sizeof(names) / sizeof(names[0]) && names[type] ? names[type] : "?";
}

static void print_ip(const struct vmpt_flow_item *it)
{
	if (it->ip_valid)
		printf(" %" PRIx64, it->ip);
	else
		fputs(" -", stdout);
}

static void print_event(const struct vmpt_flow_item *it, unsigned *cbr)
{
	static const char *const evd[] = { "PFA", "VMXQ", "VMXR" };
	uint64_t p = it->payload;

	switch (it->ev) {
	case VMPT_EV_CFE:
		fputs("cfe", stdout);
		print_ip(it);
		printf(" %s vector: %u", cfe_name(VMPT_CFE_TYPE(p)), VMPT_CFE_VECTOR(p));
		for (uint32_t i = 0; i < it->ninsn; i++) {
			if (it->evd[i].type < 3)
				printf(" %s: %#" PRIx64, evd[it->evd[i].type], it->evd[i].payload);
			else
				printf(" EVD_%u: %#" PRIx64, it->evd[i].type, it->evd[i].payload);
		}
		break;
	case VMPT_EV_PTWRITE:
		fputs("ptw", stdout);
		print_ip(it);
		printf(" fup: %u payload: %#" PRIx64, it->ip_valid, p);
		break;
	case VMPT_EV_MWAIT:
		fputs("mwait", stdout);
		print_ip(it);
		printf(" hints: %#x extensions: %#x", (unsigned)p, (unsigned)(p >> 32));
		break;
	case VMPT_EV_PWRE:
		fputs("pwre", stdout);
		print_ip(it);
		printf(" hw: %u cstate: %u sub-cstate: %u", (unsigned)(p >> 16) & 1,
		       (unsigned)p & 0xf, (unsigned)(p >> 8) & 0xf);
		break;
	case VMPT_EV_EXSTOP:
		fputs("exstop", stdout);
		print_ip(it);
		break;
	case VMPT_EV_PWRX:
		printf("pwrx - deepest cstate: %u last cstate: %u wake reason: %#x",
		       (unsigned)(p >> 8) & 0xf, (unsigned)p & 0xf, (unsigned)(p >> 16) & 0xf);
		break;
	case VMPT_EV_CBR:
		if (p == *cbr)
			return;
		*cbr = (unsigned)p;
		printf("cbr - cbr: %u", *cbr);
		break;
	case VMPT_EV_ERROR:
		printf("error %" PRIx64 " at %#" PRIx64 ": %s", it->ip, it->offset,
		       vmpt_strerror(it->err));
		break;
	default:
		return;
	}
	fputc('\n', stdout);
}

static int add(struct vmpt_image *img, const char *spec, uint64_t machine, int kernel)
{
	struct vmpt_asid asid = vmpt_asid_any();
	char *path = strdup(spec), *at;
	uint64_t base = VMPT_ELF_LINK_ADDR;
	int ret;

	if (!path)
		return -VMPT_ERR_NOMEM;
	at = strrchr(path, '@');
	if (at) {
		*at = 0;
		base = strtoull(at + 1, NULL, 0);
	}
	asid.machine = machine;
	ret = kernel ? vmpt_image_add_vmlinux(img, path, &asid) :
		       vmpt_image_add_elf(img, path, base, &asid);
	if (ret)
		fprintf(stderr, "flow_events: %s: %s\n", path, vmpt_strerror(ret));
	free(path);
	return ret;
}

int main(int argc, char **argv)
{
	struct vmpt_image *img = vmpt_image_new();
	struct vmpt_flow_config cfg = { 0 };
	struct vmpt_flow_item it;
	struct vmpt_file trace;
	struct vmpt_flow *dec;
	unsigned cbr = 0;
	int insns = 0, i, host = 0, ret;

	if (!img)
		return 1;
	/* a guest's kernel keeps the host's apart */
	for (i = 1; i + 1 < argc; i += 2)
		if (!strcmp(argv[i], "--guest"))
			host = 1;
	for (i = 1; i < argc - 1; i++) {
		if (!strcmp(argv[i], "--insns")) {
			insns = 1;
		} else if (!strcmp(argv[i], "--host") || !strcmp(argv[i], "--guest") ||
			   !strcmp(argv[i], "--elf")) {
			int guest = !strcmp(argv[i], "--guest");

			if (i + 2 >= argc || add(img, argv[i + 1], guest ? VMPT_MACHINE_GUEST :
					       host ? VMPT_MACHINE_HOST : VMPT_ASID_ANY,
					       strcmp(argv[i], "--elf") != 0))
				return 2;
			i++;
		} else if (!strcmp(argv[i], "--cbr") && i + 2 < argc) {
			cbr = (unsigned)strtoul(argv[++i], NULL, 0);
		} else {
			break;
		}
	}
	if (i != argc - 1) {
		fputs("usage: flow_events [--host FILE] [--guest FILE] [--elf FILE[@BASE]] "
		      "[--cbr RATIO] [--insns] TRACE\n", stderr);
		return 2;
	}
	ret = vmpt_file_map(&trace, argv[i]);
	if (ret) {
		fprintf(stderr, "flow_events: %s: %s\n", argv[i], vmpt_strerror(ret));
		return 1;
	}
	cfg.begin = trace.data;
	cfg.end = trace.data + trace.size;
	cfg.image = img;
	dec = vmpt_flow_new(&cfg);
	if (!dec)
		return 1;
	while (vmpt_flow_next(dec, &it) == 0) {
		if (it.kind == VMPT_FLOW_EVENT)
			print_event(&it, &cbr);
		else if (insns)
			for (uint32_t k = 0; k < it.ninsn; k++)
				printf("i %" PRIx64 "\n", vmpt_block_insn_ip(&it, k));
	}
	vmpt_flow_free(dec);
	vmpt_file_unmap(&trace);
	vmpt_image_free(img);
	return 0;
}
