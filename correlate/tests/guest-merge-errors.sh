#!/bin/sh
# What users get wrong with vmpt correlate --guest-data, on real perf
# recordings made here: each case gets its exact one-line message and exit
# status 1 (2 for the option's grammar), leaves neither the output nor a
# temporary file behind, and no input changes.  A guest booted with
# kvm-clock (no TIME_CONV, or cap_user_time_zero 0): "boot the guest with
# no-kvmclock" (perf inject merges it with times off by the guest's uptime);
# a guest recorded per-thread (perf: "Failed to find guest id"); no vCPU
# threads for PID (perf: "No VCPU threads found for pid"); a guest with more
# CPUs than the VM has vCPU threads (perf merges it, the extra CPU's records
# on a vCPU that does not exist); recordings without sample ids; bad vCPU
# maps; an output that is an input, cannot be created, or outgrows the
# file size limit (a full disk's stand-in); a truncated guest file; a
# guest kcore_dir with a link out of it; a host holding this guest's kcore.
set -eu
. "$SRCDIR/correlate/tests/merge-lib.sh"
[ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] || { echo "SKIP: needs 2 CPUs"; exit 77; }
HOST_SECONDS=1

standin 2
Q2=$QEMU
# -p: other VMs on this machine would show in a cpu-wide host recording.
record_host "$T/host.raw" -p "$Q2" --sample-cpu
HP=$HOST_PID
sleep 0.2
record_guest "$T/guest.raw"
perf record -q --per-thread -T -p "$Q2" --sample-identifier -e dummy --switch-events \
	-o "$T/per-thread.raw" -- sleep 0.2 2>/dev/null || fail "perf record --per-thread"
perf record -q -p "$Q2" --sample-identifier -e dummy --switch-events \
	-o "$T/pid.raw" -- sleep 0.2 2>/dev/null || fail "perf record -p"
perf record -q -a -e dummy --switch-events -o "$T/no-ids.raw" -- sleep 0.2 2>/dev/null ||
	fail "perf record without --sample-identifier"
perf record -q -e dummy --switch-events -p "$Q2" --sample-cpu -o "$T/host-no-ids.raw" -- \
	sleep 0.2 2>/dev/null || fail "perf record of the host without --sample-identifier"
wait "$HP" || { cat "$T/host.raw.log"; fail "perf record -p"; }
stop_standin
standin 1
Q1=$QEMU
T1=$(ls /proc/$Q1/task | grep -v "^$Q1\$")
record_host "$T/host1.raw" -p "$Q1" --sample-cpu
wait "$HOST_PID" || { cat "$T/host1.raw.log"; fail "perf record -p (1 vCPU)"; }

for f in host host1 host-no-ids; do add_tc "$T/$f.raw" "$T/$f.data" $HOST_ZERO; done
for f in guest per-thread pid no-ids; do add_tc "$T/$f.raw" "$T/$f.data" $GUEST_ZERO; done
add_tc "$T/guest.raw" "$T/kvmclock.data" $GUEST_ZERO $MULT 0
H=$T/host.data
G=$T/guest.data
sha256sum "$T"/*.raw "$T"/*.data >"$T/inputs.sha"

# The offset perf -D gives a record, and the fields of the first ID_INDEX entry.
offset_of() {
	perf script -D -i "$1" 2>/dev/null |
		sed -n "s/^\([0-9-]* \)*\(0x[0-9a-f]*\) \[0x[0-9a-f]*\]: PERF_RECORD_$2.*/\2/p" | head -1
}
id_entry() {
	perf script -D -i "$1" 2>/dev/null |
		sed -n 's/^ \.\.\. id: \([0-9]*\)  idx: [0-9]*  cpu: \(-*[0-9]*\)  tid: \(-*[0-9]*\).*/\1 \2 \3/p' |
		head -1
}

# expect STATUS MESSAGE ARGS...: vmpt correlate ARGS -o OUT fails so.
OUT=$T/out/merged.data
mkdir "$T/out"
expect() {
	status=$1 msg=$2
	shift 2
	rc=0
	"$VMPT" correlate "$@" >"$T/stdout" 2>"$T/err" || rc=$?
	printf 'vmpt correlate: %s\n' "$msg" | diff -u - "$T/err" || fail "message for: $*"
	[ "$rc" = "$status" ] || fail "exit status $rc, not $status, for: $*"
	[ ! -s "$T/stdout" ] || fail "output on stdout for: $*"
	[ -z "$(ls "$T/out")" ] || { ls -la "$T/out"; fail "left behind for: $*"; }
}

