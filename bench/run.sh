#!/bin/sh
# Packet-layer throughput, vmpt vs libipt (see bench/README.md).
#   usage: bench/run.sh [MB [RUNS]]      (defaults: 128 MB, 5 runs)
# Builds an optimized build dir of its own (build-bench: release, LTO) and
# runs bench-packet on a generated stream and on the real KVM-PT traces
# repeated to the same size.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${VMPT_BENCH_BUILD:-$src/build-bench}
mb=${1:-128}
runs=${2:-5}
shared=${SHARED:-$src/../shared}

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$src" -Dbuildtype=release -Db_lto=true \
		-Db_ndebug=true >/dev/null
fi
ninja -C "$build" bench/bench-packet >/dev/null

echo "== generated packet mix"
"$build/bench/bench-packet" "$mb" "$runs"
kvm="$shared/realtraces/kvm-pt"
if [ -d "$kvm" ]; then
	echo "== real KVM-PT recordings, repeated"
	"$build/bench/bench-packet" "$mb" "$runs" "$kvm/Unzip/trace" \
		"$kvm/foo/trace" "$kvm/dyn_test/sample_raw_0" \
		"$kvm/avscript_32/failed_trace_12709_1" "$kvm/icelake_tip/ptlog"
fi
