#!/bin/bash
# What the vmpt commands say about bad input and bad arguments: each message
# names the thing that is wrong, exit status 1 for failed input, 2 for bad
# arguments, and no crash on empty files or a full disk.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
T="$SHARED/realtraces/kvm-pt/Unzip"

expect() {	# expect NAME WANT_RC WANT_STDERR -- CMD...
	local name=$1 want_rc=$2 want_err=$3
	shift 4
	"$@" > "$tmp/out" 2> "$tmp/err"
	local rc=$?
	if [ "$rc" != "$want_rc" ] || [ "$(cat "$tmp/err")" != "$want_err" ]; then
		echo "FAIL $name: rc $rc (want $want_rc), stderr:"
		cat "$tmp/err"
		echo "want: $want_err"
		fail=1
	else
		echo "ok $name"
	fi
}

: > "$tmp/empty"
expect dump-empty 1 "vmpt dump: $tmp/empty: empty file, nothing to dump" -- \
	"$VMPT" dump "$tmp/empty"
expect dump-empty-stats 1 "vmpt dump: $tmp/empty: empty file, nothing to dump" -- \
	"$VMPT" dump --stats "$tmp/empty"
expect script-pt-empty 1 "vmpt script: $tmp/empty: empty file, no trace to decode" -- \
	"$VMPT" script --pt "$tmp/empty"
expect script-i-empty 1 "vmpt script: $tmp/empty: zero-sized data, nothing to do" -- \
	"$VMPT" script -i "$tmp/empty"

head -c 100 /dev/zero | tr '\0' 'x' > "$tmp/text"
expect script-pt-nopsb 1 "vmpt script: $tmp/text: no PSB in its 100 bytes: this is not an Intel PT trace" -- \
	"$VMPT" script --pt "$tmp/text"
expect script-i-raw 1 "vmpt script: $T/trace: offset 0: not a perf.data file (no PERFILE2 magic): a raw Intel PT trace? (did you mean --pt?)" -- \
	"$VMPT" script -i "$T/trace"
PD="$SHARED/realtraces/perf-data/perf.data.intel_pt-4.14"
expect script-pt-perf-data 1 "vmpt script: $PD: a perf.data, not a raw Intel PT trace (give it with -i)" -- \
	"$VMPT" script --pt "$PD"
expect script-i-dir 1 "vmpt script: $tmp: is a directory, not a perf.data (perf's directory form holds $tmp/data)" -- \
	"$VMPT" script -i "$tmp"

expect elf-bad-address 2 "vmpt script: --elf /usr/bin/bash@zz: bad address 'zz' after '@' (a number: 0x555555554000, say)" -- \
	"$VMPT" script --pt "$T/trace" --elf /usr/bin/bash@zz
expect raw-no-address 2 "vmpt script: --raw f: needs the address the file is mapped at: FILE@ADDR (f@0x400000, say)" -- \
	"$VMPT" script --pt "$T/trace" --raw f
expect pagecache-missing 1 "vmpt script: $tmp/P.addr: No such file or directory" -- \
	"$VMPT" script --pt "$T/trace" --pagecache "$tmp/P"
cp "$T/data.addr" "$tmp/Q.addr"
expect pagecache-no-dump 1 "vmpt script: $tmp/Q.dump: No such file or directory" -- \
	"$VMPT" script --pt "$T/trace" --pagecache "$tmp/Q"

expect guest-unknown 2 "vmpt guest: unknown subcommand 'foo' (collect, check, maps)" -- \
	"$VMPT" guest foo
expect doctor-missing-root 2 "vmpt doctor: --sysfs-root /missing: No such file or directory" -- \
	"$VMPT" doctor --sysfs-root /missing
expect doctor-file-root 2 "vmpt doctor: --procfs-root /etc/passwd: not a directory" -- \
	"$VMPT" doctor --procfs-root /etc/passwd

# A full disk: perf exits 1 with a message, and so does vmpt.
rc=0
"$VMPT" script --pt "$T/trace" --elf "$T/data" --itrace=i0ns -F ip > /dev/full 2> "$tmp/err" || rc=$?
if [ $rc -ne 1 ] || [ "$(cat "$tmp/err")" != "vmpt script: writing output: No space left on device" ]; then
	echo "FAIL script-dev-full: rc $rc, $(cat "$tmp/err")"
	fail=1
else
	echo "ok script-dev-full"
fi
# vmpt record -- CMD passes CMD's exit status on, as perf record does
# (127: it could not run; 128 + N: signal N ended it).
record_rc() {	# record_rc NAME WANT_RC CMD...
	local name=$1 want=$2 rc=0
	shift 2
	"$VMPT" record -e dummy -o "$tmp/rec.data" -- "$@" > /dev/null 2> "$tmp/err" || rc=$?
	if grep -q "perf_event_open" "$tmp/err"; then
		echo "skip $name: no perf events here"
	elif [ $rc -ne "$want" ]; then
		echo "FAIL $name: rc $rc (want $want): $(cat "$tmp/err")"
		fail=1
	else
		echo "ok $name"
	fi
}
record_rc record-true 0 true
record_rc record-exit7 7 sh -c 'exit 7'
record_rc record-signal 143 sh -c 'kill -TERM $$'
record_rc record-cannot-run 127 "$tmp/none"
grep -q "^vmpt record: cannot run $tmp/none: No such file or directory$" "$tmp/err" ||
	grep -q "perf_event_open" "$tmp/err" ||
	{ echo "FAIL record-cannot-run message: $(cat "$tmp/err")"; fail=1; }
exit $fail
