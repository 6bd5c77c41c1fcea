# Shared by the correlate tests (sourced): the synthesizer's VM scenario,
# perf's verdicts and the fields of vmpt correlate's report.  Needs SYNTH,
# VMPT, VMX_KERNEL, GUEST_KERNEL; perf (linux-perf) is the judge.
. "$SRCDIR/tools/synth/tests/synth-lib.sh"
: "${VMX_KERNEL:?}" "${GUEST_KERNEL:?}" "${VMPT:?}" "${SYNTH:?}"

# vmpt-synth's VM scenario: host kernel model, guest kernel, PREFIX last.
vm_synth() {
	"$SYNTH" --vm --host-kernel "$VMX_KERNEL" --guest-elf "$GUEST_KERNEL" \
		--guest-start start_kernel -q "$@"
}

# perf inject's dry-run messages (its stderr) for a recording.
perf_dry_run() {
	perf inject -i "$1" --vm-time-correlation=dry-run 2>&1 >/dev/null
}

# "VMCS OFFSET" of every segment of vmpt correlate's report, in its order.
vmpt_offsets() {
	"$VMPT" correlate --dry-run -i "$@" 2>/dev/null | awk '!/^#/ && !/^note/ {print $1, $5}'
}
