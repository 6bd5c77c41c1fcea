#!/bin/sh
# vmpt script prints the samples of the recording's other events (cycles,
# cpu-clock, ...) as perf script does, among Intel PT's by time: recordings
# made here with perf record (a fixed period, a frequency, callchains
# (crafted ones too), -a,
# a group read at each sample, the pipe form, a shell's exec of another
# program at the same addresses, a fork that maps code of its own) print
# perf script's lines
# byte for byte with nothing on stderr, a tracepoint's and a JIT's (QEMU
# TCG's code in anonymous memory) among them; and the
# real 4.14 recording (intel_pt and cycles, binaries missing) prints perf's
# lines: the cycles samples, Intel PT's branch lines without the cpu
# column (perf checks the first hardware event, cycles, which samples no
# CPU), the errors perf reports of binaries it cannot read and the PSB
# samples after them.
set -eu
: "${VMPT:?}" "${SHARED:?}"
command -v perf >/dev/null || { echo "SKIP: perf (linux-perf) not installed"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# rec NAME [perf record options]: perl adding numbers, as NAME.data.
rec() {
	n=$1
	shift
	perf record -q "$@" -o "$T/$n.data" -- \
		perl -e 'my $x = 0; for (1..2000000) { $x += $_ } select(undef, undef, undef, 0.01)' \
		>"$T/$n.log" 2>&1	# (the sleep: a sched_switch however idle the machine)
}

# same NAME [options]: vmpt script's lines are perf script's, stderr empty.
same() {
	n=$1
	shift
	perf script -i "$T/$n.data" "$@" >"$T/$n.perf" 2>/dev/null
	"$VMPT" script -i "$T/$n.data" "$@" >"$T/$n.vmpt" 2>"$T/$n.err" ||
		{ cat "$T/$n.err"; fail "vmpt script $n $*: exit status"; }
	if [ $# -eq 0 ]; then
		[ "$(wc -l <"$T/$n.perf")" -gt 10 ] || fail "$n: perf script printed under 10 lines"
	else
		[ -s "$T/$n.perf" ] || fail "$n $*: perf script printed nothing"
	fi
	diff -u "$T/$n.perf" "$T/$n.vmpt" >&2 || fail "$n $*: not perf script's lines"
	[ ! -s "$T/$n.err" ] || { cat "$T/$n.err"; fail "$n $*: vmpt wrote to stderr"; }
	checked="$checked $n"
	[ $# -eq 0 ] || checked="$checked ($*)"
}

checked=
rec plain -e cpu-clock:u -c 500000 ||
	{ cat "$T/plain.log"; echo "SKIP: perf record of cpu-clock not permitted"; exit 77; }
same plain
same plain --ns -F comm,pid,tid,time,period,event,ip,sym,symoff,dso
same plain --dsos perl
# the symbol perf names most often
sym=$(perf script -i "$T/plain.data" -F ip,sym 2>/dev/null | awk 'NF > 1 { print $2 }' | sort | uniq -c |
	sort -rn | awk 'NR == 1 { print $2 }')
same plain --symbols "$sym"
# cpu-clock is a software event: "sw:" fields are its (a field it does
# not sample left out), "hw:" ones are not; a field asked for every type
# that it does not sample is perf's error.
same plain -F sw:ip,addr
same plain -F hw:ip
for f in +addr cpu,ip; do
	"$VMPT" script -i "$T/plain.data" -F "$f" >/dev/null 2>"$T/err" && fail "-F $f: exit status 0"
	field=${f#+}
	field=${field%,ip}
	want="vmpt script: Samples for 'cpu-clock:u' event do not have $(echo "$field" | tr a-z A-Z) attribute set. Cannot print '$field' field."
	[ "$(cat "$T/err")" = "$want" ] || { cat "$T/err"; fail "-F $f: not perf's error"; }
done
rec freq -e cpu-clock:u -F 2000 || { cat "$T/freq.log"; fail "perf record -F"; }
same freq
rec chain -e cpu-clock:u -c 500000 -g || { cat "$T/chain.log"; fail "perf record -g"; }
same chain
# Crafted callchains and cpumodes, as perf takes them: a context marker it
# does not know (corrupt, a guest's) drops the chain; after the hypervisor's
# or the kernel's marker a user address is in no map; so is a sample's ip
# recorded in kernel, hypervisor or unknown mode. -G: no callchains.
python3 - "$T/chain.data" "$T/chainx.data" <<'PY' || fail "chainx: not crafted"
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
off, size = struct.unpack_from('<QQ', d, 40)
user = struct.pack('<Q', 2**64 - 512)
marks = [2**64 - 2, 2**64 - 32, 2**64 - 128, 2**64 - 2176]
modes = [1, 3, 0]
pos = off
while pos < off + size and (marks or modes):
    t, misc, sz = struct.unpack_from('<IHH', d, pos)
    at = d.find(user, pos, pos + sz) if t == 9 else -1
    if at > 0 and struct.unpack_from('<Q', d, at - 8)[0] >= 4:
        if marks:
            struct.pack_into('<Q', d, at + 16, marks.pop(0))
        else:
            struct.pack_into('<H', d, pos + 4, misc & ~7 | modes.pop(0))
    pos += sz
assert not marks and not modes
open(sys.argv[2], 'wb').write(d)
PY
same chainx
awk 'p ~ /cpu-clock:u: $/ && $0 == "" { f = 1 } { p = $0 } END { exit !f }' "$T/chainx.perf" ||
	fail "chainx: perf printed every chain"
grep -q '^	 *[0-9a-f]* \[unknown\] (\[unknown\])$' "$T/chainx.perf" ||
	fail "chainx: perf printed no unmapped frame"
same chainx -G
# With data mappings (-d): a frame perl's stack walk takes from its heap
# is in "[heap]" (perf names code in such memory for its JIT map, data not).
rec heapchain -e cpu-clock:u -c 500000 -g -d || { cat "$T/heapchain.log"; fail "perf record -g -d"; }
same heapchain
same heapchain -F ip,sym,symoff,dso,srcline	# "[heap][addr]", "anon[addr]"...
rec wide -a -e cpu-clock:u -c 500000 || { cat "$T/wide.log"; fail "perf record -a"; }
same wide
# One process running two programs at the same addresses (a shell that
# execs perl, no address randomization): each sample is named from the
# program that ran at its time; the exec's own call is named from the
# shell's libc (perf keeps a thread's maps through an exec).
if setarch -R true 2>/dev/null; then
	perf record -q -e cpu-clock:u -c 200000 -g -o "$T/exec.data" -- setarch -R sh -c \
		'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exec perl -e "my \$x = 0; for (1..300000) { \$x += sqrt(\$_) }"' \
		>"$T/exec.log" 2>&1 || { cat "$T/exec.log"; fail "perf record of an exec"; }
	same exec
	same exec -G -F comm,ip,sym,dso
	grep -q '^ *sh .*(/usr/bin/dash)$' "$T/exec.vmpt" || fail "exec: no sample in dash"
	grep -q '^ *perl .*(/usr/bin/perl)$' "$T/exec.vmpt" || fail "exec: no sample in perl"
fi
# A fork that maps code of its own (an XS module) runs its parent's too.
perf record -q -e cpu-clock:u -c 200000 -o "$T/forkdl.data" -- perl -e 'if (my $p = fork) { waitpid($p, 0) } else { require List::Util; my $x = 0; for (1..2000000) { $x += List::Util::max($_, 3) } }' \
	>"$T/forkdl.log" 2>&1 || { cat "$T/forkdl.log"; fail "perf record of a fork"; }
same forkdl
child=$(perf script -i "$T/forkdl.data" --show-task-events 2>/dev/null | sed -n 's/.*PERF_RECORD_FORK(\([0-9]*\):.*/\1/p' | head -1)
[ -n "$child" ] || fail "forkdl: no fork recorded"
grep -q "^ *perl  *$child .*(/usr/bin/perl)\$" "$T/forkdl.vmpt" || fail "forkdl: the child's perl code not named"
# A group read at each sample: one sample per counter, its change.
rec group -e '{cpu-clock:u,task-clock:u}:S' -c 200000 -g ||
	{ cat "$T/group.log"; fail "perf record of a group"; }
same group
# perf's pipe form: no EVENT_DESC, the event named as perf names it.
perf record -q -e cpu-clock:u -c 500000 -o - -- \
	perl -e 'my $x = 0; for (1..2000000) { $x += $_ }' >"$T/pipe.data" 2>"$T/pipe.log" ||
	{ cat "$T/pipe.log"; fail "perf record -o -"; }
same pipe
# The vdso of a pipe recording (no build-ids): this machine's, as perf
# takes it; a loop of time() samples it often (~3% of ~1,400 samples).
perf record -q -e cpu-clock:u -c 100000 -o - -- \
	perl -e 'my $x = 0; for (1..3000000) { $x += time }' >"$T/vdso.data" 2>"$T/vdso.log" ||
	{ cat "$T/vdso.log"; fail "perf record -o - (vdso)"; }
same vdso
grep -q '__vdso_.* (\[vdso\])' "$T/vdso.perf" || fail "vdso: perf named no vdso symbol"

# Kernel code with no vmlinux or kcore: perf names it from this machine's
# kallsyms when the recording's kernel is the running one (the file form:
# its build-id; the pipe form: none recorded), else from the build-id
# cache's copy for the recorded id, else not at all; under --symfs never.
kern() {	# NAME [perf record options]: dd in the kernel, with callchains
	n=$1
	shift
	perf record -q -e cpu-clock -c 200000 -g "$@" -- \
		dd if=/dev/zero of=/dev/null bs=64k count=20000 2>"$T/$n.log"
}
named='[a-z_][a-z0-9_.]*+0x[0-9a-f]* (\[kernel.kallsyms\])'
if kern kernel -o "$T/kernel.data" >/dev/null && kern kpipe -o - >"$T/kpipe.data" &&
	awk '$1 != "0000000000000000" { f = 1 } END { exit !f }' /proc/kallsyms; then
	export HOME="$T/home"	# perf record fills its build-id cache there
	same kernel
	same kernel -F ip,sym,symoff,dso
	grep -q "$named" "$T/kernel.perf" || fail "kernel: perf named no kernel symbol"
	same kpipe
	# System-wide: the idle tasks' frames in the kernel's init text
	# (start_kernel), past the kernel's recorded mapping, which perf
	# extends to the next one.
	kern kwide -a -o "$T/kwide.data" >/dev/null || fail "perf record -a -g"
	same kwide
	# (not -F srcline: perf 6.1 dies of SIGPIPE when addr2line cannot
	# open a binary, a deleted memfd's of another process here)
	grep -q "$named" "$T/kpipe.perf" || fail "kpipe: perf named no kernel symbol"
	same kernel --symfs / -F ip,sym,dso	# "/": no symfs, as perf takes it
	# (other binaries under an empty symfs: perf's and vmpt's differ)
	mkdir "$T/empty"
	for p in perf "$VMPT"; do
		"$p" script -i "$T/kernel.data" --symfs "$T/empty" -F ip,sym,dso 2>/dev/null |
			grep 'kernel\.kallsyms' >"$T/ksymfs.$(basename "$p")" || true
	done
	[ -s "$T/ksymfs.perf" ] || fail "kernel --symfs: perf printed no kernel line"
	diff -u "$T/ksymfs.perf" "$T/ksymfs.vmpt" >&2 || fail "kernel --symfs: not perf's kernel lines"
	! grep -q "$named" "$T/ksymfs.perf" || fail "kernel --symfs: perf named the kernel"
	# Another kernel's build-id (one byte changed): unnamed, then named
	# by a kallsyms in the build-id cache for that id.
	id=$(perf buildid-list -i "$T/kernel.data" 2>/dev/null |
		awk '$2 == "[kernel.kallsyms]" { print $1 }')
	other=$(printf '%s' "$id" | sed 's/^./0/; t; s/^/0/')
	[ "$other" != "$id" ] || other=1${id#?}
	python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); a, b = (bytes.fromhex(x) for x in sys.argv[3:5]); assert d.count(a) == 1; open(sys.argv[2], "wb").write(d.replace(a, b))' \
		"$T/kernel.data" "$T/kother.data" "$id" "$other" || fail "kother: build-id not changed"
	same kother
	! grep -q "$named" "$T/kother.perf" || fail "kother: perf named another kernel"
	mkdir -p "$HOME/.debug/[kernel.kallsyms]/$other"
	cp /proc/kallsyms "$HOME/.debug/[kernel.kallsyms]/$other/kallsyms"
	same kother
	grep -q "$named" "$T/kother.perf" || fail "kother: perf named nothing from the cache"
	# a FIFO there is no kallsyms: unnamed, and no hang
	rm "$HOME/.debug/[kernel.kallsyms]/$other/kallsyms"
	mkfifo "$HOME/.debug/[kernel.kallsyms]/$other/kallsyms"
	timeout 60 "$VMPT" script -i "$T/kother.data" >"$T/kfifo.vmpt" 2>&1 ||
		fail "kother with a FIFO in the cache: exit status $?"
	grep -q '\[unknown\] (\[kernel.kallsyms\])' "$T/kfifo.vmpt" ||
		fail "kother with a FIFO in the cache: no unnamed kernel line"
	! grep -q "$named" "$T/kfifo.vmpt" || fail "kother with a FIFO in the cache: named"
	checked="$checked kallsyms(file,pipe,symfs,cache)"
fi

# A tracepoint's samples beside cpu-clock's (cli/tests/script-tracepoints.sh
# has the many kinds of payload).
if rec tp -e sched:sched_switch -e cpu-clock:u -c 500000; then
	n=$(perf script -i "$T/tp.data" 2>/dev/null | grep -c 'sched:sched_switch:' || true)
	[ "$n" -gt 0 ] || fail "no sched_switch samples recorded"
	same tp
	checked="$checked tracepoint($n)"
fi

# Code in anonymous memory (QEMU's TCG translations, a JIT's): perf names
# it for the JIT map it reads symbols from, /tmp/perf-PID.map.
if command -v qemu-system-x86_64 >/dev/null; then
	perf record -q -e cpu-clock:u -c 100000 -o "$T/jit.data" -- timeout 1 \
		qemu-system-x86_64 -machine pc,accel=tcg -m 64 -nodefaults -display none \
		-no-reboot >"$T/jit.log" 2>&1 || true
	jn=$(perf script -i "$T/jit.data" 2>/dev/null | grep -c ' \[unknown\] (/tmp/perf-[0-9]*\.map)$' || true)
	[ "$jn" -gt 0 ] || fail "jit: no sample in QEMU's translations in perf's lines"
	same jit
	checked="$checked ($jn in the JIT map)"
fi

# The real 4.14 recording (its binaries are missing): every line is perf's,
# the errors and the PSB samples after them too, with vmpt's offsets left
# out of the error lines.
R=$SHARED/realtraces/perf-data/perf.data.intel_pt-4.14
if [ -f "$R" ]; then
	perf script -i "$R" 2>/dev/null >"$T/r.perf"
	"$VMPT" script -i "$R" 2>/dev/null | sed 's/ offset 0x[0-9a-f]* code / code /' >"$T/r.vmpt" ||
		true
	[ "$(grep -c ' cycles: ' "$T/r.perf")" -eq 15 ] || fail "4.14: not 15 cycles samples in perf's lines"
	[ "$(grep -c 'instruction trace error' "$T/r.perf")" -eq 114 ] || fail "4.14: not 114 errors in perf's lines"
	grep -q ' branches: ' "$T/r.perf" || fail "4.14: no branch lines in perf's"
	diff -u "$T/r.perf" "$T/r.vmpt" >&2 || fail "4.14: not perf's lines"
	# The errors alone and with branches: perf reports a missing
	# binary's failures once or twice (its dso data status, ERROR after
	# a failed read, after the vdso's mapping asked the program and its
	# interpreter for their ELF class, or after a kernel symbol load).
	for it in e be; do
		perf script -i "$R" --itrace=$it 2>/dev/null >"$T/r.perf"
		"$VMPT" script -i "$R" --itrace=$it 2>/dev/null |
			sed 's/ offset 0x[0-9a-f]* code / code /' >"$T/r.vmpt" || true
		[ "$(grep -c 'instruction trace error' "$T/r.perf")" -eq 114 ] ||
			fail "4.14 --itrace=$it: not 114 errors in perf's lines"
		[ "$(grep -c 'ip 0x7fb36d08.* Failed to get instruction' "$T/r.perf")" -eq 1 ] ||
			fail "4.14 --itrace=$it: not one failure in ld-2.23.so in perf's lines"
		diff -u "$T/r.perf" "$T/r.vmpt" >&2 || fail "4.14 --itrace=$it: not perf's lines"
	done
	checked="$checked 4.14(default,e,be)"
fi
echo "ok: perf script's lines:$checked"
