/* SPDX-License-Identifier: MIT */
#include "vmpt/error.h"

static const char *const messages[VMPT_ERR_COUNT] = {
	[VMPT_OK] = "success",
	[VMPT_ERR_INTERNAL] = "internal error",
	[VMPT_ERR_INVAL] = "invalid argument",
	[VMPT_ERR_NOMEM] = "out of memory",
	[VMPT_ERR_EOS] = "end of trace",
	[VMPT_ERR_BAD_OPC] = "unknown packet opcode",
	[VMPT_ERR_BAD_PACKET] = "malformed packet",
	[VMPT_ERR_TRUNCATED] = "packet truncated at end of buffer",
	[VMPT_ERR_NOSYNC] = "no PSB to synchronize on",
	[VMPT_ERR_IP_SUPPRESSED] = "IP suppressed",
	[VMPT_ERR_NO_LAST_IP] = "compressed IP without a full IP before it",
	[VMPT_ERR_IO] = "I/O error",
	[VMPT_ERR_FORMAT] = "bad file format",
	[VMPT_ERR_UNSUPPORTED] = "not supported",
	[VMPT_ERR_NO_IMAGE] = "no code mapped at this address",
	[VMPT_ERR_NO_MATCH] = "trace does not match the code",
	[VMPT_ERR_OVERFLOW] = "trace overflow (packets lost)",
	[VMPT_ERR_NOT_FOUND] = "not found",
	[VMPT_ERR_PERM] = "permission denied",
	[VMPT_ERR_NO_PT] = "Intel PT is not available",
	[VMPT_ERR_REMOTE] = "remote command failed",
	[VMPT_ERR_LOST] = "trace data lost",
	[VMPT_ERR_LOOP] = "never-ending loop (trace and code disagree)",
	[VMPT_ERR_NO_LIBRARY] = "a shared library this command needs cannot be loaded",
};

const char *vmpt_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err >= VMPT_ERR_COUNT || !messages[err])
		return "unknown error";
	return messages[err];
}
