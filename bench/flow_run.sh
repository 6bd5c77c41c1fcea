#!/bin/sh
# Instruction-flow decoding speed in one run: vmpt (1 thread, -j) vs
# libipt's instruction and block decoders, and vmpt script vs perf script.
#   usage: bench/flow_run.sh [MB [SCRIPT_MB [JOBS [RUNS]]]]   (defaults: 10 2 0 3)
# MB: size of the synthesized trace (vmpt-synth over /usr/bin/bash) for
# the decoders; SCRIPT_MB: size of the perf.data both script commands
# print every instruction of (perf script runs at well under 1 MB/s).
# The real KVM-PT traces are repeated to MB as well.  JOBS: 0 skips the
# -j runs; RUNS: each single-threaded timing is the best of RUNS (perf
# script runs once).  VMPT_BENCH_IPT: libipt's configurations
# (default iscache,memory, its fair ones; add files for the old one,
# ~1 MB/s on the page caches); VMPT_BENCH_BIG_MB: the streaming run's
# size (0 skips it).  At the defaults the run takes a few minutes.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${VMPT_BENCH_BUILD:-$src/build-bench}
mb=${1:-10}
script_mb=${2:-2}
jobs=${3:-0}
runs=${4:-3}
ipt=${VMPT_BENCH_IPT:-iscache,memory}
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
"$build/bench/flow-bench" --elf /usr/bin/bash@0x555555554000 --retcomp -j "$jobs" \
	--runs "$runs" --ipt "$ipt" "$tmp/big.pt"

kvm=$shared/realtraces/kvm-pt
if [ -d "$kvm" ]; then
	for c in "avscript_32/failed_trace_12709_1 avscript_32/page_cache" \
		 "Unzip/trace Unzip/data 0x400000-0x427000" \
		 "foo/trace foo/data 0x7ffff7819000-0x7ffff79ca000"; do
		set -- $c
		n=$(( mb * 1000000 / $(stat -c %s "$kvm/$1") + 1 ))
		echo "== real: $1 x $n"
		"$build/bench/flow-bench" --pagecache "$kvm/$2" ${3:+--filter $3} \
			--repeat "$n" -j "$jobs" --runs "$runs" --ipt "$ipt" "$kvm/$1"
	done
fi

echo "== vmpt script vs perf script: $script_mb MB perf.data over bash (CPU time, one thread)"
"$synth" -q --elf /usr/bin/bash --seed 2 --branches $((script_mb * 1500000)) --no-truth \
	-o "$tmp/s"
t() {	# seconds of wall time of a command, output discarded
	start=$(date +%s.%N)
	"$@" > /dev/null 2>&1
	end=$(date +%s.%N)
	awk "BEGIN { printf \"%.3f\", $end - $start }"
}
cpu1() {	# CPU seconds (user + system) of a command, output discarded
	/usr/bin/time -f "%U %S %M" -o "$tmp/time" "$@" > /dev/null 2>&1 || true
	tail -1 "$tmp/time" | awk '{ printf "%.3f", $1 + $2 }'
}
cpu() {	# the best of RUNS
	b=
	for _ in $(seq "$runs"); do
		c=$(cpu1 "$@")
		b=$(awk "BEGIN { print ($c < ${b:-1e9}) ? $c : ${b:-1e9} }")
	done
	printf "%.3f" "$b"
}
rss() { tail -1 "$tmp/time" | awk '{ print $3 }'; }	# of the last cpu, KB
ratio() { awk "BEGIN { printf \"%.1f\", $1 / $2 }"; }
# VMPT_BENCH_BEFORE=dir: another build (an older commit) timed beside this one.
before=${VMPT_BENCH_BEFORE:-}
versions="$vmpt${before:+ $before/cli/vmpt}"
tp=$(cpu1 perf script -i "$tmp/s.perf.data" --itrace=i0ns -F ip)
for v in $versions; do
	tv=$(cpu "$v" script -i "$tmp/s.perf.data" --itrace=i0ns -F ip)
	echo "every instruction (-F ip): perf script $tp s, $v $tv s: $(ratio "$tp" "$tv")x"
done
tp=$(cpu1 perf script -i "$tmp/s.perf.data" --itrace=b -F ip,addr,sym,dso)
for v in $versions; do
	tv=$(cpu "$v" script -i "$tmp/s.perf.data" --itrace=b -F ip,addr,sym,dso)
	echo "branches (-F ip,addr,sym,dso): perf script $tp s, $v $tv s: $(ratio "$tp" "$tv")x"
done
# What a user types first: the default fields and samples.
tp=$(cpu1 perf script -i "$tmp/s.perf.data")
for v in $versions; do
	tv=$(cpu "$v" script -i "$tmp/s.perf.data")
	echo "default (no options): perf script $tp s, $v $tv s: $(ratio "$tp" "$tv")x"
done

# The output path against decoding alone, on a dense random walk (perl,
# about 0.46 bytes of trace per branch): --itrace=e prints nothing.
echo "== vmpt script: ${mb} MB walk over /usr/bin/perl, decode only vs branches printed"
"$synth" -q --elf /usr/bin/perl --seed 1 --branches $((mb * 2170000)) --no-truth -o "$tmp/p"
for v in $versions; do
	te=$(cpu "$v" script -i "$tmp/p.perf.data" --itrace=e)
	tb=$(cpu "$v" script -i "$tmp/p.perf.data" --itrace=b -F ip,addr)
	ts=$(cpu "$v" script -i "$tmp/p.perf.data" --itrace=b -F ip,addr,sym,dso)
	echo "$v: decode only (--itrace=e) $te s; --itrace=b -F ip,addr $tb s" \
	     "($(ratio "$tb" "$te")x decode only); -F ip,addr,sym,dso $ts s"
	[ "$jobs" -gt 0 ] || continue
	w1=$(t "$v" script -i "$tmp/p.perf.data" --itrace=b -F ip,addr)
	wj=$(t "$v" script -j "$jobs" -i "$tmp/p.perf.data" --itrace=b -F ip,addr)
	cj=$(cpu1 "$v" script -j "$jobs" -i "$tmp/p.perf.data" --itrace=b -F ip,addr)
	echo "$v: -F ip,addr wall 1 thread $w1 s, -j $jobs $wj s ($(ratio "$w1" "$wj")x)," \
	     "CPU -j $jobs $cj s ($(ratio "$cj" "$tb")x one thread's), peak RSS $(rss) KB"
done
echo "(nproc $(nproc), load average $(cut -d' ' -f1-3 /proc/loadavg))"

# Streaming: a raw trace far bigger than the rest decodes in bounded memory
# (the trace mapped, its pages dropped behind the decoder).
big_mb=${VMPT_BENCH_BIG_MB:-0}
if [ -d "$kvm" ] && [ "$big_mb" -gt 0 ]; then
	n=$(( big_mb * 1048576 / $(stat -c %s "$kvm/Unzip/trace") + 1 ))
	echo "== streaming: Unzip x $n ($big_mb MiB raw trace), vmpt script --pt --itrace=e"
	i=0
	while [ $i -lt "$n" ]; do cat "$kvm/Unzip/trace"; i=$((i + 1)); done > "$tmp/big.pt"
	for v in $versions; do
		for j in 1 $([ "$jobs" -gt 0 ] && echo "$jobs"); do
			tv=$(cpu1 "$v" script -j "$j" --pt "$tmp/big.pt" --pagecache "$kvm/Unzip/data" \
				--filter 0x400000-0x427000 --itrace=e)
			echo "$v -j $j: CPU $tv s, peak RSS $(rss) KB"
		done
	done
	rm -f "$tmp/big.pt"
fi
