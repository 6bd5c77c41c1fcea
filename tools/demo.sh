#!/bin/sh
# `make demo`: vmpt on sample data.  No machine here has Intel PT, so the
# traces are synthesized by vmpt-synth from real code this machine has
# (/usr/bin/bash, and the VM models the build compiles), with the ground
# truth to check the decoding against.  The main job comes first: a VM's
# guest and host decoded on one time line.
set -e
build="${1:-build}"
vmpt="$build/cli/vmpt"
synth="$build/tools/synth/vmpt-synth"
models=$(cd "$build/tools/synth" && pwd)	# absolute: perf.data names files by path
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== A VM on one time line: a KVM host (its kernel traced) runs a guest kernel"
echo "   on 2 vCPUs, QEMU threads 'CPU 0/KVM' and 'CPU 1/KVM', each with its own guest"
echo "   TSC offset (-0x1000000000 and 0x777777777): guest TSC packets are not host time"
for offsets in -0x1000000000,0x777777777 0,0; do
	name=vm
	[ "$offsets" = 0,0 ] && name=vm0
	"$synth" -q --vm --host-kernel "$models/vmx-kernel" --guest-elf "$models/guest-kernel" \
		--guest-start start_kernel --vcpus 2 --per-thread --branches 20000 \
		--guest-period 2000 --psb-period 2048 --seed 1 --tsc-offset "$offsets" \
		-o "$out/$name"
done
echo "-- vmpt correlate: each VMCS's offset, learned from the trace alone"
"$vmpt" correlate --dry-run -i "$out/vm.perf.data" 2>/dev/null
if command -v perf > /dev/null; then
	perf inject -i "$out/vm.perf.data" --vm-time-correlation=dry-run 2>&1 |
		grep '^VMCS' > "$out/perf.offsets"
	"$vmpt" correlate --dry-run -q -i "$out/vm.perf.data" 2>&1 |
		grep '^VMCS' > "$out/vmpt.offsets"
	if cmp -s "$out/perf.offsets" "$out/vmpt.offsets"; then
		echo "-- perf inject --vm-time-correlation=dry-run finds the same offsets"
	else
		echo "-- perf inject --vm-time-correlation=dry-run differs:"
		diff "$out/perf.offsets" "$out/vmpt.offsets" | head -4
	fi
fi
echo "-- vmpt script, no flags but the kernels: host and guest in host time (ns), around a VM exit"
for name in vm vm0; do
	"$vmpt" script -i "$out/$name.perf.data" --vmlinux "$models/vmx-kernel" \
		--guest-elf "$models/guest-kernel" --itrace=b --ns \
		-F comm,tid,time,flags,ip,sym,addr > "$out/$name.lines" 2> "$out/$name.err"
done
grep -B2 -A2 -m1 vmexit "$out/vm.lines"
sed 's/^/   /' "$out/vm.err"
if cmp -s "$out/vm.lines" "$out/vm0.lines"; then
	echo "-- every one of the $(wc -l < "$out/vm.lines") lines, times included, equals the same VM" \
	     "traced without TSC offsets: guest and host share one clock"
else
	echo "-- the times DIFFER from the same VM traced without offsets"
fi

echo
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
		--itrace=b -F comm,flags,ip,sym,addr > "$out/vm.perf" 2>/dev/null
	if cmp -s "$out/vm.perf" "$out/vm.vmpt"; then
		echo "-- perf script --guest-code prints the same $(wc -l < "$out/vm.perf") lines" \
		     "(a VM exit's flags are perf 6.1's 'bcyh' in both)"
	else
		echo "-- perf script --guest-code differs:"
		diff "$out/vm.perf" "$out/vm.vmpt" | head -4
	fi
fi
