#!/bin/bash
# C++ and Rust names in vmpt script's sym fields as perf 6.1 prints them
# (libiberty's demangler, no parameter lists), --no-demangle and
# --demangle as perf's: a C++ program built here (g++ -O1, PIE), traced
# by vmpt-synth, printed by both in every mode that shows symbols.
# usage: demangle.sh VMPT_SYNTH
set -u
SYNTH=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v perf > /dev/null || { echo "perf not found"; exit 77; }
export HOME=$tmp/home
mkdir -p "$HOME"
fail=0
runs=0

${CXX:-c++} -O1 -o "$tmp/shapes" "$SRCDIR/symbols/tests/shapes.cpp" || exit 1
# _init has size 0: perf ends it at the next .symtab symbol, over the PLT,
# and which of _init and the first PLT entry perf's symbol tree answers
# depends on the tree's shape.  Without _init the PLT is named alone.
objcopy -N _init "$tmp/shapes" || exit 1
"$SYNTH" -q --elf "$tmp/shapes" --seed 5 --branches 4000 -o "$tmp/t" || exit 1

for m in "--itrace=b -F ip,sym,dso" "" --itrace=i0ns --call-trace --call-ret-trace \
	 "--itrace=bl -F+brstacksym" "--itrace=b -F ip,sym,symoff" \
	 "--no-demangle --itrace=b" "--no-demangle --itrace=bl -F+brstacksym" \
	 "--demangle --itrace=b" "--itrace=b -S main,geo::Square::area" "--itrace=cr -S geo::Square::area"; do
	# shellcheck disable=SC2086
	perf script -i "$tmp/t.perf.data" $m > "$tmp/p" 2> /dev/null
	# shellcheck disable=SC2086
	"$VMPT" script -i "$tmp/t.perf.data" $m > "$tmp/v" 2> "$tmp/err"
	runs=$((runs + 1))
	if ! cmp -s "$tmp/p" "$tmp/v"; then
		echo "FAIL [$m]: $(diff "$tmp/p" "$tmp/v" | head -3)"
		fail=1
	elif [ ! -s "$tmp/p" ]; then
		echo "FAIL [$m]: perf printed nothing"
		fail=1
	fi
done

# The names themselves: perf's forms, and both drop the parameters.
"$VMPT" script -i "$tmp/t.perf.data" --itrace=b -F ip,sym 2> /dev/null |
	sed 's/^ *[0-9a-f]* //' | sort -u > "$tmp/names"
for want in "main" "geo::Square::area" \
	    "std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>" \
	    "<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop" "<mycrate::Point>::new" \
	    "operator new@plt"; do
	grep -qxF "$want" "$tmp/names" ||
		{ echo "FAIL: no '$want' among the names"; sed 's/^/  /' "$tmp/names"; fail=1; }
done
"$VMPT" script -i "$tmp/t.perf.data" --no-demangle --itrace=b -F ip,sym 2> /dev/null |
	grep -q '_ZNK3geo6Square4areaEv' || { echo "FAIL: --no-demangle kept no mangled name"; fail=1; }
[ $fail = 0 ] && echo "vmpt script = perf script in $runs modes on a C++ program"
exit $fail
