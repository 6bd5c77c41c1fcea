#!/bin/sh
# vmpt script against the synthesizer's ground truth and against perf script
# on the same perf.data, over a real Debian binary, many seeds, return
# compression on and off, interrupts, TNT-64, cycle-accurate timing, an
# overflow, and the VM scenario (host kernel + guest, VMCS/PIP.NR).
# Raw traces decode with no hint: return compression on or off, vmpt reads
# it from the trace (--noretcomp only as an override, checked once).
# Also libipt's instruction decoder on the same traces, with errors injected.
# Sideband: pid/tid/comm as perf's, per-process address spaces, a
# per-cpu recording of three programs at the same addresses on two CPUs
# with a context switch, merged in time order.  IPC (-F ipc) as perf's:
# cycle-accurate traces, estimated from MTC, none without timing.
# usage: synth_test.sh VMPT_SYNTH FLOW_VS_LIBIPT PERCPU_MERGE
set -eu
SYNTH=$1
VS_LIBIPT=$2
MERGE=$3
D=$(cd "$(dirname "$SYNTH")" && pwd)	# absolute: perf.data names files by path
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
bin=/usr/bin/bash
checked=0
ipc_lines=0 ipc_all=0

# $1: name, rest: synth options.  Exact equality with the ground truth,
# with no return compression option.
truth() {
	name=$1; shift
	"$SYNTH" -q --branches 20000 "$@" -o "$out/t"
	# shellcheck disable=SC2086
	"$VMPT" script --pt "$out/t.pt" $IMAGES --itrace=i0ns -F ip |
		sed 's/^ *//' > "$out/vmpt"
	grep -v '^#' "$out/t.insn" > "$out/truth"
	cmp -s "$out/truth" "$out/vmpt" ||
		fail "$name: $(wc -l < "$out/vmpt") instructions, truth has $(wc -l < "$out/truth"); first difference: $(diff "$out/truth" "$out/vmpt" | sed -n 2p)"
	checked=$((checked + $(wc -l < "$out/truth")))
}

# IPC as perf shows it (cycles from CYC, or estimated from MTC without
# CYC; none without timing): the same branch and instruction lines.
ipc_same() {
	name=$1
	for it in b i0ns; do
		F=ip,ipc
		[ $it = b ] && F=ip,addr,ipc
		perf script -i "$out/t.perf.data" --itrace=$it -F $F 2>/dev/null > "$out/perfc"
		"$VMPT" script -i "$out/t.perf.data" --itrace=$it -F $F > "$out/vpdc"
		cmp -s "$out/perfc" "$out/vpdc" ||
			fail "$name: --itrace=$it -F $F differs from perf script: $(diff "$out/perfc" "$out/vpdc" | sed -n 2,4p)"
		n=$(grep -c 'IPC: ' "$out/vpdc" || true)
		case $name in
		timeless) [ "$n" -eq 0 ] || fail "$name: IPC without timing" ;;
		*) [ "$n" -gt 0 ] || fail "$name: no IPC on --itrace=$it" ;;
		esac
		ipc_lines=$((ipc_lines + n))
		ipc_all=$((ipc_all + $(wc -l < "$out/vpdc")))
	done
}

