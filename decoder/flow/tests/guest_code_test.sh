#!/bin/sh
# vmpt script --guest-code against perf script --guest-code (perf 6.1) and
# the ground truth, on the synthesizer's KVM selftest scenario: the test
# program is the hypervisor and its own code runs as the guest at the same
# addresses, so the guest's code is the host process's (its MMAP2).
# perf.data: the same instruction and branch lines as perf's, symbols,
# dsos, comm (the guest's "[guest/PID]"), pid, tid and cpu included;
# without --guest-code the guest's code is not found, as before.
# Raw trace: --guest-code (the --elf images serve the guest too) and the
# program given as --guest-elf decode to the truth.
# usage: guest_code_test.sh VMPT_SYNTH
set -eu
SYNTH=$1
command -v perf >/dev/null || { echo "SKIP: perf not installed"; exit 77; }
D=$(cd "$(dirname "$SYNTH")" && pwd)	# absolute: perf.data names files by path
K=$D/vmx-kernel
P=$D/kvm-selftest
VMEXIT=$(nm "$K" | awk '$3 == "vmx_vmexit" { print $1 }')
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
lines=0
insns=0

# same NAME ARGS...: perf script and vmpt script print the same lines.
# perf 6.1.y prints a VM exit's flags as "bcyh" (a stable backport added
# "async" to them without a name for the combination; docs/script.md),
# and so does vmpt.
same() {
	name=$1; shift
	perf script -i "$out/t.perf.data" --guest-code --vmlinux "$K" "$@" > "$out/perf" 2>&1
	"$VMPT" script -i "$out/t.perf.data" --guest-code --vmlinux "$K" "$@" \
		> "$out/vmpt" 2>/dev/null
	[ -s "$out/perf" ] || fail "$name: perf printed nothing"
	cmp -s "$out/perf" "$out/vmpt" ||
		fail "$name $*: differs from perf script (< perf, > vmpt): $(diff "$out/perf" "$out/vmpt" | sed -n 2,5p)"
	lines=$((lines + $(wc -l < "$out/perf")))
}

# truth NAME ARGS...: vmpt's instructions are the ground truth's.
truth() {
	name=$1; shift
	"$VMPT" script "$@" --itrace=i0nse -F ip 2>&1 |
		sed '/^vmpt script: VMCS 0x[0-9a-f]* TSC offset /d; s/^ *//' > "$out/vmpt"
	cmp -s "$out/truth" "$out/vmpt" ||
		fail "$name: $(wc -l < "$out/vmpt") instructions, truth has $(wc -l < "$out/truth"): $(diff "$out/truth" "$out/vmpt" | sed -n 2,3p)"
	insns=$((insns + $(wc -l < "$out/truth")))
}

for seed in 1 2 3 4 5; do
	case $seed in
	1) extra="" ;;
	2) extra="--noretcomp" ;;
	3) extra="--cyc --vcpus 2 --entries-per-vcpu 2" ;;
	4) extra="--no-timing --guest-period 200" ;;
	5) extra="--tnt64 --vcpus 2 --psb-period 512" ;;
	esac
	# shellcheck disable=SC2086
	"$SYNTH" -q --vm --guest-code --elf "$P" --host-kernel "$K" \
		--branches 4000 --seed $seed $extra -o "$out/t"
	name="seed $seed $extra"
	rc=--retcomp
	case " $extra " in *" --noretcomp "*) rc= ;; esac
	grep -v '^#' "$out/t.insn" > "$out/truth"

	same "$name" --itrace=i0ns -F ip
	sed 's/^ *//' "$out/vmpt" | cmp -s "$out/truth" - || fail "$name: perf.data instructions differ from the truth"
	insns=$((insns + $(wc -l < "$out/truth")))
	same "$name" --itrace=be -F flags,ip,addr,sym,symoff,dso
	grep -q '^  vmentry  *0 \[unknown\] (\[unknown\]) =>  *[0-9a-f]* [a-z_]*+0x[0-9a-f]* ('"$P"')$' "$out/vmpt" ||
		fail "$name: no VM entry into the program's code"
	grep -q '^  bcyh  *0 \[unknown\] (\[unknown\]) => '"$VMEXIT"' vmx_vmexit+0x0 (\[kernel.kallsyms\])$' "$out/vmpt" ||
		fail "$name: no VM exit"
	same "$name" --itrace=be -F comm,pid,tid,cpu,flags,ip,addr,sym,symoff,dso
	grep -q '^    \[guest/4242\]  4242/4242  \[-01\]   ' "$out/vmpt" || fail "$name: no guest comm"
	same "$name" --itrace=i0ns -F comm,pid,tid,cpu,ip,sym,symoff,dso

	# Raw trace: the program serves the guest too, or is given as the
	# guest's image.
	# shellcheck disable=SC2086
	truth "$name raw --guest-code" --pt "$out/t.pt" --elf "$K" \
		--elf "$P@0x555555554000" --guest-code $rc
	# shellcheck disable=SC2086
	truth "$name raw --guest-elf" --pt "$out/t.pt" --vmlinux "$K" \
		--guest-elf "$P@0x555555554000" $rc
done

# Without --guest-code the guest's code is nowhere (the host process's
# mappings are the host's): an error at the first guest instruction.
entry=$(grep -v '^#' "$out/t.branches" | awk '$NF == "vmentry" { print $2; exit }')
"$VMPT" script -i "$out/t.perf.data" --vmlinux "$K" --itrace=e > "$out/e"
grep -q "^ instruction trace error type 1 time [0-9.]* cpu -1 pid 4242 tid 4242 ip 0x$entry offset 0x[0-9a-f]* code 5: Failed to get instruction$" "$out/e" ||
	fail "without --guest-code: $(head -n 2 "$out/e")"
echo "ok: $lines lines equal to perf script --guest-code's, $insns instructions equal to the truth"
