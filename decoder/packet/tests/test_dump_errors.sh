#!/bin/bash
# vmpt dump on bad input: exact messages and exit codes, nothing passed over
# in silence.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

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

expect missing 1 "vmpt dump: $tmp/none: No such file or directory" -- \
	"$VMPT" dump "$tmp/none"

printf 'PERFILE2garbage' > "$tmp/short.data"
expect short-perf-data 1 \
	"vmpt dump: $tmp/short.data: offset 0xf: file too short for a perf.data header (15 bytes)" -- \
	"$VMPT" dump "$tmp/short.data"

# 100 bytes without a PSB: the listing says so, and so does --stats.
head -c 100 /dev/zero | tr '\0' '\125' > "$tmp/nosync.pt"
expect nosync-stats 0 \
	"vmpt dump: $tmp/nosync.pt: 100 bytes skipped (no PSB to sync to, or resyncing after errors)" -- \
	"$VMPT" dump --stats "$tmp/nosync.pt"
[ "$(cat "$tmp/out")" = "errors 0" ] || { echo "FAIL nosync-stats output"; fail=1; }
expect nosync-listing 0 "" -- "$VMPT" dump "$tmp/nosync.pt"
[ "$(cat "$tmp/out")" = "[0000000000000000: skipped 100 bytes to the next psb]" ] ||
	{ echo "FAIL nosync-listing output: $(cat "$tmp/out")"; fail=1; }

# A bad byte after a PSB: reported at its offset, decoding resumes at the
# next PSB.
psb=$(printf '\002\202%.0s' 1 2 3 4 5 6 7 8)
{ printf '%s' "$psb"; printf '\002\043\125\000'; printf '%s' "$psb"; printf '\002\043'; } > "$tmp/bad.pt"
expect bad-byte 0 "" -- "$VMPT" dump "$tmp/bad.pt"
want="0000000000000000  psb
0000000000000010  psbend
[0000000000000012: error: unknown packet opcode (byte 0x55)]
[0000000000000012: skipped 2 bytes to the next psb]
0000000000000014  psb
0000000000000024  psbend"
[ "$(cat "$tmp/out")" = "$want" ] || { echo "FAIL bad-byte listing:"; cat "$tmp/out"; fail=1; }

expect usage 2 "usage: vmpt dump [OPTIONS] FILE
FILE is a raw Intel PT stream or a perf.data with intel_pt
(a file, pipe-mode output or perf's directory form).
  --no-pad     leave PAD packets out
  --lastip     show the last-IP register on every line
  --no-sync    start at offset 0 instead of the first PSB
  --stats      print 'NAME COUNT' per packet type and 'errors COUNT'" -- "$VMPT" dump
exit $fail