# perf script on the synthesizer's perf.data: same instruction addresses,
# and vmpt reading the same perf.data prints the same lines.
perf_same() {
	name=$1
	ipc_same "$name"
	perf script -i "$out/t.perf.data" --itrace=i0ns -F ip 2>/dev/null |
		sed 's/^ *//' > "$out/perf"
	[ -s "$out/perf" ] || fail "$name: perf script printed nothing"
	"$VMPT" script -i "$out/t.perf.data" --itrace=i0ns -F ip | sed 's/^ *//' > "$out/vpd"
	cmp -s "$out/perf" "$out/vpd" ||
		fail "$name: vmpt on perf.data differs from perf script: $(diff "$out/perf" "$out/vpd" | sed -n 2p)"
	perf script -i "$out/t.perf.data" --itrace=b -F flags,ip,addr,sym,symoff,dso \
		2>/dev/null > "$out/perfb"
	"$VMPT" script -i "$out/t.perf.data" --itrace=b -F flags,ip,addr,sym,symoff,dso \
		> "$out/vpdb"
	cmp -s "$out/perfb" "$out/vpdb" ||
		fail "$name: branch lines differ from perf script: $(diff "$out/perfb" "$out/vpdb" | sed -n 2,4p)"
	perf script -i "$out/t.perf.data" --itrace=i1000i -F ip,sym,symoff,dso \
		2>/dev/null > "$out/perfp"
	"$VMPT" script -i "$out/t.perf.data" --itrace=i1000i -F ip,sym,symoff,dso > "$out/vpdp"
	cmp -s "$out/perfp" "$out/vpdp" ||
		fail "$name: i1000i samples differ from perf script: $(diff "$out/perfp" "$out/vpdp" | sed -n 2,4p)"
	perf script -i "$out/t.perf.data" --itrace=b -F pid,tid,comm,cpu,ip,sym,dso \
		2>/dev/null > "$out/perfs"
	"$VMPT" script -i "$out/t.perf.data" --itrace=b -F pid,tid,comm,cpu,ip,sym,dso \
		> "$out/vpds"
	cmp -s "$out/perfs" "$out/vpds" ||
		fail "$name: pid/tid/comm lines differ from perf script: $(diff "$out/perfs" "$out/vpds" | sed -n 2,4p)"
	# Times to the nanosecond (cycle-accurate traces: perf refines the
	# cycle-to-TSC ratio by looking ahead, vmpt does not; timeless traces
	# have none).
	case $name in *cyc*|timeless) return ;; esac
	# Time periods: the same instructions as perf's (after an overflow
	# perf counts them differently; with i100ns one sample of seed 7
	# differs).
	case $name in overflow) return ;; esac
	for p in i1us; do
		perf script -i "$out/t.perf.data" --itrace=$p -F ip 2>/dev/null > "$out/perfi"
		"$VMPT" script -i "$out/t.perf.data" --itrace=$p -F ip > "$out/vpdi"
		cmp -s "$out/perfi" "$out/vpdi" ||
			fail "$name: --itrace=$p samples differ from perf script: $(diff "$out/perfi" "$out/vpdi" | sed -n 2,4p)"
	done
	perf script -i "$out/t.perf.data" --ns --itrace=b -F time,flags,ip,addr \
		2>/dev/null > "$out/perft"
	"$VMPT" script -i "$out/t.perf.data" --ns --itrace=b -F time,flags,ip,addr > "$out/vpdt"
	cmp -s "$out/perft" "$out/vpdt" ||
		fail "$name: branch times differ from perf script: $(diff "$out/perft" "$out/vpdt" | sed -n 2,4p)"
}

IMAGES="--elf $bin@0x555555554000"
for seed in 1 2 3 4 5 6; do
	truth "bash seed $seed" --elf $bin --seed $seed
	perf_same "bash seed $seed"
done
# Pieces decoded in parallel join exactly (a small PSB period: many pieces).
"$SYNTH" -q --branches 20000 --elf $bin --seed 15 --psb-period 2048 -o "$out/t"
"$VMPT" script -j 3 --pt "$out/t.pt" $IMAGES --itrace=i0ns -F ip |
	sed 's/^ *//' > "$out/vmptj"
grep -v '^#' "$out/t.insn" > "$out/truth"
cmp -s "$out/truth" "$out/vmptj" || fail "-j 3 differs from the truth"
# The same on its perf.data, sideband fields included.
"$VMPT" script -j 3 -i "$out/t.perf.data" --itrace=i0ns -F pid,tid,comm,ip,sym > "$out/pdj"
"$VMPT" script -i "$out/t.perf.data" --itrace=i0ns -F pid,tid,comm,ip,sym > "$out/pd1"
cmp -s "$out/pd1" "$out/pdj" || fail "-j 3 on perf.data differs from one thread"

for seed in 7 8 9; do
	truth "bash seed $seed noretcomp" --elf $bin --seed $seed --noretcomp
	perf_same "bash seed $seed noretcomp"
