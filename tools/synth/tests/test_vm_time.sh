#!/bin/bash
# VM scenario: a host kernel model (vmx-kernel) runs a guest kernel image
# (guest-kernel) on several vCPUs, one VMCS each, with TSC offsets.
# perf inject --vm-time-correlation=dry-run must find every VMCS's offset;
# after perf inject --vm-time-correlation=OFFSETS --force the trace must be
# byte for byte the one synthesized with no TSC offset: every guest TSC
# packet then holds the host TSC of the truth.
. "$(dirname "$0")/synth-lib.sh"
: "${VMX_KERNEL:?}" "${GUEST_KERNEL:?}" "${VMPT:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

# The file offset of the AUXTRACE data in a perf.data: where the raw
# trace is (before perf inject rewrites it in place).
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

synth() {
	"$SYNTH" --vm --host-kernel "$VMX_KERNEL" --guest-elf "$GUEST_KERNEL" \
		--guest-start start_kernel --branches 40000 --guest-period 5000 \
		--psb-period 2048 "$@" -q
}

checked=0
for seed in 1 2 3; do
	case $seed in
	1) offs="-0x123456789a,0x5000000,0x7777"; vcpus=3 ;;
	2) offs="-0x40000000000"; vcpus=1 ;;
	3) offs="0xfff000,-0x1000,0x3000000000,-0x2a00000000"; vcpus=4 ;;
	esac
	synth --seed "$seed" --vcpus "$vcpus" --tsc-offset "$offs" -o vm ||
		fail "vmpt-synth seed $seed"
	zeros=$(printf '0%.0s,' $(seq "$vcpus"))
	synth --seed "$seed" --vcpus "$vcpus" --tsc-offset "${zeros%,}" -o zero ||
		fail "vmpt-synth seed $seed (no offset)"
	cmp -s vm.pt zero.pt && fail "seed $seed: offsets changed nothing"

	# dry-run: one "VMCS: V  TSC Offset O" line per VMCS, in first-seen order
	perf inject -i vm.perf.data --vm-time-correlation=dry-run 2>&1 |
		sed -n 's/^VMCS: \(0x[0-9a-f]*\)  TSC Offset \(0x[0-9a-f]*\)$/\1 \2/p' |
		sort > got.off
	awk '{print $1, $2}' vm.tsc | sort > want.off
	compare "TSC offsets per VMCS (seed $seed)" want.off got.off
	grep -q ERROR got.off && fail "dry-run reported errors"

	# the real thing, with the offsets perf found
	off=$(aux_offset vm.perf.data vm.pt)
	spec=$(awk '{printf "%s%s:%s", (NR > 1 ? " " : ""), $2, $1}' got.off)
	perf inject -i vm.perf.data --vm-time-correlation="$spec" --force \
		> inject.log 2>&1 || { cat inject.log; fail "perf inject --force"; }
	bytes_at vm.perf.data "$off" "$(stat -c %s vm.pt)" injected.pt
	cmp -s injected.pt zero.pt ||
		fail "seed $seed: corrected trace differs from the no-offset trace"
	checked=$((checked + $(wc -l < want.off)))
done

# One offset for the whole VM, given without VMCS (the usual case).
synth --seed 9 --vcpus 2 --tsc-offset -0x777777777,-0x777777777 -o one || fail synth
synth --seed 9 --vcpus 2 --tsc-offset 0,0 -o onezero || fail synth
off=$(aux_offset one.perf.data one.pt)
perf inject -i one.perf.data --vm-time-correlation=0xfffffff888888889 --force \
	> inject.log 2>&1 || { cat inject.log; fail "perf inject --force"; }
bytes_at one.perf.data "$off" "$(stat -c %s one.pt)" injected.pt
cmp -s injected.pt onezero.pt || fail "single offset: corrected trace differs"

