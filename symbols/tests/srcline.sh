#!/bin/bash
# -F srcline as perf 6.1 prints it (perf asks binutils' addr2line, vmpt
# reads the DWARF with libdw): file:line of each sample's address on a
# line of its own, in sample lines, branch lines (after the target) and
# callchain frames; "dso[addr]" where no line is known, "crtstuff.c:0"
# where only the symbol table knows the file; the lines of a stripped
# binary from its debug file; Debian's libc.so.6 with libc6-dbg's
# (DWARF 5, compressed sections, .c files including .c files).
# vmpt script = perf script on the same recordings.  --inline adds the
# frames of inlined functions to callchains (perf 6.1 has none in Intel
# PT's): their names and order are binutils' addr2line -f -i's.
# usage: srcline.sh VMPT_SYNTH
set -u
SYNTH=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v perf > /dev/null || { echo "perf not found"; exit 77; }
export HOME=$tmp/home
mkdir -p "$HOME"
fail=0
runs=0
lines=0
BASE=0x555555554000

same() {
	local name=$1 rec=$2 m
	shift 2
	for m in "$@"; do
		# shellcheck disable=SC2086
		perf script -i "$rec" $m > "$tmp/p" 2> /dev/null
		# shellcheck disable=SC2086
		"$VMPT" script -i "$rec" $m > "$tmp/v" 2> /dev/null
		runs=$((runs + 1))
		lines=$((lines + $(grep -c '^  [^ ]' "$tmp/p")))
		if ! cmp -s "$tmp/p" "$tmp/v"; then
			echo "FAIL $name [$m]: $(diff "$tmp/p" "$tmp/v" | head -3)"
			fail=1
		elif ! grep -q '^  [^ ]' "$tmp/p"; then
			echo "FAIL $name [$m]: perf printed no source line"
			fail=1
		fi
	done
}
MODES=("--itrace=b -F ip,sym,srcline" "--itrace=b -F+srcline" "-F+srcline"
       "--itrace=b -F+srcline,+addr" "--itrace=b -F ip,sym,srcline --inline"
       "--itrace=b -F ip,sym,srcline --no-inline")
# perf runs addr2line for every instruction: shorter traces there.
IMODES=("--itrace=i0ns -F ip,sym,dso,srcline" "--itrace=i0nsg -F ip,sym,srcline")

for opt in -O0 -O2; do
	${CXX:-c++} $opt -g -o "$tmp/shapes$opt" "$SRCDIR/symbols/tests/shapes.cpp" || exit 1
	objcopy -N _init "$tmp/shapes$opt" || exit 1	# see demangle.sh
	"$SYNTH" -q --elf "$tmp/shapes$opt" --seed 5 --branches 3000 -o "$tmp/s$opt" || exit 1
	same "shapes $opt" "$tmp/s$opt.perf.data" "${MODES[@]}"
	"$SYNTH" -q --elf "$tmp/shapes$opt" --seed 7 --branches 300 -o "$tmp/i$opt" || exit 1
	same "shapes $opt" "$tmp/i$opt.perf.data" "${IMODES[0]}"
	# (perf takes a minute on -O0's callchains)
	[ $opt = -O2 ] && same "shapes $opt" "$tmp/i$opt.perf.data" "${IMODES[1]}"
done
# The code of crtstuff.c has no DWARF: its file from .symtab, line 0.
perf script -i "$tmp/s-O2.perf.data" --itrace=b -F ip,sym,srcline 2> /dev/null |
	grep -q '^  crtstuff\.c:0$' || { echo "FAIL: no crtstuff.c:0 line"; fail=1; }

# Stripped, the DWARF in its debug file.
mkdir -p "$tmp/bin/.debug"
cp "$tmp/shapes-O2" "$tmp/bin/shapes"
objcopy --only-keep-debug "$tmp/shapes-O2" "$tmp/bin/.debug/shapes.debug"
"$SYNTH" -q --elf "$tmp/bin/shapes" --seed 6 --branches 3000 -o "$tmp/d" || exit 1
objcopy --strip-all --add-gnu-debuglink="$tmp/bin/.debug/shapes.debug" "$tmp/shapes-O2" \
	"$tmp/bin/shapes"
same "stripped" "$tmp/d.perf.data" "--itrace=b -F ip,sym,srcline" "-F+srcline"

# libc, its lines from libc6-dbg's file.
LIBC=/usr/lib/x86_64-linux-gnu/libc.so.6
for f in qsort getgrgid_r; do
	a=$(nm -D --defined-only "$LIBC" | awk -v f=$f '$3 == f { print $1; exit }')
	"$SYNTH" -q --elf "$LIBC" --start "$(printf 0x%x $((BASE + 0x$a)))" --seed 2 \
		--branches 3000 -o "$tmp/libc-$f" || exit 1
	same "libc from $f" "$tmp/libc-$f.perf.data" "--itrace=b -F ip,sym,srcline"
done

# --inline: at each callchain ip with inlined frames, the frames are
# addr2line -f -i's records (demangled by c++filt -p as perf demangles C++),
# a record of the ip's symbol's own name printed as the symbol; a function
# recursing at one ip repeats them.
"$VMPT" script -i "$tmp/i-O2.perf.data" --itrace=i0nsg -F ip,sym --inline 2> /dev/null |
	awk '/^\t/ { ip = $1; sub(/^\t *[0-9a-f]+ /, ""); sub(/ \(inlined\)$/, "");
		     sub(/ \(.*\)$/, ""); sub(/\+0x[0-9a-f]+$/, "");
		     if (g != "" && ip != gip) { print gip g; g = "" }
		     gip = ip; g = g "|" $0; next }
		     g != "" { print gip g; g = "" }' | sort -u | sed '/^$/d' > "$tmp/vi"
ninl=0
while IFS='|' read -r ip names; do
	case $names in *'|'*) ;; *) continue ;; esac
	addr2line -e "$tmp/shapes-O2" -f -i "0x$ip" | awk 'NR % 2' | c++filt -p > "$tmp/a2l"
	# (c++filt keeps the hash of Rust names that perf's demangling drops)
	grep -qE '::h[0-9a-f]{16}$|\[[0-9a-f]{16}\]' "$tmp/a2l" && continue
	a2l=$(paste -sd'|' "$tmp/a2l")
	rep=$a2l
	while [ "$rep" != "$names" ] && [ ${#rep} -lt ${#names} ]; do
		rep="$rep|$a2l"
	done
	[ "$names" = "$rep" ] ||
		{ echo "FAIL --inline at $ip: $names, addr2line: $a2l"; fail=1; }
	ninl=$((ninl + 1))
done < "$tmp/vi"
[ $ninl -ge 10 ] || { echo "FAIL --inline: only $ninl addresses with inlined frames"; fail=1; }

# perf's words without ip.
"$VMPT" script -i "$tmp/s-O2.perf.data" -F sym,srcline > /dev/null 2> "$tmp/err"
grep -q 'Display of source line number requested but sample IP is not' "$tmp/err" ||
	{ echo "FAIL: -F sym,srcline: $(cat "$tmp/err")"; fail=1; }

[ $fail = 0 ] && echo "vmpt script = perf script in $runs runs ($lines source lines); --inline = addr2line at $ninl addresses"
exit $fail
