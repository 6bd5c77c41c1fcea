/* SPDX-License-Identifier: MIT */
/* ELF build-ids: the GNU build-id note of a binary, as perf records it
 * (HEADER_BUILD_ID, MMAP2 with build-id) and as perf's build-id cache
 * files binaries (~/.debug/.build-id/ab/cdef...).
 */
#ifndef VMPT_BUILD_ID_H
#define VMPT_BUILD_ID_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The build-id of the ELF file at path as lowercase hex (up to 40 digits
 * and a NUL in hex[41]).  0, -VMPT_ERR_IO (errno kept), -VMPT_ERR_FORMAT
 * (no ELF), -VMPT_ERR_NOT_FOUND (no build-id note).
 */
int vmpt_build_id_of_file(const char *path, char hex[41]);

/* The same for an ELF image in memory. */
int vmpt_build_id_of_buffer(const uint8_t *data, size_t size, char hex[41]);

/* The running kernel's build-id (/sys/kernel/notes): 0, or
 * -VMPT_ERR_NOT_FOUND.
 */
int vmpt_build_id_running_kernel(char hex[41]);

/* Do two hex build-ids name the same binary?  perf pads short ids (a
 * 16-byte md5 one) with zeros to 20 bytes: trailing zeros do not count.
 */
int vmpt_build_id_equal(const char *a, const char *b);

/* perf's build-id cache directory ($PERF_BUILDID_DIR, else ~/.debug)
 * into buf: 0, or -VMPT_ERR_NOT_FOUND (neither set) / -VMPT_ERR_INVAL
 * (too long for size).
 */
int vmpt_build_id_cache_dir(char *buf, size_t size);

/* This process's vdso, the ELF image the kernel mapped for it (the one
 * every 64-bit process of this kernel gets): 0, or -VMPT_ERR_NOT_FOUND.
 */
int vmpt_vdso_image(const uint8_t **data, size_t *size);

#ifdef __cplusplus
}
#endif

#endif
