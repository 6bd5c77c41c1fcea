#!/bin/sh
# pid/tid/comm from a real recording's sideband as perf script has them:
# `perf record -e dummy -a --switch-events` of a real command (forks,
# exec, threads, context switches on every CPU) and `vmpt record -e dummy`
# of one (the command's threads only).  For every task switched in and
# every COMM, vmpt's session must name the same comm and pid/tid at that
# nanosecond as perf script does.
# usage: sideband_test.sh SESSION_TASKS
set -eu
TASKS=$1
out=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

CMD='ls / > /dev/null; (sleep 0.02 & wait); cat /dev/null | true'

# $1: recording, $2: what it is.
check() {
	# comm, pid/tid, [cpu], time in ns, record.
	perf script -i "$1" --ns --show-task-events --show-switch-events \
		-F comm,pid,tid,cpu,time 2>/dev/null > "$out/perf"
	# perf pads comm to 16 columns; names may hold spaces: cut at " PID/TID ".
	grep -E ' PERF_RECORD_SWITCH(_CPU_WIDE)? IN ' "$out/perf" |
		sed -n 's/^ *\(.*[^ ]\) \{1,\}\([0-9-]*\)\/\([0-9-]*\) *\[0*\([0-9][0-9]*\)\] *\([0-9]*\)\.\([0-9]*\): PERF_RECORD_.*/\1|\2|\3|\4|\5\6/p' \
		> "$out/fields"
	[ -s "$out/fields" ] || fail "$2: perf script printed no switch events"
	# Switched in: the CPU's task, as perf names the sample's thread.
	awk -F'|' '{ print "C", $4, $5 }' "$out/fields" > "$out/q"
	awk -F'|' '{ print $1, $2 "/" $3 }' "$out/fields" > "$out/want"
	# COMM: the thread's new name at that time ("...COMM exec: ls:6884/6884").
	sed -n 's/.* \([0-9]*\)\.\([0-9]*\): PERF_RECORD_COMM[a-z ]*: \(.*\):\([0-9]*\)\/\([0-9]*\)$/T \5 \1\2|\3 \4\/\5/p' \
		"$out/perf" > "$out/comm"
	cut -d'|' -f1 "$out/comm" >> "$out/q"
	cut -d'|' -f2- "$out/comm" >> "$out/want"
	"$TASKS" "$1" < "$out/q" > "$out/vmpt"
	n=$(wc -l < "$out/want")
	[ "$n" -gt 5 ] || fail "$2: only $n task events recorded"
	grep -q "^sh " "$out/want" && grep -q "^ls " "$out/want" ||
		fail "$2: the command's sh and ls are not in perf's events"
	cmp -s "$out/want" "$out/vmpt" ||
		fail "$2: $(diff "$out/want" "$out/vmpt" | grep -c '^<') of $n tasks differ from perf's; first: $(diff "$out/want" "$out/vmpt" | sed -n 2,4p)"
	echo "ok: $2: $n tasks (switches in, COMMs) as perf script names them"
}

if ! "$VMPT" record -q -e dummy -o "$out/v.data" -- sh -c "$CMD" > "$out/rec.log" 2>&1; then
	echo "SKIP: perf events are not allowed here: $(tail -n 1 "$out/rec.log")"
	exit 77
fi
check "$out/v.data" "vmpt record -e dummy"
if ! perf record -q -e dummy -a --switch-events -o "$out/d.data" -- sh -c "$CMD" \
	> "$out/rec.log" 2>&1; then
	echo "SKIP: perf record -e dummy -a is not allowed here: $(tail -n 1 "$out/rec.log")"
	exit 77
fi
check "$out/d.data" "perf record -e dummy -a --switch-events"
