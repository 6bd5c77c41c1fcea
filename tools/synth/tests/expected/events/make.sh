#!/bin/bash
# Regenerates this fixture: three synthesized traces with Event Trace,
# PTWRITE and power events (their perf.data, the model binaries they run,
# the synthesizer's truth) and perf 6.1's output on them, the lines vmpt
# script --itrace=I, w and p must print (README.md).
# usage: make.sh BUILDDIR   (run in this directory; perf on PATH)
set -eu
B=$(cd "$1" && pwd)
S=$B/tools/synth
cd "$(dirname "$0")"
cp "$S/vmx-kernel" "$S/guest-kernel" "$S/kvm-selftest" .
VM=(--vm --host-kernel ./vmx-kernel --guest-elf ./guest-kernel --guest-start start_kernel
    --guest-period 300 --vcpus 2 --branches 3000 --psb-period 1024 --event --ptw --pwr-evt)
VMK=(--vmlinux ./vmx-kernel --guestvmlinux ./guest-kernel)
# the guest runs HLT and MWAIT itself (cpu-pm); PTWRITE with FUPs
"$S/vmpt-synth" "${VM[@]}" --guest-pm --fup-on-ptw --freq-period 2000 --seed 10 -o vm -q
# HLT and MWAIT exit (the host's idle loop); PTWRITE without FUPs
"$S/vmpt-synth" "${VM[@]}" --seed 7 -o vm-exits -q
# user space with the kernel traced: interrupts, #UD, IRET; PTWRITE with
# FUPs and perf's emulated PTWRITE
"$S/vmpt-synth" --elf ./kvm-selftest --host-kernel ./guest-kernel --start guest_code \
	--irq-period 300 --event --ptw --fup-on-ptw --freq-period 2000 --branches 2000 \
	--seed 3 -o user -q
rm -f ./*.pt ./*.insn ./*.branches ./*.images ./*.tsc
for t in vm vm-exits user; do
	k=("${VMK[@]}")
	[ $t = user ] && k=(--vmlinux ./guest-kernel)
	for o in I w p; do
		perf script -i $t.perf.data --itrace=$o "${k[@]}" > $t.$o.txt 2>&1
	done
	perf script -i $t.perf.data --itrace=Iwp -F +flags "${k[@]}" > $t.Iwp-flags.txt 2>&1
done
