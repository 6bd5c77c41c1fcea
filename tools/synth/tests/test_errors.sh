#!/bin/bash
# Losses and corruption.  An internal buffer overflow loses the packets of
# a stretch of execution and the trace says OVF, then FUP where it resumed:
# perf must report the overflow, show the instructions whose branches it
# could still decode, and from the FUP on exactly the truth.  A corrupted
# byte (a reserved opcode at a packet start) must be reported as a bad
# packet, and from the next PSB on decoding must be exactly the truth.
. "$(dirname "$0")/synth-lib.sh"
: "${VMPT:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

# split_error FILE: perf's output before its first error line (before.txt),
# after its last one (after.txt), and the first error (error.txt).
split_error() {
	awk '/instruction trace error/ { n = NR } END { print n + 0 }' "$1" > last.n
	awk -v b=before.txt -v a=after.txt -v e=error.txt -v last="$(cat last.n)" '
		/instruction trace error/ && !seen { seen = 1; print > e }
		!seen { print > b }
		NR > last { print > a }' "$1"
	touch before.txt after.txt error.txt
}

n_ovf=0
for case in "1 5000:400" "2 3000:50" "3 7000:2000" "4 12000:10"; do
	set -- $case
	rm -f before.txt after.txt error.txt
	"$SYNTH" --elf /usr/bin/bash --seed "$1" --branches 4000 --ovf-at "$2" \
		--irq-period 900 -o ov -q || fail "vmpt-synth --ovf-at $2"
	perf script -i ov.perf.data --itrace=i0nse -F ip 2>/dev/null |
		awk '/instruction trace error/ { print; next } { print $1 }' > got
	split_error got
	grep -q "code 7: Overflow packet" error.txt ||
		fail "ovf $2: perf reported no overflow: $(cat error.txt)"
	marker=$(grep -n '^# overflow' ov.insn)
	line=${marker%%:*}
	block=${marker##* }
	# before: a prefix of the truth that stops no later than the basic
	# block whose branch was lost (perf also holds back instruction
	# samples it has walked when the error comes, so not exactly there)
	n=$(wc -l < before.txt)
	[ "$n" -lt "$block" ] || fail "ovf $2: perf shows $n instructions, lost from $block"
	grep -v '^#' ov.insn | head -n "$n" > want.before
	compare "instructions before the overflow ($2)" want.before before.txt
	# after: exactly the truth from where the FUP resumed
	tail -n +$((line + 1)) ov.insn | grep -v '^#' > want.after
	compare "instructions after the overflow ($2)" want.after after.txt
	n_ovf=$((n_ovf + 1))
done

n_bad=0
for seed in 5 6 7; do
	"$SYNTH" --elf /usr/bin/bash --seed "$seed" --branches 8000 \
		--psb-period 2048 -o c -q --no-perf || fail "vmpt-synth"
	# a TNT packet's first byte, before the second PSB
	psb=$(sed -n 's/^# psb+ at \([0-9]*\) next \([0-9]*\)$/\1 \2/p' c.insn | head -1)
	[ -n "$psb" ] || fail "no second PSB in the trace"
	set -- $psb
	psb_at=$1
	psb_next=$2
	# the first TNT-8 packet after offset 100 and before that PSB
	# (vmpt dump lists packets with their offsets)
	off=$("$VMPT" dump c.pt | python3 -c '
import sys
lim = int(sys.argv[1])
for line in sys.stdin:
    f = line.split()
    if len(f) > 1 and f[1] == "tnt.8" and 100 < int(f[0], 16) < lim:
        print(int(f[0], 16)); break' "$psb_at")
	[ -n "$off" ] || fail "no TNT packet to corrupt"
	"$SYNTH" --elf /usr/bin/bash --seed "$seed" --branches 8000 \
		--psb-period 2048 --corrupt "$off" -o c -q || fail "vmpt-synth --corrupt"
	rm -f before.txt after.txt error.txt
	perf script -i c.perf.data --itrace=i0nse -F ip 2>/dev/null |
		awk '/instruction trace error/ { print; next } { print $1 }' > got
	split_error got
	grep -q "code 3: Bad packet" error.txt ||
		fail "corrupt $off: perf said: $(cat error.txt)"
	grep -v '^#' c.insn > all
	head -n "$(wc -l < before.txt)" all > want.before
	compare "instructions before the bad packet (offset $off)" want.before before.txt
	# perf steps over the bad byte and stumbles on (reporting errors) until
	# it is back in sync; its return-compression stack keeps what the
	# misread stretch pushed until the next PSB clears it, so a compressed
	# return can still take it astray after its last error.  From the
	# next PSB on, it must show exactly the rest of the truth.
	want_n=$(( $(wc -l < all) - psb_next + 1 ))
	[ "$(wc -l < after.txt)" -ge "$want_n" ] ||
		fail "corrupt $off: perf is not in sync at the PSB"
	tail -n +"$psb_next" all > want.after
	tail -n "$want_n" after.txt > got.after
	compare "instructions from the PSB after the bad packet (offset $off)" \
		want.after got.after
	n_bad=$((n_bad + 1))
done
echo "perf agreed on $n_ovf overflows and $n_bad corrupted traces"
