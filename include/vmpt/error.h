/* SPDX-License-Identifier: MIT */
#ifndef VMPT_ERROR_H
#define VMPT_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* Errors are values: every libvmpt function that can fail returns a
 * negative vmpt_err (or 0/positive on success); vmpt_strerror() names it.
 */
enum vmpt_err {
	VMPT_OK = 0,
	VMPT_ERR_INTERNAL,     /* a bug in vmpt */
	VMPT_ERR_INVAL,        /* bad argument */
	VMPT_ERR_NOMEM,        /* out of memory */
	VMPT_ERR_EOS,          /* end of the trace stream */
	VMPT_ERR_BAD_OPC,      /* unknown packet opcode */
	VMPT_ERR_BAD_PACKET,   /* malformed packet payload */
	VMPT_ERR_TRUNCATED,    /* packet cut off at the end of the buffer */
	VMPT_ERR_NOSYNC,       /* no PSB found */
	VMPT_ERR_IP_SUPPRESSED,/* the IP is suppressed / unknown */
	VMPT_ERR_NO_LAST_IP,   /* IP compression without a full IP before */
	VMPT_ERR_IO,           /* I/O error (errno kept by the caller) */
	VMPT_ERR_FORMAT,       /* bad file format */
	VMPT_ERR_UNSUPPORTED,  /* valid, but not supported */
	VMPT_ERR_NO_IMAGE,     /* no code mapped at an address */
	VMPT_ERR_NO_MATCH,     /* trace and code disagree */
	VMPT_ERR_OVERFLOW,     /* internal trace buffer overflow (OVF) */
	VMPT_ERR_NOT_FOUND,    /* a looked-up thing does not exist */
	VMPT_ERR_PERM,         /* permission denied */
	VMPT_ERR_NO_PT,        /* no Intel PT on this machine */
	VMPT_ERR_REMOTE,       /* the remote side failed */
	VMPT_ERR_LOST,         /* trace data lost (AUX area full: AUX truncated) */
	VMPT_ERR_LOOP,         /* a loop of direct branches that reads no trace */
	VMPT_ERR_NO_LIBRARY,   /* a library opened at first use is missing */
	VMPT_ERR_COUNT
};

/* A short message for a (negative or positive) error code. */
const char *vmpt_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif
