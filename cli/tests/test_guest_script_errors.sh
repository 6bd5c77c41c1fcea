#!/bin/bash
# vmpt script -i REC on VM recordings whose guest side is incomplete,
# hostile or wrong: each case's exact message and exit status, and
# decoding goes on where it can (never a hang, never a file outside
# REC/guest/root read):
# - guest/root missing (warning; the guest's user code is decoding
#   errors), guest/kcore_dir missing (warning);
# - guest paths with a '..' component, through a symlink, naming a FIFO
#   (warnings naming file, offset, pid and path; nothing read there);
# - the guest booted with kvm-clock (no TIME_CONV), no vCPU threads (QEMU
#   without debug-threads), a guest with more CPUs than the VM's vCPU
#   map (another VM's recording): errors, exit status 1, and
#   --no-guest-tasks decodes them.
: "${SRCDIR:?}" "${VMPT:?}"
. "$SRCDIR/tools/synth/tests/synth-lib.sh"
: "${VMX_KERNEL:?}" "${GUEST_KERNEL:?}" "${MAKE_GUEST_FIXTURE:?}" "${CRAFT_SIDEBAND:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

make_guest_fixture fix
"$SYNTH" --vm --host-kernel "$VMX_KERNEL" --guest-recording fix --vcpus 2 \
	--tsc-offset -0x2000000000 --psb-period 512 --branches 3000 --seed 1 -o g -q ||
	fail "vmpt-synth"
"$VMPT" script -i g.perf.data --itrace=i0ns -F tid,ip > good.out 2> good.err ||
	fail "vmpt script on the whole recording: $(cat good.err)"
[ "$(wc -l < good.out)" = "$(wc -l < g.gtruth)" ] || fail "the whole recording: not the truth"
grep -q warning good.err && fail "the whole recording: $(grep warning good.err)"

# run CASE ARGS...: vmpt script on a copy of the recording CASE has made
# (its stdout in CASE.out, stderr in CASE.err, exit status in $status)
run() {
	local c=$1
	shift
	status=0
	timeout 60 "$VMPT" script -i "$c" --itrace=i0nse -F tid,ip "$@" > "$c.out" 2> "$c.err" ||
		status=$?
	[ $status = 124 ] && fail "$c: vmpt script hung"
	return 0
}
fresh() {
	rm -rf "$1"
	cp -r g.perf.data "$1"
}
expect_line() {	# expect_line CASE LINE: LINE is one of CASE's stderr lines
	grep -qxF -- "$2" "$1.err" || { echo "--- $1.err:"; cat "$1.err"; fail "$1: no line '$2'"; }
}
expect_status() {
	[ "$status" = "$2" ] || { cat "$1.err"; fail "$1: exit status $status, not $2"; }
}

# no guest/root: every guest user instruction is missing code
fresh noroot
rm -rf noroot/guest/root
run noroot
expect_status noroot 0
expect_line noroot "vmpt: warning: noroot/guest/root: No such file or directory: the guest's binaries are not in the recording: its user code cannot be decoded (vmpt record --guest and vmpt guest collect fetch them)"
grep -q "code 5: Failed to get instruction" noroot.out || fail "noroot: no decoding error"
[ "$(grep -c '^ *20[0-9] ' noroot.out)" -lt "$(grep -c '^ *20[0-9] ' good.out)" ] ||
	fail "noroot: as many guest instructions as with root/"

# no guest/kcore_dir
fresh nokcore
rm -rf nokcore/guest/kcore_dir
run nokcore
expect_status nokcore 0
expect_line nokcore "vmpt: warning: nokcore/guest/kcore_dir: No such file or directory: the guest kernel's code cannot be decoded (vmpt record --guest --kcore saves it)"

# hostile names: '..' (the same record size), a symlink out of root, a FIFO
fresh hostile
python3 - hostile/guest/perf.data <<'EOF'
import sys
p = sys.argv[1]
b = open(p, 'rb').read()
assert b.count(b'/usr/bin/bash\0') >= 1
open(p, 'wb').write(b.replace(b'/usr/bin/bash\0', b'/../bin/bash\0\0'))
EOF
ln -sf /lib/x86_64-linux-gnu/libc.so.6 hostile/guest/root/lib/x86_64-linux-gnu/libc.so.6
rm hostile/guest/root/bin/busybox
mkfifo hostile/guest/root/bin/busybox
run hostile
expect_status hostile 0
for what in "/../bin/bash': not looked up (a '..' component" \
	    "/lib/x86_64-linux-gnu/libc.so.6': not looked up (a symlink on the way" \
	    "/bin/busybox': not looked up (not a regular file"; do
	grep -q "^vmpt: warning: hostile/guest/perf.data: offset 0x[0-9a-f]*: mapping of guest pid [0-9]* names '$what; a guest's paths are read inside hostile/guest/root only)$" hostile.err ||
		{ cat hostile.err; fail "hostile: no warning for $what"; }
done
grep -q "libc.so.6\|/bin/bash\|busybox" hostile.out && fail "hostile: code of a refused file decoded"

# the guest's clock was kvm-clock: its sideband has no TIME_CONV
fresh kvmclock
"$CRAFT_SIDEBAND" kvmclock/guest/perf.data /bin/busybox || fail "craft-sideband"
run kvmclock
expect_status kvmclock 1
expect_line kvmclock "vmpt script: kvmclock/guest/perf.data: no TIME_CONV record: guest perf time cannot be turned into guest TSC (the guest's perf clock is not the TSC, as with kvm-clock): boot the guest with no-kvmclock"
run kvmclock --no-guest-tasks
expect_status kvmclock 0

# QEMU without debug-threads: no thread is named "CPU n/KVM"
fresh nonames
python3 - nonames/data <<'EOF'
import sys
p = sys.argv[1]
b = open(p, 'rb').read()
for n in (b'0', b'1'):
    b = b.replace(b'CPU ' + n + b'/KVM', b'vcpu' + n + b'-KVM')
open(p, 'wb').write(b)
EOF
run nonames
expect_status nonames 1
expect_line nonames "vmpt script: nonames: no vCPU threads found: no COMM record names a thread 'CPU n/KVM' and there is no vCPU map beside it; QEMU names its vCPU threads so when started with -name NAME,debug-threads=on (vmpt record saves the map from QMP or libvirt)"
run nonames --no-guest-tasks
expect_status nonames 0

# the vCPU map knows one vCPU, the guest ran on two: another VM's
fresh onevcpu
echo "vcpu 0 tid 4243 source qmp" > onevcpu/vcpus
run onevcpu
expect_status onevcpu 1
grep -qx "vmpt script: onevcpu/guest/perf.data: offset 0x[0-9a-f]*: the guest recording has CPU 1, but pid 4242 has 1 vCPU thread (CPU 0: tid 4243): a recording of another VM, or of a guest with more CPUs?" onevcpu.err ||
	{ cat onevcpu.err; fail "onevcpu: message"; }
run onevcpu --no-guest-tasks
expect_status onevcpu 0
echo "6 broken guest sides: 3 warned about and decoded, 3 errors (exit status 1," \
	"decoded with --no-guest-tasks), hostile paths refused"
