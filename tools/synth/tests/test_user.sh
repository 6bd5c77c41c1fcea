#!/bin/bash
# User-space scenario over real Debian binaries: perf script's instruction
# and branch traces of the synthesized perf.data equal the ground truth,
# with return compression on and off, with and without timing packets,
# TNT-8 and TNT-64, interrupts, many seeds.
. "$(dirname "$0")/synth-lib.sh"
: "${VMPT:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

# vmpt script's lines are perf's: branches with their trace ends, every
# instruction with its flags and addr, the default, nanosecond times.
vmpt_same() {
	vmpt_like_perf "$1" -- "" "--itrace=be -F flags,ip,addr" \
		"--itrace=i0nse -F ip,addr,flags,insn" "--itrace=i0nse --ns -F time,ip" "--call-trace"
}

total_insns=0
vruns=0
total_branches=0
runs=0
# bash and ls: dynamically linked (no syscalls in their own code);
# busybox and ldconfig: static, so the walk meets syscall instructions.
bins="/usr/bin/bash /usr/bin/ls /usr/bin/busybox /usr/sbin/ldconfig"
variants=(
	""
	"--noretcomp"
	"--no-timing"
	"--cyc"
	"--cyc --cyc-thresh 2 --mtc-freq 0 --noretcomp"
	"--tnt64 --irq-period 700"
	"--no-mtc --psb-period 2048 --irq-period 300"
)
for bin in $bins; do
	[ -x "$bin" ] || continue
	for i in "${!variants[@]}"; do
	for round in 1 2 3; do
		seed=$((round * 1000 + i * 7 + ${#bin}))
		# shellcheck disable=SC2086
		"$SYNTH" --elf "$bin" --seed "$seed" --branches 2500 \
			${variants[$i]} -o t -q ||
			fail "vmpt-synth $bin ${variants[$i]}"
		truth_insns t.insn > want.i
		perf_insns t.perf.data > got.i
		compare "instructions ($bin seed $seed ${variants[$i]})" want.i got.i
		truth_branches t.branches > want.b
		perf_branches t.perf.data > got.b
		compare "branches ($bin seed $seed ${variants[$i]})" want.b got.b
		total_insns=$((total_insns + $(wc -l < want.i)))
		total_branches=$((total_branches + $(wc -l < want.b)))
		runs=$((runs + 1))
		# vmpt script is perf's too, times to the nanosecond (CYC,
		# MTC and their estimates); without timing there are none.
		if [ "$round" = 1 ] && [ "${variants[$i]}" != "--no-timing" ]; then
			vmpt_same t.perf.data
			vruns=$((vruns + 1))
		fi
	done
	done
done
[ "$runs" -gt 0 ] || fail "no binaries to walk"
echo "perf agreed on $runs traces: $total_insns instructions, $total_branches branches; vmpt script printed perf's lines on $vruns of them"

# IP filtering: TIP.PGD where a branch leaves the region (its target in the
# packet), TIP.PGE where one enters it.  perf learns the region from the
# filter string in AUXTRACE_INFO.  The region runs from one function entry
# to another, as filters on functions do (linear flow across a boundary is
# not what perf's decoder expects; see docs/synthesizer.md).
base=0x555555554000
nm -D --defined-only /usr/bin/bash | awk '$2 ~ /^[Tt]$/ { print $1 }' | sort -u > funcs
nf=$(wc -l < funcs)
[ "$nf" -gt 100 ] || fail "too few symbols in /usr/bin/bash"
franges=0
fends=0
for seed in 1 2 3 4 5 6; do
	for cut in "10 50" "40 90"; do
		set -- $cut
		lo=$(sed -n "$((nf * $1 / 100))p" funcs)
		hi=$(sed -n "$((nf * $2 / 100))p" funcs)
		range=$(printf '0x%x-0x%x' $((base + 0x$lo)) $((base + 0x$hi)))
		"$SYNTH" --elf /usr/bin/bash --seed "$seed" --branches 3000 \
			--filter "$range" --irq-period 600 -o f -q ||
			fail "vmpt-synth --filter $range"
		truth_insns f.insn > want.i
		perf_insns f.perf.data > got.i
		compare "instructions (filter $range seed $seed)" want.i got.i
		truth_branches f.branches > want.b
		perf_branches f.perf.data > got.b
		compare "branches (filter $range seed $seed)" want.b got.b
		fends=$((fends + $(grep -c '^tr end' want.b)))
		franges=$((franges + 1))
		vmpt_same f.perf.data
	done
done
# A region cut anywhere: conditional branches leave it too.
"$SYNTH" --elf /usr/bin/bash --seed 25 --branches 5000 --psb-period 512 \
	--filter 0x555555580000-0x5555555c0000 -o f -q || fail "vmpt-synth --filter (any cut)"
grep -q 'tr end  jcc' f.branches || fail "no conditional branch leaves the region"
vmpt_same f.perf.data
echo "perf agreed on $franges IP-filtered traces with $fends trace ends; vmpt script printed perf's lines on them and one cut anywhere"

# The files themselves: perf reads the header and every record silently.
for f in t.perf.data f.perf.data; do
	perf report -i "$f" --header-only > header.txt 2> header.err ||
		fail "perf report --header-only $f: $(cat header.err)"
	[ ! -s header.err ] || fail "perf report --header-only $f: $(cat header.err)"
	grep -q '^# pmu mappings: intel_pt = 10' header.txt ||
		fail "$f: no intel_pt PMU mapping"
	perf script -i "$f" -D > dump.txt 2> dump.err || fail "perf script -D $f"
	[ ! -s dump.err ] || fail "perf script -D $f: $(head -3 dump.err)"
done
