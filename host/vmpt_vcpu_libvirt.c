/* SPDX-License-Identifier: MIT */
#include "vmpt/vcpu.h"
#include "vmpt/error.h"
#include "vmpt/pmu.h"
#include "vmpt_vcpu_libvirt.h"
#include "../lib/vmpt_dl.h"

#include <libvirt/libvirt-qemu.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Opened by the commands that talk to libvirt (record --domain, doctor -c),
 * not at every start: libvirt pulls in some 40 libraries.
 */
#define VIR_FUNCS(X) X(virSetErrorFunc) X(virGetLastErrorMessage) X(virConnectOpen) \
	X(virConnectOpenReadOnly) X(virConnectClose) X(virConnectNumOfDomains) \
	X(virConnectGetLibVersion) X(virDomainLookupByName) X(virDomainFree)
VMPT_DL_TABLE(vir, VIR_FUNCS, "libvirt.so.0", "libvirt0");
#define VIRQ_FUNCS(X) X(virDomainQemuMonitorCommand)
VMPT_DL_TABLE(virq, VIRQ_FUNCS, "libvirt-qemu.so.0", "libvirt0");

/* libvirt prints every error to stderr by default; we report them. */
static void quiet(void *ctx, virErrorPtr e)
{
	(void)ctx;
	(void)e;
}

static pid_t tgid_of(pid_t tid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (vmpt_read_small_file(path, buf, sizeof(buf)) < 0)
		return -1;
	const char *t = strstr(buf, "\nTgid:");
	return t ? (pid_t)atoi(t + 6) : -1;
}

/* libvirt, and libvirt-qemu when qemu: 0, or -VMPT_ERR_NO_LIBRARY saying why
 * in err.
 */
static int vmpt_vcpu_libvirt_load(int qemu, char *err, size_t errlen)
{
	struct vmpt_dl *bad = vmpt_dl_load(&vir) < 0 ? &vir :
			      qemu && vmpt_dl_load(&virq) < 0 ? &virq : NULL;

	if (!bad)
		return 0;
	snprintf(err, errlen, "%s", vmpt_dl_errmsg(bad));
	return -VMPT_ERR_NO_LIBRARY;
}

int vmpt_vcpus_from_libvirt(const char *uri, const char *domain,
			    struct vmpt_vcpus *out, char *err, size_t errlen)
{
	int rc = vmpt_vcpu_libvirt_load(1, err, errlen);

	if (rc < 0)
		return rc;
	VMPT_DL(vir, virSetErrorFunc)(NULL, quiet);
	virConnectPtr conn = VMPT_DL(vir, virConnectOpen)(uri);
	if (!conn) {
		snprintf(err, errlen, "libvirt %s: %s (is libvirtd running?)", uri,
			 VMPT_DL(vir, virGetLastErrorMessage)());
		return -VMPT_ERR_REMOTE;
	}
	rc = -VMPT_ERR_REMOTE;
	virDomainPtr dom = VMPT_DL(vir, virDomainLookupByName)(conn, domain);
	if (!dom) {
		snprintf(err, errlen, "libvirt %s: domain '%s': %s", uri, domain,
			 VMPT_DL(vir, virGetLastErrorMessage)());
		goto out;
	}
	char *reply = NULL;
	if (VMPT_DL(virq, virDomainQemuMonitorCommand)(dom,
			"{\"execute\":\"query-cpus-fast\"}", &reply, 0) < 0) {
		snprintf(err, errlen, "libvirt %s: domain '%s': query-cpus-fast: %s",
			 uri, domain, VMPT_DL(vir, virGetLastErrorMessage)());
		goto out_dom;
	}
	rc = vmpt_vcpus_parse_qmp(reply, out);
	if (rc <= 0) {
		snprintf(err, errlen, "libvirt %s: domain '%s': unexpected reply %.200s",
			 uri, domain, reply);
		rc = rc < 0 ? rc : -VMPT_ERR_NOT_FOUND;
	} else {
		out->pid = tgid_of(out->vcpu[0].tid);
		snprintf(out->source, sizeof(out->source), "libvirt-qemu query-cpus-fast");
		out->kind = "libvirt";
		rc = out->pid > 0 ? 0 : -VMPT_ERR_NOT_FOUND;
		if (rc)
			snprintf(err, errlen, "domain '%s': vCPU thread %d is not "
				 "visible in /proc here", domain, (int)out->vcpu[0].tid);
	}
	free(reply);
out_dom:
	VMPT_DL(vir, virDomainFree)(dom);
out:
	VMPT_DL(vir, virConnectClose)(conn);
	return rc;
}

int vmpt_vcpu_libvirt_probe(const char *uri, int *domains, unsigned long *version,
			    char *err, size_t errlen)
{
	int rc = vmpt_vcpu_libvirt_load(0, err, errlen);

	if (rc < 0)
		return rc;
	VMPT_DL(vir, virSetErrorFunc)(NULL, quiet);
	virConnectPtr c = VMPT_DL(vir, virConnectOpenReadOnly)(uri);
	if (!c) {
		snprintf(err, errlen, "%s: %s", uri, VMPT_DL(vir, virGetLastErrorMessage)());
		return -VMPT_ERR_REMOTE;
	}
	*domains = VMPT_DL(vir, virConnectNumOfDomains)(c);
	*version = 0;
	VMPT_DL(vir, virConnectGetLibVersion)(c, version);
	VMPT_DL(vir, virConnectClose)(c);
	return 0;
}
