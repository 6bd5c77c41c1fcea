#!/bin/bash
# TEXT_POKE: kernel code changed while recording (a static key's NOP made
# a CALL).  The kernel file given holds the old bytes (a NOP5 where the
# trace's interrupt entry calls timer_interrupt); the recording's
# TEXT_POKE record says they became the CALL when tracing started.  vmpt
# and perf must both decode the truth with it and both go wrong without
# it.  A TEXT_POKE cut short is an error naming file and offset.
. "$(dirname "$0")/synth-lib.sh"
: "${GUEST_KERNEL:?}" "${PD_TEXTPOKE:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

ADDR=0xffffffff81000022		# asm_common_interrupt: call timer_interrupt
OLD=0f1f440000
NEW=$(objdump -d --start-address=$ADDR --stop-address=$((ADDR + 5)) "$GUEST_KERNEL" |
	awk -F'\t' '/^ffffffff81000022:/ { gsub(/ /, "", $2); print $2 }')
[ "$NEW" = e819010000 ] || fail "the kernel model's call at $ADDR is '$NEW'"
cp "$GUEST_KERNEL" old.vmlinux
# its file offset: the text segment is at file offset 0x1000
printf '\x0f\x1f\x44\x00\x00' | dd of=old.vmlinux bs=1 seek=$((0x1022)) conv=notrunc status=none

"$SYNTH" --elf /usr/bin/busybox --host-kernel "$GUEST_KERNEL" --seed 1 \
	--branches 4000 --irq-period 700 -o uk -q || fail "vmpt-synth"
truth_insns uk.insn > want.i
grep -q '^ffffffff81000140$' want.i || fail "the trace never calls timer_interrupt"
[ "$("$PD_TEXTPOKE" uk.perf.data poked.perf.data $ADDR $OLD "$NEW")" = 0x198 ] ||
	fail "pd-textpoke"

# (stderr's summary apart: where it falls among the lines depends on their
# bytes, and the offsets in error lines move with the records)
vmpt_insns() {
	"$VMPT" script -i "$1" --itrace=i0nse -F ip --vmlinux old.vmlinux 2>/dev/null |
		awk '{print $1}'
}
perf_insns poked.perf.data --vmlinux old.vmlinux > perf.i
compare "perf with the poke" want.i perf.i
vmpt_insns poked.perf.data > vmpt.i
compare "vmpt with the poke" want.i vmpt.i
"$VMPT" script -j 2 -i poked.perf.data --itrace=i0nse -F ip --vmlinux old.vmlinux 2>&1 |
	awk '{print $1}' > vmpt-j2.i
compare "vmpt -j 2 with the poke" want.i vmpt-j2.i

# Without the record both decode the NOP and lose the trace.
perf_insns uk.perf.data --vmlinux old.vmlinux > perf0.i
cmp -s want.i perf0.i && fail "perf decoded the old code right"
vmpt_insns uk.perf.data > vmpt0.i
cmp -s want.i vmpt0.i && fail "vmpt decoded the old code right"
# ... the same way: wrong code walked past errors, deferred TIPs taken,
# the call stack kept and popped as perf's.
perf script -i uk.perf.data --itrace=i0nse -F ip --vmlinux old.vmlinux 2>/dev/null |
	awk '{ print $1 == "instruction" ? $0 : $1 }' | sed 's/ time [0-9.]*//' > perf0.e
"$VMPT" script -i uk.perf.data --itrace=i0nse -F ip --vmlinux old.vmlinux 2>/dev/null |
	awk '{ print $1 == "instruction" ? $0 : $1 }' | sed 's/ time [0-9.]*//; s/ offset 0x[0-9a-f]*//' > vmpt0.e
compare "vmpt's instructions and errors without the poke against perf's" perf0.e vmpt0.e
err=$("$VMPT" script -i uk.perf.data --itrace=i0nse -F ip --vmlinux old.vmlinux 2>&1 |
	grep -m1 'trace error')
# The walk past the NOP meets an indirect branch with TNT bits pending and
# takes the next TIP as a deferred one, as perf does: their first errors
# are the same.
[ "$err" = " instruction trace error type 1 time 56.371445900 cpu -1 pid 4242 tid 4242 ip 0x495d17 offset 0x4c0 code 6: Trace doesn't match instruction" ] ||
	fail "vmpt's first error without the poke: $err"
perr=$(perf script -i uk.perf.data --itrace=i0nse -F ip --vmlinux old.vmlinux 2>&1 |
	grep -m1 'trace error')
[ "$perr" = "${err/ offset 0x4c0/}" ] || fail "perf's first error without the poke: $perr"

# A guest's poke (guest kernel cpumode, as perf inject merges it): perf
# 6.1 ignores it ("unsupported cpumode"), so does vmpt.
cp poked.perf.data gk.perf.data
printf '\x05' | dd of=gk.perf.data bs=1 seek=$((0x198 + 4)) conv=notrunc status=none
perf_insns gk.perf.data --vmlinux old.vmlinux | cmp -s want.i - && fail "perf applied a guest's poke"
vmpt_insns gk.perf.data | cmp -s vmpt0.i - || fail "vmpt applied a guest's poke"

# A poke while tracing (at the last AUX record's time) is not applied:
# said once, with -j 2 too.
"$PD_TEXTPOKE" uk.perf.data late.perf.data $ADDR $OLD "$NEW" late > /dev/null
for j in 1 2; do
	warn=$("$VMPT" script -j $j -i late.perf.data --vmlinux old.vmlinux 2>&1 >/dev/null |
		grep TEXT_POKE)
	[ "$warn" = "vmpt: warning: 1 TEXT_POKE record during the trace not applied (the first at 0xffffffff81000022, time 56.371456439): the kernel code is decoded as it was when tracing started" ] ||
		fail "late TEXT_POKE -j $j: $warn"
done

# old_len claiming 64 bytes more than the record holds.
"$PD_TEXTPOKE" uk.perf.data cut.perf.data $ADDR $OLD "$NEW" cut > /dev/null
out=$("$VMPT" script -i cut.perf.data --vmlinux old.vmlinux 2>&1 >/dev/null) &&
	fail "a cut TEXT_POKE was read"
[ "$out" = "vmpt script: cut.perf.data: offset 0x198: TEXT_POKE record size 72 too small for its 69 old and 5 new bytes" ] ||
	fail "cut TEXT_POKE: $out"
echo "TEXT_POKE applied as perf does: $(wc -l < want.i) instructions equal the truth"
