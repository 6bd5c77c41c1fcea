#!/bin/bash
# Internal buffer overflows in the VM scenario, swept over the trace: OVF
# inside a guest, and windows that lose VM exits and entries.  The truth's
# "# overflow window" marker says where the window began and where tracing
# resumed.  perf must report the overflow and show a prefix of the truth
# before it; after it:
# - resumed in the machine it began in (inside a guest; guest to guest
#   across an exit and an entry; host to host across an entry and an exit):
#   exactly the truth's instructions and branches from the FUP on (a trace
#   start at its IP first);
# - resumed in the other machine: the PIP that said so was lost (OVF is
#   followed by FUP only), so perf decodes that code as the other machine's
#   until a PIP tells it; from the next PSB+ on, exactly the truth.
# Also one per-thread trace (vCPU threads) with an overflow in a guest:
# exact from the FUP on, in that thread's buffer.
. "$(dirname "$0")/synth-lib.sh"
: "${VMX_KERNEL:?}" "${GUEST_KERNEL:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

KERNELS=(--vmlinux "$VMX_KERNEL" --guestvmlinux "$GUEST_KERNEL")

# before.txt, after.txt (after perf's last error), error.txt (its first)
split_error() {
	awk '/instruction trace error/ { n = NR } END { print n + 0 }' "$1" > last.n
	rm -f before.txt after.txt error.txt
	awk -v b=before.txt -v a=after.txt -v e=error.txt -v last="$(cat last.n)" '
		/instruction trace error/ && !seen { seen = 1; print > e }
		!seen { print > b }
		NR > last { print > a }' "$1"
	touch before.txt after.txt error.txt
}

declare -A classes
n=0
for seed in 3 4; do
	for at in $(seq 2000 1500 17000); do
		for lost in 20 300; do
			"$SYNTH" --vm --host-kernel "$VMX_KERNEL" --guest-elf "$GUEST_KERNEL" \
				--guest-start start_kernel --branches 8000 --guest-period 500 \
				--vcpus 2 --psb-period 1024 --seed "$seed" --ovf-at "$at:$lost" \
				-o ov -q || fail "vmpt-synth --ovf-at $at:$lost"
			what="seed $seed, --ovf-at $at:$lost"
			perf script -i ov.perf.data --itrace=i0nse -F ip "${KERNELS[@]}" 2>/dev/null |
				awk '/instruction trace error/ { print; next } { print $1 }' > got
			split_error got
			grep -q "code 7: Overflow packet" error.txt ||
				fail "$what: perf reported no overflow: $(cat error.txt)"
			marker=$(grep -n '^# overflow: ' ov.insn)
			line=${marker%%:*}
			block=${marker##* }
			window=$(sed -n 's/^# overflow window: began in \([a-z]*\), resumed in \([a-z]*\), \([0-9]*\) VM exits and \([0-9]*\) VM entries lost$/\1 \2 \3 \4/p' ov.insn)
			set -- $window
			[ $# = 4 ] || fail "$what: no overflow window in the truth"
			grep -v '^#' ov.insn > all
			b=$(wc -l < before.txt)
			[ "$b" -lt "$block" ] || fail "$what: perf shows $b instructions, lost from $block"
			head -n "$b" all > want.before
			compare "instructions before the overflow ($what)" want.before before.txt
			if [ "$1" = "$2" ]; then
				tail -n +$((line + 1)) ov.insn | grep -v '^#' > want.after
				compare "instructions after the overflow ($what, $window)" \
					want.after after.txt
				# branches: from the trace start at the FUP on
				perf script -i ov.perf.data --itrace=be -F flags,ip,addr \
					"${KERNELS[@]}" 2>/dev/null > raw.b
				bl=$(grep -n "instruction trace error" raw.b | tail -1 | cut -d: -f1)
				tail -n +$((bl + 1)) raw.b | awk '{ to = $NF; from = $(NF-2); f = "";
					for (i = 1; i <= NF-3; i++) f = f (f == "" ? "" : " ") $i;
					if (f == "bcyh") f = "vmexit"; print f "|" from "|" to }' > got.b
				mb=$(grep -n '^# overflow:' ov.branches | cut -d: -f1)
				tail -n +$((mb + 1)) ov.branches > rest.b
				truth_branches rest.b > want.b
				compare "branches after the overflow ($what, $window)" want.b got.b
				if [ "$3$4" = 00 ]; then class="inside the $1"
				else class="$1 to $2 across $3 exits, $4 entries"; fi
				class=${class/across*/across exits and entries}
			else
				next=$(tail -n +"$line" ov.insn |
					sed -n 's/^# psb+ at [0-9]* next \([0-9]*\).*/\1/p' | head -1)
				[ -n "$next" ] || fail "$what: no PSB+ after the overflow"
				tail -n +"$next" all > want.t
				tail -n "$(wc -l < want.t)" got > got.t
				compare "instructions from the PSB+ after the overflow ($what, $window)" \
					want.t got.t
				class="$1 to $2"
			fi
			classes[$class]=$(( ${classes[$class]:-0} + 1 ))
			n=$((n + 1))
		done
	done
done
for c in "inside the guest" "guest to guest across exits and entries" \
	 "host to host across exits and entries" "host to guest" "guest to host"; do
	[ -n "${classes[$c]:-}" ] || fail "no overflow window $c"
done

# vCPU threads, per thread: the window belongs to the buffer of the thread
# that overflowed; perf, thread by thread, is exact from its FUP on.
"$SYNTH" --vm --host-kernel "$VMX_KERNEL" --guest-elf "$GUEST_KERNEL" \
	--guest-start start_kernel --branches 7000 --guest-period 500 --vcpus 2 \
	--per-thread --cpus 2 --seed 3 --ovf-at 4000:20 -o ovt -q || fail "vmpt-synth --per-thread --ovf-at"
marker=$(grep -n '^# overflow: ' ovt.insn)
tid=$(sed -n 's/^# overflow: .* tid \([0-9]*\) cpu.*/\1/p' ovt.insn)
grep -q '^# overflow window: began in guest, resumed in guest, 0 VM' ovt.insn ||
	fail "per-thread: the overflow is not inside a guest"
perf script -i ovt.perf.data --itrace=i0nse -F tid,ip "${KERNELS[@]}" 2>/dev/null |
	awk -v t="$tid" '/instruction trace error/ { if ($0 ~ "tid " t " ") print; next }
		$1 == t { print $2 }' > got
split_error got
grep -q "code 7: Overflow packet" error.txt || fail "per-thread: no overflow in thread $tid"
tail -n +$((${marker%%:*} + 1)) ovt.insn | awk -v t="$tid" '!/^#/ && $2 == t { print $1 }' > want.after
compare "per-thread: thread $tid after the overflow" want.after after.txt

summary=$(for c in "${!classes[@]}"; do echo "${classes[$c]} $c"; done | sort -k2 | paste -sd, | sed 's/,/, /g')
echo "perf agreed on $n overflows in VM traces ($summary) and one in a vCPU thread's buffer"
