#!/bin/bash
# Deferred TIPs (SDM "Deferred TIPs"): the processor may hold the TIPs of
# indirect jumps and calls back while the TNT fills, so a TNT packet holds
# the bits of branches after an indirect one and its TIP comes after the
# TNT.  perf's instructions and branches equal the truth; vmpt script's
# lines are perf script's (every instruction, branches with symbols, -j 2
# too), over real binaries, with return compression on and off, TNT-64,
# interrupts and cycle counts.
. "$(dirname "$0")/synth-lib.sh"
: "${VMPT:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

variants=(
	""
	"--noretcomp"
	"--tnt64"
	"--irq-period 500"
	"--cyc --mtc-freq 0"
)
runs=0 insns=0 held=0
for bin in /usr/bin/bash /usr/bin/ls /usr/bin/busybox; do
	[ -x "$bin" ] || continue
	for i in "${!variants[@]}"; do
		seed=$((i * 13 + ${#bin}))
		# shellcheck disable=SC2086
		"$SYNTH" --elf "$bin" --seed "$seed" --branches 3000 --defer-tips \
			${variants[$i]} -o t -q || fail "vmpt-synth $bin ${variants[$i]}"
		what="$bin seed $seed ${variants[$i]}"
		truth_insns t.insn > want.i
		perf_insns t.perf.data > got.i
		compare "instructions ($what)" want.i got.i
		truth_branches t.branches > want.b
		perf_branches t.perf.data > got.b
		compare "branches ($what)" want.b got.b
		vmpt_like_perf t.perf.data -- "--itrace=i0nse -F ip" "--itrace=be -F ip,sym,addr,flags"
		VMPT_ONLY="-j 2" vmpt_like_perf t.perf.data -- "--itrace=i0nse -F ip" \
			"--itrace=be -F ip,sym,addr,flags"
		# TIPs held back: a TIP right after a TNT whose bits go on past
		# the indirect branch shows as a TNT, TIP pair in the dump.
		n=$("$VMPT" dump t.pt | awk '/ tnt/ { t = 1; next } / tip  / && t { n++ } { t = 0 } END { print n + 0 }')
		[ "$n" -gt 5 ] || fail "$what: only $n TIPs after a TNT"
		held=$((held + n))
		insns=$((insns + $(wc -l < want.i)))
		runs=$((runs + 1))
	done
done
[ "$runs" -gt 0 ] || fail "no binaries to walk"
echo "ok: $runs traces with deferred TIPs ($held TIPs after a TNT), $insns instructions: perf = truth, vmpt = perf"
