#!/bin/sh
# Build the libFuzzer targets with clang (ASan + UBSan + libFuzzer) in their
# own build dir and run each for SECONDS (default 600).  Seeds: the real
# traces and recordings of ../shared/realtraces, perf's pipe form of one,
# a reply stream of the guest agent; dictionaries in fuzz/dict/.  Any
# crash, leak, timeout or sanitizer report makes it exit non-zero and
# leaves the input in $BUILD/fuzz-artifacts/TARGET/.
#   usage: fuzz/run.sh [SECONDS [BUILD_DIR [TARGET...]]]
#   targets: packet perf-data flow pack (default: all)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-600}
build=${2:-$src/build-fuzz}
[ $# -gt 2 ] && shift 2 || set --
targets=${*:-packet perf-data flow pack}
shared=${SHARED:-$src/../shared}
rt=$shared/realtraces

if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" "$src" -Dbuildtype=debugoptimized \
		-Db_sanitize=address,undefined -Db_lundef=false >"$build.setup.log" 2>&1 ||
		{ cat "$build.setup.log"; exit 1; }
	rm -f "$build.setup.log"
fi
for t in $targets; do
	ninja -C "$build" "fuzz/fuzz-$t" >/dev/null
done

# seed TARGET: the first corpus of a target.
seed() {
	c=$build/fuzz-corpus/$1
	case $1 in
	packet)
		for f in "$rt"/kvm-pt/*/trace "$rt"/kvm-pt/*/ptlog "$rt"/kvm-pt/*/sample_raw_0 \
			 "$rt"/kvm-pt/*/failed_trace_*; do
			[ -f "$f" ] && split -b 4096 -a 3 "$f" "$c/seed-$(basename "$(dirname "$f")")-"
		done;;
	perf-data)
		find "$rt" -type f \( -name '*.perf.data' -o -name '*.perf' -o -name data \) \
			-size -1024k | while read -r f; do
			cp "$f" "$c/seed-$(echo "$f" | md5sum | cut -c1-12)"
		done
		# perf's pipe form of the smallest one.
		f=$(find "$rt" -type f -name '*.perf.data' -size -1024k | head -1)
		[ -n "$f" ] && perf inject -i "$f" -o - > "$c/seed-pipe" 2>/dev/null || true;;
	flow)
		# No code (errors, resyncs) and 'jmp .' at 0x1000, over real traces.
		for f in "$rt"/kvm-pt/*/trace "$rt"/kvm-pt/*/ptlog; do
			[ -f "$f" ] || continue
			n=$(basename "$(dirname "$f")")
			head -c 4096 "$f" > "$c/trace-$n"
			printf '\000\000\000' | cat - "$c/trace-$n" > "$c/seed-$n-nocode"
			printf '\004\002\000\353\376' | cat - "$c/trace-$n" > "$c/seed-$n-loop"
			rm "$c/trace-$n"
		done;;
	pack)
		python3 - "$c/seed-reply" <<'PY'
import struct, sys
def frame(kind, path, err, data):
    p = path.encode()
    return struct.pack('<IIIIQ', kind, len(p), err, 0, len(data)) + p + data
s = b'VMPTPAK1' + frame(1, '/usr/bin/ls', 0, b'\x7fELF' + b'\0' * 60) + \
    frame(2, '/lib/libc.so.6', 2, b'') + frame(1, '[perf.data]', 0, b'PERFILE2') + \
    frame(3, '', 0, b'')
open(sys.argv[1], 'wb').write(b'/usr/bin/ls\n' + s)
PY
		;;
	esac
}

status=0
for t in $targets; do
	corpus=$build/fuzz-corpus/$t
	artifacts=$build/fuzz-artifacts/$t
	mkdir -p "$corpus" "$artifacts"
	[ -n "$(ls -A "$corpus")" ] || seed "$t"
	dict=
	[ -f "$src/fuzz/dict/$(echo "$t" | tr - _).dict" ] &&
		dict=-dict=$src/fuzz/dict/$(echo "$t" | tr - _).dict
	max_len=4096
	[ "$t" = perf-data ] && max_len=1048576
	# shellcheck disable=SC2086
	if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	   UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		"$build/fuzz/fuzz-$t" -max_total_time="$secs" -max_len=$max_len -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" \
		$dict "$corpus" 2>"$build/fuzz-$t.log"; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/fuzz-$t.log")
		echo "fuzz-$t: ${secs}s, $runs runs, no crash, hang or sanitizer report"
	else
		tail -60 "$build/fuzz-$t.log"
		echo "fuzz-$t: FAILED, input saved in $artifacts/"
		status=1
	fi
done
exit $status
