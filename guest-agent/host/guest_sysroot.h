/* SPDX-License-Identifier: MIT */
/* Writing guest-named files under a host directory: whatever a guest (or a
 * hostile agent) names, nothing lands outside that directory.
 */
#ifndef VMPT_GUEST_SYSROOT_H
#define VMPT_GUEST_SYSROOT_H

#include <limits.h>
#include <stddef.h>

/* Turn an absolute guest path into the relative path it gets under the
 * sysroot: "/usr//bin/ls" -> "usr/bin/ls".  Rejected (-VMPT_ERR_INVAL,
 * *why says which rule): relative paths, "." and ".." components, control
 * characters, an empty last component, longer than PATH_MAX.
 */
int guest_sysroot_path(const char *guest_path, char *rel, size_t size,
		       const char **why);

/* A file being written under a directory: data goes to a temporary name
 * in the final directory and is renamed into place by commit, so a
 * symlink planted at the final name is replaced, never followed.
 */
struct guest_sysroot_file {
	int dirfd;			/* the final directory */
	int fd;				/* the temporary file */
	char tmp[32];
	char name[NAME_MAX + 1];
};

/* Create the directories of rel under rootfd (never through a symlink)
 * and open a temporary file beside its final name.  rel must come from
 * guest_sysroot_path or be a plain relative name.  0 or a negative vmpt_err.
 */
int guest_sysroot_open(int rootfd, const char *rel, struct guest_sysroot_file *f);
int guest_sysroot_commit(struct guest_sysroot_file *f);
void guest_sysroot_abort(struct guest_sysroot_file *f);

#endif
