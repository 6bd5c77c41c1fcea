#!/bin/sh
# Big and hostile recordings (bench/scale_gen.c): vmpt script's time and
# peak memory on N ids x N records, N mappings of one libc, a kcore of N
# PT_LOADs in reverse order, N forks, N execs, N samples in N mappings of
# a missing binary.  Numbers in bench/README.md ("Scale").
#   usage: bench/scale_run.sh [BUILD_DIR]     (default: build)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
ninja -C "$build" bench/scale-gen cli/vmpt > /dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/bench/scale-gen" ids 100000 "$tmp/ids.data"
"$build/bench/scale-gen" maps 4000 "$tmp/maps.data"
"$build/bench/scale-gen" kcore 120000 "$tmp/kcore"
for k in forks execs samples; do
	"$build/bench/scale-gen" $k 100000 "$tmp/$k.data"
done
for r in ids.data maps.data kcore forks.data execs.data samples.data; do
	/usr/bin/time -f "$r: %e s, %M KB peak" "$build/cli/vmpt" script -i "$tmp/$r" \
		--show-task-events > /dev/null 2> "$tmp/err" || { cat "$tmp/err"; exit 1; }
	tail -1 "$tmp/err"
done
