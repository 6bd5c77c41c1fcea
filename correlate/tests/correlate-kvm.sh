#!/bin/bash
# KVM's TSC values, as vmpt record saves them next to a recording
# (REC.kvm-tsc or REC/kvm-tsc, written here by the recorder's own code from
# a fixture debugfs tree; the vCPU threads from REC.vcpus or from QEMU's
# "CPU n/KVM" thread names), are preferred and checked against the trace:
# - when they agree, the report and vmpt script say the offset is KVM's and
#   the trace agrees; the rewrite holds the truth's host TSCs;
# - KVM's scaling ratio and offset (x1.5) are used as such;
# - values with a time (KVM changed the offset mid-recording) apply from
#   then on: two segments, both KVM's;
# - a planted disagreement is reported (how many samples fit KVM's) and
#   KVM's value is used, never mixed with the trace's;
# - a recording corrected before keeps its host TSCs (KVM's offset is not
#   applied twice);
# - a bad line is an error naming the file and line, exit status != 0.
. "$(dirname "$0")/correlate-lib.sh"
: "${CORR_FIXTURE:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

FIXTURE=$SRCDIR/host/tests/fixtures/sysfs-icelake-6.1/kernel/debug

# debugfs_tree OFFSET [RATIO]: the fixture tree with vCPU 0 of VM 4242 (the
# synthesizer's pid) at these values, its other vCPU and VM gone.
debugfs_tree() {
	rm -rf dbg && cp -r "$FIXTURE" dbg
	rm -rf dbg/kvm/4300-12 dbg/kvm/4242-11/vcpu1
	echo "$1" > dbg/kvm/4242-11/vcpu0/tsc-offset
	echo "${2:-281474976710656}" > dbg/kvm/4242-11/vcpu0/tsc-scaling-ratio
}
# report_line REC: "SOURCE VCPU OFFSET" of each segment
report() {
	"$VMPT" correlate --dry-run -i "$1" 2>/dev/null | awk '!/^#/ && !/^note/ {print $4, $2, $5}'
}
# aux_is_truth REC NAME: the rewrite's AUX data is NAME.zero.pt
aux_is_truth() {
	rm -rf out.data
	"$VMPT" correlate -q -i "$1" -o out.data || fail "$1: correlate"
	bytes_at out.data "$(aux_offset "$2.perf.data" "$2.pt")" "$(stat -c %s "$2.pt")" out.pt
	cmp -s out.pt "$2.zero.pt"
}
synth2() {
	name=$1
	shift
	vm_synth "$@" -o "$name" || fail "vmpt-synth $name"
}
base=(--branches 40000 --guest-period 5000 --psb-period 2048 --vcpus 1)

# Agreement: KVM's offset, the trace agrees.
synth2 a "${base[@]}" --seed 2 --tsc-offset -0x123456789a
synth2 a.zero "${base[@]}" --seed 2 --tsc-offset 0
cp a.perf.data rec.data
debugfs_tree $((-0x123456789a))
"$CORR_FIXTURE" kvm-tsc dbg 4242 rec.data.kvm-tsc || fail "kvm-tsc"
grep -q "^vm 4242-11 vcpu 0 tsc-offset $((-0x123456789a))" rec.data.kvm-tsc ||
	fail "the recorder wrote: $(cat rec.data.kvm-tsc)"
echo "vcpu 0 tid 4242 source thread-names" > rec.data.vcpus
[ "$(report rec.data)" = "kvm 0 0xffffffedcba98766" ] || fail "agreement: $(report rec.data)"
"$VMPT" correlate --dry-run -i rec.data 2>/dev/null | grep -q disagree && fail "agreement reported as none"
aux_is_truth rec.data a || fail "agreement: rewrite is not the truth"
"$VMPT" script -i rec.data --itrace=b -F ip 2>&1 >/dev/null |
	grep -q "^vmpt script: VMCS 0x1c0 TSC offset 0xffffffedcba98766 (KVM's, saved by vmpt record, vCPU 0; the trace agrees)$" ||
	fail "vmpt script does not say KVM's offset was used"

# The vCPU from QEMU's thread name, perf's directory form.
rm -rf dir && mkdir dir
"$CORR_FIXTURE" comm a.perf.data dir/data "CPU 0/KVM" || fail "comm"
cp rec.data.kvm-tsc dir/kvm-tsc
[ "$(report dir)" = "kvm 0 0xffffffedcba98766" ] || fail "CPU 0/KVM: $(report dir)"

