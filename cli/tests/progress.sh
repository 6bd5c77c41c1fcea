#!/bin/bash
# vmpt script shows a progress line on stderr when it is a terminal (and
# stdout is not): bytes done of the total, the rate, the time left, each
# line over the last, erased at the end; nothing when stderr is no
# terminal; the output itself is the same.  The terminal is a pty from
# script(1); VMPT_PROGRESS_DELAY=0 shows it from the start (1 s normally).
# usage: progress.sh VMPT_SYNTH
set -u
SYNTH=$1
command -v script > /dev/null || { echo "script(1) not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
"$SYNTH" -q --branches 60000 --elf /usr/bin/bash --seed 12 --no-truth -o "$tmp/t"
for input in "--pt $tmp/t.pt --elf /usr/bin/bash@0x555555554000" "-i $tmp/t.perf.data"; do
	# shellcheck disable=SC2086
	"$VMPT" script $input --itrace=i0ns > "$tmp/plain" 2> "$tmp/err"
	[ -s "$tmp/err" ] && { echo "FAIL [$input]: stderr not a terminal: $(head -c 200 "$tmp/err")"; fail=1; }
	VMPT_PROGRESS_DELAY=0 script -q -c "'$VMPT' script $input --itrace=i0ns > '$tmp/tty'" \
		/dev/null > "$tmp/screen" < /dev/null
	cmp -s "$tmp/plain" "$tmp/tty" || { echo "FAIL [$input]: output differs on a terminal"; fail=1; }
	n=$(tr '\r' '\n' < "$tmp/screen" |
	    grep -cE '^vmpt script: [0-9.]+ (B|KiB|MiB) of [0-9.]+ (KiB|MiB) \([0-9]+%\), [0-9.]+ (B|KiB|MiB)/s, [0-9]+:[0-5][0-9] left'$'\033''\[K$')
	[ "$n" -ge 1 ] || { echo "FAIL [$input]: no progress line: $(od -c "$tmp/screen" | head -5)"; fail=1; }
	tail -c 4 "$tmp/screen" | od -An -c | grep -q '\\r 033   \[   K' ||
		{ echo "FAIL [$input]: progress line not erased: $(tail -c 20 "$tmp/screen" | od -c)"; fail=1; }
done
[ $fail = 0 ] && echo "progress: shown on a terminal, not elsewhere"
exit $fail
