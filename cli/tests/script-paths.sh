#!/bin/bash
# A recording's paths open only inside their root, and only as regular
# files (docs/security.md):
# - a host MMAP2 naming a FIFO reads as a missing binary: the same lines
#   and status as with nothing there, no hang;
# - a guest sideband naming /../../outside/prog (out of FILE.guest/root),
#   a link in root/ pointing out of it, a FIFO in root/, and a kcore_dir
#   that is a link out of the recording: vmpt script prints what it prints
#   for a guest naming nothing there, and strace shows no open of a file
#   outside (a regular copy of the binary and a FIFO wait there).
# usage: script-paths.sh VMPT_SYNTH CRAFT_SIDEBAND
set -u
SYNTH=$1
CRAFT=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() {	# check NAME WANT GOT
	[ "$2" = "$3" ] || { echo "FAIL $1: got:"; echo "$3" | head -5; echo "want:"; echo "$2" | head -5; fail=1; }
}
# run REC OUT: vmpt script's lines, stderr and status; a hang is status 124.
run() {
	timeout 60 "$VMPT" script -i "$1" --itrace=bi0ns ${3:-} > "$2" 2>&1
	echo "status $?" >> "$2"
}

mkdir -p "$tmp/bin" "$tmp/outside/kdir"
cp /usr/bin/bash "$tmp/bin/prog"
"$SYNTH" -q --branches 2000 --elf "$tmp/bin/prog" --seed 3 -o "$tmp/t"
run "$tmp/t.perf.data" "$tmp/present"
rm "$tmp/bin/prog"
run "$tmp/t.perf.data" "$tmp/missing"
[ "$(grep -c prog "$tmp/present")" -gt 1000 ] || { echo "FAIL: the binary decodes in $(wc -l < "$tmp/present") lines"; fail=1; }
cmp -s "$tmp/present" "$tmp/missing" && { echo "FAIL: the binary makes no difference"; fail=1; }

# The binary's path a FIFO: refused at once, as if missing.
mkfifo "$tmp/bin/prog"
run "$tmp/t.perf.data" "$tmp/fifo"
check "host FIFO" "$(cat "$tmp/missing")" "$(cat "$tmp/fifo")"
rm "$tmp/bin/prog"

# A guest naming nothing that is there: the reference.  The guest's
# mappings as any guest process's (--no-guest-tasks: this sideband has no
# TIME_CONV to follow tasks with; the tasks' lookup is guest-script-errors').
G=$tmp/t.perf.data.guest
mkdir -p "$G/root/bin" "$G/root/inside"
"$CRAFT" "$G/perf.data" /bin/none
run "$tmp/t.perf.data" "$tmp/guest-none" --no-guest-tasks
grep -q "^status 124" "$tmp/guest-none" && { echo "FAIL: the reference hangs"; fail=1; }

# A hostile guest's names, with something to find outside.
cp /usr/bin/bash "$tmp/outside/prog"
mkfifo "$tmp/outside/fifo" "$tmp/outside/kdir/kcore" "$G/root/bin/fifo"
ln -s ../../../../outside/prog "$G/root/inside/rel"
ln -s "$tmp/outside/prog" "$G/root/inside/abs"
ln -s "$tmp/outside/kdir" "$G/kcore_dir"
rm "$G/perf.data"
"$CRAFT" "$G/perf.data" /../../outside/prog /bin/../../../outside/fifo \
	/inside/rel /inside/abs /bin/fifo
strace -f -e trace=open,openat,openat2 -o "$tmp/strace" \
	timeout 60 "$VMPT" script -i "$tmp/t.perf.data" --itrace=bi0ns --no-guest-tasks \
	> "$tmp/guest-bad" 2>&1
echo "status $?" >> "$tmp/guest-bad"
check "hostile guest" "$(cat "$tmp/guest-none")" "$(cat "$tmp/guest-bad")"
check "opened outside" "" "$(grep -E 'outside|kdir|kcore' "$tmp/strace")"
# The links were looked up inside root/ (where nothing is), the FIFO refused.
for f in inside/rel inside/abs; do
	check "link $f" 1 "$(grep -c "openat2([0-9]*, \"$f\", .* = -1 ENOENT" "$tmp/strace")"
done
check "FIFO in root" 1 "$(grep -c 'openat2([0-9]*, "bin/fifo", .* = [0-9]' "$tmp/strace")"

[ $fail = 0 ] && echo "script-paths: host FIFO, guest '..', links out, FIFOs, kcore_dir link: nothing opened outside"
exit $fail
