#!/bin/bash
# vmpt script -j N prints exactly what one thread prints, in every output
# mode (instructions by count, time and ticks, branches, calls and
# returns, callchains, branch stacks, IPC, disassembly, skips, errors), on
# traces cut into many pieces (a PSB every 512 bytes): user and kernel code
# with interrupts, corrupt bytes (errors, perf's resync), an overflow
# without return compression, no timing, an IP filter, a VM with two vCPUs
# (the machine and the TSC's wraps taken over from piece to piece),
# cycle-accurate timing; as raw traces and as perf.data, and a per-cpu
# recording of four processes with context switches.
# usage: script-jobs.sh VMPT_SYNTH PERCPU_MERGE
set -u
SYNTH=$1
MERGE=$2
D=$(dirname "$SYNTH")
B=/usr/bin/bash
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
runs=0

# same NAME INPUT... : every mode, -j 3 (and -j 2 for the default) against
# one thread.
same() {
	local name=$1 m
	shift
	for m in "" --itrace=b --itrace=cr --itrace=i0ns --itrace=i100ns --itrace=i5 \
		 --itrace=i1000i --itrace=bxwpe --itrace=e --call-trace --call-ret-trace \
		 --itrace=i0nsg "--itrace=bl -F+brstacksym" --itrace=i0nss100 \
		 "-F+ipc --itrace=i0ns" --insn-trace; do
		# shellcheck disable=SC2086
		"$VMPT" script "$@" $m > "$tmp/one" 2> "$tmp/one.err"
		for j in 3 2; do
			[ $j = 2 ] && [ -n "$m" ] && continue
			# shellcheck disable=SC2086
			"$VMPT" script -j $j "$@" $m > "$tmp/many" 2> "$tmp/many.err"
			runs=$((runs + 1))
			if ! cmp -s "$tmp/one" "$tmp/many" || ! cmp -s "$tmp/one.err" "$tmp/many.err"; then
				echo "FAIL $name [$m] -j $j: $(diff "$tmp/one" "$tmp/many" | sed -n 2,3p)"
				diff "$tmp/one.err" "$tmp/many.err" | head -3
				fail=1
			fi
		done
	done
	[ -s "$tmp/one" ] || { echo "FAIL $name: no output"; fail=1; }
}

# trace NAME SYNTH-ARGS... : a trace of many pieces, raw and perf.data.
trace() {
	local name=$1 rc=--retcomp
	shift
	"$SYNTH" -q --branches 5000 --psb-period 512 -o "$tmp/$name" "$@" ||
		{ echo "FAIL $name: vmpt-synth"; fail=1; return; }
	case " $* " in *" --noretcomp "*) rc=--noretcomp ;; esac
	psbs=$("$VMPT" dump --stats "$tmp/$name.pt" | awk '$1 == "psb" { print $2 }')
	[ "${psbs:-0}" -ge 8 ] || { echo "FAIL $name: only ${psbs:-0} PSBs"; fail=1; }
	if grep -q '^guest ' "$tmp/$name.images"; then
		same "$name raw" --pt "$tmp/$name.pt" --elf "$D/vmx-kernel" \
			--guest-elf "$D/guest-kernel" $rc
		same "$name perf.data" -i "$tmp/$name.perf.data" --vmlinux "$D/vmx-kernel"
	else
		same "$name raw" --pt "$tmp/$name.pt" --elf $B@0x555555554000 \
			--elf "$D/guest-kernel" $rc
		same "$name perf.data" -i "$tmp/$name.perf.data"
	fi
}

trace irq --elf $B --seed 21 --irq-period 400 --host-kernel "$D/guest-kernel"
trace corrupt --elf $B --seed 22 --corrupt 900,2000:0x02,3000
trace overflow --elf $B --seed 23 --ovf-at 5000 --noretcomp
trace timeless --elf $B --seed 24 --no-timing --branches 8000
trace filter --elf $B --seed 25 --filter 0x555555580000-0x5555555c0000
trace cyc --elf $B --seed 27 --cyc --irq-period 300
trace vm --vm --host-kernel "$D/vmx-kernel" --guest-elf "$D/guest-kernel" --vcpus 2 --seed 26

# Per-cpu: four processes on two CPUs, one switched in after another.
T0=$((0x2a00000000))
"$SYNTH" -q --branches 2000 --psb-period 512 --elf $B --seed 31 --pid 100 --tsc0 $T0 -o "$tmp/a"
"$SYNTH" -q --branches 2000 --psb-period 512 --elf /usr/bin/ls --seed 32 --pid 200 \
	--tsc0 $((T0 + 5000)) -o "$tmp/b"
"$SYNTH" -q --branches 2000 --psb-period 512 --elf /usr/bin/dash --seed 33 --pid 300 \
	--tsc0 $((T0 + 400000)) -o "$tmp/c"
"$SYNTH" -q --branches 2000 --psb-period 512 --elf $B --seed 34 --pid 400 \
	--tsc0 $((T0 + 800000)) -o "$tmp/e"
"$MERGE" "$tmp/m.data" 0:"$tmp/a.perf.data" 1:"$tmp/b.perf.data" 0:"$tmp/c.perf.data" \
	1:"$tmp/e.perf.data":100 || { echo "FAIL per-cpu: percpu_merge"; fail=1; }
same "per-cpu" -i "$tmp/m.data"

[ $fail = 0 ] && echo "script -j: $runs runs equal to one thread's"
exit $fail
