#!/bin/bash
# vmpt correlate --report learns from the PSB+s alone (docs/correlate.md,
# "How learning works"); --report --walk walks every packet.  Both print
# the same segments (VMCS, vCPU, threads, source, offset, ratio, host time
# range: exact fields; the sample and TSC packet counts may differ) on the
# synthesized VM recordings of the correlate tests: offsets of both signs
# and beyond 2^55, 1-4 vCPUs, CYC, MTC period 2^9, an OVF, a change,
# scaling x1.5 and x0.75, per-cpu recordings of 7 VMs, vCPU threads asleep
# for up to 16 CTC wraps, buffers that continue one another.
. "$(dirname "$0")/correlate-lib.sh"
: "${PERCPU_MERGE:?}" "${CORR_FIXTURE:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

n=0 psb=0
# the segment lines of a report, less the counts
segs() {
	"$VMPT" correlate --report "$@" | awk '!/^#/ && !/^note/ {print $1, $2, $3, $4, $5, $6, $10}'
}
same() {
	segs -i "$1" > psb.out || fail "$1: vmpt correlate --report"
	segs --walk -i "$1" > walk.out || fail "$1: vmpt correlate --report --walk"
	[ -s walk.out ] || fail "$1: no segment"
	compare "$1: PSB+s alone and the walk" walk.out psb.out
	"$VMPT" correlate --report -i "$1" | head -1 | grep -q "PSB+(s) alone" && psb=$((psb + 1))
	n=$((n + 1))
}
run() {
	name=$1
	shift
	vm_synth "$@" -o "$name" || fail "vmpt-synth $name"
	same "$name.perf.data"
}

run vm1 --branches 3000 --guest-period 500 --psb-period 1024 --seed 1 --vcpus 2 \
	--tsc-offset -0x1000000000,-0x1000000000
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
run chg --branches 40000 --guest-period 5000 --psb-period 2048 --seed 5 --vcpus 1 \
	--tsc-offset 0x100000 --tsc-offset-change 20000:0:0x200000
run sc --branches 40000 --guest-period 5000 --psb-period 2048 --seed 3 --vcpus 1 \
	--tsc-offset -0x1000 --tsc-scale 1.5
run chgsc --branches 60000 --guest-period 5000 --psb-period 1024 --seed 11 --vcpus 2 \
	--tsc-offset 0x100000,-0x100000 --tsc-scale 1.5 --tsc-offset-change 40000:1:0x7000000
run sc75 --branches 40000 --guest-period 5000 --psb-period 2048 --seed 6 --vcpus 2 \
	--tsc-offset 0x5000000,-0x5000000 --tsc-scale 0.75
for i in 1 2 3 4 5 6 7; do
	vm_synth --branches 3000 --guest-period 500 --psb-period 1024 --seed $i --vcpus 1 \
		--tsc-offset -0x${i}00000 --pid $((100 * i)) \
		--tsc0 $((0x2a00000000 + i * 0x1000000)) -o q$i || fail "vmpt-synth q$i"
	args+=("$((i - 1)):q$i.perf.data")
done
"$PERCPU_MERGE" m7.data "${args[@]}" || fail "percpu_merge"
same m7.data
"$CORR_FIXTURE" split off3.perf.data split.data 0x888 || fail "split"
same split.data
make_guest_fixture fix 20
for s in 3 4; do
	"$SYNTH" --vm --host-kernel "$VMX_KERNEL" --guest-recording fix --vcpus 2 \
		--tsc-offset -0x123456789a --psb-period 512 --branches 8000 --seed $s \
		$([ $s = 4 ] && echo --cyc) -o gap$s -q || fail "vmpt-synth gap$s"
	same gap$s.perf.data
done
[ "$psb" -ge 12 ] || fail "only $psb of $n recordings learned from the PSB+s alone"
echo "$n recordings: the same segments from the PSB+s alone ($psb) and the walk"
