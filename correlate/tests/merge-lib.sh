# Shared by the guest-merge tests (sourced).  Real recordings made here:
# a stand-in QEMU process (standin-qemu: threads "CPU n/KVM", pinned, busy
# and sleeping) recorded from the host side, and this machine recorded
# cpu-wide while two processes pass data through a pipe, standing in for
# the guest.  Both get TIME_CONV records that put them on one time line
# (perf_data_edit.py): this machine's perf clock is
# kvm-clock, so perf record writes none, the very case vmpt refuses for a
# real guest.
: "${BUILDDIR:?}" "${SRCDIR:?}" "${VMPT:?}"
STANDIN=$BUILDDIR/correlate/tests/standin-qemu
EDIT="python3 $SRCDIR/correlate/tests/perf_data_edit.py"
command -v perf >/dev/null || { echo "SKIP: perf (linux-perf) not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
T=$(mktemp -d)
KILL=
cleanup() {
	for p in $KILL; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ -n "${KEEP_TMP:-}" ]; then echo "kept $T" >&2; else rm -rf "$T"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The clocks: a 2596.122 MHz TSC (this machine's), perf's shift 31; the
# host's TSC started 5 s before its perf clock, the guest's TSC runs
# OFFSET ticks ahead (about SCALE times as fast for the scaled pair), and the
# guest's time_zero makes host and guest times of one moment agree to the
# nanosecond or so, so the guest's records fall among the host's.
SHIFT=31
MULT=827189033
HOST_ZERO=-5000000000
OFFSET=0x1000000000
SCALE=1.5
tsc_ns() { $EDIT tsc-to-ns $SHIFT "$1" 0 "$2"; }
GUEST_ZERO=$((HOST_ZERO - $(tsc_ns $MULT $OFFSET)))
# The scaled guest's TSC runs 13 ppb off 1.5 times the host's (a real
# clock is never exact), so that over the recording the host ticks perf
# and vmpt pick fall on both sides of a nanosecond: the pin sees both.
SCALED_MULT=$(python3 -c "print(round($MULT / $SCALE) + 7)")
GUEST_ZERO_SCALED=$(python3 -c "print($HOST_ZERO - round($(tsc_ns $MULT $OFFSET) / $SCALE))")

# standin N [ACCEL]: start a stand-in QEMU; $QEMU once its N threads are named.
standin() {
	"$STANDIN" "$@" &
	QEMU=$!
	KILL="$KILL $QEMU"
	for _ in $(seq 200); do
		n=$(cat /proc/$QEMU/task/*/comm 2>/dev/null | grep -c '^CPU [0-9]*/' || true)
		[ "$n" -eq "$1" ] && return 0
		sleep 0.05
	done
	fail "the stand-in QEMU did not name its threads"
}

# perf record must be allowed cpu-wide here.
perf record -q -a -e dummy -o "$T/probe.data" -- true >"$T/probe.err" 2>&1 ||
	{ cat "$T/probe.err"; echo "SKIP: perf record -a not permitted"; exit 77; }

# record_guest OUT [perf record options]: this machine cpu-wide, as a
# guest's perf record -a would see it, while `dd | cat` switch to and fro.
# Both run on CPU 0: on two CPUs they can stream through the pipe side by
# side with few switches (81 in one run here); on one, each 64 KB pipe-full is
# at least four switch records (1,500 for these 24 MB).
record_guest() {
	out=$1
	shift
	perf record -q -a -m 16M --sample-identifier --switch-events -e dummy "$@" -o "$out" -- \
		taskset -c 0 sh -c 'dd if=/dev/zero bs=4k count=6000 2>/dev/null | cat >/dev/null' \
		>"$out.log" 2>&1 || { cat "$out.log"; fail "perf record of the guest ($*)"; }
}

# record_host OUT [perf record options]: the host's side for $HOST_SECONDS
# (2 s), in the background ($HOST_PID), with the options of perf's VM
# recipe; returns once perf says its events are enabled, so that what is
# recorded next happens while the host records.
record_host() {
	out=$1
	shift
	rm -f "$out.ctl" "$out.ack"
	mkfifo "$out.ctl" "$out.ack"
	perf record -q -m 16M --sample-identifier -e dummy --switch-events "$@" -o "$out" \
		--control="fifo:$out.ctl,$out.ack" -D -1 -- sleep "${HOST_SECONDS:-2}" \
		>"$out.log" 2>&1 &
	HOST_PID=$!
	KILL="$KILL $HOST_PID"
	echo enable >"$out.ctl"
	read -r ack <"$out.ack"
	[ "$ack" = ack ] || { cat "$out.log"; fail "perf record $* did not start"; }
}

# stop_standin: the stand-in QEMU $QEMU ends.
stop_standin() {
	kill "$QEMU"
	wait "$QEMU" 2>/dev/null || true
}

# lossless FILE...: perf script reads them without a warning (a busy
# machine can make perf record lose events, and perf script then warns
# about the merged file too, whoever merged it).
lossless() {
	for f in "$@"; do
		perf script -i "$f" --show-task-events >/dev/null 2>"$T/lossless.err" &&
			[ ! -s "$T/lossless.err" ] || return 1
	done
}

# add_tc IN OUT ZERO [MULT [CAP]]
add_tc() { $EDIT time-conv "$1" "$2" $SHIFT "${4:-$MULT}" "$3" ${5:-1} || fail "time-conv $1"; }

# perf script's view of a merge: task, mmap and switch events with the
# guest's machine pid and vCPU; stderr must stay empty.
show() {
	in=$1
	shift
	perf script -i "$in" "$@" --show-task-events --show-mmap-events --show-switch-events \
		-F+machine_pid,+vcpu >"$T/show.out" 2>"$T/show.err" ||
		{ cat "$T/show.err" >&2; fail "perf script -i $in $*"; }
	[ ! -s "$T/show.err" ] || { cat "$T/show.err" >&2; fail "perf script -i $in $* complained"; }
	cat "$T/show.out"
}
