#!/bin/sh
# vCPU discovery and recording on real QEMU processes (TCG, no disk: the
# BIOS runs and halts, which is enough for the vCPU threads to switch).
#  - with a QMP socket on its command line: query-cpus-fast
#  - without QMP but with debug-threads=on: /proc thread names
#  - with neither: a clear error
# and per-CPU mode (-a, -C) on the QEMU's CPUs; the vCPU map saved with
# its source; a TCG QEMU is no KVM VM (no tsc-offset, and vmpt doctor says
# its vCPU threads are emulated); tracepoints on its vCPU threads.
set -u
. "$(dirname "$0")/recorder-lib.sh"
QEMU=$(command -v qemu-system-x86_64)
if [ -z "$QEMU" ]; then
	echo "SKIP: qemu-system-x86_64 is not installed (tools/install-deps.sh installs qemu-system-x86)"
	exit 77
fi
T=$(mktemp -d)
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
ok() { echo "ok: $*"; }

# start_qemu NAME ARGS...: QEMU in the background, its pid in QPID
start_qemu() {
	name=$1
	shift
	"$QEMU" -machine pc,accel=tcg -smp 2 -m 64 -nodefaults -display none \
		-no-reboot -pidfile "$T/$name.pid" "$@" >"$T/$name.log" 2>&1 &
	QPID=$!
	PIDS="$PIDS $QPID"
	for i in $(seq 50); do
		[ -s "$T/$name.pid" ] && [ "$(ls /proc/$QPID/task 2>/dev/null | wc -l)" -ge 4 ] && return 0
		sleep 0.1
	done
	fail "QEMU $name did not start: $(cat "$T/$name.log")"
	return 1
}

# vcpu_tids PID: "CPU n/..." thread ids from /proc, in vCPU order
vcpu_tids() {
	for t in /proc/$1/task/*; do
		c=$(cat "$t/comm")
		case "$c" in "CPU "*/*) echo "${c#CPU } ${t##*/}";; esac
	done | sort -n | awk '{ printf "%s%s", sep, $2; sep = " " }'
}

# record_until PATTERN OUT ARGS...: SIGINT once perf script reads a
# switch record matching PATTERN in OUT (written while recording)
record_until() {
	pat=$1
	out=$2
	shift 2
	"$VMPT" record --event dummy -o "$out" "$@" >"$out.out" 2>"$out.err" &
	rec=$!
	wait_recording $rec || fail "$out: the recorder did not start"
	wait_for_record "$out" "$pat" --show-switch-events || fail "$out: no '$pat' while recording"
	kill -INT $rec
	wait $rec
}

# 1. QMP
start_qemu qmp -name vmpt-qmp,debug-threads=on -qmp "unix:$T/qmp.sock,server=on,wait=off" || exit 1
want=$(vcpu_tids $QPID)
record_until "^ *CPU 0/TCG .*PERF_RECORD_SWITCH" "$T/qmp.data" --pid $QPID
rc=$?
cat "$T/qmp.data.err"
[ $rc -eq 0 ] || fail "record --pid (QMP): exit $rc"
grep -q "^vmpt record: 2 vCPU threads of process $QPID (QMP query-cpus-fast): $want\$" "$T/qmp.data.err" &&
	ok "QMP query-cpus-fast found the vCPU threads $want" || fail "QMP: expected threads $want"
map=$(i=0; for tid in $want; do echo "vcpu $i tid $tid source qmp"; i=$((i + 1)); done)
[ "$(cat "$T/qmp.data.vcpus")" = "$map" ] && ok "vCPU map saved: $(echo $map)" ||
	fail "qmp.data.vcpus: $(cat "$T/qmp.data.vcpus" 2>&1), want $map"
perf report --header-only -i "$T/qmp.data" >/dev/null 2>"$T/h.err" && [ ! -s "$T/h.err" ] &&
	ok "perf report --header-only reads it" || fail "perf report --header-only: $(cat "$T/h.err")"
perf script -i "$T/qmp.data" --show-task-events --show-mmap-events --show-switch-events \
	>"$T/qmp.script" 2>"$T/qmp.script.err"
[ -s "$T/qmp.script.err" ] && fail "perf script: $(cat "$T/qmp.script.err")"
i=0
for tid in $want; do
	grep -q "PERF_RECORD_COMM: CPU $i/TCG:$QPID/$tid\$" "$T/qmp.script" &&
		ok "COMM of CPU $i/TCG ($tid)" || fail "no COMM of CPU $i/TCG ($tid)"
	i=$((i + 1))
done
grep -q "PERF_RECORD_MMAP2 $QPID/$QPID: .* r-xp $(readlink -f "$QEMU")\$" "$T/qmp.script" &&
	ok "MMAP2 of the QEMU binary" || fail "no MMAP2 of $QEMU"
tid0=${want%% *}
n=$(grep -c "^ *CPU 0/TCG *$tid0 .*PERF_RECORD_SWITCH" "$T/qmp.script")
[ "$n" -gt 0 ] && ok "CPU 0/TCG: $n context switches" || fail "no context switch of CPU 0/TCG"
others=$(grep "PERF_RECORD_SWITCH" "$T/qmp.script" |
	awk -v t=" $want " '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/) { if (index(t, " " $i " ") == 0) print; break } }' | wc -l)
[ "$others" -eq 0 ] && ok "only the vCPU threads are traced" || fail "$others switches of other threads"

# 2. per-CPU: -a follows every CPU (CPU-wide switch records), -C 0 one
record_until "PERF_RECORD_SWITCH_CPU_WIDE" "$T/all.data" -a --pid $QPID
perf script -i "$T/all.data" --show-switch-events >"$T/all.script" 2>&1
grep -q "PERF_RECORD_SWITCH_CPU_WIDE" "$T/all.script" &&
	ok "-a: CPU-wide switch records" || fail "-a: no SWITCH_CPU_WIDE: $(cat "$T/all.data.err")"
