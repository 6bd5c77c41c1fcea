#!/bin/bash
# vmpt script -i REC on a VM recording with the guest's side (guest/:
# the guest's cpu-wide sideband, root/ with its binaries, kcore_dir), as
# vmpt record --guest lays it out, follows the guest's tasks by itself:
# a synthesized host Intel PT trace (vmpt-synth --guest-recording over a
# hand-made guest recording: 2 vCPUs, forks, execs, a kworker, switches
# moving tasks between the CPUs, TSC offset != 0) decoded with no option:
# - every instruction of the synthesizer's truth, no more, each with the
#   truth's machine, guest pid/tid/comm, address, symbol and dso;
# - the lines of perf's manual pipeline (perf inject --vm-time-correlation,
#   perf inject --guest-data with a guestmount, perf script
#   -F+machine_pid,+vcpu) for instructions and branches, per vCPU in the
#   same order, and all of them in perf's order (its queues ordered by
#   their state times, an estimate's on returns to user space); on a
#   cycle-accurate trace without the times (perf's cycle ratio measured
#   between MTCs makes some a nanosecond apart);
# - -F vmcs, and --no-guest-tasks (every guest process's code in one
#   space, guest samples named as perf names them without the guest's
#   sideband).
: "${SRCDIR:?}" "${VMPT:?}"
. "$SRCDIR/tools/synth/tests/synth-lib.sh"
: "${VMX_KERNEL:?}" "${GUEST_KERNEL:?}" "${MAKE_GUEST_FIXTURE:?}"
HERE=$SRCDIR/tools/synth/tests
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

make_guest_fixture fix
OFF=-0x2000000000
POFF=0xffffffe000000000

# by_vcpu FILE PREFIX: the lines of each vCPU (VM: ... VCPU:n, or the
# host's CPU n/KVM thread) into PREFIX.n
by_vcpu() {
	awk -v p="$2" '{ k = -1
		if (match($0, /^VM: *[0-9]+ VCPU:[0-9]+/)) { s = substr($0, RSTART, RLENGTH); sub(/.*VCPU:/, "", s); k = s + 0 }
		else if (match($0, /CPU [0-9]+\/KVM/)) { s = substr($0, RSTART + 4, RLENGTH); k = s + 0 }
		print > (p "." k) }' "$1"
}

insns=0
lines=0
for cfg in "1" "2 --cyc" "3 --noretcomp --guest-slice 1000"; do
	set -- $cfg
	rm -rf g.perf.data
	"$SYNTH" --vm --host-kernel "$VMX_KERNEL" --guest-recording fix --vcpus 2 \
		--tsc-offset "$OFF" --psb-period 512 --branches 8000 --seed "$@" -o g -q ||
		fail "vmpt-synth ($cfg)"

	# the truth, instruction by instruction
	"$VMPT" script -i g.perf.data --itrace=i0nse -F machine_pid,vcpu,comm,tid,ip,sym,dso \
		> v.ins 2> v.err || { cat v.err; fail "vmpt script ($cfg)"; }
	res=$(python3 "$HERE/check_perf_guest.py" g.gtruth v.ins 4242 fix/guest/root) ||
		fail "vmpt script against the truth ($cfg): $res"
	[ "$(wc -l < v.ins)" = "$(wc -l < g.gtruth)" ] ||
		fail "vmpt script ($cfg): $(wc -l < v.ins) lines, $(wc -l < g.gtruth) instructions in the truth"
	grep -q "trace error" v.ins && fail "vmpt script ($cfg): $(grep -m1 'trace error' v.ins)"
	grep -q "^vmpt script: VMCS 0x1c0 TSC offset $POFF (from the trace" v.err ||
		fail "vmpt script ($cfg): no offset found: $(cat v.err)"
	insns=$((insns + $(wc -l < g.gtruth)))
	# -j: pieces cut at PSBs follow the guest's tasks as one decoder
	for j in 2 3; do
		"$VMPT" script -j $j -i g.perf.data --itrace=i0nse \
			-F machine_pid,vcpu,comm,tid,ip,sym,dso > vj.ins 2>/dev/null ||
			fail "vmpt script -j $j ($cfg)"
		cmp -s v.ins vj.ins || fail "-j $j ($cfg) differs: $(diff v.ins vj.ins | sed -n 2,3p)"
	done

	# perf's pipeline, line for line
	p=$(perf_guest_inject g.perf.data fix/guest/perf.data "$POFF" 4242)
	for it in i0ns be; do
		perf script -i "$p/inj" --itrace=$it -F+machine_pid,+vcpu --vmlinux "$VMX_KERNEL" \
			--guestmount "$p/gm" > perf.$it 2> perf.err
		"$VMPT" script -i g.perf.data --itrace=$it -F+machine_pid,+vcpu > vmpt.$it 2> v.err ||
			fail "vmpt script --itrace=$it ($cfg)"
		# Cycle-accurate times may differ by a nanosecond (docs/script.md:
		# perf measures its cycle ratio between MTCs): compared apart.
		if [ "${2:-}" = --cyc ]; then
			for f in perf vmpt; do
				sed -E 's/ +[0-9]+\.[0-9]{6}: / TIME: /' $f.$it > $f.$it.t
				mv $f.$it.t $f.$it
			done
		fi
		rm -f perf.$it.* vmpt.$it.*
		by_vcpu perf.$it perf.$it
		by_vcpu vmpt.$it vmpt.$it
		for f in perf.$it.*; do
			compare "vCPU ${f##*.} lines, --itrace=$it ($cfg)" "$f" "vmpt.$it.${f##*.}"
		done
		[ "$(ls vmpt.$it.*)" = "$(ls perf.$it.* | sed 's/^perf/vmpt/')" ] ||
			fail "--itrace=$it ($cfg): other vCPUs than perf's: $(ls vmpt.$it.*)"
		compare "all lines in perf's order, --itrace=$it ($cfg)" perf.$it vmpt.$it
		grep -q "^VM: 4242 VCPU:00[01] " vmpt.$it || fail "--itrace=$it ($cfg): no guest line"
		lines=$((lines + $(wc -l < perf.$it)))
	done
done

# -F vmcs: the VMCS of guest samples
"$VMPT" script -i g.perf.data --itrace=i0ns -F vcpu,vmcs,tid,ip > vmcs.out 2>/dev/null
grep -q "^VCPU:001 VMCS:0x1c3000  *201 " vmcs.out ||
	fail "-F vmcs: $(grep -m1 VCPU vmcs.out)"

# --no-guest-tasks: the guest's code as any process's, named as perf
# names guest samples without the guest's sideband (":TID" of the vCPU
# thread, the guest kernel as [kernel.kallsyms])
"$VMPT" script -i g.perf.data --no-guest-tasks --itrace=i0ns -F comm,tid,ip,dso \
	> none.out 2>/dev/null || fail "--no-guest-tasks"
grep -q "^ *:4244  4244 .*(/lib/x86_64-linux-gnu/libc.so.6)" none.out ||
	fail "--no-guest-tasks: $(grep -m1 libc none.out)"
grep -q "VM:\|guest.kernel" none.out && fail "--no-guest-tasks: guest tasks shown"
echo "vmpt script followed the guest's tasks on 3 recordings: $insns instructions =" \
	"the truth (task, address, symbol, dso), -j 2 and 3 the same; $lines lines of perf's pipeline" \
	"(--itrace=i0ns and be) equal, in perf's order"
