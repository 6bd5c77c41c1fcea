/* SPDX-License-Identifier: MIT */
#include "script_session.h"
#include "vmpt/correlate.h"
#include "vmpt/error.h"
#include "vmpt/file.h"
#include "vmpt/packet.h"
#include "vmpt/perf_data.h"

#include <stdio.h>

/* Does the file hold an Intel PT stream (a PSB) but no perf.data? */
static int raw_trace(const char *path)
{
	struct vmpt_file f;
	int found;

	if (vmpt_file_map(&f, path) < 0)
		return 0;
	found = !vmpt_perf_is_perf_data(f.data, f.size) &&
		f.size && vmpt_pkt_find_psb(f.data, f.data + f.size);
	vmpt_file_unmap(&f);
	return found;
}

int script_session_open(struct vmpt_session *s, const char *cmd, const char *path,
			struct vmpt_image *img, const struct vmpt_session_opts *so,
			int guest_code, const char *raw_hint)
{
	int ret = vmpt_session_open_opts(s, path, img, so);

	if (ret == 0 && s->corr)
		vmpt_corr_summary(s->corr, stderr, cmd);
	if (ret == 0 && guest_code)
		ret = vmpt_session_add_guest_code(s);
	if (ret < 0)
		fprintf(stderr, "%s: %s%s\n", cmd, s->errmsg,
			raw_hint && ret == -VMPT_ERR_FORMAT && raw_trace(path) ? raw_hint : "");
	return ret;
}