GRAMMAR="--guest-data takes FILE,PID[,OFFSET[,SCALE]]: the guest's perf.data, the QEMU process's pid, and the guest TSC's offset and scale (host TSC = (guest TSC - OFFSET) / SCALE)"
expect 2 "--guest-data=$G: missing fields in '$G'; $GRAMMAR" -i "$H" -o "$OUT" --guest-data="$G"
expect 2 "--guest-data=$G,0: PID must be a process id, not '0'; $GRAMMAR" \
	-i "$H" -o "$OUT" --guest-data="$G,0"
expect 2 "--guest-data=$G,$Q2,12x: OFFSET must be a number of TSC ticks, not '12x'; $GRAMMAR" \
	-i "$H" -o "$OUT" --guest-data="$G,$Q2,12x"
expect 2 "--guest-data=$G,$Q2,0,0: SCALE must be a positive ratio below 65536, not '0'; $GRAMMAR" \
	-i "$H" -o "$OUT" --guest-data="$G,$Q2,0,0"
expect 2 "--guest-data=$G,$Q2,0,1,2: too many fields in '$G,$Q2,0,1,2'; $GRAMMAR" \
	-i "$H" -o "$OUT" --guest-data="$G,$Q2,0,1,2"

# kvm-clock: the guest's perf clock is not its TSC.
expect 1 "$T/guest.raw: no TIME_CONV record: guest perf time cannot be turned into guest TSC (the guest's perf clock is not the TSC, as with kvm-clock): boot the guest with no-kvmclock" \
	-i "$H" -o "$OUT" --guest-data="$T/guest.raw,$Q2,$OFFSET"
expect 1 "$T/kvmclock.data: offset $(offset_of "$T/kvmclock.data" TIME_CONV): TIME_CONV: cap_user_time_zero is 0: the perf clock is not the TSC (kvm-clock?): boot the guest with no-kvmclock" \
	-i "$H" -o "$OUT" --guest-data="$T/kvmclock.data,$Q2,$OFFSET"
expect 1 "$T/host.raw: no TIME_CONV record: host perf time cannot be related to the TSC (perf record writes one when the kernel's perf clock is the TSC)" \
	-i "$T/host.raw" -o "$OUT" --guest-data="$G,$Q2,$OFFSET"

# Guests recorded per-thread: no switches of other tasks, no whole CPUs.
set -- $(id_entry "$T/per-thread.data")
[ "$2" = -1 ] || fail "perf record --per-thread gave an id on cpu $2"
expect 1 "$T/per-thread.data: offset $(offset_of "$T/per-thread.data" ID_INDEX): ID_INDEX: id $1 counts thread $3 on any CPU, not whole CPUs: the guest was recorded per-thread (perf record -p/-t/--per-thread); record it cpu-wide: perf record -a" \
	-i "$H" -o "$OUT" --guest-data="$T/per-thread.data,$Q2,$OFFSET"
set -- $(id_entry "$T/pid.data")
expect 1 "$T/pid.data: offset $(offset_of "$T/pid.data" ID_INDEX): ID_INDEX: id $1 counts thread $3 on CPU $2, not whole CPUs: the guest was recorded per-thread (perf record -p/-t/--per-thread); record it cpu-wide: perf record -a" \
	-i "$H" -o "$OUT" --guest-data="$T/pid.data,$Q2,$OFFSET"

# The VM's vCPU threads: none for the pid given, fewer than the guest's CPUs.
expect 1 "$H: no vCPU threads found for pid 1: no COMM record names a thread of it 'CPU n/KVM' (pid $Q2 has threads named so: is it the VM?); QEMU names its vCPU threads so when started with -name NAME,debug-threads=on" \
	-i "$H" -o "$OUT" --guest-data="$G,1,$OFFSET"
expect 1 "$G: offset $(offset_of "$G" ID_INDEX): the guest recording has CPU 1, but pid $Q1 has 1 vCPU thread (CPU 0: tid $T1): a recording of another VM, or of a guest with more CPUs?" \
	-i "$T/host1.data" -o "$OUT" --guest-data="$G,$Q1,$OFFSET"

# Sample ids: perf tells the guest's CPUs and the two machines' records by them.
expect 1 "$T/no-ids.data: event dummy has no sample ids, which tell the guest CPU of each record: record the guest with perf record -a --sample-identifier" \
	-i "$H" -o "$OUT" --guest-data="$T/no-ids.data,$Q2,$OFFSET"