done
# The override: --noretcomp on this trace (recorded so) is the truth too;
# on one recorded with return compression every compressed RET is an
# error, as in perf's decoder for a noretcomp recording.
"$VMPT" script --pt "$out/t.pt" $IMAGES --noretcomp --itrace=i0ns -F ip |
	sed 's/^ *//' > "$out/vmpt"
cmp -s "$out/truth" "$out/vmpt" || fail "--noretcomp on a noretcomp trace differs from the truth"
"$SYNTH" -q --branches 20000 --elf $bin --seed 9 -o "$out/t"
"$VMPT" script --pt "$out/t.pt" $IMAGES --noretcomp --itrace=e > "$out/e"
grep -q "code 6: Trace doesn.t match instruction" "$out/e" ||
	fail "--noretcomp on a compressed trace: no mismatch error: $(head -2 "$out/e")"
"$VMPT" script --pt "$out/t.pt" $IMAGES --retcomp --itrace=e > "$out/e"
[ ! -s "$out/e" ] || fail "--retcomp: errors: $(head -2 "$out/e")"
truth "interrupts" --elf $bin --seed 10 --irq-period 300
perf_same "interrupts"
truth "tnt64" --elf $bin --seed 11 --tnt64
perf_same "tnt64"
truth "cyc" --elf $bin --seed 12 --cyc
perf_same "cyc"
# More cycle-accurate traces for IPC: seeds, return compression off,
# interrupts, a CYC threshold (IPC only where a CYC comes right before
# the packet), an overflow.
for seed in 16 17 18; do
	"$SYNTH" -q --branches 20000 --elf $bin --seed $seed --cyc -o "$out/t"
	ipc_same "cyc seed $seed"
done
"$SYNTH" -q --branches 20000 --elf $bin --seed 19 --cyc --noretcomp --irq-period 300 -o "$out/t"
ipc_same "cyc noretcomp interrupts"
"$SYNTH" -q --branches 20000 --elf $bin --seed 20 --cyc --cyc-thresh 2 --mtc-freq 0 -o "$out/t"
ipc_same "cyc thresh 2"
"$SYNTH" -q --branches 20000 --elf $bin --seed 14 --cyc --ovf-at 3000 -o "$out/t"
ipc_same "cyc overflow"
truth "timeless" --elf $bin --seed 13 --no-timing
perf_same "timeless"

# An overflow loses the instructions the CPU did not trace: the truth has
# them, perf and vmpt agree on what is left.
"$SYNTH" -q --branches 20000 --elf $bin --seed 14 --ovf-at 3000 -o "$out/t"
perf_same "overflow"
# The overflow error as perf's line (time, pid, tid, ip, code 7), with
# the packet's file offset besides.
perf script -i "$out/t.perf.data" --itrace=e > "$out/pe" 2>/dev/null
[ -s "$out/pe" ] || fail "overflow: perf reports no error"
"$VMPT" script -i "$out/t.perf.data" --itrace=e 2>/dev/null |
	sed 's/ offset 0x[0-9a-f]* code / code /' > "$out/ve"
cmp -s "$out/pe" "$out/ve" || fail "overflow: error lines differ from perf's: $(diff "$out/pe" "$out/ve")"
"$VMPT" script -i "$out/t.perf.data" --itrace=e 2>/dev/null |
	grep -q ' ip 0x[0-9a-f]* offset 0x[0-9a-f]* code 7: Overflow packet$' ||
	fail "overflow: no file offset in the error line"

