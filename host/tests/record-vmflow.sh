#!/bin/bash
# The VM workflow of docs/vm-tracing.md with vmpt's own recordings, where
# no KVM guest can run: a stand-in QEMU (vm-tests/standin_qemu, threads
# named 'CPU n/KVM', one per CPU here) is the host side, and this machine
# reached over a loopback sshd is the guest (the guest tests' fixture).
#  - perf 6.1 takes them as its VM recipe has it: perf inject --guest-data
#    (the host file's FINISHED_INIT) and perf script -F+machine_pid,+vcpu
#    show every guest record, each with the guest CPU it was recorded on
#    (the agent's per-CPU ids and ID_INDEX); the guest's build-ids;
#  - what the recorder keeps: REC.vcpus, REC.guest/ (never a guest/ beside
#    it, found by vmpt guest maps REC), collect's summary, mode 0600, the
#    previous recording as REC.old with its parts, tsc-offset over time
#    (a debugfs fixture changed while recording) and why none is saved;
#  - --duration and -- sleep N with --pid;
#  - a bad output is refused before anything happens in the guest.
set -u
. "$(dirname "$0")/recorder-lib.sh"
SQ_EXE=$BUILDDIR/vm-tests/standin_qemu
AGENT=$BUILDDIR/guest-agent/vmpt-agent
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (the guest agent's cpu-wide events, root login)"
	exit 77
fi
for p in /usr/sbin/sshd /usr/lib/openssh/sftp-server ssh-keygen perf python3 readelf; do
	command -v "$p" >/dev/null || { echo "SKIP: $p missing (tools/install-deps.sh)"; exit 77; }
done
T=$(mktemp -d /tmp/vmpt-vmflow.XXXXXX)
SQ=""
# shellcheck source=../../guest-agent/tests/sshd_fixture.sh
. "$SRCDIR/guest-agent/tests/sshd_fixture.sh"
cleanup() {
	[ -n "$SQ" ] && kill "$SQ" 2>/dev/null
	sshd_stop
	rm -rf "$T"
}
trap cleanup EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
ok() { echo "ok: $*"; }
check() {	# check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}

sshd_start "$T" || exit 1
URL=ssh://root@127.0.0.1:$SSHD_PORT
GUEST=(--guest "$URL" --guest-identity "$T/client_key" --guest-known-hosts "$T/known_hosts"
       --guest-agent "$AGENT" --guest-remote-dir "$T/remote" --guest-timeout 60)
NCPU=$(getconf _NPROCESSORS_ONLN)
"$SQ_EXE" "$NCPU" >"$T/sq.out" 2>&1 &
SQ=$!
for _ in $(seq 50); do
	[ "$(ls /proc/$SQ/task 2>/dev/null | wc -l)" -gt "$NCPU" ] && break
	sleep 0.1
done
vcpu_map=$(for t in /proc/$SQ/task/*; do
	c=$(cat "$t/comm")
	case "$c" in "CPU "*/KVM) n=${c#CPU }; echo "vcpu ${n%/KVM} tid ${t##*/} source thread-names";; esac
done | sort -k2n)

# 1. A bad output is refused before the guest is touched: the agent would
# be deployed to $T/untouched.
UNTOUCHED=(--guest "$URL" --guest-identity "$T/client_key" --guest-known-hosts "$T/known_hosts"
	   --guest-agent "$AGENT" --guest-remote-dir "$T/untouched")
expect_refused() {	# expect_refused MESSAGE ARGS...
	local want=$1
	shift
	"$VMPT" record --event dummy --pid "$SQ" "${UNTOUCHED[@]}" "$@" -- sleep 1 \
		>"$T/bad.out" 2>"$T/bad.err"
	local rc=$?
	if [ $rc -eq 1 ] && [ "$(cat "$T/bad.err")" = "$want" ] && [ ! -e "$T/untouched" ]; then
		ok "refused before the guest: $want"
	else
		fail "exit $rc, nothing in the guest ($(ls -d "$T/untouched" 2>&1)): $(cat "$T/bad.err"); want: $want"
	fi
}
expect_refused "vmpt record: cannot write $T/nodir/host.data: directory $T/nodir does not exist" \
	-o "$T/nodir/host.data"
if unshare -m true 2>/dev/null; then
	mkdir "$T/ro" "$T/full"
	expect_refused_ns() {	# as expect_refused, in a mount namespace with SETUP run first
		local setup=$1 want=$2
		shift 2
		unshare -m bash -c "$setup"' && exec "$@"' sh "$VMPT" record --event dummy \
			--pid "$SQ" "${UNTOUCHED[@]}" "$@" -- sleep 1 >"$T/bad.out" 2>"$T/bad.err"
		local rc=$?
		if [ $rc -eq 1 ] && [ "$(cat "$T/bad.err")" = "$want" ] && [ ! -e "$T/untouched" ]; then
			ok "refused before the guest: $want"
		else
			fail "exit $rc: $(cat "$T/bad.err"); want: $want"
		fi
	}
	expect_refused_ns "mount -t tmpfs -o ro,size=1m none '$T/ro'" \
		"vmpt record: cannot write $T/ro/host.data: directory $T/ro is not writable (Read-only file system)" \
		-o "$T/ro/host.data"
	expect_refused_ns "mount -t tmpfs -o size=8k none '$T/full' && (cat /dev/zero > '$T/full/fill' 2>/dev/null; true)" \
		"vmpt record: cannot write $T/full/host.data: no space left in $T/full (0 bytes free)" \
		-o "$T/full/host.data"
fi

# 2. The recording: the stand-in's vCPU threads, the guest's sideband, and
# a command that times it (perf record -p PID -- sleep 2).
mkdir "$T/rec"
REC=$T/rec/host.data
"$VMPT" record --event dummy --pid "$SQ" -o "$REC" "${GUEST[@]}" -- sleep 2 \
	>"$T/rec.out" 2>"$T/rec.err"
rc=$?
cat "$T/rec.err"
[ $rc -eq 0 ] || fail "vmpt record --guest: exit $rc"
check "record --guest prints collect's summary" grep -qE \
	"^guest: [1-9][0-9]* files \([0-9]+ bytes\) in $REC.guest, [0-9]+ missing, 0 rejected$" "$T/rec.err"
check "the guest side is $REC.guest, no guest/ beside it" \
	test -f "$REC.guest/perf.data" -a ! -e "$T/rec/guest"
check "the vCPU map: $(echo "$vcpu_map" | tr '\n' ';')" test "$(cat "$REC.vcpus")" = "$vcpu_map"
modes=$(stat -c '%a %n' "$REC" "$REC.vcpus" "$REC.guest" | tr '\n' ';')
check "owner-only modes: $modes" test "$modes" = "600 $REC;600 $REC.vcpus;700 $REC.guest;"
"$VMPT" guest maps "$REC" >"$T/maps.out" 2>&1
check "vmpt guest maps finds $REC.guest from the recording's name" \
	grep -qE " $(readlink -f /bin/sleep) \(in sysroot\)$" "$T/maps.out"
check "vmpt guest maps REC.guest works too" sh -c '"$1" guest maps "$2" >/dev/null' sh "$VMPT" "$REC.guest"
perf script -D -i "$REC" 2>/dev/null | grep -c "PERF_RECORD_FINISHED_INIT" >"$T/fi" || true
check "one FINISHED_INIT in the host file ($(cat "$T/fi"))" test "$(cat "$T/fi")" = 1

# 3. perf's VM recipe on vmpt's files: inject the guest sideband into the
# host recording, then every guest record shows with the guest CPU it was
# recorded on (VCPU) and the QEMU pid (VM).
perf inject -i "$REC" -o "$T/inj.data" --guest-data="$REC.guest/perf.data,$SQ" \
	>"$T/inject.out" 2>&1
rc=$?
check "perf inject --guest-data=$REC.guest/perf.data,$SQ (exit $rc$( [ -s "$T/inject.out" ] && echo ": $(cat "$T/inject.out")"))" \
	test $rc -eq 0
SHOW=(--show-task-events --show-mmap-events --show-switch-events)
perf script -i "$REC.guest/perf.data" "${SHOW[@]}" >"$T/guest.txt" 2>/dev/null
perf script -i "$T/inj.data" "${SHOW[@]}" -F+machine_pid,+vcpu >"$T/inj.txt" 2>"$T/inj.err"
if python3 "$SRCDIR/host/tests/inject-vcpus.py" "$T/guest.txt" "$T/inj.txt" "$SQ" >"$T/cmp.out"; then
	set -- $(tail -n 1 "$T/cmp.out")
	n=$1
	shift
	vcpus="$*"
	ok "perf script -F+machine_pid,+vcpu: all $n guest records as VM:$SQ with the guest CPU they were recorded on (VCPUs $vcpus)"
else
	vcpus=""
	fail "injected guest records differ from the guest's: $(cat "$T/cmp.out")"
fi
check "guest records from every guest CPU ($vcpus)" test "$(echo $vcpus | wc -w)" = "$NCPU"
sleep_id=$(readelf -n "$(readlink -f /bin/sleep)" | awk '/Build ID/ { print $3 }')
check "the guest's HEADER_BUILD_ID: sleep ($sleep_id), the kernel, the vdso" sh -c \
	"perf buildid-list -i '$REC.guest/perf.data' 2>/dev/null | grep -q '^$sleep_id ' &&
	 perf buildid-list -i '$REC.guest/perf.data' 2>/dev/null | grep -q ' \[kernel.kallsyms\]$' &&
	 perf buildid-list -i '$REC.guest/perf.data' 2>/dev/null | grep -q ' \[vdso\]$'"

# 4. Again to the same name, for --duration: the first recording becomes
# host.data.old with its parts; nothing of it stays under the new name.
cp "$REC" "$T/first.data"
timeout 60 "$VMPT" record --event dummy --pid "$SQ" -o "$REC" --duration 0.5 \
	>"$T/dur.out" 2>"$T/dur.err"
rc=$?
check "--duration 0.5 ends the recording (exit $rc)" test $rc -eq 0
check "the previous recording is $REC.old" cmp -s "$T/first.data" "$REC.old"
check "its parts went with it: $REC.old.vcpus, $REC.old.guest" \
	test -f "$REC.old.vcpus" -a -f "$REC.old.guest/perf.data"
check "no stale $REC.guest under the new name" test ! -e "$REC.guest"
check "vmpt guest maps $REC.old finds $REC.old.guest" sh -c '"$1" guest maps "$2" >/dev/null' sh "$VMPT" "$REC.old"

# 5. tsc-offset over time, on a debugfs fixture the test changes while
# recording: each vCPU's first value and the change, with the perf time
# each held from, within the recording.
D=$T/debugfs
mkdir -p "$D/kvm/$SQ-11/vcpu0" "$D/kvm/$SQ-11/vcpu1"
echo -1000 >"$D/kvm/$SQ-11/vcpu0/tsc-offset"
echo -2000 >"$D/kvm/$SQ-11/vcpu1/tsc-offset"
"$VMPT" record --event dummy --pid "$SQ" --debugfs-root "$D" -o "$T/tsc.data" --duration 2 \
	>"$T/tsc.out" 2>"$T/tsc.err" &
R=$!
wait_recording $R
# changed once the events are on (the first values were read before them)
wait_for_record "$T/tsc.data" "PERF_RECORD_SWITCH" --show-switch-events ||
	fail "tsc-offset: no switch written while recording"
echo -5000 >"$D/kvm/$SQ-11/vcpu0/tsc-offset.new"
mv "$D/kvm/$SQ-11/vcpu0/tsc-offset.new" "$D/kvm/$SQ-11/vcpu0/tsc-offset"
wait $R
cat "$T/tsc.err"
check "tsc-offset: 3 values saved" grep -qx \
	"vmpt record: tsc-offset of 2 vCPUs saved in $T/tsc.data.kvm-tsc (3 values)" "$T/tsc.err"
cat "$T/tsc.data.kvm-tsc"
# record times: the previous recording's last, this one's first and last
times() { perf script -i "$1" --show-switch-events 2>/dev/null | grep -oE '\] +[0-9]+\.[0-9]+:' | tr -d '] :'; }
before=$(times "$REC" | tail -n 1)
first=$(times "$T/tsc.data" | head -n 1)
last=$(times "$T/tsc.data" | tail -n 1)
if python3 - "$T/tsc.data.kvm-tsc" "$SQ" "$before" "$first" "$last" <<'PY'; then
import re, sys
lines = open(sys.argv[1]).read().splitlines()
vm, before, first, last = sys.argv[2] + "-11", float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
pat = re.compile(r"^vm (\S+) vcpu (\d) tsc-offset (-?\d+) time (\d+)$")
got = [pat.match(l).groups() for l in lines]
vals = sorted((int(c), int(o)) for v, c, o, t in got[:2])
times = [int(t) for v, c, o, t in got]
assert all(v == vm for v, c, o, t in got), got
assert vals == [(0, -1000), (1, -2000)], vals
assert got[2][1:3] == ("0", "-5000"), got[2]
assert times == sorted(times) and times[0] < times[2], times
# the first values were read as the recording started, before its events
# were on (after the previous recording), the change while it ran
assert before < times[0] / 1e9 <= first, (times, before, first)
assert first < times[2] / 1e9 < last, (times, first, last)
PY
	ok "tsc-offset series: first values and the change in time order, on the recording's clock (first values after $before s, before $first s; the change before $last s)"
else
	fail "tsc-offset series (recording $first-$last s)"
fi
# debugfs with KVM but no VM of the process (QEMU with TCG), and a VM
# without tsc-offset files
mkdir -p "$T/dbg2/kvm/1-1" "$T/dbg3/kvm/$SQ-4/vcpu0"
for d in dbg2 dbg3; do
	"$VMPT" record --event dummy --pid "$SQ" --debugfs-root "$T/$d" -o "$T/$d.data" \
		--duration 0.2 >/dev/null 2>"$T/$d.err"
done
check "no VM of the process: said" grep -qx "vmpt record: tsc-offset not saved: $T/dbg2/kvm has no VM of process $SQ: its vCPUs do not run on KVM (QEMU emulating them: -accel tcg)" "$T/dbg2.err"
check "no tsc-offset files: said" grep -qx "vmpt record: tsc-offset not saved: $T/dbg3/kvm/$SQ-4 has no vcpuN/tsc-offset files" "$T/dbg3.err"
exit $status
