#!/bin/bash
# vmpt script and vmpt dump read a recording from a pipe (-i -, as perf's
# pipe mode: perf record -o - | vmpt script -i -) the same as from its
# file, perf's pipe-mode format included (perf script's lines of the file);
# a recording cut off (perf record killed, a disk full) is read up to
# where it ends with a warning naming the offset: cut in its feature
# section everything decodes, cut in its data the trace decodes up to the
# cut, a prefix of the whole recording's lines.
# usage: script-input.sh VMPT_SYNTH
set -u
SYNTH=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() {	# check NAME WANT GOT
	[ "$2" = "$3" ] || { echo "FAIL $1: got:"; echo "$3"; echo "want:"; echo "$2"; fail=1; }
}

"$SYNTH" -q --branches 3000 --elf /usr/bin/bash --seed 11 -o "$tmp/t"
F=$tmp/t.perf.data
"$VMPT" script -i "$F" --itrace=bi0ns > "$tmp/file"
"$VMPT" script -i - --itrace=bi0ns < "$F" > "$tmp/pipe" || { echo "FAIL -i -"; fail=1; }
cmp -s "$tmp/file" "$tmp/pipe" || { echo "FAIL -i -: differs"; fail=1; }
cat "$F" | "$VMPT" script -i /dev/stdin --itrace=bi0ns > "$tmp/pipe2" ||
	{ echo "FAIL /dev/stdin"; fail=1; }
cmp -s "$tmp/file" "$tmp/pipe2" || { echo "FAIL /dev/stdin: differs"; fail=1; }
cmp -s <("$VMPT" dump "$F") <(cat "$F" | "$VMPT" dump -) || { echo "FAIL dump -"; fail=1; }
cmp -s <("$VMPT" dump "$tmp/t.pt") <("$VMPT" dump - < "$tmp/t.pt") ||
	{ echo "FAIL dump - (raw)"; fail=1; }

# perf's pipe mode, as perf record -o - writes it: the lines perf script
# prints for the recording's file (perf's own decoding of a pipe "cannot
# be relied upon", it warns, and reports bad packets at its end).
if command -v perf > /dev/null && perf inject -i "$F" -o - > "$tmp/pipe.data" 2> /dev/null; then
	perf script -i "$F" > "$tmp/p" 2> /dev/null
	"$VMPT" script -i - < "$tmp/pipe.data" > "$tmp/v"
	cmp -s "$tmp/p" "$tmp/v" || { echo "FAIL pipe mode: $(diff "$tmp/p" "$tmp/v" | head -3)"; fail=1; }
	[ -s "$tmp/v" ] || { echo "FAIL pipe mode: nothing"; fail=1; }
fi

# Cut in its feature section: every line, and a warning.
data_off=$(od -An -t u8 -j 40 -N 8 "$F" | tr -d ' ')
data_size=$(od -An -t u8 -j 48 -N 8 "$F" | tr -d ' ')
end=$((data_off + data_size))
head -c $((end + 24)) "$F" > "$tmp/cut1.data"
"$VMPT" script -i "$tmp/cut1.data" --itrace=bi0ns > "$tmp/cut1" 2> "$tmp/err"
check "cut in features: rc" 0 $?
cmp -s "$tmp/file" "$tmp/cut1" || { echo "FAIL cut in features: lines differ"; fail=1; }
check "cut in features: warning" "vmpt: warning: $tmp/cut1.data: offset $(printf '%#x' $end): the file ends (at $((end + 24)) bytes) in its feature section: feature 2 and later ones lost" "$(cat "$tmp/err")"

# Cut in its data (inside the AUXTRACE data): the trace up to the cut.
size=$(stat -c %s "$F")
cut=$((end - 600))
head -c $cut "$F" > "$tmp/cut2.data"
"$VMPT" script -i "$tmp/cut2.data" --itrace=bi0ns > "$tmp/cut2" 2> "$tmp/err"
check "cut in data: rc" 0 $?
head -n 1 "$tmp/err" | grep -qx "vmpt: warning: $tmp/cut2.data: offset 0x30: data section (offset $(printf '%#x' "$data_off"), size $data_size) goes beyond the end of the file ($cut bytes): the file was cut, read up to where it ends" ||
	{ echo "FAIL cut in data: $(cat "$tmp/err")"; fail=1; }
n=$(grep -vc '^ instruction trace error' "$tmp/cut2")
[ "$n" -gt 100 ] || { echo "FAIL cut in data: $n lines"; fail=1; }
# Up to the error where the trace ends, the whole recording's lines.
grep -v '^ instruction trace error' "$tmp/cut2" | cmp -s - <(head -n "$n" "$tmp/file") ||
	{ echo "FAIL cut in data: not a prefix of the whole"; fail=1; }
"$VMPT" dump "$tmp/cut2.data" > /dev/null 2> "$tmp/err"
check "dump cut: rc" 0 $?
[ $fail = 0 ] && echo "input: pipes and cut recordings read"
[ "$size" -gt 0 ] && exit $fail