# libipt on the same raw traces: equal streams; with a corrupted byte,
# equal up to the first error, which both report in the same PSB segment.
for seed in 31 32 33; do
	"$SYNTH" -q --branches 20000 --elf $bin --seed $seed -o "$out/t"
	"$VS_LIBIPT" --elf $bin@0x555555554000 "$out/t.pt" > "$out/cmp" ||
		fail "libipt seed $seed: $(cat "$out/cmp")"
	"$SYNTH" -q --branches 20000 --elf $bin --seed $seed --noretcomp -o "$out/t"
	"$VS_LIBIPT" --elf $bin@0x555555554000 "$out/t.pt" > "$out/cmp" ||
		fail "libipt seed $seed noretcomp: $(cat "$out/cmp")"
	"$SYNTH" -q --branches 20000 --elf $bin --seed $seed --irq-period 400 -o "$out/t"
	"$VS_LIBIPT" --elf $bin@0x555555554000 "$out/t.pt" > "$out/cmp" ||
		fail "libipt seed $seed interrupts: $(cat "$out/cmp")"
done
for seed in 21 22 23 24 25 26; do
	"$SYNTH" -q --branches 20000 --elf $bin --seed $seed --corrupt $((seed * 211)) -o "$out/t"
	"$VS_LIBIPT" --until-error --elf $bin@0x555555554000 "$out/t.pt" > "$out/cmp" ||
		fail "libipt seed $seed corrupt: $(cat "$out/cmp")"
done

IMAGES="--elf $D/kvm-selftest@0x555555554000 --elf $D/vmx-kernel"
for seed in 1 2 3; do
	truth "vm seed $seed" --vm --elf "$D/kvm-selftest" --guest-code \
		--host-kernel "$D/vmx-kernel" --seed $seed
done
truth "vm 2 vcpus" --vm --elf "$D/kvm-selftest" --guest-code \
	--host-kernel "$D/vmx-kernel" --seed 4 --vcpus 2
# A VM recording as vmpt record + vmpt guest lay it out (perf's directory
# form, host kcore_dir, guest/ with the guest's sideband and binaries):
# host code is host-machine code, guest code guest-machine code, even at
# the same addresses.
"$SYNTH" -q --branches 20000 --vm --elf "$D/kvm-selftest" --guest-code \
	--host-kernel "$D/vmx-kernel" --seed 5 -o "$out/t"
rec=$out/rec
mkdir -p "$rec/kcore_dir" "$rec/guest/root$(dirname "$D/kvm-selftest")"
cp "$out/t.perf.data" "$rec/data"
cp "$D/vmx-kernel" "$rec/kcore_dir/kcore"
"$VMPT" script -i "$rec" --itrace=e > "$out/e"
# the first guest instruction: guest_code, in the PIE at 0x555555554000
gc=$(printf '0x%x' $((0x555555554000 + 0x$(nm "$D/kvm-selftest" | awk '$3 == "guest_code" { print $1 }'))))
grep -q "ip $gc offset 0x[0-9a-f]* code 5: Failed to get instruction" "$out/e" ||
	fail "vm recording without guest/: guest code found in the host's image"
# The host's sideband stands in for the guest's (the selftest's guest runs
# the host program's code): no guest tasks to follow in it, its mappings
# are any guest process's code (--no-guest-tasks; without it vmpt says
# what the guest sideband lacks).
cp "$out/t.perf.data" "$rec/guest/perf.data"
cp "$D/kvm-selftest" "$rec/guest/root$D/kvm-selftest"
"$VMPT" script -i "$rec" --itrace=e > /dev/null 2> "$out/e" && fail "vm recording: guest tasks from the host's sideband"
grep -q "guest/perf.data: offset 0x[0-9a-f]*: ID_INDEX: id 1 counts thread 4242 on any CPU, not whole CPUs: the guest was recorded per-thread" "$out/e" || fail "vm recording: $(cat "$out/e")"
"$VMPT" script -i "$rec" --no-guest-tasks --itrace=i0ns -F ip | sed 's/^ *//' > "$out/vmpt"
grep -v '^#' "$out/t.insn" > "$out/truth"
cmp -s "$out/truth" "$out/vmpt" || fail "vm recording: differs from the truth"

