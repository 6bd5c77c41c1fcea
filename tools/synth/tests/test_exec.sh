#!/bin/bash
# An exec at the same addresses (vmpt-synth --exec): the traced program
# makes an execve system call, and the program it execs runs where it ran
# (PIEs at 0x555555554000).  perf's instruction and branch traces equal
# the truth; vmpt script prints what perf script prints, byte for byte
# (instructions, symbols, the default output, the sideband among them);
# each side of the exec is decoded and named from its own program, with
# the new comm from the exec on.  A decoder that let the last mapping of
# a pid win for the whole recording decodes the first program with the
# second's bytes wherever their code overlaps.
. "$(dirname "$0")/synth-lib.sh"
: "${VMPT:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

PID=4242	# vmpt-synth's default --pid
BASE=0x555555554000

# same_as_perf WHAT ARGS...: vmpt script and perf script with ARGS print
# the same (stderr too: an error or warning is a difference); perf's
# output stays in perf.out.
same_as_perf() {
	local what=$1
	shift
	perf script -i t.perf.data "$@" > perf.out 2>&1
	"$VMPT" script -i t.perf.data "$@" > vmpt.out 2>&1
	[ -s perf.out ] || fail "$what: perf script $* printed nothing"
	if ! cmp -s perf.out vmpt.out; then
		echo "FAIL: $what: vmpt script $* differs from perf script (perf < > vmpt):"
		diff perf.out vmpt.out | head -10
		exit 1
	fi
}

# FROM TO SEED [OPTIONS]: the first program, the one it execs (their code
# overlaps at the base), and how they are traced.  ls and dash have their
# code at the same offsets, tar's begins below bash's and reaches into it;
# dynamically linked ones exec from libc's execve, static-pie ldconfig
# from a SYSCALL of its own.
runs=(
	"/usr/bin/ls /usr/bin/dash 1"
	"/usr/bin/ls /usr/bin/dash 2 --cyc --noretcomp"
	"/usr/bin/bash /usr/bin/tar 3"
	"/usr/bin/bash /usr/bin/tar 4 --tnt64 --irq-period 700"
	"/usr/bin/dash /usr/bin/ls 5 --cyc --cyc-thresh 2 --mtc-freq 0"
	"/usr/bin/dash /usr/bin/ls 6 --mtc-freq 9 --psb-period 2048"
	"/usr/sbin/ldconfig /usr/bin/bash 7"
	"/usr/sbin/ldconfig /usr/bin/bash 8 --noretcomp --irq-period 500"
)
total_insns=0
total_branches=0
n=0
for run in "${runs[@]}"; do
	# shellcheck disable=SC2086
	set -- $run
	from=$1 to=$2 seed=$3
	shift 3
	[ -x "$from" ] && [ -x "$to" ] || continue
	what="$from -> $to seed $seed${*:+ $*}"
	"$SYNTH" --elf "$from" --exec "$to" --seed "$seed" --branches 4000 "$@" -o t -q ||
		fail "vmpt-synth $what"
	grep -qx "exec $to $BASE" t.images || fail "$what: $to not at $BASE: $(cat t.images)"

	truth_insns t.insn > want.i
	perf_insns t.perf.data > got.i
	compare "instructions ($what)" want.i got.i
	truth_branches t.branches > want.b
	perf_branches t.perf.data > got.b
	compare "branches ($what)" want.b got.b

	same_as_perf "$what" --itrace=i0nse -F ip
	same_as_perf "$what" --itrace=be -F comm,tid,flags,ip,sym,dso,addr
	same_as_perf "$what"
	same_as_perf "$what" --show-task-events --show-mmap-events --itrace=i0nse \
		-F comm,tid,time,ip,sym,dso
	cp perf.out task.out
	same_as_perf "$what" --itrace=i0nse -F comm,tid,ip,sym,dso

	# The truth's exec: the instructions before its marker are the first
	# program's (and libc's), the rest the second's, from its entry point;
	# the exec's system call is the trace end before that entry.
	n_from=$(awk '/^# exec / { exit } !/^#/ { n++ } END { print n + 0 }' t.insn)
	n_to=$(awk '/^# exec / { on = 1; next } on && !/^#/ { n++ } END { print n + 0 }' t.insn)
	[ "$n_from" -gt 1000 ] && [ "$n_to" -gt 1000 ] ||
		fail "$what: $n_from instructions before the exec, $n_to after"
	entry=$(printf '%x' $((BASE + $(readelf -h "$to" | awk '/Entry point/ { print $4 }'))))
	sys=$(awk -v e="$entry" '$1 == "0" && $2 == e { print prev; exit }
		{ prev = $0 }' t.branches)
	case $sys in
	*" 0 "*" tr end  syscall") sys=${sys%% *} ;;
	*) fail "$what: no system call before the trace starts at $entry: '$sys'" ;;
	esac
	libc=$(awk '$1 == "libc" { print $2 }' t.images)
	comm=$(basename "$to" | cut -c1-15)

	# perf.out (== vmpt's): the first n_from lines are comm synth in the
	# first program or libc, the next n_to the new comm in the second;
	# the last before the exec is its system call, the first after it
	# the entry point.
	awk -v a="($from)" -v l="($libc)" -v b="($to)" -v c="$comm" -v p="$PID" \
	    -v na="$n_from" -v nb="$n_to" -v sys="$sys" -v entry="$entry" '
		function bad(m) { print "line " NR ": " m ": " $0; err = 1; exit 1 }
		$2 != p { bad("not pid " p) }
		NR <= na && ($1 != "synth" || ($NF != a && $NF != l)) { bad("not synth in " a " or " l) }
		NR == na && $3 != sys { bad("not the system call " sys) }
		NR == na + 1 && ($1 != c || $3 != entry || $NF != b) { bad("not " c " at " entry " in " b) }
		NR > na && ($1 != c || $NF != b) { bad("not " c " in " b) }
		END { if (!err && NR != na + nb) { print NR " lines, not " na + nb; exit 1 } }
	' perf.out || fail "$what: instructions named wrong around the exec"

	# The sideband, as both print it: the COMM exec right after the
	# system call, then the second program's MMAP2, then its entry.
	awk -v c="PERF_RECORD_COMM exec: $comm:$PID/$PID" -v b="$to" -v sys="$sys" \
	    -v entry="$entry" '
		index($0, c) { at = NR; if (last != sys) { print "before the COMM: " last; exit 1 } next }
		at && !done && /PERF_RECORD_MMAP2/ { if (index($0, " " b)) maps++; next }
		at && !done { done = 1; if ($4 != entry || !maps) { print "after the COMM: " maps " MMAP2 of " b ", then " $0; exit 1 } }
		!/PERF_RECORD/ { last = $4 }
		END { if (!done) { print "no " c; exit 1 } }
	' task.out || fail "$what: the exec's sideband"

	total_insns=$((total_insns + n_from + n_to))
	total_branches=$((total_branches + $(wc -l < want.b)))
	n=$((n + 1))
	echo "$what: $n_from + $n_to instructions, exec at $sys -> $entry"
done
[ "$n" -gt 0 ] || fail "no programs to exec"
echo "perf and vmpt agreed on $n execs: $total_insns instructions, $total_branches branches"
