#!/bin/sh
# vmpt record's faults, on real recordings (--event dummy) of a running
# shell loop that forks and execs: SIGINT and SIGTERM stop it cleanly
# (exit 0, the summary's record count is what perf counts, the feature
# sections are there, the command is gone); a SIGKILL, which nothing can
# handle, leaves a file perf script and perf report read, holding a record
# made a moment before (the recorder syncs its header every 100 ms: without
# that only the 264-byte header with data size 0 remains, which perf
# refuses); a disk that fills up (a 64 KiB tmpfs in a private mount
# namespace) leaves the file cut after its last whole record, perf counting
# exactly the records and bytes the message says are kept; every file is
# 0600.
set -u
. "$(dirname "$0")/recorder-lib.sh"
if ! command -v perf >/dev/null; then
	echo "SKIP: perf is not installed (linux-perf)"
	exit 77
fi
T=$(mktemp -d)
LOOP_PIDS=""
cleanup() {
	for p in $LOOP_PIDS; do
		kill "$p" 2>/dev/null
	done
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
# The running program: forks and execs /bin/true until killed, and runs
# vmpt-marker once when DIR/go appears.
cp /bin/true "$T/vmpt-marker"
cat >"$T/loop.sh" <<'LOOP'
#!/bin/sh
while :; do
	/bin/true
	if [ -e "$1/go" ]; then
		rm -f "$1/go"
		"$1/vmpt-marker"
	fi
	sleep 0.01
done
LOOP
chmod +x "$T/loop.sh"

# loop_pid REC: the pid of loop.sh in the recording
loop_pid() {
	perf script -i "$1" --show-task-events 2>/dev/null |
		sed -n 's/.*PERF_RECORD_COMM exec: loop.sh:\([0-9]*\)\/.*/\1/p' | head -n 1
}

# 1. SIGINT and SIGTERM: a clean stop.
for sig in INT TERM; do
	R=$T/$sig.data
	"$VMPT" record --event dummy -o "$R" -- "$T/loop.sh" "$T" >"$T/$sig.out" 2>"$T/$sig.err" &
	REC=$!
	wait_recording $REC || fail "SIG$sig: the recorder did not start"
	wait_for_record "$R" "PERF_RECORD_COMM exec: true:" --show-task-events ||
		fail "SIG$sig: no exec of true written while recording"
	kill -$sig $REC
	wait $REC
	rc=$?
	[ $rc -eq 0 ] && ok "SIG$sig: exit 0" || fail "SIG$sig: exit $rc: $(cat "$T/$sig.err")"
	n=$(sed -n 's/^\[ vmpt record: \([0-9]*\) sideband records, .* 0 lost records .*\]$/\1/p' "$T/$sig.err")
	# perf counts TIME_CONV and FINISHED_ROUND too; vmpt's summary counts
	# what the kernel and /proc gave, and FINISHED_INIT.
	perf_n=$(( $(perf_count "$R" TOTAL) - $(perf_count "$R" TIME_CONV) - $(perf_count "$R" FINISHED_ROUND) ))
	[ -n "$n" ] && [ "$n" -gt 0 ] && [ "$n" -eq "$perf_n" ] &&
		ok "SIG$sig: perf counts the $n records the summary says, none lost" ||
		fail "SIG$sig: summary '$n' records, perf counts $perf_n: $(cat "$T/$sig.err")"
	perf script -i "$R" --show-task-events >"$T/$sig.script" 2>"$T/$sig.script.err"
	[ $? -eq 0 ] && [ ! -s "$T/$sig.script.err" ] && grep -q "PERF_RECORD_EXIT" "$T/$sig.script" &&
		ok "SIG$sig: perf script reads it" || fail "SIG$sig: perf script: $(cat "$T/$sig.script.err")"
	perf report --header-only -i "$R" >"$T/$sig.header" 2>&1
	grep -q "^# event : name = dummy" "$T/$sig.header" &&
		ok "SIG$sig: the feature sections were written" || fail "SIG$sig: no EVENT_DESC: $(cat "$T/$sig.header")"
	[ "$(stat -c %a "$R")" = 600 ] && ok "SIG$sig: mode 0600" || fail "SIG$sig: mode $(stat -c %a "$R")"
	p=$(loop_pid "$R")
	[ -n "$p" ] && ! kill -0 "$p" 2>/dev/null && ok "SIG$sig: the command ($p) was stopped" ||
		{ fail "SIG$sig: the command '$p' still runs"; LOOP_PIDS="$LOOP_PIDS $p"; }
done

# 2. SIGKILL: what was synced is read by perf.
R=$T/kill.data
"$VMPT" record --event dummy -o "$R" -- "$T/loop.sh" "$T" >"$T/kill.out" 2>"$T/kill.err" &
REC=$!
wait_recording $REC || fail "SIGKILL: the recorder did not start"
wait_for_record "$R" "PERF_RECORD_COMM exec: true:" --show-task-events ||
	fail "SIGKILL: no exec of true written while recording"
: >"$T/go"
# A bound on correctness, not speed: a recorder that wrote its header only
# at the end (or its buffer only when full) never shows the marker.
wait_for_record "$R" "PERF_RECORD_COMM exec: vmpt-marker:" --show-task-events &&
	ok "SIGKILL: the marker's exec is readable while recording" ||
	fail "SIGKILL: the marker's exec was never readable while recording"
kill -KILL $REC
wait $REC
rc=$?
p=$(loop_pid "$R")
[ -n "$p" ] && LOOP_PIDS="$LOOP_PIDS $p"
[ $rc -eq 137 ] || fail "SIGKILL: exit $rc"
perf script -i "$R" --show-task-events >"$T/kill.script" 2>"$T/kill.script.err"
rc=$?
[ $rc -eq 0 ] && [ ! -s "$T/kill.script.err" ] && grep -q "PERF_RECORD_COMM exec: vmpt-marker:" "$T/kill.script" &&
	grep -q "PERF_RECORD_COMM exec: loop.sh:" "$T/kill.script" &&
	ok "SIGKILL: perf script reads $(wc -l <"$T/kill.script") records, the marker's exec among them" ||
	fail "SIGKILL: perf script exit $rc: $(head -c 300 "$T/kill.script.err")"
perf report --header-only -i "$R" >"$T/kill.header" 2>&1
rc=$?
size=$(sed -n 's/^# data size *: \([0-9]*\)$/\1/p' "$T/kill.header")
[ $rc -eq 0 ] && [ -n "$size" ] && [ "$size" -gt 0 ] && ! grep -q "data size field is 0" "$T/kill.header" &&
	ok "SIGKILL: perf report --header-only: data size $size" ||
	fail "SIGKILL: perf report --header-only exit $rc: $(cat "$T/kill.header")"
[ "$(stat -c %a "$R")" = 600 ] && ok "SIGKILL: mode 0600" || fail "SIGKILL: mode $(stat -c %a "$R")"

# 3. A disk that fills up: the file is cut after its last whole record,
# and the message says what is kept and what was lost.
if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
	mkdir "$T/small"
	unshare -m sh -c '
		mount -t tmpfs -o size=64k none "$1/small" || exit 1
		"$2" record --event dummy -o "$1/small/p.data" -- "$1/loop.sh" "$1" 2>"$1/full.err"
		echo "exit $?"
		perf report --stats -i "$1/small/p.data" >"$1/full.stats" 2>&1
		perf report --header-only -i "$1/small/p.data" >"$1/full.header" 2>&1
		perf script -i "$1/small/p.data" --show-task-events >"$1/full.script" 2>"$1/full.script.err"
		stat -c %a "$1/small/p.data"' sh "$T" "$VMPT" >"$T/full.out" 2>&1
	tail -n 1 "$T/full.err"
	line=$(grep "^vmpt record: writing $T/small/p.data: No space left on device; $T/small/p.data keeps the first [0-9]* records ([0-9]* bytes of data), perf reads them; lost: the [0-9]* records ([0-9]* bytes) after them, which did not fit, and [0-9]* records and 0 AUX bytes read after the error$" "$T/full.err")
	[ -n "$line" ] && grep -qx "exit 1" "$T/full.out" && ok "disk full: exit 1, what was kept and lost" ||
		fail "disk full: $(cat "$T/full.out" "$T/full.err")"
	kept=$(echo "$line" | sed -n 's/.* keeps the first \([0-9]*\) records (\([0-9]*\) bytes of data).*/\1 \2/p')
	total=$(awk '$1 == "TOTAL" { print $3 }' "$T/full.stats")
	size=$(sed -n 's/^# data size *: \([0-9]*\)$/\1/p' "$T/full.header")
	[ -n "$kept" ] && [ "$kept" = "$total $size" ] && [ "$total" -gt 0 ] &&
		ok "disk full: perf counts the $total records ($size bytes) kept" ||
		fail "disk full: kept '$kept', perf counts '$total' records, data size '$size'"
	[ ! -s "$T/full.script.err" ] && grep -q "PERF_RECORD_COMM exec: loop.sh:" "$T/full.script" &&
		ok "disk full: perf script reads it" || fail "disk full: perf script: $(cat "$T/full.script.err")"
	[ "$(tail -n 1 "$T/full.out")" = 600 ] && ok "disk full: mode 0600" ||
		fail "disk full: mode $(tail -n 1 "$T/full.out")"
fi
exit $status
