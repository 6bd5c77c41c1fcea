#!/bin/sh
# Instruction-flow decoding speed in one run: vmpt (1 thread, -j) vs
# libipt's instruction and block decoders, and vmpt script vs perf script.
#   usage: bench/flow_run.sh [MB [SCRIPT_MB [JOBS]]]   (defaults: 100 100 2)
# MB: size of the synthesized trace (vmpt-synth over /usr/bin/bash) for
# the decoders; SCRIPT_MB: size of the perf.data both script commands
# print every instruction of (perf script runs at well under 1 MB/s).
# The real KVM-PT traces are repeated to MB as well.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${VMPT_BENCH_BUILD:-$src/build-bench}
mb=${1:-100}
script_mb=${2:-$mb}
jobs=${3:-2}
shared=${SHARED:-$src/../shared}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$src" -Dbuildtype=release -Db_lto=true \
		-Db_ndebug=true >/dev/null
fi
ninja -C "$build" bench/flow-bench cli/vmpt tools/synth/vmpt-synth >/dev/null
synth=$build/tools/synth/vmpt-synth
vmpt=$build/cli/vmpt

# vmpt-synth writes about 0.66 bytes of trace per branch over bash.
echo "== synthesized: $mb MB over /usr/bin/bash, return compression"
"$synth" -q --elf /usr/bin/bash --seed 1 --branches $((mb * 1500000)) --no-perf --no-truth \
	-o "$tmp/big"
"$build/bench/flow-bench" --elf /usr/bin/bash@0x555555554000 --retcomp -j "$jobs" "$tmp/big.pt"

kvm=$shared/realtraces/kvm-pt
if [ -d "$kvm" ]; then
	for c in "avscript_32/failed_trace_12709_1 avscript_32/page_cache" \
		 "Unzip/trace Unzip/data 0x400000-0x427000" \
		 "foo/trace foo/data 0x7ffff7819000-0x7ffff79ca000"; do
		set -- $c
		n=$(( mb * 1000000 / $(stat -c %s "$kvm/$1") + 1 ))
		echo "== real: $1 x $n"
		"$build/bench/flow-bench" --pagecache "$kvm/$2" ${3:+--filter $3} \
			--repeat "$n" -j "$jobs" "$kvm/$1"
	done
fi

echo "== vmpt script vs perf script: $script_mb MB perf.data, every instruction (-F ip)"
"$synth" -q --elf /usr/bin/bash --seed 2 --branches $((script_mb * 1500000)) --no-truth \
	-o "$tmp/s"
t() {	# seconds of wall time of a command, output discarded
	start=$(date +%s.%N)
	"$@" > /dev/null 2>&1
	end=$(date +%s.%N)
	awk "BEGIN { printf \"%.3f\", $end - $start }"
}
ratio() { awk "BEGIN { printf \"%.1f\", $1 / $2 }"; }
tp=$(t perf script -i "$tmp/s.perf.data" --itrace=i0ns -F ip)
tv=$(t "$vmpt" script -i "$tmp/s.perf.data" --itrace=i0ns -F ip)
tj=$(t "$vmpt" script -j "$jobs" -i "$tmp/s.perf.data" --itrace=i0ns -F ip)
echo "perf script $tp s, vmpt script $tv s, vmpt script -j $jobs $tj s:" \
     "vmpt $(ratio "$tp" "$tv")x perf, -j $(ratio "$tp" "$tj")x"
tp=$(t perf script -i "$tmp/s.perf.data" --itrace=b -F ip,addr,sym,dso)
tv=$(t "$vmpt" script -i "$tmp/s.perf.data" --itrace=b -F ip,addr,sym,dso)
echo "branches (-F ip,addr,sym,dso): perf script $tp s, vmpt script $tv s:" \
     "$(ratio "$tp" "$tv")x"
