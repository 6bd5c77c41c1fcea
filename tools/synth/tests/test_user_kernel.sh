#!/bin/bash
# User and kernel traced together (intel_pt// without u or k): SYSCALL is a
# TIP to entry_SYSCALL_64 and SYSRET a TIP back, an interrupt is FUP + TIP
# to asm_common_interrupt and IRET a TIP back.  The kernel is the
# project's compiled kernel model (guest-kernel); perf decodes it with
# --vmlinux and must show exactly the truth, flags included.
. "$(dirname "$0")/synth-lib.sh"
: "${GUEST_KERNEL:?}" "${VMPT:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

runs=0
insns=0
events=0
for bin in /usr/bin/busybox /usr/sbin/ldconfig /usr/bin/bash; do
	[ -x "$bin" ] || continue
	for seed in 1 2 3; do
		extra=""
		[ "$seed" = 2 ] && extra="--noretcomp --cyc"
		[ "$seed" = 3 ] && extra="--tnt64 --no-timing"
		# shellcheck disable=SC2086
		"$SYNTH" --elf "$bin" --host-kernel "$GUEST_KERNEL" --seed "$seed" \
			--branches 4000 --irq-period 700 $extra -o uk -q ||
			fail "vmpt-synth $bin"
		truth_insns uk.insn > want.i
		perf_insns uk.perf.data --vmlinux "$GUEST_KERNEL" > got.i
		compare "instructions ($bin seed $seed $extra)" want.i got.i
		truth_branches uk.branches > want.b
		perf_branches uk.perf.data --vmlinux "$GUEST_KERNEL" > got.b
		compare "branches ($bin seed $seed $extra)" want.b got.b
		grep -q '^hw int|' want.b || fail "no interrupt in $bin seed $seed"
		grep -q '^iret|' want.b || fail "no iret in $bin seed $seed"
		# vmpt script's lines are perf's, nanosecond times included
		# (perf's estimate: its instructions since the last timing
		# packet count from where it read it, an interrupt's FUP walk
		# too).
		t="--ns -F time,"	# (no timing: no time field, as perf)
		[ "$seed" = 3 ] && t="-F "
		vmpt_like_perf uk.perf.data --vmlinux "$GUEST_KERNEL" -- \
			"--itrace=i0nse ${t}ip,flags,addr" "--itrace=be ${t}ip,addr,flags" "--call-trace"
		runs=$((runs + 1))
		insns=$((insns + $(wc -l < want.i)))
		events=$((events + $(grep -c '^\(hw int\|iret\|syscall\|sysret\)|' want.b)))
	done
done
[ "$runs" -gt 0 ] || fail "no binaries"
echo "perf agreed on $runs user+kernel traces: $insns instructions, $events syscall/sysret/interrupt/iret transitions; vmpt script printed perf's lines (ns times) on them"
