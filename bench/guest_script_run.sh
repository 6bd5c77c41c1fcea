#!/bin/bash
# vmpt script -i REC on a VM recording with the guest's side against perf's
# manual pipeline for the same lines (perf inject --vm-time-correlation,
# perf inject --guest-data with a guestmount, perf script
# -F+machine_pid,+vcpu), in one run (see bench/README.md).
#   usage: bench/guest_script_run.sh [BRANCHES [RUNS]]   (defaults: 200000, 3)
# The recording is synthesized over the hand-made guest of the guest-script
# test (2 vCPUs, forks, execs, switches; host binaries as its root) with
# BRANCHES branches; both sides print instruction samples (--itrace=i0ns)
# to /dev/null; the best CPU time (user + system) of RUNS is reported,
# perf's as the sum of its three steps on a fresh copy.  Both must print
# the same lines per vCPU.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${VMPT_BENCH_BUILD:-$src/build-bench}
branches=${1:-200000}
runs=${2:-3}

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$src" -Dbuildtype=release -Db_lto=true \
		-Db_ndebug=true >/dev/null
fi
ninja -C "$build" cli/vmpt tools/synth/vmpt-synth tools/synth/vmx-kernel \
	tools/synth/guest-kernel tools/synth/tests/make-guest-fixture >/dev/null
SYNTH=$build/tools/synth/vmpt-synth
VMPT=$build/cli/vmpt
VMX_KERNEL=$build/tools/synth/vmx-kernel
GUEST_KERNEL=$build/tools/synth/guest-kernel
MAKE_GUEST_FIXTURE=$build/tools/synth/tests/make-guest-fixture
. "$src/tools/synth/tests/synth-lib.sh"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

make_guest_fixture fix
"$SYNTH" --vm --host-kernel "$VMX_KERNEL" --guest-recording fix --vcpus 2 \
	--tsc-offset -0x2000000000 --psb-period 4096 --branches "$branches" --seed 1 -o g -q
POFF=0xffffffe000000000

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
	rm -rf p && mkdir -p p/gm p/gdir && cp -r g.perf.data p/rec
	ln -s "$WORK/p/rec/guest/root" p/gm/4242
	cp fix/guest/perf.data p/gdir/data && cp -r p/rec/guest/kcore_dir p/gdir/kcore_dir
	p1=$(cpu_time perf inject -i p/rec --vm-time-correlation="$POFF" --force)
	p2=$(cpu_time perf inject -i p/rec -o p/inj --guestmount p/gm --guest-data="p/gdir,4242,$POFF")
	p3=$(cpu_time perf script -i p/inj --itrace=i0ns -F+machine_pid,+vcpu \
		--vmlinux "$VMX_KERNEL" --guestmount p/gm)
	v=$(cpu_time "$VMPT" script -i g.perf.data --itrace=i0ns -F+machine_pid,+vcpu)
	for t in "$p1" "$p2" "$p3" "$v"; do
		[ "$t" != failed ] || fail "a step failed (perf $p1 $p2 $p3, vmpt $v)"
	done
	p=$(python3 -c "print('%.3f' % ($p1 + $p2 + $p3))")
	best_perf=$(python3 -c "print(min(float(x) for x in '$best_perf $p'.split()))")
	best_vmpt=$(python3 -c "print(min(float(x) for x in '$best_vmpt $v'.split()))")
done
perf script -i p/inj --itrace=i0ns -F+machine_pid,+vcpu --vmlinux "$VMX_KERNEL" \
	--guestmount p/gm 2>/dev/null | grep -E '^VM: *4242 VCPU:000 |CPU 0/KVM' > perf.0
"$VMPT" script -i g.perf.data --itrace=i0ns -F+machine_pid,+vcpu 2>/dev/null |
	grep -E '^VM: *4242 VCPU:000 |CPU 0/KVM' > vmpt.0
compare "vCPU 0's lines" perf.0 vmpt.0
lines=$("$VMPT" script -i g.perf.data --itrace=i0ns 2>/dev/null | wc -l)
echo "guest script, $branches branches: $lines instruction lines, trace $(du -k g.perf.data/data | cut -f1) KiB"
echo "perf's pipeline (inject x2 + script): $best_perf s CPU; vmpt script -i REC: $best_vmpt s CPU;" \
	"$(python3 -c "print('%.1fx' % ($best_perf / $best_vmpt))")"