record_until "PERF_RECORD_SWITCH" "$T/cpu0.data" -C 0 --pid $QPID
perf script -i "$T/cpu0.data" --show-switch-events >"$T/cpu0.script" 2>&1
cpus=$(grep -o ' \[[0-9]*\] ' "$T/cpu0.script" | sort -u | tr -d ' \n')
[ "$cpus" = "[000]" ] && ok "-C 0: records of CPU 0 only" || fail "-C 0: CPUs $cpus"

# 3. no QMP: /proc thread names
start_qemu named -name vmpt-named,debug-threads=on || exit 1
want=$(vcpu_tids $QPID)
record_until "PERF_RECORD_SWITCH" "$T/named.data" --pid $QPID
grep -q "^vmpt record: 2 vCPU threads of process $QPID (/proc thread names): $want\$" "$T/named.data.err" &&
	ok "/proc thread names found $want" || fail "/proc fallback: $(cat "$T/named.data.err")"
grep -q "source thread-names" "$T/named.data.vcpus" && ok "vCPU map source: thread-names" ||
	fail "named.data.vcpus: $(cat "$T/named.data.vcpus" 2>&1)"
# A TCG QEMU has no VM in KVM's debugfs (mounted in a mount namespace of
# our own), and vmpt doctor calls its vCPU threads emulated.
if [ "$(id -u)" -eq 0 ] && unshare -m sh -c 'mount -t debugfs none /sys/kernel/debug && test -d /sys/kernel/debug/kvm' 2>/dev/null; then
	unshare -m sh -c 'mount -t debugfs none /sys/kernel/debug && exec "$@"' sh \
		"$VMPT" record --event dummy --pid $QPID --duration 0.3 -o "$T/tcg.data" \
		>/dev/null 2>"$T/tcg.err"
	grep -qx "vmpt record: tsc-offset not saved: /sys/kernel/debug/kvm has no VM of process $QPID: its vCPUs do not run on KVM (QEMU emulating them: -accel tcg)" "$T/tcg.err" &&
		ok "TCG: no VM in debugfs, said" || fail "TCG tsc-offset: $(cat "$T/tcg.err")"
fi
"$VMPT" doctor --no-libvirt >"$T/doctor.out" 2>&1
grep -qx "PROBLEM QEMU vCPUs: process $QPID: 2 vCPU threads named 'CPU n/TCG': QEMU emulates this guest, so its code never runs in VMX non-root and Intel PT sees QEMU translating, no VM entries; start it with -accel kvm (libvirt: <domain type='kvm'>)" "$T/doctor.out" &&
	ok "vmpt doctor: the TCG QEMU's vCPU threads are emulated" || fail "doctor: $(grep QEMU "$T/doctor.out")"

# Tracepoints beside the trace on the vCPU threads (-e SYSTEM:NAME, globs
# too): perf script reads the file as its own and vmpt script prints the
# same lines; a TCG QEMU's vCPU threads never hit kvm:kvm_exit.
"$VMPT" record --event dummy -e sched:sched_switch -e 'kvm:kvm_e*' --pid $QPID --duration 0.5 \
	-o "$T/tp.data" >/dev/null 2>"$T/tp.err" || fail "record -e tracepoints: $(cat "$T/tp.err")"
perf evlist -i "$T/tp.data" >"$T/tp.evlist" 2>&1
grep -qx 'kvm:kvm_exit' "$T/tp.evlist" && grep -qx 'kvm:kvm_entry' "$T/tp.evlist" &&
	grep -qx 'sched:sched_switch' "$T/tp.evlist" && ok "tracepoints in perf evlist: $(grep -c : "$T/tp.evlist")" ||
	fail "perf evlist: $(cat "$T/tp.evlist")"
perf script -i "$T/tp.data" >"$T/tp.perf" 2>"$T/tp.perr"
"$VMPT" script -i "$T/tp.data" >"$T/tp.vmpt" 2>"$T/tp.verr"
n=$(grep -c "^ *CPU [01]/TCG .* sched:sched_switch: prev_comm=CPU [01]/TCG prev_pid=" "$T/tp.perf")
[ "$n" -gt 0 ] && [ ! -s "$T/tp.perr" ] && ok "perf script: $n switches of the vCPU threads" ||
	fail "perf script of the tracepoints: $n switches, $(cat "$T/tp.perr")"
cmp -s "$T/tp.perf" "$T/tp.vmpt" && [ ! -s "$T/tp.verr" ] && ok "vmpt script: perf's lines" ||
	fail "vmpt script of the tracepoints: $(diff "$T/tp.perf" "$T/tp.vmpt" | head -5) $(cat "$T/tp.verr")"
! grep -q 'kvm:kvm_exit:' "$T/tp.perf" && ok "TCG: no kvm_exit" || fail "TCG: kvm_exit samples"

# 4. neither
start_qemu anon || exit 1
"$VMPT" record --event dummy -o "$T/anon.data" --pid $QPID >"$T/anon.out" 2>"$T/anon.err"
rc=$?
want="vmpt record: cannot find the vCPU threads of process $QPID: no QMP socket on the command line of process $QPID; no thread of process $QPID is named 'CPU N/KVM' (start QEMU with -name ...,debug-threads=on)"
[ $rc -eq 1 ] && [ "$(tail -n 1 "$T/anon.err")" = "$want" ] && ok "$want" ||
	fail "no discovery: exit $rc: $(cat "$T/anon.err")"
exit $status
