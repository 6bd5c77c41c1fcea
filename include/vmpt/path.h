/* SPDX-License-Identifier: MIT */
/* Opening the files a recording names.  A recording's paths (MMAP2 file
 * names, a guest's binaries, a build-id, kcore_dir) were chosen by whoever
 * wrote it: a guest, or the sender of a crafted file.  Each is opened
 * inside the directory it is looked up in, and only as a regular file, so
 * no "..", symlink or /proc magic link leads out of that directory and no
 * FIFO or device hangs or feeds the decoder (docs/security.md).
 */
#ifndef VMPT_PATH_H
#define VMPT_PATH_H

#include "vmpt/file.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Open path read-only inside the directory root, as if root were "/":
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS), so an absolute
 * symlink in a sysroot resolves inside it; without openat2 (ENOSYS) a walk
 * component by component refusing every symlink.  A ".." component is
 * refused either way (a kernel names no mapping with one).  root NULL:
 * the host's own file (or the user's), path as given, ".." too, as perf
 * opens it.  Either way only a regular file is opened
 * (O_NONBLOCK: a FIFO cannot block the open).
 * Returns an fd (O_CLOEXEC, blocking) or -VMPT_ERR_IO with errno:
 * EXDEV for "..", ELOOP for a refused link, EINVAL for a file that is not
 * regular, or open's own.
 */
int vmpt_path_open(const char *root, const char *path);

/* Has path a ".." component?  (A name looked up under a directory of the
 * user's own, --symfs, may follow its links but must not climb out.)
 */
int vmpt_path_has_dotdot(const char *path);

/* The ENOSYS fallback on its own (tests).  Same contract. */
int vmpt_path_open_walk(const char *root, const char *path);

/* vmpt_path_open, then the file mapped; file->path is root + path. */
int vmpt_path_map(struct vmpt_file *file, const char *root, const char *path);

#ifdef __cplusplus
}
#endif

#endif
