#!/bin/bash
# Snapshot mode (perf record -S -m,SIZE): the AUX area is a ring the trace
# overwrites, and each snapshot holds what perf would copy of it (before it
# judges the ring wrapped, what is new since the last snapshot; after, the
# whole ring, which overlaps earlier snapshots).  Checked:
# - the perf.data: AUXTRACE_INFO says snapshot mode, one AUXTRACE buffer per
#   line of PREFIX.snapshots, each holding exactly the stream's bytes
#   START..END of the truth (zeros before 0: never written);
# - perf script: per snapshot, the truth's instructions and branches from
#   where perf can start: after the previous snapshot when it finds the
#   overlap (with TSC: the snapshot holds the previous one's last PSB+;
#   without: its first PSB+ is one of the previous one's), else from its own
#   first PSB+;
# - the VM scenario (offset 0: perf finds overlaps by comparing TSCs, which
#   guest offsets would reorder), and with offsets perf inject
#   --vm-time-correlation=dry-run reports only true ones.
. "$(dirname "$0")/synth-lib.sh"
: "${VMX_KERNEL:?}" "${GUEST_KERNEL:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

VM=(--vm --host-kernel "$VMX_KERNEL" --guest-elf "$GUEST_KERNEL"
    --guest-start start_kernel --guest-period 500 --vcpus 2)

# expected FILE i|b TSC: the truth's lines perf shows, snapshot by snapshot
expected() {
	grep -v '^#' "$1" > all.x
	while read -r _ _ _ first after last ov bfirst bafter blast; do
		if [ "$2" = b ]; then first=$bfirst; after=$bafter; last=$blast; fi
		from=$first
		if [ "$ov" = first-psb ] || { [ "$ov" = last-psb ] && [ "$3" = 1 ]; }; then
			from=$after
		fi
		if [ "$from" -gt 0 ] && [ "$from" -le "$last" ]; then
			sed -n "${from},${last}p" all.x
		fi
	done < sn.snapshots
}

# The AUXTRACE buffers of sn.perf.data hold the stream's bytes START..END.
check_buffers() {
	perf script -i sn.perf.data -D 2>/dev/null |
		sed -n 's/^[0-9]* [0-9]* \(0x[0-9a-f]*\) \[0x30\]: PERF_RECORD_AUXTRACE size: \(0x[0-9a-f]*\) .*/\1 \2/p' > aux.lst
	perf script -i sn.perf.data -D 2>/dev/null | grep -q "Snapshot mode       1" ||
		fail "$what: AUXTRACE_INFO is not in snapshot mode"
	python3 - sn.perf.data sn.pt sn.snapshots aux.lst <<'PY' || fail "$what: AUXTRACE data"
import sys
pd = open(sys.argv[1], "rb").read()
pt = open(sys.argv[2], "rb").read()
snaps = [l.split() for l in open(sys.argv[3])]
aux = [l.split() for l in open(sys.argv[4])]
assert len(snaps) == len(aux), "%d snapshots, %d AUXTRACE buffers" % (len(snaps), len(aux))
for s, a in zip(snaps, aux):
    start, end = int(s[1]), int(s[2])
    want = bytes(max(0, -start)) + pt[max(0, start):end]
    pad = (8 - len(want) % 8) % 8
    off, size = int(a[0], 16) + 0x30, int(a[1], 16)
    assert size == len(want) + pad, "snapshot %s: size %#x, want %#x" % (s[0], size, len(want) + pad)
    assert pd[off:off + size] == want + bytes(pad), "snapshot %s: other bytes" % s[0]
PY
}

declare -A kinds
runs=0
insns=0
branches=0
snaps=0
while read -r tsc args; do
	[ -n "$tsc" ] || continue
	# shellcheck disable=SC2086
	set -- $args
	what="$*"
	# the kernels perf needs (a wrong one can make it loop forever)
	KERNELS=()
	if [ "$1" = vm ]; then
		shift
		set -- "${VM[@]}" "$@"
		KERNELS=(--vmlinux "$VMX_KERNEL" --guestvmlinux "$GUEST_KERNEL")
	elif [ "$3" = --host-kernel ]; then
		KERNELS=(--vmlinux "$4")
	fi
	"$SYNTH" "$@" --branches 8000 --psb-period 1024 -o sn -q || fail "vmpt-synth $what"
	check_buffers
	expected sn.insn i "$tsc" > want.i
	perf_insns sn.perf.data ${KERNELS[@]+"${KERNELS[@]}"} > got.i
	compare "instructions ($what)" want.i got.i
	expected sn.branches b "$tsc" > want.tb
	truth_branches want.tb > want.b
	perf_branches sn.perf.data ${KERNELS[@]+"${KERNELS[@]}"} > got.b
	compare "branches ($what)" want.b got.b
	while read -r _ _ _ _ _ _ ov _; do
		kinds[$ov$([ "$tsc" = 1 ] || echo ' (no TSC)')]=1
	done < sn.snapshots
	runs=$((runs + 1))
	snaps=$((snaps + $(wc -l < sn.snapshots)))
	insns=$((insns + $(wc -l < want.i)))
	branches=$((branches + $(wc -l < want.b)))
done <<EOF
1 --elf /usr/bin/bash --seed 2 --irq-period 700 --snapshot 8192:6000
1 --elf /usr/bin/bash --seed 2 --irq-period 700 --snapshot 4096:3000
0 --elf /usr/bin/bash --seed 4 --irq-period 700 --no-timing --snapshot 8192:5000
0 --elf /usr/bin/bash --seed 5 --irq-period 700 --no-timing --snapshot 8192:1000
1 --elf /usr/bin/busybox --seed 3 --irq-period 300 --cyc --snapshot 65536:20000
1 --elf /usr/bin/busybox --seed 3 --irq-period 300 --snapshot 16384:40000 --noretcomp
1 --elf /usr/bin/busybox --host-kernel $GUEST_KERNEL --seed 7 --irq-period 400 --snapshot 8192:4000 --tnt64
1 vm --seed 5 --tsc-offset 0,0 --snapshot 8192:5000
1 vm --seed 6 --tsc-offset 0,0 --snapshot 4096:2000 --cyc
EOF
for k in first-psb last-psb none "last-psb (no TSC)" "tail (no TSC)"; do
	[ -n "${kinds[$k]:-}" ] || fail "no snapshot overlapping as '$k'"
done

# With TSC offsets: perf finds the ones its snapshots show, all true.
"$SYNTH" "${VM[@]}" --seed 5 --tsc-offset -0x123456789,0x0100000000000123 \
	--snapshot 8192:5000 --branches 8000 --psb-period 1024 -o sn -q || fail "vmpt-synth"
perf inject -i sn.perf.data --vm-time-correlation=dry-run 2>&1 |
	sed -n 's/^VMCS: \(0x[0-9a-f]*\)  TSC Offset \(0x[0-9a-f]*\)$/\1 \2/p' | sort -u > got.off
awk '{ print $1, $2 }' sn.tsc | sort > want.off
[ -s got.off ] || fail "snapshots with offsets: perf inject found none"
[ -z "$(comm -13 want.off got.off)" ] ||
	fail "snapshots with offsets: perf inject reported $(comm -13 want.off got.off)"

echo "perf agreed on $runs snapshot-mode recordings: $snaps snapshots," \
	"$insns instructions and $branches branches as the truth's snapshots hold" \
	"them (overlaps: $(printf '%s\n' "${!kinds[@]}" | sort | paste -sd, | sed 's/,/, /g'))"
