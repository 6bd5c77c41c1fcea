/* SPDX-License-Identifier: MIT */
#ifndef VMPT_DOCTOR_H
#define VMPT_DOCTOR_H

#ifdef __cplusplus
extern "C" {
#endif

/* `vmpt doctor`: can this host record its guests with Intel PT?  Every
 * check reads files under the given roots, so tests run it on fixture
 * trees.
 */

enum vmpt_doctor_status { VMPT_DOCTOR_OK, VMPT_DOCTOR_INFO, VMPT_DOCTOR_PROBLEM };

struct vmpt_doctor_opts {
	const char *sysfs_root;		/* /sys */
	const char *procfs_root;	/* /proc */
	const char *dev_root;		/* /dev (for kvm and cpu/N/msr) */
	const char *libvirt_uri;	/* qemu:///system; NULL skips the check */
	int as_root;			/* judge limits as for root */
};

/* One line: the check's name and what was found (with the fix). */
typedef void (*vmpt_doctor_report)(void *ctx, enum vmpt_doctor_status status,
				   const char *check, const char *text);

/* Run every check; returns the number of problems. */
int vmpt_doctor_run(const struct vmpt_doctor_opts *opts, vmpt_doctor_report report,
		    void *ctx);

#ifdef __cplusplus
}
#endif

#endif
