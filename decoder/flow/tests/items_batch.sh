#!/bin/sh
# TNT runs change nothing: walking every block (vmpt_flow_next) and
# playing recorded runs back in batches (vmpt_flow_next_items) give the
# same items, field for field: on the real KVM-PT traces (loops: repeated, so recorded runs play
# back), also with CYC and TSC packets interleaved (times and cycle counts
# of played runs), and on synthesized traces.
# usage: items_batch.sh ITEMS_BATCH VMPT_SYNTH
set -eu
BATCH=$1
SYNTH=$2
kvm=$SHARED/realtraces/kvm-pt
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# $@: items_batch arguments; runs must have been played back.
check() {
	"$BATCH" "$@" > "$out/log" || fail "$(cat "$out/log")"
	cat "$out/log"
	grep -q '; 0 came in runs' "$out/log" && fail "no run was played back: $*"
	case " $* " in
	*" --timing "*)
		grep -q '(0 with\|, 0 with' "$out/log" && fail "played runs without time or cycles: $*";;
	*" --sparse-timing "*)
		grep -q '(0 with' "$out/log" && fail "played runs without time: $*";;
	esac
	return 0
}

for timing in "" --timing; do
	check --pagecache "$kvm/Unzip/data" --filter 0x400000-0x427000 --repeat 3 $timing \
		"$kvm/Unzip/trace"
	check --pagecache "$kvm/foo/data" --filter 0x7ffff7819000-0x7ffff79ca000 --repeat 3 \
		$timing "$kvm/foo/trace"
	check --pagecache "$kvm/avscript_32/page_cache" $timing \
		"$kvm/avscript_32/failed_trace_12709_1"
done
# A TSC every 40 TNTs: chains carry times (and start after each new one).
check --pagecache "$kvm/Unzip/data" --filter 0x400000-0x427000 --repeat 3 --sparse-timing \
	"$kvm/Unzip/trace"
check --pagecache "$kvm/avscript_32/page_cache" --sparse-timing "$kvm/avscript_32/failed_trace_12709_1"
# In buffers of their own, cut anywhere (a queue's AUX buffers): chains of
# runs stop at a part's end.
check --pagecache "$kvm/Unzip/data" --filter 0x400000-0x427000 --repeat 3 --parts 37 \
	"$kvm/Unzip/trace"
check --pagecache "$kvm/avscript_32/page_cache" --parts 101 "$kvm/avscript_32/failed_trace_12709_1"
# dyn_test has errors (code missing from its page cache): runs end at them.
"$BATCH" --pagecache "$kvm/dyn_test/page_cache" --repeat 3 "$kvm/dyn_test/sample_raw_0" ||
	fail "dyn_test"
for opts in "--seed 1" "--seed 2 --cyc" "--seed 3 --noretcomp --tnt64" \
	    "--seed 4 --irq-period 500"; do
	# shellcheck disable=SC2086
	"$SYNTH" -q --elf /usr/bin/bash --branches 100000 --no-perf --no-truth $opts -o "$out/t"
	rc=--retcomp
	case " $opts " in *" --noretcomp "*) rc= ;; esac
	check --elf /usr/bin/bash@0x555555554000 $rc "$out/t.pt"
done
echo "ok: the same items with and without runs on 4 real traces (3 also with timing, 2 with sparse timing and in parts) and 4 synthesized ones"