# A mid-trace offset change (KVM writes the VMCS TSC offset): perf reports
# the first offset and then the new one, as the truth has them.
synth --seed 5 --vcpus 1 --tsc-offset 0x100000 \
	--tsc-offset-change 20000:0:0x200000 -o chg || fail synth
[ -n "$(awk '{print $3}' chg.tsc)" ] || fail "no offset change in the truth"
perf inject -i chg.perf.data --vm-time-correlation=dry-run 2>&1 |
	sed -n 's/^VMCS: \(0x[0-9a-f]*\)  TSC Offset \(0x[0-9a-f]*\)$/\1 \2/p' > chg.got
awk '{print $1, $2; print $1, $4}' chg.tsc > chg.want
compare "TSC offsets before and after the change" chg.want chg.got

# TSC scaling: the guest TSC runs at 1.5x, so no single offset fits and
# perf (which "requires no VMX TSC Scaling") finds a new, growing one at
# every guest PSB: offset = 0.5 * host TSC - 0x1000, with the host TSC
# between the trace's start and end.
synth --seed 3 --vcpus 1 --tsc-offset -0x1000 --tsc-scale 1.5 -o sc || fail synth
perf inject -i sc.perf.data --vm-time-correlation=dry-run 2>&1 |
	sed -n 's/^VMCS: 0x1c0  TSC Offset \(0x[0-9a-f]*\)$/\1/p' > sc.got
[ "$(wc -l < sc.got)" -gt 1 ] || fail "scaled TSC: perf found a single offset"
python3 - sc.got <<'PY' || fail "scaled TSC: offsets not 0.5 * host TSC - 0x1000"
import sys
offs = [int(l, 16) for l in open(sys.argv[1])]
t0 = 0x2a00000000                     # vmpt-synth's first TSC
hosts = [2 * (o + 0x1000) for o in offs]
assert all(a < b for a, b in zip(hosts, hosts[1:])), "not increasing"
assert t0 <= hosts[0] and hosts[-1] < t0 + 0x10000000, "outside the trace"
PY

# With no TSC offset the guest's time is the host's, nothing to correct:
# vmpt script prints perf's lines, nanosecond times, callchains and call
# depths included (a guest sample's thread is the guest machine's: depth 0,
# its callchain the host thread's stack).
for vcpus in 1 2; do
	synth --seed 5 --vcpus "$vcpus" --tsc-offset "$(printf '0%.0s,' $(seq "$vcpus") | sed 's/,$//')" \
		--branches 6000 --guest-period 500 -o nooff || fail "vmpt-synth no offset"
	vmpt_like_perf nooff.perf.data --vmlinux "$VMX_KERNEL" --guestvmlinux "$GUEST_KERNEL" -- \
		"--itrace=be --ns -F time,ip,addr,flags" "--call-trace" "--call-ret-trace" \
		"--itrace=i0nse --ns -F time,ip" "--itrace=i100ns --ns -F time,ip" "--itrace=bg -F ip,addr"
done
# Time periods around PSBs (perf walks to a PSB+'s FUP in the time before
# its TSC, an MTC's after the last branch included, then counts anew),
# with PTWRITE, power and Event Trace packets among the branches.
for seed in 3 4; do
	synth --seed "$seed" --tsc-offset 0 --branches 6000 --guest-period 500 --psb-period 512 \
		--event --ptw --fup-on-ptw --pwr-evt -o psb || fail "vmpt-synth PSB periods"
	vmpt_like_perf psb.perf.data --vmlinux "$VMX_KERNEL" --guestvmlinux "$GUEST_KERNEL" -- \
		"--itrace=i37ns --ns -F time,ip,period" "--itrace=i10ns --ns -F time,ip"
done
echo "perf agreed on the TSC offsets of $checked VMCSs and on every corrected guest TSC packet;" \
     "vmpt script printed perf's lines on VMs with no offset (1 and 2 vCPUs, 6 forms), and time periods around PSBs"
