#!/bin/bash
# Spans without MTCs (issue 10, found on the guest-vm suite's real guest):
# a vCPU thread traced per thread sleeps while its guest CPU is idle
# (TraceEn 0: no packet, not even MTC), and when it is scheduled in again
# its TMA places it only modulo 2^16 CTC ticks.  A guest TSC after such a
# gap took its expected host TSC across it and learned an offset off by
# whole wraps (0x...cbd38766 for 0x...cba98766, "2 of 2 samples agree").
# Here make-guest-fixture's workload, spread out 20 times (idle spans of
# 0.2-1.2 ms, up to 16 wraps), is the guest of --guest-recording:
# - the resumed thread's TSC (no PIP) is known for the host's by whole
#   wraps of the CTC, and anchors what follows: every sample agrees on
#   the truth's offset, no note; perf's dry-run lines are perf's; vmpt's
#   rewrite is perf inject's with the true offset, byte for byte; vmpt
#   script names the offsets it used;
# - with those TSCs made unrecognisable (2^16 ticks added), what lies
#   after a gap is no sample until a host TSC confirms it: fewer samples
#   (5 of 10), none of them wrong.
. "$(dirname "$0")/correlate-lib.sh"
: "${MAKE_GUEST_FIXTURE:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

make_guest_fixture fix 20
OFF=0xffffffedcba98766
synth() {
	rm -rf "$1.perf.data"
	"$SYNTH" --vm --host-kernel "$VMX_KERNEL" --guest-recording fix --vcpus 2 \
		--tsc-offset -0x123456789a --psb-period 512 --branches 8000 \
		--seed "${@:2}" -o "$1" -q || fail "vmpt-synth $1"
}
# report NAME: vmpt correlate's segment lines and notes
report() {
	"$VMPT" correlate --dry-run -i "$1.perf.data" 2> "$1.dry" | sed 1,2d > "$1.got" ||
		fail "$1: vmpt correlate"
	compare "$1: vmpt correlate's report" "$1.want" "$1.got"
}

# seed 3: vCPU 0 had a second segment 0xffffffedcbd38766 (1 sample);
# seed 4 with CYC: vCPU 0's 0xffffffedcbd38766 with 2 of 2 samples
synth s3 3
cat > s3.want <<'EOF'
0x1c0      0    4243     trace   0xffffffedcba98766  1                  4       4     0             24.438692-24.440991 4
0x1c3      1    4244     trace   0xffffffedcba98766  1                  4       4     0             24.439592-24.441593 4
EOF
report s3
synth s4 4 --cyc
cat > s4.want <<'EOF'
0x1c0      0    4243     trace   0xffffffedcba98766  1                  6       6     0             24.438692-24.440992 6
0x1c3      1    4244     trace   0xffffffedcba98766  1                  4       4     0             24.438672-24.440598 4
EOF
report s4
for n in s3 s4; do
	perf_dry_run "$n.perf.data" > "$n.perf"
	compare "$n: --dry-run's perf lines" "$n.perf" "$n.dry"
	rm -rf "$n.out.perf.data" "$n.p.perf.data"
	"$VMPT" correlate -q -i "$n.perf.data" -o "$n.out.perf.data" || fail "$n: vmpt correlate -o"
	cp -r "$n.perf.data" "$n.p.perf.data"
	perf inject -i "$n.p.perf.data" --vm-time-correlation="$OFF" --force 2>/dev/null ||
		fail "$n: perf inject"
	cmp "$n.p.perf.data/data" "$n.out.perf.data/data" ||
		fail "$n: vmpt's rewrite is not perf's with the true offset"
	"$VMPT" script -i "$n.perf.data" --itrace=be -F time,ip > /dev/null 2> "$n.script" ||
		fail "$n: vmpt script"
	sed 's/ *[0-9]* *0 *[0-9.-]* [0-9]*$//' "$n.want" |
		awk -v off="$OFF" '{ print "vmpt script: VMCS " $1 " TSC offset " off \
			" (from the trace, " $7 " of " $7 " samples agree)" }' > "$n.script.want"
	compare "$n: vmpt script's offsets" "$n.script.want" "$n.script"
done

# Every TSC outside a PSB+ (the thread scheduled in) changed by 2^16 ticks
# in s4's trace: no longer the host's.
rm -rf u.perf.data
cp -r s4.perf.data u.perf.data
for t in s4.tid4243.pt s4.tid4244.pt; do
	base=$(aux_offset u.perf.data/data "$t")
	"$VMPT" dump "$t" | awk '$2 == "psb" { p = 1 } $2 == "psbend" { p = 0 }
		$2 == "tsc" && !p { print $1 }' |
	while read -r at; do
		python3 -c '
import sys
f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2]) + 3)
b = f.read(1)[0]; f.seek(-1, 1); f.write(bytes([(b + 1) & 0xff]))' u.perf.data/data $((base + 0x$at))
	done
done
cat > u.want <<'EOF'
0x1c0      0    4243     trace   0xffffffedcba98766  1                  4       4     0             24.438692-24.439794 6
0x1c3      1    4244     trace   0xffffffedcba98766  1                  1       1     0             24.438672-24.438672 4
note: u.perf.data/data: offset 0xc78: 5 TSC packet(s) neither the host's nor a known guest's (no PIP): left as they are
note: 2 host TSC packet(s) differ from the CTC's count by up to 2686976 ticks (MTCs lost): the guest TSCs between are no samples
EOF
report u
echo "gaps without MTCs: the truth's offset from every sample (8 and 10), perf's lines and" \
	"rewrite; 5 samples after unrecognisable gaps, none wrong"
