/* SPDX-License-Identifier: MIT */
/* libvirt for vmpt doctor: the one file that calls libvirt is
 * vmpt_vcpu_libvirt.c (internal to libvmpt-host).
 */
#ifndef VMPT_VCPU_LIBVIRT_H
#define VMPT_VCPU_LIBVIRT_H

#include <stddef.h>

/* Connects read-only to uri: 0 with its number of running domains and
 * libvirt's version (major * 1000000 + minor * 1000 + micro), or
 * -VMPT_ERR_REMOTE (not reachable) / -VMPT_ERR_NO_LIBRARY (libvirt.so.0
 * missing) with err saying why.
 */
int vmpt_vcpu_libvirt_probe(const char *uri, int *domains, unsigned long *version,
			    char *err, size_t errlen);

#endif
