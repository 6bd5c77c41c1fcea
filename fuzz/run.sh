#!/bin/sh
# Build the packet-layer fuzzer with clang (ASan + UBSan + libFuzzer) in its
# own build dir and run it for SECONDS (default 600).  Seeds: the real KVM-PT
# traces cut into 4 KiB pieces.  Any crash, leak, timeout or sanitizer report
# makes it exit non-zero and leaves the input in $BUILD/fuzz-artifacts/.
#   usage: fuzz/run.sh [SECONDS [BUILD_DIR]]     (default build dir: build-fuzz)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-600}
build=${2:-$src/build-fuzz}
shared=${SHARED:-$src/../shared}

if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" "$src" -Dbuildtype=debugoptimized \
		-Db_sanitize=address,undefined -Db_lundef=false >"$build.setup.log" 2>&1 ||
		{ cat "$build.setup.log"; exit 1; }
	rm -f "$build.setup.log"
fi
ninja -C "$build" fuzz/fuzz-packet >/dev/null

corpus="$build/fuzz-corpus"
artifacts="$build/fuzz-artifacts"
mkdir -p "$corpus" "$artifacts"
if [ -z "$(ls -A "$corpus")" ] && [ -d "$shared/realtraces/kvm-pt" ]; then
	for t in "$shared"/realtraces/kvm-pt/*/trace "$shared"/realtraces/kvm-pt/*/ptlog \
		 "$shared"/realtraces/kvm-pt/*/sample_raw_0 \
		 "$shared"/realtraces/kvm-pt/*/failed_trace_*; do
		[ -f "$t" ] || continue
		name=$(basename "$(dirname "$t")")
		split -b 4096 -a 3 "$t" "$corpus/seed-$name-"
	done
fi

ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	"$build/fuzz/fuzz-packet" -max_total_time="$secs" -max_len=4096 -timeout=10 \
	-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" \
	"$corpus" 2>"$build/fuzz.log" || {
		tail -60 "$build/fuzz.log"
		echo "fuzz-packet: FAILED, input saved in $artifacts/"
		exit 1
	}
grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+.*DONE)" "$build/fuzz.log" || true
echo "fuzz-packet: ${secs}s, no crash, hang or sanitizer report"
