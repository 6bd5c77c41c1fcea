#!/bin/sh
# The whole record path with the dummy event standing in for intel_pt, on
# vm-tests/vcpu_loop (2 vCPUs on /dev/kvm): perf reads the file and sees
# the vCPU threads' comm, mmap and context switches; KVM's tsc-offset is
# saved; SIGUSR2, the control FIFO and --pid behave.  (Signals and a full
# disk on their own: record-faults.sh.)
set -u
. "$(dirname "$0")/recorder-lib.sh"
LOOP="$BUILDDIR/vm-tests/vcpu_loop"
if ! [ -r /dev/kvm ] || ! [ -w /dev/kvm ]; then
	echo "SKIP: /dev/kvm is not accessible to this user"
	exit 77
fi
if ! command -v perf >/dev/null; then
	echo "SKIP: perf is not installed (linux-perf)"
	exit 77
fi
T=$(mktemp -d)
cleanup() {
	[ -n "${LOOP_PID:-}" ] && kill "$LOOP_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
status=0
fail() {
	echo "FAIL: $*"
	status=1
}
ok() {
	echo "ok: $*"
}
# A private mount namespace lets the test mount debugfs
# without touching the machine's mounts.
NS=""
if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
	NS=1
fi

# 1. -- COMMAND: 2 vCPUs, 20 rounds, the host pausing 2 ms at each ucall.
if [ -n "$NS" ]; then
	unshare -m sh -c "mount -t debugfs none /sys/kernel/debug 2>/dev/null;
		exec \"$VMPT\" record --event dummy -o \"$T/vl.data\" -- \"$LOOP\" 2 20 200 2000" \
		>"$T/rec.out" 2>"$T/rec.err"
else
	"$VMPT" record --event dummy -o "$T/vl.data" -- "$LOOP" 2 20 200 2000 \
		>"$T/rec.out" 2>"$T/rec.err"
fi
rc=$?
cat "$T/rec.out" "$T/rec.err"
[ $rc -eq 0 ] || fail "vmpt record -- vcpu_loop: exit $rc"
grep -q "^ok: 2 vCPUs x 20 rounds" "$T/rec.out" || fail "vcpu_loop did not pass under vmpt record"
perf report --header-only -i "$T/vl.data" >"$T/header" 2>"$T/header.err" ||
	fail "perf report --header-only: $(cat "$T/header.err")"
grep -q "^# event : name = dummy, .*context_switch = 1" "$T/header" &&
	ok "perf report --header-only shows the dummy event" || fail "header: no dummy event"
perf script -i "$T/vl.data" --show-task-events --show-mmap-events --show-switch-events \
	>"$T/script" 2>"$T/script.err" || fail "perf script failed: $(cat "$T/script.err")"
[ -s "$T/script.err" ] && fail "perf script complained: $(cat "$T/script.err")"
pid=$(sed -n 's/.*PERF_RECORD_COMM exec: vcpu_loop:\([0-9]*\)\/.*/\1/p' "$T/script" | head -n 1)
[ -n "$pid" ] && ok "COMM exec of vcpu_loop, pid $pid" || fail "no COMM exec of vcpu_loop"
grep -q "PERF_RECORD_MMAP2 $pid/$pid: .* r-xp $LOOP\$" "$T/script" &&
	ok "MMAP2 of the vcpu_loop text" || fail "no MMAP2 of $LOOP"
for v in 0 1; do
	tid=$(sed -n "s/.*PERF_RECORD_COMM: CPU $v\/KVM:$pid\/\([0-9]*\)\$/\1/p" "$T/script" | head -n 1)
	if [ -z "$tid" ]; then
		fail "no COMM 'CPU $v/KVM'"
		continue
	fi
	n=$(grep -c "^ *CPU $v/KVM *$tid .*PERF_RECORD_SWITCH" "$T/script")
	[ "$n" -ge 10 ] && ok "CPU $v/KVM (tid $tid): $n context switches" ||
		fail "CPU $v/KVM (tid $tid): only $n context switches"
done
if [ -n "$NS" ]; then
	if [ -d /sys/kernel/debug/kvm ] || unshare -m sh -c 'mount -t debugfs none /sys/kernel/debug && test -d /sys/kernel/debug/kvm'; then
		# Each vCPU's value with the time it was first seen, on the
		# recording's clock: after vcpu_loop's exec, before its exit
		# (the VM is made after the exec).
		t_exec=$(awk '/PERF_RECORD_COMM exec: vcpu_loop:/ { sub(":", "", $4); print $4; exit }' "$T/script")
		t_exit=$(awk -v p="$pid" '$0 ~ "PERF_RECORD_EXIT\\(" p ":" p "\\)" { sub(":", "", $4); print $4; exit }' "$T/script")
		for v in 0 1; do
			line=$(grep "^vm $pid-[0-9]* vcpu $v tsc-offset -\?[0-9]* time [0-9]*$" "$T/vl.data.kvm-tsc")
			t=${line##* }
			if [ -n "$line" ] && [ -n "$t_exec" ] && [ -n "$t_exit" ] &&
				awk -v t="$t" -v a="$t_exec" -v b="$t_exit" 'BEGIN { exit !(t / 1e9 > a && t / 1e9 < b) }'; then
				ok "tsc-offset of vCPU $v saved, seen at $t ns (vcpu_loop ran $t_exec-$t_exit s)"
			else
				fail "vCPU $v: '$line' not in vcpu_loop's time ($t_exec-$t_exit): $(cat "$T/vl.data.kvm-tsc" 2>&1)"
			fi
		done
	fi
fi

# 2. SIGUSR2 asks for a snapshot; the dummy event has no AUX area to take
"$VMPT" record --event dummy -S -o "$T/usr2.data" -- "$LOOP" 2 2000 50 500 >"$T/usr2.out" 2>"$T/usr2.err" &
REC=$!
wait_recording $REC || fail "SIGUSR2: the recorder did not start"
kill -USR2 $REC
for _ in $(seq 300); do
	grep -q "snapshot requested" "$T/usr2.err" && break
	sleep 0.1
done
kill -INT $REC
wait $REC
rc=$?
[ $rc -eq 0 ] && grep -q "^vmpt record: snapshot requested, but the dummy event has no AUX area: nothing to take$" "$T/usr2.err" &&
	ok "SIGUSR2: snapshot request handled" || fail "SIGUSR2: exit $rc: $(cat "$T/usr2.err")"

# 3. --pid on a running vcpu_loop: vCPUs from /proc thread names, sideband
# synthesized for what already runs, stopped through the control FIFO.
"$LOOP" 2 100000 20 1000 >"$T/loop.out" 2>&1 &
LOOP_PID=$!
VLPID=$LOOP_PID
# ready when its 2 vCPU threads are there
for i in $(seq 300); do
	[ "$(ls /proc/$LOOP_PID/task | wc -l)" -ge 3 ] && break
	sleep 0.1
done
[ "$(ls /proc/$LOOP_PID/task | wc -l)" -ge 3 ] || fail "vcpu_loop made no vCPU threads"
mkfifo "$T/ctl"
"$VMPT" record --event dummy --pid $LOOP_PID --control "fifo:$T/ctl" -o "$T/pid.data" \
	>"$T/pid.out" 2>"$T/pid.err" &
REC=$!
# stopped once the vCPU threads' switches are being written
wait_for_record "$T/pid.data" "PERF_RECORD_SWITCH" --show-switch-events ||
	fail "--pid: no switch written while recording"
# a writer blocks while no reader has the FIFO open: bound it
timeout 10 sh -c "echo stop >'$T/ctl'" || fail "control FIFO: nobody read 'stop'"
wait $REC
rc=$?
kill $LOOP_PID
wait $LOOP_PID 2>/dev/null
LOOP_PID=""
[ $rc -eq 0 ] && ok "control FIFO stop: exit 0" || fail "control FIFO stop: exit $rc: $(cat "$T/pid.err")"
line=$(grep "vCPU threads of process" "$T/pid.err")
echo "$line"
case "$line" in
"vmpt record: 2 vCPU threads of process $VLPID (/proc thread names): "[0-9]*" "[0-9]*) ok "--pid: vCPUs found by thread name";;
*) fail "--pid: $line";;
esac
tids=${line##*: }
perf script -i "$T/pid.data" --show-task-events --show-mmap-events --show-switch-events \
	>"$T/pid.script" 2>&1
for tid in $tids; do
	grep -q "PERF_RECORD_COMM: CPU [01]/KVM:$VLPID/$tid\$" "$T/pid.script" &&
		ok "--pid: synthesized COMM of tid $tid" || fail "--pid: no COMM for $tid"
done
grep -q "PERF_RECORD_MMAP2 $VLPID/$VLPID: .* r-xp $LOOP\$" "$T/pid.script" &&
	ok "--pid: synthesized MMAP2 of the vcpu_loop text" || fail "--pid: no MMAP2"
others=$(grep "PERF_RECORD_SWITCH" "$T/pid.script" | awk -v t=" $tids " '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/) { if (index(t, " " $i " ") == 0) print; break } }' | wc -l)
all=$(grep -c "PERF_RECORD_SWITCH" "$T/pid.script")
[ "$others" -eq 0 ] && [ "$all" -gt 0 ] && ok "--pid: $all switches, of the vCPU threads only" ||
	fail "--pid: $others of $all switches of other threads"

exit $status
