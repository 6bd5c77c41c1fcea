#!/bin/sh
# vmpt's instruction decoder (decoder/flow/vmpt_insn.c: length, control
# flow class, direct target) agrees with binutils 2.40's objdump -d, which
# knows AVX-512, AMX and CET, on every instruction objdump decodes in every
# executable section of Debian's glibc (64- and 32-bit), libstdc++, ld.so,
# libgcc_s, perf, QEMU, LLVM and the Debian kernel
# (tools/fetch-debian-kernel.sh): 21.9 million instructions.  The disagreements are exactly the pinned
# ones (insn_sweep.pinned: the encoding, both answers, and why).
# objdump's listings are cached zstd-compressed in ~/.cache/vmpt/objdump,
# keyed by the file's sha256 and objdump's version, and made when absent.
# usage: insn_sweep_test.sh INSN_SWEEP
set -eu
SWEEP=$1
T=$SRCDIR/decoder/flow/tests
cache=${XDG_CACHE_HOME:-$HOME/.cache}/vmpt/objdump
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

command -v zstd > /dev/null || fail "zstd is missing (tools/install-deps.sh)"
mkdir -p "$cache"
K=$("$SRCDIR/tools/fetch-debian-kernel.sh" 2> "$out/fetch.err") ||
	fail "no Debian kernel: $(tail -1 "$out/fetch.err")"
L=/usr/lib/x86_64-linux-gnu
# FILE MODE (libgcc_s: CET shadow-stack code, rdsspq and incsspq, in its
# unwinder)
set -- "$L/libc.so.6 64" "$L/libstdc++.so.6 64" "/lib64/ld-linux-x86-64.so.2 64" \
	"$L/libgcc_s.so.1 64" "/usr/bin/perf 64" "/usr/bin/qemu-system-x86_64 64" \
	"$L/libLLVM-14.so.1 64" \
	"$K/vmlinux 64" "/usr/lib32/libc.so.6 32"
odver=$(objdump --version | head -1)
total=0
for c in "$@"; do
	f=${c% *}
	mode=${c##* }
	[ -f "$f" ] || fail "$f is missing (tools/install-deps.sh)"
	key=$( (sha256sum < "$f"; echo "$odver") | sha256sum | cut -c1-16)
	lst=$cache/$(basename "$f")-$key.lst.zst
	if [ ! -f "$lst" ]; then
		objdump -d -M intel64 --insn-width=16 "$f" | awk -f "$T/objdump_insns.awk" |
			zstd -q -3 > "$lst.tmp"
		mv "$lst.tmp" "$lst"
	fi
	zstd -dcq "$lst" > "$out/lst"
	"$SWEEP" --mode "$mode" "$f" "$out/lst" > "$out/sweep" || fail "$f: insn_sweep failed"
	tail -1 "$out/sweep"
	grep '^DIFF' "$out/sweep" | sed 's/ (at [0-9a-f]*)$//' >> "$out/diffs" || true
	n=$(tail -1 "$out/sweep" | sed 's/.*: \([0-9]*\) instructions.*/\1/')
	total=$((total + n))
done
rm -f "$out/lst"
touch "$out/diffs"
sort -u "$out/diffs" > "$out/seen"
grep -v '^#' "$T/insn_sweep.pinned" | cut -f1 | sort -u > "$out/pinned"
if ! cmp -s "$out/seen" "$out/pinned"; then
	echo "disagreements not pinned (+) or pinned but not seen (-):"
	diff "$out/pinned" "$out/seen" | grep '^[<>]' | sed 's/^</-/; s/^>/+/'
	fail "objdump and vmpt_insn disagree"
fi
echo "ok: $total instructions, $(wc -l < "$out/seen") pinned disagreements"
