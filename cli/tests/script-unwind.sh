#!/bin/sh
# vmpt script unwinds the user stacks of `perf record --call-graph dwarf`
# as perf script 6.1 does: a C program recursing 20 deep, then 400 deep
# (past the 8 KB of stack perf copies), recorded here; every sample taken
# in the recursion prints perf's lines byte for byte: the caller frames at
# their return address less one, main, libc's frames (libc6-dbg's names,
# __libc_start_main_impl as perf's inlined symbol), _start; with
# -F +srcline (addr2line's records: "??:0" for _start, whose code has no
# line), --no-inline, -G.  Samples perf takes in the dynamic loader at
# start-up are left out: there perf's libunwind and vmpt's libdwfl read
# some stacks differently (docs/script.md).
set -eu
: "${VMPT:?}"
command -v perf >/dev/null || { echo "SKIP: perf (linux-perf) not installed"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$T/deep.c" <<'EOF'
#include <stdlib.h>
volatile unsigned long sink;
__attribute__((noinline)) unsigned long rec(int d)
{
	if (d == 0) {
		unsigned long s = 0;
		for (long i = 0; i < 100000000; i++)
			s += i * sink;
		return s;
	}
	unsigned long r = rec(d - 1);
	sink += r;
	return r + 1;
}
int main(int argc, char **argv) { sink += rec(argc > 1 ? atoi(argv[1]) : 0); return 0; }
EOF
${CC:-cc} -O1 -g -o "$T/deep" "$T/deep.c" || fail "cc"

# in_rec FILE: the samples whose stack goes through rec().
in_rec() { awk -v RS= -v ORS='\n\n' '/[0-9a-f] rec(\+0x[0-9a-f]+)?( |\n|$)/' "$1"; }

checked=0
for depth in 20 400; do
	perf record -q -e cpu-clock:u -c 2000000 --call-graph dwarf -o "$T/d$depth.data" \
		"$T/deep" $depth >"$T/rec.log" 2>&1 ||
		{ cat "$T/rec.log"; echo "SKIP: perf record --call-graph dwarf not permitted"; exit 77; }
	for opts in "" "-F ip,sym,symoff,dso,srcline" "--no-inline -F ip,sym,srcline" "-G"; do
		# shellcheck disable=SC2086
		perf script -i "$T/d$depth.data" $opts >"$T/p" 2>/dev/null
		# shellcheck disable=SC2086
		"$VMPT" script -i "$T/d$depth.data" $opts >"$T/v" 2>"$T/err" ||
			{ cat "$T/err"; fail "vmpt script $opts: exit status"; }
		[ ! -s "$T/err" ] || { cat "$T/err"; fail "depth $depth $opts: vmpt wrote to stderr"; }
		if [ "$opts" = -G ]; then
			cp "$T/p" "$T/pr"
			cp "$T/v" "$T/vr"
		else
			in_rec "$T/p" >"$T/pr"
			in_rec "$T/v" >"$T/vr"
			[ "$(awk -v RS= 'END { print NR }' "$T/pr")" -ge 10 ] ||
				fail "depth $depth $opts: perf unwound under 10 samples in rec()"
		fi
		diff -u "$T/pr" "$T/vr" >&2 || fail "depth $depth $opts: not perf script's lines"
		checked=$((checked + $(awk -v RS= 'END { print NR }' "$T/pr")))
	done
done
perf script -i "$T/d20.data" 2>/dev/null | grep -q '	 *[0-9a-f]* _start+0x[0-9a-f]* (' ||
	fail "perf unwound no stack to _start"
perf script -i "$T/d20.data" -F ip,sym,srcline 2>/dev/null | grep -q '^  ??:0$' ||
	fail "perf printed no ??:0 record"
echo "ok: $checked samples (2 recordings x 4 forms) unwound as perf script unwinds them"
