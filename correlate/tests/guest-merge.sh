#!/bin/sh
# vmpt correlate --guest-data against perf inject --guest-data on the same
# real recordings, made here with no KVM or Intel PT: a stand-in QEMU
# (threads "CPU 0/KVM", "CPU 1/KVM" busy on CPUs 0 and 1) recorded from
# the host with perf's VM recipe (perf record --sample-identifier -e dummy
# --switch-events, -p PID --sample-cpu and -a), and this machine recorded
# cpu-wide while `dd | cat` run, standing in for the guest; TSC offset
# 0x1000000000.  For each host recording, perf script --show-task-events
# --show-mmap-events --show-switch-events -F+machine_pid,+vcpu prints the
# same lines, to the nanosecond, for perf's output and vmpt's, and nothing
# on stderr; every guest record comes out once (merge_check.py: the guest's
# records in its order as VM:PID VCPU:n lines, on the host CPU of that
# vCPU, interleaved with the host's by time); the same from a saved vCPU map
# and in the directory form with the guest's kcore_dir, and into host
# recordings without FINISHED_INIT (where perf inject merges nothing) and
# in pipe mode (where it fails), one with a tracepoint among them.
# SCALE 1.5: perf divides in double and truncates, vmpt takes the first
# host tick; the lines differ only in the host times of the guest records
# where the two give different nanoseconds, each pinned to its formula.
# The header's events are perf's (the attr size is that of the headers vmpt
# was built with); the guest build ids are all the guest's, where perf keeps
# only [vdso]'s without AUX data.
set -eu
. "$SRCDIR/correlate/tests/merge-lib.sh"
NCPUS=$(getconf _NPROCESSORS_ONLN)
CHECK="python3 $SRCDIR/correlate/tests/merge_check.py"

standin 2
for attempt in 1 2 3; do
	record_host "$T/host-p.raw" -p "$QEMU" --sample-cpu
	HP=$HOST_PID
	record_host "$T/host-a.raw" -a
	HA=$HOST_PID
	sleep 0.3
	record_guest "$T/guest.raw" --buildid-all
	wait "$HP" || { cat "$T/host-p.raw.log"; fail "perf record -p"; }
	wait "$HA" || { cat "$T/host-a.raw.log"; fail "perf record -a"; }
	if lossless "$T/host-p.raw" "$T/host-a.raw" "$T/guest.raw"; then
		break
	fi
	cat "$T/lossless.err"
	[ $attempt -lt 3 ] || { echo "SKIP: perf record lost events 3 times: the machine is too busy"; exit 77; }
done
add_tc "$T/host-p.raw" "$T/host-p.data" $HOST_ZERO
add_tc "$T/host-a.raw" "$T/host-a.data" $HOST_ZERO
add_tc "$T/guest.raw" "$T/guest.data" $GUEST_ZERO
add_tc "$T/guest.raw" "$T/guest-scaled.data" $GUEST_ZERO_SCALED $SCALED_MULT

show "$T/guest.data" --ns >"$T/guest.ns"
N=$(wc -l <"$T/guest.ns")
[ "$N" -gt 1000 ] || fail "only $N guest records: the workload did not switch"
grep -q 'PERF_RECORD_SWITCH_CPU_WIDE.* \(dd\|cat\)' "$T/guest.ns" ||
	grep -q ' \(dd\|cat\) .*PERF_RECORD_SWITCH_CPU_WIDE' "$T/guest.ns" ||
	fail "no switches of dd and cat in the guest recording"
# The guest records vmpt must merge, by type, as perf script counts them.
grep -oE 'PERF_RECORD_[A-Z_0-9]+' "$T/guest.ns" | sed 's/PERF_RECORD_//' | sort |
	uniq -c | awk '{ print $2, $1 }' >"$T/guest.types"

# merge NAME HOST GUEST_DATA [vmpt options]: perf inject and vmpt correlate,
# $T/perf-NAME and $T/vmpt-NAME; vmpt's summary in $T/vmpt-NAME.sum.
merge() {
	name=$1 host=$2 gd=$3
	shift 3
	perf inject -i "$host" -o "$T/perf-$name" --guest-data="$gd" >"$T/perf-$name.log" 2>&1 ||
		{ cat "$T/perf-$name.log"; fail "perf inject ($name)"; }
	"$VMPT" correlate -i "$host" -o "$T/vmpt-$name" --guest-data="$gd" "$@" \
		2>"$T/vmpt-$name.sum" || { cat "$T/vmpt-$name.sum"; fail "vmpt correlate ($name)"; }
	# Guest records in = guest records out, by type as perf counts them.
	grep -q "^vmpt correlate: $T/vmpt-$name: guest records $N in, $N out (" "$T/vmpt-$name.sum" ||
		{ cat "$T/vmpt-$name.sum"; fail "summary ($name): not $N guest records in and out"; }
	sed -n '1s/.* out (\([^)]*\)).*/\1/p' "$T/vmpt-$name.sum" | sed 's/, /\n/g' | sort >"$T/types"
	diff -u "$T/guest.types" "$T/types" || fail "guest records by type ($name)"
}

