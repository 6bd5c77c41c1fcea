#!/bin/bash
# --guest-recording over a guest recording made by hand (make-guest-fixture:
# two guest CPUs, processes forked and exec'd, cpu-wide switches moving
# them, a kworker and the idle task; host binaries as the guest's root/;
# the guest-kernel model as its kcore and kallsyms):
# - the truth (PREFIX.gtruth) against the guest sideband as perf reads it:
#   every guest instruction's task is the one perf's switch records put on
#   its vCPU's guest CPU at its host time (guest TSC = host TSC + offset,
#   the guest's TIME_CONV), its comm that task's then, its dso the
#   mapping holding it;
# - perf's own guest pipeline (perf inject --vm-time-correlation, perf inject
#   --guest-data, perf script -F machine_pid,vcpu,...) shows every
#   instruction, host and guest, with the truth's task, address, symbol and
#   dso, and its dry-run finds the offset;
# - code it cannot run (a binary missing from root/) ends in an
#   asynchronous event and is never in the truth; bad input is refused
#   with a clear message.
. "$(dirname "$0")/synth-lib.sh"
: "${VMX_KERNEL:?}" "${GUEST_KERNEL:?}" "${MAKE_GUEST_FIXTURE:?}" "${CRAFT_SIDEBAND:?}"
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

G=fix/guest
make_guest_fixture fix

OFF=-0x2000000000
POFF=0xffffffe000000000
synth() {
	rm -rf g.perf.data
	"$SYNTH" --vm --host-kernel "$VMX_KERNEL" --guest-recording "$1" --vcpus 2 \
		--tsc-offset "$OFF" --psb-period 512 "${@:2}" -o g -q
}

total=0
guest=0
allowed=0
for cfg in "1" "2 --cyc" "3 --noretcomp --guest-slice 1000" "4 --tnt64 --kernel-period 300"; do
	set -- $cfg
	synth fix --seed "$@" --branches 8000 || fail "vmpt-synth --guest-recording ($cfg)"
	for f in data kcore_dir/kcore kcore_dir/kallsyms kcore_dir/modules guest/perf.data \
		 guest/root/bin/busybox guest/kcore_dir/kcore; do
		[ -f "g.perf.data/$f" ] || fail "no g.perf.data/$f"
	done
	n=$(python3 "$HERE/check_gtruth.py" g.gtruth "$G/perf.data" "$OFF") ||
		fail "truth against the guest sideband ($cfg): $n"
	# every task of the fixture ran, the user tasks in both their rings
	cut -f7,8 g.gtruth | sort -u > tasks
	for t in "ls	/bin/busybox" "ls	[guest.kernel.kallsyms]" "bash	/usr/bin/bash" \
		 "bash	/lib/x86_64-linux-gnu/libc.so.6" "bash	[guest.kernel.kallsyms]" \
		 "bash-job	/usr/bin/bash" "sh	[guest.kernel.kallsyms]" \
		 "kworker/0:1	[guest.kernel.kallsyms]"; do
		grep -qxF "$t" tasks || fail "no instructions of '$t' ($cfg)"
	done
	perf inject -i g.perf.data --vm-time-correlation=dry-run 2>&1 |
		sed -n 's/^VMCS: \(0x[0-9a-f]*\)  TSC Offset \(0x[0-9a-f]*\)$/\2/p' | sort -u > off.got
	[ "$(cat off.got)" = "$POFF" ] || fail "perf's dry-run offsets ($cfg): $(cat off.got)"
	perf_guest_pipeline g.perf.data "$G/perf.data" "$POFF" 4242 "$VMX_KERNEL" perf.out
	res=$(python3 "$HERE/check_perf_guest.py" g.gtruth perf.out 4242 "$GUEST_ROOT") ||
		fail "perf's guest pipeline ($cfg): $res"
	set -- $res
	total=$((total + $1))
	allowed=$((allowed + $2))
	guest=$((guest + n))
done

# a binary missing from the guest's root/: bash's own code never runs
rm -rf nobash && cp -r fix nobash && rm nobash/guest/root/usr/bin/bash
synth nobash --seed 1 --branches 8000 || fail "vmpt-synth without bash"
grep -q "/usr/bin/bash" g.gtruth && fail "bash's code in the truth, but no bash binary"
python3 "$HERE/check_gtruth.py" g.gtruth "$G/perf.data" "$OFF" > /dev/null || fail "truth without bash"
perf_guest_pipeline g.perf.data "$G/perf.data" "$POFF" 4242 "$VMX_KERNEL" perf.out
python3 "$HERE/check_perf_guest.py" g.gtruth perf.out 4242 "$GUEST_ROOT" > /dev/null ||
	fail "perf's guest pipeline without bash"

# bad input
expect_error() {	# expect_error MESSAGE ARGS...
	local want=$1
	shift
	if "$SYNTH" "$@" -o bad -q 2> err; then
		fail "vmpt-synth $*: succeeded"
	fi
	grep -qF -- "$want" err || fail "vmpt-synth $*: said '$(cat err)', not '$want'"
}
expect_error "the guest ran on 2 CPUs: give --vcpus 2" \
	--vm --host-kernel "$VMX_KERNEL" --guest-recording fix --vcpus 1
rm -rf nok && cp -r fix nok && rm nok/guest/kcore_dir/kallsyms
expect_error "nok/guest/kcore_dir/kallsyms: No such file or directory" \
	--vm --host-kernel "$VMX_KERNEL" --guest-recording nok --vcpus 2
rm -rf notc && cp -r fix notc && "$CRAFT_SIDEBAND" notc/guest/perf.data /bin/busybox
expect_error "notc/guest/perf.data: no TIME_CONV record: guest time cannot be turned into TSC (boot the guest with no-kvmclock)" \
	--vm --host-kernel "$VMX_KERNEL" --guest-recording notc --vcpus 2
echo "perf's guest pipeline agreed on 4 recordings over a hand-made guest recording:" \
	"$total instructions ($guest of the guest, each of the task the guest's switch" \
	"records say; $allowed comm names at an exec allowed) and on one without bash"
