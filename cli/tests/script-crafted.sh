#!/bin/bash
# Crafted recordings are refused with the record's offset and what is
# wrong, never decoded with undefined shifts: intel_pt's AUXTRACE_INFO
# words (MTC_FREQ_BITS wider than 4 bits, TIME_SHIFT 64, a 33-bit CTC ratio,
# a max non-turbo ratio past a byte) and TIME_CONV's time_shift; the
# words at their limits still decode; a record too short for its fields.
# usage: script-crafted.sh VMPT_SYNTH
set -u
SYNTH=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() {	# check NAME WANT GOT
	[ "$2" = "$3" ] || { echo "FAIL $1: got:"; echo "$3" | head -5; echo "want:"; echo "$2" | head -5; fail=1; }
}
"$SYNTH" -q --elf /usr/bin/bash --branches 2000 -o "$tmp/t"

# patch TYPE WORD VALUE OUT: the first record of TYPE with its u64 at WORD
# (after the 8-byte header) set to VALUE; prints the record's offset.
patch() {
	python3 - "$tmp/t.perf.data" "$@" <<'PY'
import struct, sys
src, rtype, word, value, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4], 0), sys.argv[5]
d = bytearray(open(src, 'rb').read())
off, size = struct.unpack_from('<QQ', d, 40)
pos = off
while pos < off + size:
    t, misc, sz = struct.unpack_from('<IHH', d, pos)
    if t == rtype:
        struct.pack_into('<Q', d, pos + 8 + 8 * word, value)
        open(out, 'wb').write(d)
        print('%#x' % pos)
        break
    pos += sz
PY
}
# AUXTRACE_INFO (70): type and reserved, then priv[]: its word 1 + index.
info() {	# info NAME INDEX VALUE MESSAGE
	local at
	at=$(patch 70 $(($2 + 1)) "$3" "$tmp/$1.data")
	"$VMPT" script -i "$tmp/$1.data" > /dev/null 2> "$tmp/err"
	check "$1: status" 1 $?
	check "$1" "vmpt script: $tmp/$1.data: offset $at: AUXTRACE_INFO intel_pt $4" "$(cat "$tmp/err")"
}
info mtc-freq 11 0xff0000 "MTC_FREQ_BITS 0xff0000 (a field of at most 4 bits)"
info time-shift 1 64 "TIME_SHIFT 64 (at most 63)"
info ctc-d 13 0x100000000 "TSC_CTC_D 4294967296 (at most 4294967295)"
info nonturbo 15 256 "MAX_NONTURBO_RATIO 256 (at most 255)"

at=$(patch 79 0 200 "$tmp/tc.data")
"$VMPT" script -i "$tmp/tc.data" > /dev/null 2> "$tmp/err"
check "TIME_CONV: status" 1 $?
check "TIME_CONV" "vmpt script: $tmp/tc.data: offset $at: TIME_CONV time_shift 200 (at most 63)" \
	"$(cat "$tmp/err")"

# At the limits: a 4-bit MTC field at bit 0, the widest ratio.
for w in "11 0xf" "15 255" "1 63"; do
	# shellcheck disable=SC2086
	patch 70 $((${w% *} + 1)) ${w#* } "$tmp/ok.data" > /dev/null
	"$VMPT" script -i "$tmp/ok.data" > "$tmp/out" 2> "$tmp/err"
	check "limit $w: status" 0 $?
	check "limit $w: stderr" "" "$(cat "$tmp/err")"
	[ "$(wc -l < "$tmp/out")" -gt 400 ] || { echo "FAIL limit $w: $(wc -l < "$tmp/out") lines"; fail=1; }
done

# fuzz-perf-data's first finding (minimized): perf's pipe header and a
# 9-byte MMAP record with no sample_id, once read 32 bytes deep.
printf 'PERFILE2\020\0\0\0\0\0\0\0\001\0\0\0\010\0\011\0\0\0\0' > "$tmp/short.data"
"$VMPT" script -i "$tmp/short.data" > /dev/null 2> "$tmp/err"
check "short MMAP: status" 1 $?
check "short MMAP" "vmpt script: $tmp/short.data: offset 0x10: MMAP record size 9 too small for its fields (41 bytes)" \
	"$(cat "$tmp/err")"

[ $fail = 0 ] && echo "script-crafted: 5 bad words refused with their offsets, the limits decode"
exit $fail
