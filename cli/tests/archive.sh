#!/bin/bash
# vmpt archive makes a recording decode where its binaries are absent:
# archived, moved elsewhere and its binary deleted, the recording prints
# the same lines as before; for a file recording (FILE.root) and perf's
# directory form (DIR/root), by path and by build-id; a binary changed
# since the recording is not archived (and said so), a missing one is
# named; the vdso of a real recording comes by its build-id; vmpt record
# writes the build-ids of what it maps.
# usage: archive.sh VMPT_SYNTH
set -u
SYNTH=$1
D=$(dirname "$SYNTH")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home	# perf's build-id cache: our own
mkdir -p "$HOME" "$tmp/bin" "$tmp/there"
fail=0
check() {	# check NAME WANT GOT
	[ "$2" = "$3" ] || { echo "FAIL $1: got:"; echo "$3"; echo "want:"; echo "$2"; fail=1; }
}

# A file recording of a binary that will be gone.
cp /usr/bin/bash "$tmp/bin/mybash"
size=$(stat -c %s /usr/bin/bash)
"$SYNTH" -q --branches 3000 --elf "$tmp/bin/mybash" --seed 7 -o "$tmp/t"
"$VMPT" script -i "$tmp/t.perf.data" --itrace=bi0ns > "$tmp/before"
out=$("$VMPT" archive "$tmp/t.perf.data")
check archive "$tmp/t.perf.data.root:
  $tmp/bin/mybash ($size bytes)
vmpt archive: 1 binary ($size bytes) in $tmp/t.perf.data.root" "$out"
mv "$tmp/t.perf.data" "$tmp/t.perf.data.root" "$tmp/there/"
rm "$tmp/bin/mybash"
"$VMPT" script -i "$tmp/there/t.perf.data" --itrace=bi0ns > "$tmp/after" 2> "$tmp/err"
cmp -s "$tmp/before" "$tmp/after" || { echo "FAIL moved: $(diff "$tmp/before" "$tmp/after" | head -3)"; fail=1; }
check "moved: stderr" "" "$(cat "$tmp/err")"
[ "$(wc -l < "$tmp/after")" -gt 1000 ] || { echo "FAIL moved: only $(wc -l < "$tmp/after") lines"; fail=1; }

# perf's directory form, the build-id recorded (perf inject caches the
# binary in our ~/.debug: archive takes it from there, then by path).
cp /usr/bin/bash "$tmp/bin/mybash"
"$SYNTH" -q --branches 3000 --elf "$tmp/bin/mybash" --seed 8 -o "$tmp/u"
mkdir "$tmp/rec"
perf inject --buildid-all -i "$tmp/u.perf.data" -o "$tmp/rec/data" 2> /dev/null
id=$(perf buildid-list -i "$tmp/rec/data" 2> /dev/null | awk '/mybash/ { print $1 }')
[ -n "$id" ] || { echo "FAIL: perf recorded no build-id"; fail=1; }
"$VMPT" script -i "$tmp/rec" --itrace=bi0ns > "$tmp/before"
rm -rf "$HOME/.debug"
out=$("$VMPT" archive -i "$tmp/rec")
check "archive dir" "$tmp/rec/root:
  $tmp/bin/mybash ($size bytes, build-id $id)
vmpt archive: 1 binary ($size bytes) in $tmp/rec/root" "$out"
check "build-id link" "../..$tmp/bin/mybash" "$(readlink "$tmp/rec/root/.build-id/${id:0:2}/${id:2}")"
rm "$tmp/bin/mybash"
mv "$tmp/rec" "$tmp/there/rec"
"$VMPT" script -i "$tmp/there/rec" --itrace=bi0ns > "$tmp/after" 2> "$tmp/err"
cmp -s "$tmp/before" "$tmp/after" || { echo "FAIL dir moved: $(diff "$tmp/before" "$tmp/after" | head -3)"; fail=1; }
check "dir moved: stderr" "" "$(cat "$tmp/err")"

# Changed since the recording: another binary at the path is not taken.
mkdir "$tmp/rec2"
cp /usr/bin/dash "$tmp/bin/mybash"
cp "$tmp/there/rec/data" "$tmp/rec2/data"
have=$(readelf -n /usr/bin/dash | awk '/Build ID/ { print $3 }')
out=$("$VMPT" archive "$tmp/rec2")
check changed "$tmp/rec2/root:
  changed $tmp/bin/mybash: build-id $have here, the recording's is $id: not copied
vmpt archive: 0 binaries (0 bytes) in $tmp/rec2/root, 1 changed since the recording" "$out"
# Missing: nowhere here.
rm "$tmp/bin/mybash"
out=$("$VMPT" archive -q "$tmp/rec2")
check missing "vmpt archive: 0 binaries (0 bytes) in $tmp/rec2/root, 1 missing" "$out"

# Kernel code recorded, its text left out on request.
"$SYNTH" -q --branches 2000 --elf /usr/bin/bash --seed 9 --irq-period 300 \
	--host-kernel "$D/guest-kernel" -o "$tmp/k"
out=$("$VMPT" archive -q --no-kcore "$tmp/k.perf.data")
check kernel "vmpt archive: 1 binary ($size bytes) in $tmp/k.perf.data.root; kernel text not archived" "$out"

# A real recording (perf record, no Intel PT needed): the vdso by its
# build-id, this process's own being the recorded one.
if perf record -q -e dummy:u -o "$tmp/real.data" -- /bin/true 2> /dev/null; then
	vid=$(perf buildid-list -i "$tmp/real.data" 2> /dev/null | awk '$2 == "[vdso]" { print $1 }')
	"$VMPT" archive "$tmp/real.data" > "$tmp/out"
	grep -q "^  \[vdso\] ([0-9]* bytes, build-id $vid)$" "$tmp/out" ||
		{ echo "FAIL vdso: $(cat "$tmp/out")"; fail=1; }
	[ -f "$tmp/real.data.root/.build-id/${vid:0:2}/${vid:2}" ] || { echo "FAIL vdso file"; fail=1; }
	grep -q "^  /usr/bin/true (" "$tmp/out" || { echo "FAIL true: $(cat "$tmp/out")"; fail=1; }
fi

# vmpt record names the build-ids of what it mapped (HEADER_BUILD_ID, as
# perf record for AUX area tracing): perf reads them, archive copies by them.
if "$VMPT" record --event dummy -o "$tmp/vr.data" -- /bin/true > /dev/null 2>&1; then
	tid=$(readelf -n /usr/bin/true | awk '/Build ID/ { print $3 }')
	perf buildid-list -i "$tmp/vr.data" 2> /dev/null | grep -qx "$tid /usr/bin/true" ||
		{ echo "FAIL record build-ids: $(perf buildid-list -i "$tmp/vr.data" 2>&1)"; fail=1; }
	"$VMPT" archive "$tmp/vr.data" > "$tmp/out"
	grep -qx "  /usr/bin/true ($(stat -c %s /usr/bin/true) bytes, build-id $tid)" "$tmp/out" ||
		{ echo "FAIL record archive: $(cat "$tmp/out")"; fail=1; }
fi

# Bad input: a recording that is none.
: > "$tmp/empty"
"$VMPT" archive "$tmp/empty" > /dev/null 2> "$tmp/err"
rc=$?
check "empty: rc" 1 $rc
check "empty: stderr" "vmpt archive: $tmp/empty: zero-sized data, nothing to do" "$(cat "$tmp/err")"

[ $fail = 0 ] && echo "archive: moved recordings decode as before"
exit $fail
