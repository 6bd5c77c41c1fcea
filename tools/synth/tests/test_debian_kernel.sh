#!/bin/bash
# Debian's real kernel (linux-image-amd64's package, fetched and turned into
# an ELF vmlinux with System.map's symbols by tools/fetch-debian-kernel.sh)
# as the traced kernel:
# - user+kernel: busybox and bash with that vmlinux traced too (syscall to
#   entry_SYSCALL_64, interrupts to asm_common_interrupt, indirect targets
#   among its 47,000 text symbols, back to user space by SYSRET and IRET);
#   perf script --vmlinux and vmpt script must both show exactly the truth;
# - VM: the host kernel model runs the Debian kernel as the guest, 2 vCPUs;
#   perf script --guestvmlinux shows exactly the truth, and
#   perf inject --vm-time-correlation=dry-run the true TSC offsets.
. "$(dirname "$0")/synth-lib.sh"
: "${VMPT:?}" "${VMX_KERNEL:?}" "${FETCH_KERNEL:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
if ! K=$("$FETCH_KERNEL" 2>fetch.err); then
	echo "SKIP: no Debian kernel: $(tail -1 fetch.err)"
	exit 77
fi
VMLINUX=$K/vmlinux

# vmpt script's branches as "FLAGS|FROM|TO", like perf_branches.
vmpt_branches() {
	"$VMPT" script "$@" --itrace=be -F flags,ip,addr 2>&1 |
	awk '{ to = $NF; from = $(NF-2); f = "";
	       for (i = 1; i <= NF-3; i++) f = f (f == "" ? "" : " ") $i;
	       print f "|" from "|" to }'
}

runs=0
insns=0
branches=0
for bin in /usr/bin/busybox /usr/bin/bash; do
	[ -x "$bin" ] || continue
	at=""
	[ "$bin" = /usr/bin/bash ] && at=@0x555555554000	# a PIE
	for seed in 1 2 3; do
		extra=""
		[ "$seed" = 2 ] && extra="--noretcomp --cyc"
		[ "$seed" = 3 ] && extra="--tnt64 --no-timing"
		rc=--retcomp
		[ "$seed" = 2 ] && rc=""
		# shellcheck disable=SC2086
		"$SYNTH" --elf "$bin" --host-kernel "$VMLINUX" --seed "$seed" \
			--branches 3000 --irq-period 500 --kernel-period 1500 \
			$extra -o uk -q || fail "vmpt-synth $bin seed $seed"
		what="$bin seed $seed $extra"
		truth_insns uk.insn > want.i
		truth_branches uk.branches > want.b
		perf_insns uk.perf.data --vmlinux "$VMLINUX" > got.i
		compare "perf instructions ($what)" want.i got.i
		perf_branches uk.perf.data --vmlinux "$VMLINUX" > got.b
		compare "perf branches ($what)" want.b got.b
		# shellcheck disable=SC2086
		"$VMPT" script --pt uk.pt --elf "$bin$at" --elf "$VMLINUX" $rc \
			--itrace=i0nse -F ip 2>&1 | awk '{print $1}' > vmpt.i
		compare "vmpt instructions ($what)" want.i vmpt.i
		# shellcheck disable=SC2086
		vmpt_branches --pt uk.pt --elf "$bin$at" --elf "$VMLINUX" $rc > vmpt.b
		compare "vmpt branches ($what)" want.b vmpt.b
		"$VMPT" script -i uk.perf.data --elf "$VMLINUX" --itrace=i0nse -F ip \
			2>&1 | awk '{print $1}' > vmpt-pd.i
		compare "vmpt instructions on perf.data ($what)" want.i vmpt-pd.i
		cat want.b >> all.b
		runs=$((runs + 1))
		insns=$((insns + $(wc -l < want.i)))
		branches=$((branches + $(wc -l < want.b)))
	done
done
[ "$runs" -gt 0 ] || fail "no binaries"
for f in syscall sysret 'hw int' iret; do
	grep -q "^$f|" all.b || fail "no $f in the user+kernel traces"