# A planted disagreement: reported, KVM's used.
debugfs_tree $((-0x123456789a + 0x1000))
"$CORR_FIXTURE" kvm-tsc dbg 4242 rec.data.kvm-tsc || fail "kvm-tsc"
"$VMPT" correlate --dry-run -i rec.data > dis 2>/dev/null || fail "disagreement: exit status"
grep -q "^note: VMCS 0x1c0 (vCPU 0 of pid 4242): KVM's TSC offset 0xffffffedcba99766 disagrees with the trace's TSC offset 0xffffffedcba98766 (0 of [0-9]* samples fit KVM's); using KVM's$" dis ||
	fail "disagreement not reported: $(cat dis)"
[ "$(report rec.data)" = "kvm 0 0xffffffedcba99766" ] || fail "disagreement: $(report rec.data)"
aux_is_truth rec.data a && fail "disagreement: KVM's value not used"
"$VMPT" script -i rec.data --itrace=b -F ip 2>&1 >/dev/null | grep -q "the trace disagrees" ||
	fail "vmpt script does not tell the disagreement"

# KVM's scaling: ratio 1.5 and offset -0x1000.
synth2 s "${base[@]}" --seed 3 --tsc-offset -0x1000 --tsc-scale 1.5
synth2 s.zero "${base[@]}" --seed 3 --tsc-offset 0
cp s.perf.data rec.data
debugfs_tree -4096 $((3 << 47))
"$CORR_FIXTURE" kvm-tsc dbg 4242 rec.data.kvm-tsc || fail "kvm-tsc"
[ "$(report rec.data)" = "kvm 0 0xfffffffffffff000" ] || fail "scaling: $(report rec.data)"
"$VMPT" correlate --dry-run -i rec.data 2>/dev/null | grep -q disagree && fail "scaling: disagreement"
aux_is_truth rec.data s || fail "scaling: rewrite is not the truth"

# A change at a time: two values, each from its time on.
synth2 c "${base[@]}" --seed 5 --tsc-offset 0x100000 --tsc-offset-change 20000:0:0x200000
synth2 c.zero "${base[@]}" --seed 5 --tsc-offset 0
cp c.perf.data rec.data
rm -f rec.data.kvm-tsc rec.data.vcpus
# the change's time: between the trace's two segments (perf time, ns)
t=$("$VMPT" correlate --dry-run -i rec.data 2>/dev/null | awk '!/^#/ && !/^note/ {print $(NF-1)}' |
	tr '\n-' '  ' | python3 -c 'import sys; a = sys.stdin.read().split()
print(int((float(a[1]) + float(a[2])) / 2 * 1e6) * 1000)')
echo "vcpu 0 tid 4242 source qmp" > rec.data.vcpus
{
	echo "vm 4242-11 vcpu 0 tsc-offset $((0x100000))"
	echo "vm 4242-11 vcpu 0 tsc-offset $((0x200000)) time $t"
} > rec.data.kvm-tsc
[ "$(report rec.data | tr '\n' ' ')" = "kvm 0 0x100000 kvm 0 0x200000 " ] ||
	fail "change: $(report rec.data)"
aux_is_truth rec.data c || fail "change: rewrite is not the truth"

# Corrected before: the host TSCs stay.
cp a.perf.data rec.data
debugfs_tree $((-0x123456789a))
"$CORR_FIXTURE" kvm-tsc dbg 4242 rec.data.kvm-tsc || fail "kvm-tsc"
echo "vcpu 0 tid 4242 source libvirt" > rec.data.vcpus
"$VMPT" correlate -q -i rec.data --force || fail "in place"
"$VMPT" correlate --dry-run -i rec.data 2>/dev/null | grep -q "hold host TSCs already" ||
	fail "a corrected recording not recognized"
aux_is_truth rec.data a || fail "corrected twice"

# Bad lines: an error naming the file and line.
echo "vm 4242-11 vcpu zero tsc-offset 5" >> rec.data.kvm-tsc
"$VMPT" correlate --dry-run -i rec.data > /dev/null 2> err && fail "a bad line accepted"
grep -q "^vmpt correlate: rec.data.kvm-tsc:2: not a line vmpt record writes$" err ||
	fail "bad line: $(cat err)"

echo "KVM's values preferred and checked: agreement, vCPU by thread name, disagreement, scaling, a change, a corrected recording, a bad line"