# same NAME: perf script prints the same for both, with and without --ns.
same() {
	show "$T/perf-$1" >"$T/perf-$1.txt"
	show "$T/vmpt-$1" >"$T/vmpt-$1.txt"
	diff -u "$T/perf-$1.txt" "$T/vmpt-$1.txt" >"$T/diff" || { head -20 "$T/diff"; fail "perf script differs ($1)"; }
	show "$T/perf-$1" --ns >"$T/perf-$1.ns"
	show "$T/vmpt-$1" --ns >"$T/vmpt-$1.ns"
	diff -u "$T/perf-$1.ns" "$T/vmpt-$1.ns" >"$T/diff" || { head -20 "$T/diff"; fail "perf script --ns differs ($1)"; }
}

TC_ARGS="$SHIFT $MULT $GUEST_ZERO $MULT $HOST_ZERO $OFFSET"
for h in p a; do
	show "$T/host-$h.data" --ns >"$T/host-$h.ns"
	merge "$h" "$T/host-$h.data" "$T/guest.data,$QEMU,$OFFSET"
	same "$h"
	$CHECK "$T/vmpt-$h.ns" "$T/host-$h.ns" "$T/guest.ns" --pid "$QEMU" --ncpus "$NCPUS" \
		--times vmpt --tc $TC_ARGS || fail "merge check ($h)"
	grep -q "^vmpt correlate: .* 2 vCPUs of pid $QEMU (thread names), " "$T/vmpt-$h.sum" ||
		{ cat "$T/vmpt-$h.sum"; fail "summary: vCPUs ($h)"; }
done
grep -q '^VM: *[0-9]* VCPU:001 ' "$T/vmpt-a.txt" || fail "no guest record of vCPU 1"

# The headers: perf's events, ids and the guest's with exclude_host, as
# perf reads them; vmpt writes the attr at this system's struct size.
size=$(perf report --header-only -i "$T/vmpt-a" 2>/dev/null | sed -n 's/^# event : .*, size = \([0-9]*\), .*/\1/p' | sort -u)
for f in perf vmpt; do
	perf report --header-only -i "$T/$f-a" 2>"$T/err" | grep '^# event :' |
		sed "s/, size = $size, /, size = SIZE, /; s/, size = 128, /, size = SIZE, /" >"$T/$f.events"
	[ ! -s "$T/err" ] || { cat "$T/err"; fail "perf report --header-only complained ($f)"; }
done
diff -u "$T/perf.events" "$T/vmpt.events" || fail "events in the header"
grep -q 'name = dummy:G, .*exclude_host = 1' "$T/vmpt.events" || fail "no guest event with exclude_host"

# Build ids: perf inject keeps a guest build id only for a DSO hit by a
# sample, or [vdso], or all of them when the host has AUX data (an Intel PT
# recording): vmpt keeps all.  So vmpt's = perf's + the guest's others.
perf buildid-list -i "$T/guest.data" >"$T/guest.bids" 2>/dev/null
[ "$(wc -l <"$T/guest.bids")" -gt 1 ] || fail "the guest recording has no build ids but [vdso]'s"
perf buildid-list -i "$T/perf-a" 2>/dev/null | sort >"$T/perf.bids"
perf buildid-list -i "$T/vmpt-a" 2>/dev/null | sort >"$T/vmpt.bids"
{ cat "$T/perf.bids"; grep -v ' \[vdso\]$' "$T/guest.bids"; } | sort >"$T/want.bids"
diff -u "$T/want.bids" "$T/vmpt.bids" || fail "build ids"

# A vCPU map saved with the recording (REC.vcpus) stands for the thread
# names; here it names the threads from /proc as QMP would.
cp "$T/host-p.data" "$T/rec.data"
for task in /proc/$QEMU/task/*; do
	n=$(sed -n 's#^CPU \([0-9]*\)/KVM$#\1#p' "$task/comm")
	[ -z "$n" ] || echo "vcpu $n tid ${task##*/} source qmp"
