#!/bin/bash
# A loop of direct jumps that reads no trace is cut as perf cuts it
# ("Never-ending loop", perf's code 10, at the loop's IP; decoding goes on):
# - the issue's trace, 50 x (PSB, TIP.PGE, TNT) over 'jmp .': 2 jumps and the
#   error per PSB (not 4M jumps each);
# - a chain of 100,002 distinct jumps closing a loop: cut after perf's
#   intel-pt.max-loops default, 100,000 jumps and one;
# - a recording whose code changed under its trace ('jz main' become two
#   nops before 'jmp main'): vmpt script prints perf script's lines.
# usage: script-loop.sh VMPT_SYNTH
set -u
SYNTH=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() {	# check NAME WANT GOT
	[ "$2" = "$3" ] || { echo "FAIL $1: got:"; echo "$3" | head -5; echo "want:"; echo "$2" | head -5; fail=1; }
}
ERR="code 10: Never-ending loop (refer perf config intel-pt.max-loops)"

python3 - "$tmp" <<'PY'
import struct, sys
d = sys.argv[1]
pge = bytes([0x71]) + struct.pack('<Q', 0x1000)[:6]
psb = b'\x02\x82' * 8 + b'\x02\x23'
open(d + '/self.pt', 'wb').write((psb + pge + b'\xaa') * 50)
open(d + '/self.bin', 'wb').write(b'\xeb\xfe')
# 100001 'jmp next' and a jump back to the first: a cycle of 100002.
n = 100001
open(d + '/chain.bin', 'wb').write(b'\xeb\x00' * n + b'\xe9' +
                                   struct.pack('<i', -(2 * n + 5)))
open(d + '/chain.pt', 'wb').write(psb + pge + b'\xaa')
PY
timeout 60 "$VMPT" script --pt "$tmp/self.pt" --raw "$tmp/self.bin@0x1000" --itrace=be \
	> "$tmp/out" 2> /dev/null
check "jmp . status" 0 $?
check "jmp . lines" 200 "$(wc -l < "$tmp/out")"
check "jmp . errors" 50 "$(grep -c "ip 0x1000 offset 0x[0-9a-f]* $ERR\$" "$tmp/out")"
check "jmp . per PSB" "  tr strt                               0 [unknown] ([unknown]) =>             1000 [unknown] ($tmp/self.bin)
  jmp                                1000 [unknown] ($tmp/self.bin) =>             1000 [unknown] ($tmp/self.bin)
  jmp                                1000 [unknown] ($tmp/self.bin) =>             1000 [unknown] ($tmp/self.bin)
 instruction trace error type 1 time 0 cpu -1 pid -1 tid -1 ip 0x1000 offset 0x19 $ERR" "$(head -4 "$tmp/out")"

timeout 60 "$VMPT" script --pt "$tmp/chain.pt" --raw "$tmp/chain.bin@0x1000" --itrace=be \
	> "$tmp/out" 2> /dev/null
check "chain jumps" 100001 "$(grep -c '^  jmp ' "$tmp/out")"
check "chain error" " instruction trace error type 1 time 0 cpu -1 pid -1 tid -1 ip 0x1000 offset 0x19 $ERR" \
	"$(tail -1 "$tmp/out")"

# perf as the oracle: a trace of 'jz main; jmp main', decoded over 'nop;
# nop; jmp main'.
command -v perf > /dev/null || { echo "perf not found"; exit 77; }
export HOME=$tmp
printf '.globl main\nmain:\n\tjz main\n\tjmp main\n' > "$tmp/prog.s"
gcc -nostdlib -static -Wl,-e,main -o "$tmp/prog" "$tmp/prog.s"
"$SYNTH" -q --elf "$tmp/prog" --branches 3000 --psb-period 256 -o "$tmp/t"
python3 - "$tmp/prog" <<'PY'
import sys
d = bytearray(open(sys.argv[1], 'rb').read())
i = d.find(bytes([0x74, 0xfe, 0xeb, 0xfc]))
d[i:i + 2] = b'\x90\x90'
open(sys.argv[1], 'wb').write(d)
PY
for m in --itrace=be "-F ip,sym,addr --itrace=b" --itrace=cre; do
	# shellcheck disable=SC2086
	timeout 60 perf script -i "$tmp/t.perf.data" $m > "$tmp/p" 2> /dev/null
	# shellcheck disable=SC2086
	timeout 60 "$VMPT" script -i "$tmp/t.perf.data" $m 2> /dev/null |
		sed 's/ offset 0x[0-9a-f]* code / code /' > "$tmp/v"
	check "perf $m" "$(cat "$tmp/p")" "$(cat "$tmp/v")"
done
check "perf's errors" 3 "$(grep -c "$ERR" "$tmp/p")"

[ $fail = 0 ] && echo "script-loop: jmp . x50, a 100,002-jump chain, perf's lines on a changed binary"
exit $fail
