/* SPDX-License-Identifier: MIT */
/* The agent's reply stream, spoken by vmpt-agent (guest) and read by the
 * host side (guest-agent/host/guest_pack.c).  Everything the host fetches
 * from a guest comes this way, so there is one place to check it:
 *
 *   "VMPTPAK1"                      stream magic
 *   frame*:  u32 kind, u32 path_len, u32 err, u32 zero, u64 size (LE)
 *            path (path_len bytes, no NUL), then size bytes of data
 *   frame with kind END             stream end
 *
 * The host names what it wants (one request per line on the agent's
 * stdin) and accepts only frames for those names, in that order.
 */
#ifndef VMPT_GUEST_PACK_H
#define VMPT_GUEST_PACK_H

#include <stddef.h>
#include <stdint.h>

#define GUEST_PACK_MAGIC "VMPTPAK1"
#define GUEST_PACK_MAGIC_LEN 8
#define GUEST_PACK_HDR_LEN 24
#define GUEST_PACK_PATH_MAX 4096

enum guest_pack_kind {
	GUEST_PACK_FILE = 1,	/* data follows */
	GUEST_PACK_MISSING = 2,	/* err holds the guest errno */
	GUEST_PACK_END = 3,
};

/* Names the agent makes up itself instead of reading a guest file. */
#define GUEST_PACK_PERF_DATA "[perf.data]"
#define GUEST_PACK_KCORE "[kcore]"
#define GUEST_PACK_KALLSYMS "[kallsyms]"
#define GUEST_PACK_MODULES "[modules]"
#define GUEST_PACK_VDSO "[vdso]"

/* `vmpt-agent --version` says "vmpt-agent VERSION fnv1a64:HASH" with the
 * FNV-1a hash of its own file, so the host deploys again on any change.
 */
#define GUEST_FNV_INIT 0xcbf29ce484222325ull

static inline uint64_t guest_fnv1a64(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* The line `vmpt-agent record` prints once its events are enabled. */
#define GUEST_AGENT_READY "VMPT-AGENT READY"

#endif
