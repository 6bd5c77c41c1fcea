#!/bin/bash
# --guest-code scenario: the guest runs the host program's own code at the
# same addresses (KVM selftests).  perf script --guest-code --itrace=be
# must show exactly the truth's branches, host and guest, with the
# vmentry/vmexit transitions.
. "$(dirname "$0")/synth-lib.sh"
: "${VMX_KERNEL:?}" "${KVM_SELFTEST:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

total=0
entries=0
for seed in 1 2 3 4; do
	extra=""
	[ "$seed" = 2 ] && extra="--noretcomp"
	[ "$seed" = 3 ] && extra="--cyc --vcpus 2 --entries-per-vcpu 2"
	[ "$seed" = 4 ] && extra="--no-timing --guest-period 200"
	# shellcheck disable=SC2086
	"$SYNTH" --vm --guest-code --elf "$KVM_SELFTEST" --host-kernel "$VMX_KERNEL" \
		--branches 4000 --seed "$seed" $extra -o gc -q || fail "vmpt-synth seed $seed"
	truth_branches gc.branches > want.b
	perf_branches gc.perf.data --guest-code --vmlinux "$VMX_KERNEL" > got.b
	compare "branches (seed $seed $extra)" want.b got.b
	truth_insns gc.insn > want.i
	perf_insns gc.perf.data --guest-code --vmlinux "$VMX_KERNEL" > got.i
	compare "instructions (seed $seed $extra)" want.i got.i
	n=$(grep -c '^vmentry|0|' want.b) || fail "no VM entries"
	grep -q '^vmexit|0|' want.b || fail "no VM exits"
	entries=$((entries + n))
	total=$((total + $(wc -l < want.b)))
done
echo "perf agreed on $total branches with $entries VM entries and their exits"
