#!/bin/bash
# Bad input to vmpt correlate: a clear one-line error naming the file (and
# the offset where there is one) in perf's words where perf has some, exit
# status != 0, and the input unchanged:
# - no perf.data, a perf.data without Intel PT, one cut short;
# - a trace without TSC or without MTC (perf's messages; vmpt script then
#   says its guest TSCs stay as they are);
# - perf's option grammar broken, in place without --force, -o in place;
# - a read-only file rewritten in place; a full disk (an 8 KiB tmpfs) and
#   /dev/full for the new file: nothing left behind.
# A trace whose buffer ends inside a packet is no error: perf's lines, and
# a note where the trace stops making sense.
. "$(dirname "$0")/correlate-lib.sh"
: "${CORR_FIXTURE:?}"
WORK=$(mktemp -d)
MNT=
cleanup() {
	[ -n "$MNT" ] && umount "$MNT" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK"

# fails WANT-STDERR-LINE FILE ARGS...: exit != 0, that line, FILE unchanged
fails() {
	want=$1 file=$2
	shift 2
	sum=$(md5sum < "$file")
	"$VMPT" correlate "$@" > out 2> err && fail "$* succeeded"
	grep -qxF "$want" err || fail "$*: '$(cat err)', not '$want'"
	[ "$(md5sum < "$file")" = "$sum" ] || fail "$*: $file changed"
	errors=$((errors + 1))
}
errors=0

vm_synth --branches 5000 --guest-period 500 --psb-period 1024 --seed 1 --vcpus 2 -o vm ||
	fail "vmpt-synth"
cp vm.perf.data rec.data

fails "vmpt correlate: nothing.data: No such file or directory" rec.data -i nothing.data
cp "$SRCDIR/README.md" notperf.data
"$VMPT" correlate -i notperf.data 2> err && fail "README accepted"
grep -q "^vmpt correlate: notperf.data: .*" err || fail "not a perf.data: $(cat err)"
perf record -q -e dummy -o nopt.data true 2>/dev/null || fail "perf record"
fails "vmpt correlate: nopt.data: no Intel PT trace (no intel_pt AUXTRACE_INFO)" \
	nopt.data -i nopt.data --force
# cut in the middle of the data section (the header's offset and size)
read -r doff dsize < <(python3 -c 'import struct, sys
print(*struct.unpack_from("<QQ", open(sys.argv[1], "rb").read(56), 40))' rec.data)
cut=$((doff + dsize / 2))
head -c "$cut" rec.data > cut.data
fails "vmpt correlate: cut.data: offset 0x30: data section (offset $(printf 0x%x "$doff"), size $dsize) beyond end of file ($cut bytes)" \
	cut.data -i cut.data --force

# No TSC, no MTC: perf's words (perf inject says the same).
vm_synth --branches 3000 --seed 1 --no-timing -o notime || fail "vmpt-synth"
vm_synth --branches 20000 --psb-period 1024 --seed 1 --no-mtc -o nomtc || fail "vmpt-synth"
for t in notime nomtc; do
	perf_dry_run $t.perf.data > perf.err || true
	msg=$(head -1 perf.err)
	off=$(sed -n 's/^\(0x[0-9a-f]*\) .*failed to process type: 70.*/\1/p' perf.err)
	[ -n "$msg" ] && [ -n "$off" ] || fail "$t: perf said $(cat perf.err)"
	fails "vmpt correlate: $t.perf.data: offset $off: $msg" $t.perf.data \
		-i $t.perf.data --dry-run
done
"$VMPT" script -i nomtc.perf.data --itrace=b -F ip > /dev/null 2> err || fail "script nomtc"
grep -q "^vmpt script: [1-9][0-9]* guest TSC packet(s) left as they are: nomtc.perf.data: offset $off: MTC packets must have been enabled for VM Time Correlation$" err ||
	fail "vmpt script on nomtc: $(cat err)"

# TSC_CTC_D 0 with N not (a recording may say so; perf then takes no
# ratio): no TSC is related to the CTC, nothing learned, no crash (the
# learning divided by it: SIGFPE, found by fuzz-correlate).
python3 -c 'import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
off, size = struct.unpack_from("<QQ", b, 40)
end = off + size
while off < end:
    typ, _, n = struct.unpack_from("<IHH", b, off)
    if typ == 70:
        struct.pack_into("<Q", b, off + 16 + 13 * 8, 0)
    off += n + (struct.unpack_from("<Q", b, off + 8)[0] if typ == 71 else 0)
open(sys.argv[2], "wb").write(b)' rec.data d0.data
"$VMPT" correlate --dry-run -i d0.data > out 2> err || fail "TSC_CTC_D 0: $(cat err)"
[ "$(head -1 out)" = "# d0.data: 0 segment(s), 0 guest TSC packet(s), 0 to rewrite" ] ||
	fail "TSC_CTC_D 0: $(cat out)"
"$VMPT" script -i d0.data > /dev/null 2> err || fail "script, TSC_CTC_D 0: $(cat err)"

# perf's grammar and in-place rules, in perf's words.
fails "vmpt correlate: Failed to parse VM Time Correlation options" rec.data \
	-i rec.data --vm-time-correlation="dry-run 0x100:foo"
fails "The input file would be updated in place, the --force option is required." \
	rec.data -i rec.data --vm-time-correlation=0x100
fails "Output file name must not be specified for in-place updating" rec.data \
	-i rec.data --force -o other.data

# A file the user may not write.
chmod 444 rec.data
if [ "$(id -u)" = 0 ]; then
	chmod 755 "$WORK"
	sum=$(md5sum < rec.data)
	setpriv --reuid=65534 --regid=65534 --clear-groups "$VMPT" correlate -i rec.data \
		--force > out 2> err && fail "read-only file rewritten"
	grep -qxF "vmpt correlate: rec.data: Permission denied" err || fail "read-only: $(cat err)"
	[ "$(md5sum < rec.data)" = "$sum" ] || fail "read-only file changed"
	errors=$((errors + 1))
else
	fails "vmpt correlate: rec.data: Permission denied" rec.data -i rec.data --force
fi
chmod 644 rec.data

# A full disk, and /dev/full: nothing left behind.
mkdir full
if mount -t tmpfs -o size=8k tmpfs full 2>/dev/null; then
	MNT=$WORK/full
	"$VMPT" correlate -i rec.data -o full/out.data > out 2> err && fail "full disk"
	grep -q "^vmpt correlate: full/\.out\.data\.[A-Za-z0-9]*: No space left on device$" err ||
		fail "full disk: $(cat err)"
	[ -z "$(ls -A full)" ] || fail "full disk: left $(ls -A full)"
	errors=$((errors + 1))
else
	echo "(no tmpfs mount here: the full-disk case is /dev/full only)"
fi
fails "vmpt correlate: /dev/full: exists and is no regular file" rec.data -i rec.data -o /dev/full
[ -c /dev/full ] || fail "/dev/full is gone"

# A buffer cut inside a packet: perf's lines, a note, exit 0.
"$CORR_FIXTURE" cut vm.perf.data cutbuf.data 0x1018 || fail "cut"
perf_dry_run cutbuf.data > perf.err
"$VMPT" correlate --dry-run -i cutbuf.data > out 2> vmpt.err || fail "cut buffer: exit status"
compare "cut buffer: perf's lines" perf.err vmpt.err
grep -q "^note: cutbuf.data: offset 0x[0-9a-f]*: 1 byte(s) of trace are no packet" out ||
	fail "cut buffer: no note: $(cat out)"

echo "$errors bad inputs: one-line errors, exit status 1, inputs unchanged"
