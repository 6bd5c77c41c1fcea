#!/bin/sh
# vmpt correlate --guest-data against perf inject --guest-data on the same
# inputs, in one run (see bench/README.md).
#   usage: bench/guest_merge_run.sh [SECONDS [RUNS]]   (defaults: 5 s, 5 runs)
# Records as the guest_merge test does, for SECONDS: a stand-in QEMU with
# two vCPU threads from the host (perf record -a, switch events), and this
# machine cpu-wide as the guest while pipelines of dd | cat come and go;
# then runs both tools alternately RUNS times and reports the best CPU
# time (user + system) of each.  Both outputs must print the same lines.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${VMPT_BENCH_BUILD:-$src/build-bench}
secs=${1:-5}
runs=${2:-5}

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$src" -Dbuildtype=release -Db_lto=true \
		-Db_ndebug=true >/dev/null
fi
ninja -C "$build" cli/vmpt correlate/tests/standin-qemu >/dev/null
BUILDDIR=$build SRCDIR=$src VMPT=$build/cli/vmpt HOST_SECONDS=$secs
. "$src/correlate/tests/merge-lib.sh"

standin 2
record_host "$T/host.raw" -a
sleep 0.3
end=$(($(date +%s) + secs - 1))
perf record -q -a --sample-identifier --switch-events -e dummy -o "$T/guest.raw" -- \
	sh -c "while [ \$(date +%s) -lt $end ]; do
		dd if=/dev/zero bs=4k count=3000 2>/dev/null | cat >/dev/null; done" \
	>"$T/guest.log" 2>&1 || { cat "$T/guest.log"; fail "perf record of the guest"; }
wait "$HOST_PID" || { cat "$T/host.raw.log"; fail "perf record of the host"; }
add_tc "$T/host.raw" "$T/host.data" $HOST_ZERO
add_tc "$T/guest.raw" "$T/guest.data" $GUEST_ZERO
GD=$T/guest.data,$QEMU,$OFFSET

# cpu_time CMD...: the command's user + system seconds (output discarded).
cpu_time() {
	python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f" % (ru.ru_utime + ru.ru_stime) if r.returncode == 0 else "failed")' "$@"
}
best_perf=
best_vmpt=
for _ in $(seq "$runs"); do
	rm -rf "$T/perf.data" "$T/vmpt.data"
	p=$(cpu_time perf inject -i "$T/host.data" -o "$T/perf.data" --guest-data="$GD")
	v=$(cpu_time "$VMPT" correlate -i "$T/host.data" -o "$T/vmpt.data" --guest-data="$GD")
	[ "$p" != failed ] && [ "$v" != failed ] || fail "a merge failed (perf $p, vmpt $v)"
	best_perf=$(python3 -c "print(min(float(x) for x in '$best_perf $p'.split()))")
	best_vmpt=$(python3 -c "print(min(float(x) for x in '$best_vmpt $v'.split()))")
done
show "$T/perf.data" --ns >"$T/perf.txt"
show "$T/vmpt.data" --ns >"$T/vmpt.txt"
cmp -s "$T/perf.txt" "$T/vmpt.txt" || fail "perf script prints the two merges differently"
guest=$(grep -c '^VM:' "$T/vmpt.txt")
host=$(($(wc -l <"$T/vmpt.txt") - guest))
size() { du -k "$1" | cut -f1; }
echo "guest merge, ${secs} s recorded: host $host sideband records ($(size "$T/host.data") KiB), guest $guest ($(size "$T/guest.data") KiB)"
echo "  perf inject --guest-data    $best_perf s CPU (best of $runs)"
echo "  vmpt correlate --guest-data $best_vmpt s CPU (best of $runs)"
python3 -c "p, v = $best_perf, $best_vmpt; print('  vmpt / perf: %.1fx faster' % (p / v) if v else '  vmpt: below the clock\'s resolution')"
