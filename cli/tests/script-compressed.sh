#!/bin/bash
# perf record -z recordings: the records (not the AUXTRACE data) are
# COMPRESSED records of one zstd stream, a record often going on from one
# into the next.  pd-zcompress writes such a copy of a recording as perf
# record -z does (HEADER_COMPRESSED included); perf 6.1 reads the copies
# as the originals, and vmpt script's lines are perf's, in every cut of the
# stream (7 bytes: every record cut; 300; one COMPRESSED record per run):
# a user-space recording and a VM recording (2 vCPUs, TSC offsets the
# correlator learns, guest and host: vmpt's time line from the copy the
# same).  A corrupt COMPRESSED record is an
# error naming it; vmpt dump reads the copies' trace.
# usage: script-compressed.sh   (env: VMPT SYNTH VMX_KERNEL GUEST_KERNEL BUILDDIR)
set -u
: "${VMPT:?}" "${SYNTH:?}" "${VMX_KERNEL:?}" "${GUEST_KERNEL:?}" "${BUILDDIR:?}"
command -v perf > /dev/null || { echo "SKIP: perf not found"; exit 77; }
ZC=$BUILDDIR/perfdata/tests/pd-zcompress
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home
mkdir -p "$HOME"
cd "$tmp" || exit 1
cp "$VMX_KERNEL" "$GUEST_KERNEL" .
fail() { echo "FAIL: $*"; exit 1; }
synth() { "$SYNTH" "$@" -q || fail "vmpt-synth $*"; }

synth --elf /usr/bin/bash --branches 3000 --seed 41 -o u
VM=(--vm --host-kernel ./vmx-kernel --guest-elf ./guest-kernel --guest-start start_kernel
    --psb-period 1024 --branches 3000 --vcpus 2 --seed 1)
# perf 6.1 does not correlate: guest TSC offsets 0 keep its times vmpt's
synth "${VM[@]}" --tsc-offset 0,0,0 -o vm
synth "${VM[@]}" -o vmoff
VMK="--vmlinux ./vmx-kernel --guestvmlinux ./guest-kernel"
runs=0 lines=0
# check REC OPTIONS: perf's lines of REC and of its copies, vmpt's of the copies
check() {
	local rec=$1 opts=$2 cut n
	# shellcheck disable=SC2086
	perf script -i "$rec" $opts > perf.orig 2> perf.err || { cat perf.err; fail "perf script -i $rec"; }
	[ -s perf.orig ] || fail "perf script -i $rec $opts printed nothing"
	for cut in 7 300 60000; do
		"$ZC" "$rec" z.data "$cut" > z.offsets || fail "pd-zcompress $rec $cut"
		n=$(wc -l < z.offsets)
		[ "$n" -ge 2 ] || fail "$rec $cut: $n COMPRESSED records"
		# shellcheck disable=SC2086
		perf script -i z.data $opts > perf.z 2> perf.err || { cat perf.err; fail "perf script of $rec ($cut)"; }
		cmp -s perf.orig perf.z || fail "perf reads the compressed copy of $rec ($cut) otherwise"
		# shellcheck disable=SC2086
		"$VMPT" script -i z.data $opts > vmpt.z 2> vmpt.err || { cat vmpt.err; fail "vmpt script of $rec ($cut)"; }
		diff -u perf.z vmpt.z > diff || { head -20 diff; fail "vmpt script -i $rec (compressed, $cut) $opts"; }
		runs=$((runs + 1))
		lines=$((lines + $(wc -l < vmpt.z)))
	done
}
check u.perf.data "--itrace=be -F ip,addr,sym,dso,time --show-task-events --show-mmap-events"
check u.perf.data "--itrace=i0ns -F ip,sym"
check vm.perf.data "--itrace=be -F cpu,ip,addr,time,flags $VMK"
# offsets the correlator learns from the trace and the sideband: the same
# host time line from the compressed copy
# shellcheck disable=SC2086
"$VMPT" script -i vmoff.perf.data --itrace=be -F cpu,ip,addr,time,flags $VMK > vmoff.orig 2>&1 ||
	fail "vmpt script -i vmoff.perf.data"
"$ZC" vmoff.perf.data z.data 300 > /dev/null || fail "pd-zcompress vmoff"
# shellcheck disable=SC2086
"$VMPT" script -i z.data --itrace=be -F cpu,ip,addr,time,flags $VMK 2>&1 | sed 's/z\.data/vmoff.perf.data/g' |
	cmp -s vmoff.orig - || fail "vmpt script of vmoff's compressed copy"

# one byte of the third COMPRESSED record changed: the error names it
"$ZC" u.perf.data bad.data 100 corrupt > bad.offsets || fail "pd-zcompress corrupt"
off=$(sed -n 3p bad.offsets)
"$VMPT" script -i bad.data > /dev/null 2> bad.err && fail "vmpt script read a corrupt COMPRESSED record"
[ "$(cat bad.err)" = "vmpt script: bad.data: offset $off: COMPRESSED record: zstd: Data corruption detected" ] ||
	fail "corrupt COMPRESSED record: $(cat bad.err)"

# the trace is not compressed: vmpt dump reads its packets as in the
# original (the file offsets moved with the AUXTRACE records)
"$ZC" vm.perf.data z.data 300 > /dev/null
"$VMPT" dump vm.perf.data | grep -v '^\[auxtrace' | cut -c17- > dump.orig
"$VMPT" dump z.data | grep -v '^\[auxtrace' | cut -c17- > dump.z
[ "$(wc -l < dump.z)" -gt 1000 ] && cmp -s dump.orig dump.z || fail "vmpt dump of the compressed copy"
echo "ok: $runs runs, $lines lines of vmpt script = perf script on perf record -z copies; a corrupt one named at $off"
