/* SPDX-License-Identifier: MIT */
#ifndef VMPT_CLI_CORRELATE_GUEST_DATA_H
#define VMPT_CLI_CORRELATE_GUEST_DATA_H

/* vmpt correlate --guest-data=FILE,PID[,OFFSET[,SCALE]], perf inject's
 * grammar and meaning: the guest perf.data FILE, recorded inside the VM
 * whose QEMU process is PID, merged into the host recording input and
 * written to output; host TSC = (guest TSC - OFFSET) / SCALE.  vcpus: a
 * vCPU map file, or NULL.  Errors and the summary go to stderr; returns
 * the exit status.
 */
int correlate_guest_data(const char *spec, const char *input, const char *output,
			 const char *vcpus);

#endif
