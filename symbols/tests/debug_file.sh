#!/bin/bash
# Symbols of stripped binaries from their separate debug files, found as
# perf 6.1 finds them; vmpt script = perf script on the same recordings:
# - Debian's libc.so.6 (stripped) and libc6-dbg's file in
#   /usr/lib/debug/.build-id/: libc's local functions are named;
# - a C++ program built here, stripped, its debug file named by
#   .gnu_debuglink beside it and in its .debug/; a debug file of another
#   build (another build-id) is not used, as perf: .dynsym's names only.
# usage: debug_file.sh VMPT_SYNTH
set -u
SYNTH=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v perf > /dev/null || { echo "perf not found"; exit 77; }
export HOME=$tmp/home
mkdir -p "$HOME"
fail=0
runs=0
BASE=0x555555554000

# same NAME REC MODE...: equal, non-empty output in each mode.
same() {
	local name=$1 rec=$2 m
	shift 2
	for m in "$@"; do
		# shellcheck disable=SC2086
		perf script -i "$rec" $m > "$tmp/p" 2> /dev/null
		# shellcheck disable=SC2086
		"$VMPT" script -i "$rec" $m > "$tmp/v" 2> /dev/null
		runs=$((runs + 1))
		if ! cmp -s "$tmp/p" "$tmp/v"; then
			echo "FAIL $name [$m]: $(diff "$tmp/p" "$tmp/v" | head -3)"
			fail=1
		elif [ ! -s "$tmp/p" ]; then
			echo "FAIL $name [$m]: perf printed nothing"
			fail=1
		fi
	done
}
# names REC: the symbol names vmpt prints for branches.
names() {
	"$VMPT" script -i "$1" --itrace=b -F ip,sym 2> /dev/null | sed 's/^ *[0-9a-f]* //' | sort -u
}
MODES=("--itrace=b -F ip,sym,symoff,dso" "" --call-ret-trace "--itrace=bl -F+brstacksym")

LIBC=/usr/lib/x86_64-linux-gnu/libc.so.6
id=$(readelf -n "$LIBC" | awk '/Build ID/ { print $3 }')
dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
[ -f "$dbg" ] || { echo "FAIL: no $dbg (libc6-dbg, tools/install-deps.sh)"; exit 1; }
readelf -S "$LIBC" | grep -q '\.symtab' && { echo "FAIL: $LIBC is not stripped"; exit 1; }
for f in qsort printf; do
	a=$(nm -D --defined-only "$LIBC" | awk -v f=$f '$3 == f { print $1 }')
	"$SYNTH" -q --elf "$LIBC" --start "$(printf 0x%x $((BASE + 0x$a)))" --seed 2 \
		--branches 3000 -o "$tmp/libc-$f" || exit 1
	same "libc from $f" "$tmp/libc-$f.perf.data" "${MODES[@]}"
done
# Local functions: in the debug file's .symtab, not in libc's .dynsym.
nm "$dbg" | awk '$2 == "t" { print $3 }' | sort -u > "$tmp/local"
local=$(for f in qsort printf; do names "$tmp/libc-$f.perf.data"; done |
	sort -u | comm -12 - "$tmp/local" | wc -l)
[ "$local" -ge 5 ] || { echo "FAIL: only $local of libc's local functions named"; fail=1; }

# A stripped program and its debug file by .gnu_debuglink.
mkdir -p "$tmp/bin/.debug" "$tmp/other"
${CXX:-c++} -O1 -g -o "$tmp/shapes.full" "$SRCDIR/symbols/tests/shapes.cpp" || exit 1
objcopy -N _init "$tmp/shapes.full" || exit 1	# see demangle.sh
objcopy --only-keep-debug "$tmp/shapes.full" "$tmp/shapes.debug"
# The synthesizer picks indirect targets among the functions it knows: it
# walks the whole binary, which is then stripped in place (same code, same
# build-id).
cp "$tmp/shapes.full" "$tmp/bin/shapes"
"$SYNTH" -q --elf "$tmp/bin/shapes" --seed 5 --branches 4000 -o "$tmp/s" || exit 1
objcopy --strip-all --add-gnu-debuglink="$tmp/shapes.debug" "$tmp/shapes.full" "$tmp/bin/shapes"
readelf -S "$tmp/bin/shapes" | grep -q '\.symtab' && { echo "FAIL: not stripped"; exit 1; }
for where in bin bin/.debug; do
	rm -f "$tmp/bin/shapes.debug" "$tmp/bin/.debug/shapes.debug"
	cp "$tmp/shapes.debug" "$tmp/$where/shapes.debug"
	same "debuglink in $where" "$tmp/s.perf.data" "${MODES[@]}"
	names "$tmp/s.perf.data" > "$tmp/n"
	for want in "area_of" "geo::Square::area" "main"; do
		grep -qxF "$want" "$tmp/n" ||
			{ echo "FAIL: debuglink in $where: '$want' not named"; fail=1; }
	done
done
# Another build's debug file under the linked name: not this binary's.
${CXX:-c++} -O2 -g -DOTHER -o "$tmp/other/shapes" "$SRCDIR/symbols/tests/shapes.cpp" || exit 1
objcopy --only-keep-debug "$tmp/other/shapes" "$tmp/bin/.debug/shapes.debug"
same "debuglink to another build" "$tmp/s.perf.data" "${MODES[@]}"
names "$tmp/s.perf.data" | grep -qxF area_of &&
	{ echo "FAIL: another build's debug file was used"; fail=1; }

[ $fail = 0 ] && echo "vmpt script = perf script in $runs runs on stripped binaries ($local libc local functions named)"
exit $fail