# Per-cpu: bash (pid 100) on CPU 0, ls (200) on CPU 1 at the same time,
# then dash (300) switched in on CPU 0; all PIEs at 0x555555554000,
# so each process needs its own address space.  perf script and vmpt
# print the same lines of each CPU; vmpt's are merged in time order.
T0=$((0x2a00000000))
"$SYNTH" -q --branches 1500 --elf /usr/bin/bash --seed 21 --pid 100 --tsc0 $T0 -o "$out/a"
"$SYNTH" -q --branches 1500 --elf /usr/bin/ls --seed 22 --pid 200 --tsc0 $((T0 + 5000)) -o "$out/b"
"$SYNTH" -q --branches 1500 --elf /usr/bin/dash --seed 23 --pid 300 --tsc0 $((T0 + 400000)) -o "$out/c"
# Then pid 400, forked from bash and not exec'd, runs bash's code on CPU 1
# after ls, under bash's name.
"$SYNTH" -q --branches 1500 --elf /usr/bin/bash --seed 24 --pid 400 --tsc0 $((T0 + 800000)) -o "$out/e"
"$MERGE" "$out/m.data" 0:"$out/a.perf.data" 1:"$out/b.perf.data" 0:"$out/c.perf.data" \
	1:"$out/e.perf.data":100
for it in b i0ns; do
	F=pid,tid,comm,cpu,ip,sym,dso
	perf script -i "$out/m.data" --itrace=$it -F $F 2>/dev/null > "$out/pm"
	"$VMPT" script -i "$out/m.data" --itrace=$it -F $F > "$out/vm"
	for cpu in 000 001; do
		grep -F "[$cpu]" "$out/pm" > "$out/pm$cpu" || fail "per-cpu: perf printed nothing on $cpu"
		grep -F "[$cpu]" "$out/vm" > "$out/vm$cpu" || true
		cmp -s "$out/pm$cpu" "$out/vm$cpu" ||
			fail "per-cpu --itrace=$it cpu $cpu: $(diff "$out/pm$cpu" "$out/vm$cpu" | sed -n 2,4p)"
	done
	[ "$(wc -l < "$out/vm")" -eq "$(wc -l < "$out/pm")" ] || fail "per-cpu: other lines"
	# IPC counts on over each CPU's two buffers, as perf's.
	perf script -i "$out/m.data" --itrace=$it -F cpu,ip,ipc 2>/dev/null > "$out/pc"
	"$VMPT" script -i "$out/m.data" --itrace=$it -F cpu,ip,ipc > "$out/vc"
	for cpu in 000 001; do
		grep -F "[$cpu]" "$out/pc" > "$out/pc$cpu"
		grep -F "[$cpu]" "$out/vc" > "$out/vc$cpu" || true
		cmp -s "$out/pc$cpu" "$out/vc$cpu" ||
			fail "per-cpu --itrace=$it -F cpu,ip,ipc cpu $cpu: $(diff "$out/pc$cpu" "$out/vc$cpu" | sed -n 2,4p)"
	done
	ipc_lines=$((ipc_lines + $(grep -c 'IPC: ' "$out/vc")))
	ipc_all=$((ipc_all + $(wc -l < "$out/vc")))
	for want in "proc100   100/100   [000]" "proc200   200/200   [001]" \
		"proc300   300/300   [000]" "proc100   400/400   [001]"; do
		grep -qF "$want" "$out/vm" || fail "per-cpu: no '$want' line"
	done
	checked=$((checked + $(wc -l < "$out/vm")))
done
# Merged in time order as perf merges them: the same lines, times to the
# nanosecond, in the same order; the CPUs interleave.
F=pid,tid,comm,cpu,time,ip,sym,dso
perf script -i "$out/m.data" --ns --itrace=b -F $F 2>/dev/null > "$out/pt"
"$VMPT" script -i "$out/m.data" --ns --itrace=b -F $F > "$out/vt"
cmp -s "$out/pt" "$out/vt" ||
	fail "per-cpu: merged branches differ from perf's: $(diff "$out/pt" "$out/vt" | sed -n 2,4p)"
[ "$(awk '{ print $3 }' "$out/vt" | uniq | wc -l)" -gt 10 ] || fail "per-cpu: the CPUs do not interleave"
echo "ok: $checked instructions equal to the ground truth; -F ...,ipc: $ipc_all lines equal to perf's, $ipc_lines of them with an IPC"
