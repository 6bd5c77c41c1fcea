#!/bin/sh
# vmpt correlate --dry-run against perf inject --vm-time-correlation=dry-run
# on the same synthesized VM recording, in one run (see bench/README.md).
#   usage: bench/corr_run.sh [MB [RUNS]]      (defaults: 512 MB, 3 runs)
# Builds its own optimized build dir (build-bench: release, LTO; or
# VMPT_BENCH_BUILD), synthesizes a VM recording of about MB megabytes of
# trace (2 vCPUs, offsets of both signs, a PSB every 4 KiB) and times both
# in CPU seconds (user + system): vmpt RUNS times (best), perf once.  Both
# must print the same dry-run lines.  Then corr-psb-bench on the same file:
# what reading only its PSB+s costs (bench/corr_psb_bench.c).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${VMPT_BENCH_BUILD:-$src/build-bench}
mb=${1:-512}
runs=${2:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$src" -Dbuildtype=release -Db_lto=true \
		-Db_ndebug=true >/dev/null
fi
ninja -C "$build" cli/vmpt tools/synth/vmpt-synth tools/synth/vmx-kernel \
	tools/synth/guest-kernel bench/corr-psb-bench >/dev/null
S=$build/tools/synth
# The VM scenario writes about 1.46 bytes of trace per branch.
branches=$((mb * 1000000 / 146 * 100))
echo "== synthesizing $branches branches of a 2-vCPU VM"
"$S/vmpt-synth" --vm --host-kernel "$S/vmx-kernel" --guest-elf "$S/guest-kernel" \
	--guest-start start_kernel --branches "$branches" --guest-period 3000 --seed 1 \
	--vcpus 2 --tsc-offset -0x123456789a,0x5000000 --no-truth -q -o "$work/vm"
rm -f "$work/vm.pt"
size=$(stat -c %s "$work/vm.perf.data")
echo "   $(awk -v s="$size" 'BEGIN {printf "%.1f", s / 1048576}') MiB perf.data"

# cpu_time CMD...: user + system seconds of CMD (its stderr to $work/err)
cpu_time() {
	/usr/bin/time -f '%U %S' -o "$work/time" "$@" > /dev/null 2> "$work/err"
	awk '{printf "%.3f", $1 + $2}' "$work/time"
}

best=
for i in $(seq "$runs"); do
	t=$(cpu_time "$build/cli/vmpt" correlate --dry-run -q -i "$work/vm.perf.data")
	cp "$work/err" "$work/vmpt.err"
	best=$(awk -v a="$t" -v b="${best:-$t}" 'BEGIN {print (a < b ? a : b)}')
	echo "   vmpt correlate --dry-run: $t s"
done
t_perf=$(cpu_time perf inject -i "$work/vm.perf.data" --vm-time-correlation=dry-run)
cp "$work/err" "$work/perf.err"
echo "   perf inject --vm-time-correlation=dry-run: $t_perf s"
cmp -s "$work/perf.err" "$work/vmpt.err" || {
	echo "FAIL: the dry-run lines differ"
	diff "$work/perf.err" "$work/vmpt.err" | head
	exit 1
}
awk -v s="$size" -v v="$best" -v p="$t_perf" 'BEGIN {
	printf "vmpt: %.0f MB/s (best of runs), perf: %.1f MB/s, vmpt/perf: %.1fx\n",
	       s / 1048576 / v, s / 1048576 / p, p / v }'
echo "== reading the PSB+s only (corr-psb-bench, CPU time, best of 3)"
"$build/bench/corr-psb-bench" "$work/vm.perf.data"
