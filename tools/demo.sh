#!/bin/sh
# `make demo`: vmpt on sample data.  No machine here has Intel PT, so the
# traces are synthesized by vmpt-synth from real code this machine has
# (/usr/bin/bash, and the VM models the build compiles), with the ground
# truth to check the decoding against.
set -e
build="${1:-build}"
vmpt="$build/cli/vmpt"
synth="$build/tools/synth/vmpt-synth"
models=$(cd "$build/tools/synth" && pwd)	# absolute: perf.data names files by path
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== vmpt-synth: a trace of /usr/bin/bash as Intel PT would record it"
"$synth" --elf /usr/bin/bash --seed 1 --branches 2000 -o "$out/bash"
echo "-- the first packets (vmpt dump):"
"$vmpt" dump "$out/bash.pt" | head -12

echo
echo "== vmpt script: the branches it decodes from the synthesized perf.data"
if "$vmpt" script -i "$out/bash.perf.data" --itrace=b -F flags,ip,addr \
	> "$out/branches" 2>&1; then
	head -12 "$out/branches"
	"$vmpt" script -i "$out/bash.perf.data" --itrace=i0ns -F ip 2>/dev/null |
		awk '{print $1}' > "$out/vmpt.insn"
	grep -v '^#' "$out/bash.insn" > "$out/truth.insn"
	if cmp -s "$out/vmpt.insn" "$out/truth.insn"; then
		echo "-- vmpt's instruction trace equals the ground truth:" \
		     "$(wc -l < "$out/truth.insn") instructions"
	else
		echo "-- vmpt's instruction trace DIFFERS from the ground truth"
	fi
else
	echo "(vmpt script cannot decode this yet: $(head -1 "$out/branches"))"
fi
if command -v perf > /dev/null; then
	perf script -i "$out/bash.perf.data" --itrace=i0ns -F ip 2>/dev/null |
		awk '{print $1}' > "$out/perf.insn"
	if cmp -s "$out/perf.insn" "$out/truth.insn"; then
		echo "-- perf script agrees too"
	else
		echo "-- perf script disagrees with the ground truth"
	fi
fi

echo
echo "== A VM: a KVM-like host enters a guest running the host program's code"
"$synth" --vm --guest-code --elf "$models/kvm-selftest" \
	--host-kernel "$models/vmx-kernel" --seed 1 --branches 600 -o "$out/vm"
echo "-- the packets around the first VM entry (PIP with NR=1, then TIP):"
"$vmpt" dump "$out/vm.pt" | grep -B4 -A3 -m1 'nr'
echo "-- vmpt script --guest-code: the guest's code is the host program's own"
"$vmpt" script -i "$out/vm.perf.data" --guest-code --vmlinux "$models/vmx-kernel" \
	--itrace=b -F comm,flags,ip,sym,addr > "$out/vm.vmpt"
grep -A3 -m1 vmentry "$out/vm.vmpt"
if command -v perf > /dev/null; then
	perf script -i "$out/vm.perf.data" --guest-code --vmlinux "$models/vmx-kernel" \
		--itrace=b -F comm,flags,ip,sym,addr 2>/dev/null |
		sed 's/^\(.*\)  bcyh    /\1  vmexit  /' > "$out/vm.perf"
	if cmp -s "$out/vm.perf" "$out/vm.vmpt"; then
		echo "-- perf script --guest-code prints the same $(wc -l < "$out/vm.perf") lines" \
		     "(its VM exit flags 'bcyh' read as vmexit)"
	else
		echo "-- perf script --guest-code differs:"
		diff "$out/vm.perf" "$out/vm.vmpt" | head -4
	fi
fi