expect 1 "$T/host-no-ids.data: event dummy has no PERF_SAMPLE_IDENTIFIER: record the host with perf record --sample-identifier, so host and guest records can be told apart" \
	-i "$T/host-no-ids.data" -o "$OUT" --guest-data="$G,$Q2,$OFFSET"

# vCPU maps.
printf 'vcpu 0 tid 5 source qmp\nvcpu 0 thread 6\n' >"$T/bad.vcpus"
expect 1 "$T/bad.vcpus:2: expected 'vcpu N tid T source qmp|libvirt|thread-names'" \
	-i "$H" -o "$OUT" --guest-data="$G,$Q2,$OFFSET" --vcpus "$T/bad.vcpus"
printf 'vcpu 0 tid 5 source qmp\nvcpu 0 tid 6 source qmp\n' >"$T/twice.vcpus"
expect 1 "$T/twice.vcpus:2: two threads run vCPU 0 of pid $Q2: 5 and 6" \
	-i "$H" -o "$OUT" --guest-data="$G,$Q2,$OFFSET" --vcpus "$T/twice.vcpus"
: >"$T/empty.vcpus"
expect 1 "$T/empty.vcpus: no vCPU threads in the vCPU map" \
	-i "$H" -o "$OUT" --guest-data="$G,$Q2,$OFFSET" --vcpus "$T/empty.vcpus"
expect 1 "$T/none.vcpus: No such file or directory" \
	-i "$H" -o "$OUT" --guest-data="$G,$Q2,$OFFSET" --vcpus "$T/none.vcpus"

# The output.
expect 1 "$H: is an input; write the merge elsewhere" -i "$H" -o "$H" --guest-data="$G,$Q2,$OFFSET"
expect 1 "$T/out/no/such/dir.data: cannot create a file beside it: No such file or directory" \
	-i "$H" -o "$T/out/no/such/dir.data" --guest-data="$G,$Q2,$OFFSET"
expect 1 "/dev/full: not a regular file (the merge is written beside it and renamed)" \
	-i "$H" -o /dev/full --guest-data="$G,$Q2,$OFFSET"
rc=0
(ulimit -f 64 && trap '' XFSZ && exec "$VMPT" correlate -i "$H" -o "$OUT" \
	--guest-data="$G,$Q2,$OFFSET") 2>"$T/err" || rc=$?
echo "vmpt correlate: $OUT: File too large" | diff -u - "$T/err" || fail "file size limit message"
[ $rc = 1 ] || fail "file size limit: exit status $rc"
[ -z "$(ls "$T/out")" ] || { ls -la "$T/out"; fail "left behind at the file size limit"; }

# A guest file cut short: the reader says where.
head -c 3000 "$G" >"$T/cut.data"
set -- $(python3 -c "import struct; print(*struct.unpack_from('<QQ', open('$G', 'rb').read(), 40))")
expect 1 "$T/cut.data: offset 0x30: data section (offset $(printf '%#x' "$1"), size $2) beyond end of file (3000 bytes)" \
	-i "$H" -o "$OUT" --guest-data="$T/cut.data,$Q2,$OFFSET"
expect 1 "$T/none.data: No such file or directory" \
	-i "$H" -o "$OUT" --guest-data="$T/none.data,$Q2,$OFFSET"

# kcore directories: a guest's with a link out of it; a host that holds
# this guest's kcore already.
mkdir -p "$T/gdir/kcore_dir" "$T/hdir/kcore_dir__$Q2"
cp "$G" "$T/gdir/data"
cp "$H" "$T/hdir/data"
echo kallsyms >"$T/gdir/kcore_dir/kallsyms"
ln -s /etc/passwd "$T/gdir/kcore_dir/modules"
expect 1 "$T/gdir/kcore_dir/modules: a symbolic link, not a regular file" \
	-i "$H" -o "$OUT" --guest-data="$T/gdir,$Q2,$OFFSET"
rm "$T/gdir/kcore_dir/modules"
expect 1 "$T/hdir: holds kcore_dir__$Q2 already: a guest of pid $Q2 was merged into it before" \
	-i "$T/hdir" -o "$OUT" --guest-data="$T/gdir,$Q2,$OFFSET"

sha256sum -c --quiet "$T/inputs.sha" || fail "an input changed"
# And the inputs merge when nothing is wrong.
"$VMPT" correlate -i "$H" -o "$OUT" --guest-data="$G,$Q2,$OFFSET" 2>"$T/err" || { cat "$T/err"; fail "merge"; }
show "$OUT" >/dev/null
echo "ok: 26 wrong uses, each with its message"