done >"$T/rec.data.vcpus"
"$VMPT" correlate -i "$T/rec.data" -o "$T/vmpt-map" --guest-data="$T/guest.data,$QEMU,$OFFSET" \
	2>"$T/vmpt-map.sum" || { cat "$T/vmpt-map.sum"; fail "vmpt correlate with REC.vcpus"; }
grep -q " 2 vCPUs of pid $QEMU (qmp), " "$T/vmpt-map.sum" || { cat "$T/vmpt-map.sum"; fail "vCPU map not used"; }
show "$T/vmpt-map" --ns | diff -u "$T/vmpt-p.ns" - || fail "the vCPU map's merge differs"

# A host recording without FINISHED_INIT (vmpt record's, before it wrote
# one): perf inject merges nothing into it; vmpt merges as before.
$EDIT drop "$T/host-p.data" "$T/no-init.data" 82 || fail "dropping FINISHED_INIT"
merge no-init "$T/no-init.data" "$T/guest.data,$QEMU,$OFFSET"
[ "$(show "$T/perf-no-init" | grep -c '^VM:')" = 0 ] || fail "perf inject merged into a host without FINISHED_INIT"
show "$T/vmpt-no-init" --ns | diff -u "$T/vmpt-p.ns" - || fail "the merge without FINISHED_INIT differs"

# A pipe-mode host recording (perf record -o -), here perf inject's
# rewriting of host-p into one, with no build ids: vmpt merges into it the
# same (perf inject cannot: it stops at FINISHED_INIT).
perf inject -i "$T/host-p.data" -o - >"$T/host-pipe.data" 2>"$T/pipe.err" ||
	{ cat "$T/pipe.err"; fail "perf inject -o -"; }
"$VMPT" correlate -i "$T/host-pipe.data" -o "$T/vmpt-pipe" --guest-data="$T/guest.data,$QEMU,$OFFSET" \
	2>"$T/vmpt-pipe.sum" || { cat "$T/vmpt-pipe.sum"; fail "vmpt correlate of a pipe-mode host"; }
show "$T/vmpt-pipe" --ns | diff -u "$T/vmpt-p.ns" - || fail "the merge into a pipe-mode host differs"

# A pipe-mode host recording with a tracepoint (perf record -o -; perf
# inject -o - writes tracing data that perf script cannot read back): the
# tracing data comes as a record there; the merge keeps it as the file's
# TRACING_DATA, where perf script reads the host's tracepoint lines as in
# the pipe.  The guest (this machine, recorded before) names the stand-in's
# vCPU thread guest-cpu here: a guest's tid is no host thread, and the
# host's lines keep CPU 0/KVM, as perf's.
perf record -q --sample-identifier -e dummy --switch-events -e sched:sched_switch -a -o - -- \
	sleep 0.2 >"$T/host-tp.raw" 2>"$T/host-tp.log" || { cat "$T/host-tp.log"; fail "perf record -o - of a tracepoint"; }
$EDIT time-conv "$T/host-tp.raw" "$T/host-tp.data" $SHIFT $MULT $HOST_ZERO || fail "time-conv host-tp"
python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); n = d.count(b"CPU 0/KVM\0")
assert n, "no COMM of CPU 0/KVM in the guest recording"
open(sys.argv[2], "wb").write(d.replace(b"CPU 0/KVM\0", b"guest-cpu\0"))' "$T/guest.data" "$T/guest-renamed.data" ||
	fail "renaming the guest's CPU 0/KVM"
"$VMPT" correlate -i "$T/host-tp.data" -o "$T/vmpt-tp" --guest-data="$T/guest-renamed.data,$QEMU,$OFFSET" \
	2>"$T/vmpt-tp.sum" || { cat "$T/vmpt-tp.sum"; fail "vmpt correlate of a pipe-mode host with a tracepoint"; }
for f in host-tp.data vmpt-tp; do
	perf script -i "$T/$f" --ns 2>"$T/tp.err" |
		grep ' sched:sched_switch: prev_comm=' >"$T/$f.tp" || fail "$f: no sched_switch lines"
	[ ! -s "$T/tp.err" ] || { cat "$T/tp.err"; fail "perf script -i $f complained"; }
done
diff -u "$T/host-tp.data.tp" "$T/vmpt-tp.tp" || fail "the tracepoint lines of a merged pipe differ"
grep -q '^ *CPU 0/KVM .* sched:sched_switch: prev_comm=CPU 0/KVM ' "$T/vmpt-tp.tp" ||
	fail "no switch of the stand-in's CPU 0/KVM in the merged tracepoint lines"
