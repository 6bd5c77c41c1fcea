/* SPDX-License-Identifier: MIT */
/* A perf.data written out of place: under a temporary name beside the
 * final one, renamed over it only when complete, so a failed or
 * interrupted run leaves neither a half file nor a changed input.  The
 * directory form also gets kcore directories copied in.  Internal to
 * correlate/.
 */
#ifndef VMPT_MERGE_OUTPUT_H
#define VMPT_MERGE_OUTPUT_H

#include <stddef.h>

struct vmpt_merge_output {
	char *final;		/* the name asked for */
	char *tmp;		/* what the writer writes: a file or a directory */
	int dir;		/* perf's directory form: tmp/data, tmp/kcore_dir* */
};

/* Pick the temporary name (created empty).  Refuses a final name that is
 * one of the inputs (NULL-terminated list).  0, or a negative vmpt_err
 * with err saying why.
 */
int vmpt_merge_output_begin(struct vmpt_merge_output *o, const char *final, int dir,
			    const char *const *inputs, char *err, size_t errlen);

/* Copy the regular files of directory src into tmp/name (created). */
int vmpt_merge_output_copy_dir(struct vmpt_merge_output *o, const char *src,
			       const char *name, char *err, size_t errlen);

/* Rename tmp to final.  0, or -VMPT_ERR_IO with err (tmp is removed). */
int vmpt_merge_output_commit(struct vmpt_merge_output *o, char *err, size_t errlen);

/* Remove tmp (after a failure) and free o. */
void vmpt_merge_output_abort(struct vmpt_merge_output *o);

#endif