done
kfuncs=$(awk -F'|' '$1 == "call" && $3 ~ /^ffffffff8/ { print $3 }' all.b |
	sort -u | wc -l)
echo "perf and vmpt agreed on $runs user+kernel traces of $(cat "$K/ready"):" \
	"$insns instructions, $branches branches" \
	"($(grep -c '^\(syscall\|sysret\|hw int\|iret\)|' all.b) syscall/sysret/interrupt/iret," \
	"calls into $kfuncs kernel functions)"

# The Debian kernel as a guest: its code is the guest machine's
# ([guest.kernel.kallsyms], perf script --guestvmlinux), the host's the
# model's, both at 0xffffffff81000000.
vm_insns=0
vm_branches=0
offsets=0
for seed in 1 2 3; do
	case $seed in
	1) extra="" ;;
	2) extra="--noretcomp --cyc" ;;
	3) extra="--tnt64" ;;
	esac
	# shellcheck disable=SC2086
	"$SYNTH" --vm --host-kernel "$VMX_KERNEL" --guest-elf "$VMLINUX" \
		--guest-start do_idle --vcpus 2 --entries-per-vcpu 2 \
		--tsc-offset -0x123456789a,0x5000000 --psb-period 512 \
		--branches 6000 --guest-period 2000 --seed "$seed" $extra -o vm -q ||
		fail "vmpt-synth VM seed $seed"
	what="VM seed $seed $extra"
	truth_insns vm.insn > want.i
	perf_insns vm.perf.data --vmlinux "$VMX_KERNEL" --guestvmlinux "$VMLINUX" > got.i
	compare "perf instructions ($what)" want.i got.i
	truth_branches vm.branches > want.b
	perf_branches vm.perf.data --vmlinux "$VMX_KERNEL" --guestvmlinux "$VMLINUX" > got.b
	compare "perf branches ($what)" want.b got.b
	# vmpt on the recording laid out as vmpt record + vmpt guest write it:
	# host kernel in kcore_dir, the guest's in guest/kcore_dir, both at
	# 0xffffffff81000000; code before the first PIP is the host's.
	rm -rf rec && mkdir -p rec/kcore_dir rec/guest/kcore_dir
	cp vm.perf.data rec/data
	cp "$VMX_KERNEL" rec/kcore_dir/kcore && cp "$VMLINUX" rec/guest/kcore_dir/kcore
	"$VMPT" script -i rec --itrace=i0nse -F ip 2>&1 |
		sed '/^vmpt script: VMCS 0x[0-9a-f]* TSC offset /d' | awk '{print $1}' > vmpt.i
	compare "vmpt instructions ($what)" want.i vmpt.i
	grep -q '^vmentry|' want.b || fail "no VM entry ($what)"
	grep -q '^vmexit|' want.b || fail "no VM exit ($what)"
	# perf measures a VMCS's offset at a PSB+ in its guest (it holds the
	# guest TSC): each one it reports must be the true one
	perf inject -i vm.perf.data --vm-time-correlation=dry-run 2>&1 |
		sed -n 's/^VMCS: \(0x[0-9a-f]*\)  TSC Offset \(0x[0-9a-f]*\)$/\1 \2/p' |
		sort > got.off
	awk '{print $1, $2}' vm.tsc | sort > want.off
	[ -s got.off ] || fail "perf inject found no TSC offset ($what)"
	[ -z "$(comm -13 want.off got.off)" ] ||
		fail "perf inject: offsets not in the truth ($what): $(comm -13 want.off got.off)"
	vm_insns=$((vm_insns + $(wc -l < want.i)))
	vm_branches=$((vm_branches + $(wc -l < want.b)))
	offsets=$((offsets + $(wc -l < got.off)))
done
echo "perf and vmpt agreed on 3 VM traces with the Debian kernel as guest:" \
	"$vm_insns instructions, $vm_branches branches, $offsets TSC offsets"
