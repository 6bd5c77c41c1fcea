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

# The file offset of raw trace $2 inside perf.data $1.
aux_offset() {
	python3 -c '
import sys
off = open(sys.argv[1], "rb").read().find(open(sys.argv[2], "rb").read())
sys.exit("raw trace not in " + sys.argv[1]) if off < 0 else print(off)' "$1" "$2"
}

# LEN bytes at OFFSET of FILE into OUT.
bytes_at() {
	python3 -c '
import sys
f = open(sys.argv[1], "rb"); f.seek(int(sys.argv[2]))
open(sys.argv[4], "wb").write(f.read(int(sys.argv[3])))' "$@"
}

# perf's offsets as its grammar wants them: "OFFSET:VMCS ...".
perf_spec() {
	perf_dry_run "$1" |
		sed -n 's/^VMCS: \(0x[0-9a-f]*\)  TSC Offset \(0x[0-9a-f]*\)$/\2:\1/p' |
		sort -u -t: -k2,2 | tr '\n' ' '
}
