#!/bin/sh
# Code real glibc programs run on AVX-512 machines (glibc picks its *_evex
# string functions there: EVEX-encoded AVX-512VL/BW, which capstone 4
# cannot decode): the synthesizer walks Debian's libc.so.6 from each of
# them (its own decoder, Zydis), and vmpt script (raw trace and perf.data,
# no hint options) and perf script 6.1 print exactly the truth, every
# instruction's bytes included (-F ip,insn) where perf and vmpt print them.
# The same from each CET rdsspq in libgcc_s's unwinder (rdsspq, incsspq).
# The test counts the EVEX and CET instructions the traces ran.
# Symbols of libc's local functions come from libc6-dbg's debug file.
# usage: synth_glibc_test.sh VMPT_SYNTH
set -eu
SYNTH=$1
LIBC=/usr/lib/x86_64-linux-gnu/libc.so.6
BASE=0x555555554000
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

id=$(readelf -n "$LIBC" | awk '/Build ID/ { print $3 }')
dbg=/usr/lib/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug
[ -f "$dbg" ] || fail "no debug file $dbg for $LIBC (libc6-dbg, tools/install-deps.sh)"
nm "$dbg" | awk '$2 ~ /^[tT]$/ && $3 ~ /_evex$/ { print $1, $3 }' | sort -u -k2 > "$out/funcs"
[ "$(wc -l < "$out/funcs")" -ge 20 ] || fail "fewer than 20 *_evex functions in $dbg"

insns=0 evex=0 cet=0 seed=0
# $1: ELF, $2: its file address to start at, $3: name
walk() {
	seed=$((seed + 1))
	start=$(printf '0x%x' $((BASE + 0x$2)))
	"$SYNTH" -q --branches 300 --elf "$1" --start "$start" --seed $seed \
		--irq-period 500 -o "$out/t" || fail "$3: vmpt-synth failed"
	grep -v '^#' "$out/t.insn" > "$out/truth"
	"$VMPT" script --pt "$out/t.pt" --elf "$1@$BASE" --itrace=i0ns -F ip |
		sed 's/^ *//' > "$out/raw"
	cmp -s "$out/truth" "$out/raw" ||
		fail "$3: vmpt script --pt: $(wc -l < "$out/raw") instructions, truth $(wc -l < "$out/truth"): $(diff "$out/truth" "$out/raw" | sed -n 2p)"
	perf script -i "$out/t.perf.data" --itrace=i0ns -F ip,insn 2>/dev/null > "$out/perf"
	"$VMPT" script -i "$out/t.perf.data" --itrace=i0ns -F ip,insn > "$out/vpd"
	awk '{ print $1 }' "$out/perf" > "$out/perfip"
	cmp -s "$out/truth" "$out/perfip" || fail "$3: perf script differs from the truth"
	cmp -s "$out/perf" "$out/vpd" ||
		fail "$3: vmpt script -i differs from perf script: $(diff "$out/perf" "$out/vpd" | sed -n 2,3p)"
	insns=$((insns + $(wc -l < "$out/truth")))
	evex=$((evex + $(grep -c 'insn: 62 ' "$out/vpd" || true)))
	# rdsspq, incsspq: F3 REX.W 0F 1E /1, F3 REX.W 0F AE /5 (registers)
	cet=$((cet + $(grep -cE 'insn: f3 4[89a-f] 0f (1e c[89a-f]|ae e[89a-f])' "$out/vpd" || true)))
}

while read -r addr name; do
	walk "$LIBC" "$addr" "$name"
done < "$out/funcs"
[ "$evex" -gt 0 ] || fail "the traces ran no EVEX instruction"
# CET shadow-stack code: libgcc_s's unwinder, from each rdsspq on.
GCC=/usr/lib/x86_64-linux-gnu/libgcc_s.so.1
objdump -d "$GCC" | awk '/\trdsspq/ { sub(/:.*/, ""); print $1 }' > "$out/rdssp"
[ -s "$out/rdssp" ] || fail "no rdsspq in $GCC"
while read -r addr; do
	for k in 1 2 3; do
		walk "$GCC" "$addr" "libgcc_s rdsspq at 0x$addr ($k)"
	done
done < "$out/rdssp"
[ "$cet" -gt 0 ] || fail "the traces ran no rdsspq/incsspq"
echo "ok: $seed walks, $insns instructions ($evex EVEX, $cet rdsspq/incsspq) equal for vmpt, perf and the truth"
