/* SPDX-License-Identifier: MIT */
#include "vmpt/vcpu.h"
#include "vmpt/error.h"
#include "vmpt/pmu.h"

#include <libvirt/libvirt-qemu.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int vmpt_vcpus_from_libvirt(const char *uri, const char *domain,
			    struct vmpt_vcpus *out, char *err, size_t errlen)
{
	virSetErrorFunc(NULL, quiet);
	virConnectPtr conn = virConnectOpen(uri);
	if (!conn) {
		snprintf(err, errlen, "libvirt %s: %s (is libvirtd running?)", uri,
			 virGetLastErrorMessage());
		return -VMPT_ERR_REMOTE;
	}
	int rc = -VMPT_ERR_REMOTE;
	virDomainPtr dom = virDomainLookupByName(conn, domain);
	if (!dom) {
		snprintf(err, errlen, "libvirt %s: domain '%s': %s", uri, domain,
			 virGetLastErrorMessage());
		goto out;
	}
	char *reply = NULL;
	if (virDomainQemuMonitorCommand(dom, "{\"execute\":\"query-cpus-fast\"}",
					&reply, 0) < 0) {
		snprintf(err, errlen, "libvirt %s: domain '%s': query-cpus-fast: %s",
			 uri, domain, virGetLastErrorMessage());
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
	virDomainFree(dom);
out:
	virConnectClose(conn);
	return rc;
}