"$VMPT" script -i "$T/vmpt-tp" --ns 2>"$T/tp.err" | grep ' sched:sched_switch: prev_comm=' |
	diff -u "$T/vmpt-tp.tp" - || fail "vmpt script's tracepoint lines of the merge are not perf's"

# perf record -z: host and guest recordings whose records are COMPRESSED
# records of one zstd stream, records cut across them: the same merge.
for f in host-p guest; do
	"$BUILDDIR/perfdata/tests/pd-zcompress" "$T/$f.data" "$T/$f-z.data" 1000 >"$T/$f-z.offsets" ||
		fail "pd-zcompress $f"
	[ "$(wc -l <"$T/$f-z.offsets")" -gt 2 ] || fail "$f-z.data: too few COMPRESSED records"
done
"$VMPT" correlate -i "$T/host-p-z.data" -o "$T/vmpt-z" --guest-data="$T/guest-z.data,$QEMU,$OFFSET" \
	2>"$T/vmpt-z.sum" || { cat "$T/vmpt-z.sum"; fail "vmpt correlate of perf record -z recordings"; }
show "$T/vmpt-z" --ns | diff -u "$T/vmpt-p.ns" - || fail "the merge of compressed recordings differs"

# perf's directory form: the guest's kcore_dir becomes kcore_dir__PID.
mkdir -p "$T/guest.dir/kcore_dir"
cp "$T/guest.data" "$T/guest.dir/data"
cp /proc/kallsyms "$T/guest.dir/kcore_dir/kallsyms"
cp /proc/modules "$T/guest.dir/kcore_dir/modules" 2>/dev/null || : >"$T/guest.dir/kcore_dir/modules"
merge dir "$T/host-p.data" "$T/guest.dir,$QEMU,$OFFSET"
for f in perf vmpt; do
	[ -d "$T/$f-dir/kcore_dir__$QEMU" ] || fail "$f: no kcore_dir__$QEMU"
	(cd "$T/$f-dir" && find . -type f ! -name data | sort) >"$T/$f.files"
done
diff -u "$T/perf.files" "$T/vmpt.files" || fail "files of the directory form"
for k in kallsyms modules; do
	cmp "$T/guest.dir/kcore_dir/$k" "$T/vmpt-dir/kcore_dir__$QEMU/$k" || fail "kcore_dir__$QEMU/$k"
done
same dir
grep -q ', guest kcore in kcore_dir__PID$' "$T/vmpt-dir.sum" || fail "summary: kcore"

# SCALE 1.5, the guest's TSC 1.5 times as fast: the same lines but for the
# host times of guest records where perf's double division and vmpt's
# integer one give different nanoseconds; each time pinned to its formula.
merge scaled "$T/host-a.data" "$T/guest-scaled.data,$QEMU,$OFFSET,$SCALE"
show "$T/perf-scaled" --ns >"$T/perf-scaled.ns"
show "$T/vmpt-scaled" --ns >"$T/vmpt-scaled.ns"
show "$T/guest-scaled.data" --ns >"$T/guest-scaled.ns"
TC_ARGS="$SHIFT $SCALED_MULT $GUEST_ZERO_SCALED $MULT $HOST_ZERO $OFFSET"
for f in perf vmpt; do
	$CHECK "$T/$f-scaled.ns" "$T/host-a.ns" "$T/guest-scaled.ns" --pid "$QEMU" \
		--ncpus "$NCPUS" --times $f --tc $TC_ARGS --scale $SCALE \
		--count-differences >"$T/$f.ndiff" || fail "merge check (scaled, $f)"
done
diff -u "$T/perf-scaled.ns" "$T/vmpt-scaled.ns" >"$T/diff" || true
differ=$(grep -c '^-[^-]' "$T/diff" || true)
[ "$differ" = "$(cat "$T/vmpt.ndiff")" ] ||
	fail "$differ lines differ, $(cat "$T/vmpt.ndiff") guest times differ between the formulas"
[ "$differ" -gt 0 ] || fail "SCALE $SCALE made no difference: the pin tests nothing"
if grep '^[-+][^-+]' "$T/diff" | grep -v '^[-+]VM:' >/dev/null; then
	fail "a host line differs (scaled)"
fi
show "$T/perf-scaled" >"$T/a"
show "$T/vmpt-scaled" >"$T/b"
diff "$T/a" "$T/b" >"$T/diff" || true
echo "ok: $N guest records merged as perf inject does (-p and -a hosts, vCPU map, directory form, no FINISHED_INIT, pipe mode, a tracepoint in a pipe, perf record -z); SCALE $SCALE: $differ of $N host times differ by 1 ns as pinned ($(grep -c '^<' "$T/diff" || true) lines at perf script's microseconds)"
