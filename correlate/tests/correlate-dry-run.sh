#!/bin/bash
# vmpt correlate --dry-run prints exactly perf inject
# --vm-time-correlation=dry-run's lines, on the same stream (stderr) and in
# the same order, on synthesized VM recordings: offsets of both signs and
# beyond 2^55 (7-byte TSCs), 1-4 vCPUs, CYC on, an MTC period of 2^9, an
# overflow, a mid-trace offset change, TSC scaling x1.5 (where perf finds
# a new offset at every PSB), both at once, and per-cpu recordings of 2-7 VMs (perf's
# queue order included).  The offsets vmpt learns are the synthesizer's
# truth, per VM, before and after a change, and the scaling ratio 1.5 with
# its offset.
. "$(dirname "$0")/correlate-lib.sh"
: "${PERCPU_MERGE:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

same_as_perf() {
	perf_dry_run "$1" > perf.err
	"$VMPT" correlate --dry-run -i "$1" 2> vmpt.err > vmpt.out ||
		fail "$1: vmpt correlate --dry-run failed: $(cat vmpt.err)"
	compare "perf's dry-run lines for $1" perf.err vmpt.err
	lines=$((lines + $(wc -l < perf.err)))
}

# truth FILE.tsc as "VMCS OFFSET" lines (a change adds its second offset)
truth_offsets() {
	awk '{print $1, $2; if (NF == 4) print $1, $4}' "$1"
}

lines=0 segs=0
run() {
	name=$1
	shift
	vm_synth "$@" -o "$name" || fail "vmpt-synth $name"
	same_as_perf "$name.perf.data"
}

run off3 --branches 40000 --guest-period 5000 --psb-period 2048 --seed 1 --vcpus 3 \
	--tsc-offset -0x123456789a,0x5000000,0x7777
run off1 --branches 40000 --guest-period 5000 --psb-period 2048 --seed 2 --vcpus 1 \
	--tsc-offset -0x40000000000
run off4 --branches 40000 --guest-period 5000 --psb-period 2048 --seed 3 --vcpus 4 \
	--tsc-offset 0xfff000,-0x1000,0x3000000000,-0x2a00000000
run big --branches 30000 --guest-period 3000 --psb-period 1024 --seed 4 --vcpus 2 \
	--tsc-offset 0x90000000000000,-0x90000000000000
run cyc --branches 40000 --guest-period 2000 --psb-period 1024 --seed 7 --vcpus 2 --cyc
run mtc9 --branches 40000 --guest-period 2000 --psb-period 1024 --seed 10 --vcpus 2 \
	--mtc-freq 9
run ovf --branches 40000 --guest-period 2000 --psb-period 1024 --seed 9 --vcpus 2 \
	--ovf-at 15000:200
for t in off3 off1 off4 cyc mtc9 ovf; do
	truth_offsets $t.tsc | sort > want
	vmpt_offsets $t.perf.data | sort > got
	compare "learned offsets of $t" want got
	segs=$((segs + $(wc -l < got)))
done
# Offsets beyond 2^55: the trace holds 7 bytes of the guest's TSC, so vmpt,
# like perf, knows them modulo 2^56 (as the low 7 bytes, sign-extended).
seven() {
	while read -r vmcs off; do printf '%s 0x%x\n' "$vmcs" $((off & 0xffffffffffffff)); done
}
truth_offsets big.tsc | seven | sort > want
vmpt_offsets big.perf.data | seven | sort > got
[ "$(wc -l < want)" -eq 2 ] || fail "big offsets: $(cat want)"
compare "learned offsets beyond 2^55 (7 bytes)" want got

# A mid-trace change: perf reports both offsets; vmpt two segments, in time.
run chg --branches 40000 --guest-period 5000 --psb-period 2048 --seed 5 --vcpus 1 \
	--tsc-offset 0x100000 --tsc-offset-change 20000:0:0x200000
truth_offsets chg.tsc > want
vmpt_offsets chg.perf.data > got
compare "offsets before and after the change" want got

# TSC scaling x1.5: perf finds a new offset at every guest PSB; vmpt one
# segment, ratio 1.5 and offset -0x1000, every sample exact.
run sc --branches 40000 --guest-period 5000 --psb-period 2048 --seed 3 --vcpus 1 \
	--tsc-offset -0x1000 --tsc-scale 1.5
[ "$(grep -c 'TSC Offset' perf.err)" -gt 1 ] || fail "scaled TSC: perf found one offset"
"$VMPT" correlate --dry-run -i sc.perf.data 2>/dev/null |
	awk '!/^#/ && !/^note/ {print $1, $5, $6, $7 == $8}' > got
echo "0x1c0 0xfffffffffffff000 1.500000000/0x1800000000000 1" > want
compare "scaled TSC: ratio and offset" want got

# A change under scaling: three segments, each with the truth's offset and
# the ratio 1.5.
run chgsc --branches 60000 --guest-period 5000 --psb-period 1024 --seed 11 --vcpus 2 \
	--tsc-offset 0x100000,-0x100000 --tsc-scale 1.5 --tsc-offset-change 40000:1:0x7000000
truth_offsets chgsc.tsc | sed 's/$/ 1.500000000\/0x1800000000000/' > want
"$VMPT" correlate --dry-run -i chgsc.perf.data 2>/dev/null |
	awk '!/^#/ && !/^note/ && $7 == $8 {print $1, $5, $6}' > got
compare "a change under scaling" want got

# Per-cpu recordings of 2..7 VMs, one per CPU, joined: perf decodes the
# queues in its heap's order, which vmpt's lines follow; vmpt learns each
# VM's offset apart (the VMs' VMCSs share an address).
for i in 1 2 3 4 5 6 7; do
	vm_synth --branches 3000 --guest-period 500 --psb-period 1024 --seed $i --vcpus 1 \
		--tsc-offset -0x${i}00000 --pid $((100 * i)) \
		--tsc0 $((0x2a00000000 + i * 0x1000000)) -o q$i || fail "vmpt-synth q$i"
done
for n in 2 3 4 5 6 7; do
	args=()
	for i in $(seq $n); do args+=("$((i - 1)):q$i.perf.data"); done
	"$PERCPU_MERGE" m$n.data "${args[@]}" || fail "percpu_merge $n"
	same_as_perf m$n.data
done
# the VMs with a guest TSC packet (a PSB+ with PIP.NR=1): the others have
# none to learn from
for i in 1 2 3 4 5 6 7; do
	"$VMPT" dump q$i.pt | awk '$2 == "psb" { p = 1 } p && $2 == "pip" && $4 == "nr" { g = 1 }
		$2 == "psbend" { p = 0 } END { exit !g }' || continue
	echo "0x1c0 $((100 * i)) $(awk '{print $2}' q$i.tsc)"
done > want
[ "$(wc -l < want)" -ge 2 ] || fail "per-cpu recording: fewer than 2 VMs with a guest TSC"
"$VMPT" correlate --dry-run -i m7.data 2>/dev/null |
	awk '!/^#/ && !/^note/ {print $1, $3, $5}' | sort -k2n > got
compare "per-VM offsets of the per-cpu recording" want got

echo "perf's dry-run: $lines lines equal; $segs learned offsets equal to the truth, a change, a scale, 6 VMs apart"
