#!/bin/bash
# TSC offsets beyond 2^55 and negative ones near 0, where the 7-byte TSC
# packet wraps: 0x00ffffff00000000, 0x0100000000000123 (2^56 + 0x123),
# -5, and one that makes a guest TSC cross 2^56 in the middle of the trace.
# - perf script shows exactly the truth's instructions and branches;
# - every guest PSB+'s TSC payload is (host TSC + offset) mod 2^56 (the host
#   TSC read from the same PSB+ of the trace synthesized with offset 0) and
#   every host one the host TSC; the crossing vCPU has payloads on both
#   sides of the wrap;
# - perf inject --vm-time-correlation=dry-run finds every VMCS's offset, as
#   the trace determines it: modulo 2^56;
# - perf inject with the truth's offsets, and with the ones perf found,
#   turns the trace into the offset-0 one byte for byte.
. "$(dirname "$0")/synth-lib.sh"
: "${VMX_KERNEL:?}" "${GUEST_KERNEL:?}" "${VMPT:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

TSC0=0x2a00000000
CROSS=$(printf '0x%x' $(( (1 << 56) - TSC0 - 0x80000 )))	# wraps 512K ticks in

synth() {
	"$SYNTH" --vm --host-kernel "$VMX_KERNEL" --guest-elf "$GUEST_KERNEL" \
		--guest-start start_kernel --branches 30000 --guest-period 500 \
		--psb-period 512 --vcpus 4 --tsc0 "$TSC0" "$@" -q
}

# VMCS TSC NR per PSB+ of a raw trace (NR "nr" in a guest, "-" in the host).
psb_tscs() {
	"$VMPT" dump "$1" | awk '$2 == "psb" { p = 1; t = v = ""; nr = "-" }
		p && $2 == "tsc" { t = $3 } p && $2 == "vmcs" { v = $3 }
		p && $2 == "pip" && $4 == "nr" { nr = "nr" }
		$2 == "psbend" { p = 0; print v, t, nr }'
}

aux_offset() {
	python3 -c '
import sys
off = open(sys.argv[1], "rb").read().find(open(sys.argv[2], "rb").read())
sys.exit("raw trace not in " + sys.argv[1]) if off < 0 else print(off)' "$1" "$2"
}

# inject_equals SPEC: perf inject --force with SPEC makes the trace the
# offset-0 one.
inject_equals() {
	cp big.perf.data inj.perf.data
	perf inject -i inj.perf.data --vm-time-correlation="$1" --force > inject.log 2>&1 ||
		{ cat inject.log; fail "perf inject --force $1"; }
	python3 -c '
import sys
f = open(sys.argv[1], "rb"); f.seek(int(sys.argv[2]))
sys.exit(f.read(int(sys.argv[3])) != open(sys.argv[4], "rb").read())' \
		inj.perf.data "$off" "$(stat -c %s big.pt)" zero.pt ||
		fail "perf inject --vm-time-correlation='$1': not the offset-0 trace"
}

checked=0
for seed in 1 2; do
	synth --seed "$seed" --tsc-offset "0x00ffffff00000000,0x0100000000000123,-0x5,$CROSS" \
		-o big || fail "vmpt-synth seed $seed"
	synth --seed "$seed" --tsc-offset 0,0,0,0 -o zero || fail "vmpt-synth (offset 0)"
	# the offsets change no instruction or branch
	truth_insns big.insn > want.i
	perf_insns big.perf.data --vmlinux "$VMX_KERNEL" --guestvmlinux "$GUEST_KERNEL" > got.i
	compare "instructions (seed $seed)" want.i got.i
	truth_branches big.branches > want.b
	perf_branches big.perf.data --vmlinux "$VMX_KERNEL" --guestvmlinux "$GUEST_KERNEL" > got.b
	compare "branches (seed $seed)" want.b got.b
	psb_tscs big.pt > big.psb
	psb_tscs zero.pt > zero.psb
	[ "$(wc -l < big.psb)" = "$(wc -l < zero.psb)" ] || fail "PSB+ differ in number"
	# payload = (host + offset) mod 2^56 in a guest, the host TSC outside
	paste -d' ' big.psb zero.psb | python3 -c '
import sys
offs = {}
for l in open(sys.argv[1]):
    f = l.split()
    offs[int(f[0], 16) << 12] = int(f[1], 16)
m = (1 << 56) - 1
low = high = guest = 0
for l in sys.stdin:
    v, t, nr, v0, t0, nr0 = l.split()
    t, t0 = int(t, 16), int(t0, 16)
    want = (t0 + offs[int(v, 16)]) & m if nr == "nr" else t0
    assert t == want, "VMCS %s: payload %#x, want %#x" % (v, t, want)
    guest += nr == "nr"
    if nr == "nr" and offs[int(v, 16)] == int(sys.argv[2], 16):
        low += t < 1 << 40
        high += t > m - (1 << 40)
assert low and high, "the crossing vCPU has no payloads on both sides (%d, %d)" % (low, high)
print(guest)' big.tsc "$CROSS" > guest.n || fail "TSC payloads (seed $seed)"
	# dry-run: every VMCS, its offset modulo 2^56 (perf sign-extends bit 55)
	perf inject -i big.perf.data --vm-time-correlation=dry-run 2>&1 |
		sed -n 's/^VMCS: \(0x[0-9a-f]*\)  TSC Offset \(0x[0-9a-f]*\)$/\1 \2/p' |
		sort -u > got.off
	python3 -c '
import sys
m = (1 << 56) - 1
for l in open(sys.argv[1]):
    v, o = l.split()[:2]
    o = int(o, 16) & m
    if o >> 55:
        o |= ~m & ((1 << 64) - 1)
    print(v, hex(o))' big.tsc | sort > want.off
	compare "TSC offsets modulo 2^56 (seed $seed)" want.off got.off
	off=$(aux_offset big.perf.data big.pt)
	inject_equals "$(awk '{ printf "%s%s:%s", (NR > 1 ? " " : ""), $2, $1 }' big.tsc)"
	inject_equals "$(awk '{ printf "%s%s:%s", (NR > 1 ? " " : ""), $2, $1 }' got.off)"
	checked=$((checked + $(cat guest.n)))
done
echo "TSC offsets 0x00ffffff00000000, 0x0100000000000123, -5 and $CROSS (wrapping" \
	"mid-trace): $checked guest TSC payloads right; perf found all 8 VMCS offsets" \
	"modulo 2^56 and its correction gives the offset-0 trace byte for byte"
