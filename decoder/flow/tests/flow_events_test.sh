#!/bin/bash
# Event Trace, PTWRITE and power events in the flow decoder: on traces the
# synthesizer writes with them, vmpt's event items (flow_events) equal the
# truth (P.events) item for item: each CFE with its type, vector and EVDs
# (a VM exit's reason and qualification) at the IP it binds to, or none;
# each PTW with its FUP's IP; MWAIT, PWRE (at the MWAIT's FUP, or none
# after HLT), EXSTOP at its FUP, PWRX; each frequency change; and the
# instructions stay the truth's.  Not compared: perf's emulated PTWRITE,
# which vmpt's decoder does not report (the truth's "emulated" ones).
# usage: flow_events_test.sh FLOW_EVENTS VMPT_SYNTH VMX_KERNEL GUEST_KERNEL KVM_SELFTEST
set -eu
EVENTS=$(realpath "$1")
SYNTH=$(realpath "$2")
VMX=$(realpath "$3")
GUEST=$(realpath "$4")
SELFTEST=$(realpath "$5")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$out"
fail() { echo "FAIL: $*"; exit 1; }

# The truth as flow_events prints it: without the TSC, the thread and CPU,
# the lost and the emulated ones; a PTW without its FUP binds to no IP.
truth() {
	awk '$NF == "lost" || $NF == "emulated" { next }
	{ k = ($2 ~ /^[0-9]+$/) ? 4 : 2; kind = $k; ip = $(k + 1); d = ""
	  for (i = k + 2; i <= NF; i++) d = d " " $i
	  if (kind == "ptw" && d ~ /^ fup: 0/) ip = "-"
	  print kind " " ip d }' "$1"
}

n=0
items=0
# check PREFIX ARGS...: the events, then the instructions
check() {
	local p=$1
	shift
	"$EVENTS" "$@" "$p.pt" | grep -v '^i ' > got.e || fail "flow_events $p"
	grep -q '^error' got.e && { grep '^error' got.e | head -3; fail "$p: decoder errors"; }
	truth "$p.events" > want.e
	[ -s want.e ] || fail "$p: no events in the truth"
	if ! cmp -s want.e got.e; then
		echo "FAIL: $p: events differ (truth < > vmpt):"
		diff want.e got.e | head -10
		exit 1
	fi
	"$EVENTS" --insns "$@" "$p.pt" | sed -n 's/^i //p' > got.i
	grep -v '^#' "$p.insn" > want.i
	cmp -s want.i got.i || { diff want.i got.i | head -5; fail "$p: instructions differ"; }
	n=$((n + 1))
	items=$((items + $(wc -l < want.e)))
}

VM=(--vm --host-kernel "$VMX" --guest-elf "$GUEST" --guest-start start_kernel
    --guest-period 500 --psb-period 1024 --branches 8000 --event --ptw --pwr-evt)
"$SYNTH" "${VM[@]}" --fup-on-ptw --guest-pm --seed 1 -o vm1 -q || fail "vmpt-synth vm1"
check vm1 --host "$VMX" --guest "$GUEST" --cbr 32
"$SYNTH" "${VM[@]}" --cyc --vcpus 2 --freq-period 2000 --seed 2 -o vm2 -q || fail "vmpt-synth vm2"
check vm2 --host "$VMX" --guest "$GUEST" --cbr 32
"$SYNTH" "${VM[@]}" --fup-on-ptw --guest-pm --noretcomp --tnt64 --no-timing --seed 3 -o vm3 -q ||
	fail "vmpt-synth vm3"
check vm3 --host "$VMX" --guest "$GUEST" --cbr 32
# user space with the kernel traced (interrupts, IRET); user space only
"$SYNTH" --elf /usr/bin/bash --host-kernel "$GUEST" --irq-period 400 --event \
	--freq-period 3000 --branches 6000 --seed 4 -o u1 -q || fail "vmpt-synth u1"
check u1 --host "$GUEST" --elf /usr/bin/bash@0x555555554000 --cbr 32
"$SYNTH" --elf "$SELFTEST" --start guest_code --irq-period 300 --event --ptw \
	--fup-on-ptw --branches 4000 --seed 5 -o u2 -q || fail "vmpt-synth u2"
check u2 --elf "$SELFTEST@0x555555554000" --cbr 32
echo "vmpt's event items equal the truth on $n traces: $items events"
