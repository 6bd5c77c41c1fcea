#!/bin/sh
# vmpt script --pt with the guest's images apart from the host's, on the
# synthesizer's VM scenario: the host kernel model (vmx-kernel) and the
# guest kernel (guest-kernel) are both at 0xffffffff81000000, so only the
# trace's PIP.NR and VMCS packets tell whose code runs.  Each kind of
# guest image (--guest-elf, --guest-kcore, --guest-raw, --guest-pagecache),
# per VMCS too (--vmcs), decodes to exactly the ground truth; plain images
# alone (every machine's) do not; a guest image for another VMCS, or a
# missing file, gives exact errors.
# The truth is checked against perf 6.1 first: its decoder, with the host
# kernel as --vmlinux and the guest's as --guestvmlinux, reads the same
# instructions out of the synthesizer's perf.data.  The synthesizer shares
# vmpt's packet encoder and last-IP code, so without perf a bug there that
# vmpt's decoder mirrors would pass.  (libipt is no oracle here: it pops
# its return stack only on compressed returns, the CPU, perf and vmpt on
# every return, so they part after an uncompressed one.)
# usage: guest_images_test.sh VMPT_SYNTH
set -eu
SYNTH=$1
if ! command -v perf >/dev/null; then
	echo "SKIP: perf (linux-perf) is not installed: no oracle but the synthesizer"
	exit 77
fi
D=$(cd "$(dirname "$SYNTH")" && pwd)
K=$D/vmx-kernel
G=$D/guest-kernel
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
insns=0
perf_insns=0

# The guest kernel's code segment as a raw file and as a page cache.
readelf -lW "$G" | awk '$1 == "LOAD" && $(NF-1) == "E" { print $2, $3, $5; exit }' \
	> "$out/seg"
read -r off vaddr size < "$out/seg" || fail "no code segment in $G"
dd if="$G" of="$out/code.bin" bs=1 skip=$((off)) count=$((size)) 2>/dev/null
case $vaddr in *000) ;; *) fail "code segment not page aligned" ;; esac
pages=$(( (size + 4095) / 4096 ))
cp "$out/code.bin" "$out/pc.dump"
truncate -s $((pages * 4096)) "$out/pc.dump"
perl -e 'my ($a, $n) = (hex($ARGV[0]), $ARGV[1]);
	 print pack("Q<", $a + 4096 * $_) for 0 .. $n - 1' \
	"${vaddr#0x}" $pages > "$out/pc.addr"

# decodes NAME ARGS...: vmpt's instructions are the truth's.
decodes() {
	name=$1; shift
	"$VMPT" script --pt "$out/t.pt" $rc "$@" --itrace=i0nse -F ip 2>&1 |
		sed 's/^ *//' > "$out/vmpt"
	cmp -s "$out/truth" "$out/vmpt" ||
		fail "$name $*: $(wc -l < "$out/vmpt") instructions, truth has $(wc -l < "$out/truth"): $(diff "$out/truth" "$out/vmpt" | sed -n 2,3p)"
	insns=$((insns + $(wc -l < "$out/truth")))
}

for seed in 1 2 3; do
	case $seed in
	1) extra="" ;;
	2) extra="--noretcomp --vcpus 2 --entries-per-vcpu 2" ;;
	3) extra="--cyc --tnt64 --vcpus 2 --psb-period 1024" ;;
	esac
	# shellcheck disable=SC2086
	"$SYNTH" -q --vm --guest-elf "$G" --host-kernel "$K" --branches 6000 \
		--seed $seed $extra -o "$out/t"
	name="seed $seed $extra"
	rc=--retcomp
	case " $extra " in *" --noretcomp "*) rc= ;; esac
	grep -v '^#' "$out/t.insn" > "$out/truth"
	[ -s "$out/truth" ] || fail "$name: no ground truth"
	perf script -i "$out/t.perf.data" --itrace=i0nse -F ip --vmlinux "$K" \
		--guestvmlinux "$G" 2> "$out/perf.err" | sed 's/^ *//' > "$out/perf"
	[ ! -s "$out/perf.err" ] || fail "$name: perf script: $(head -c 300 "$out/perf.err")"
	cmp -s "$out/truth" "$out/perf" ||
		fail "$name: perf 6.1 reads $(wc -l < "$out/perf") instructions, the truth has $(wc -l < "$out/truth"): $(diff "$out/truth" "$out/perf" | sed -n 2,3p)"
	perf_insns=$((perf_insns + $(wc -l < "$out/perf")))

	decodes "$name" --elf "$K" --guest-elf "$G"
	decodes "$name" --vmlinux "$K" --guest-kcore "$G"
	decodes "$name" --kcore "$K" --guest-raw "$out/code.bin@$vaddr"
	decodes "$name" --guest-pagecache "$out/pc" --elf "$K"
	if [ "$seed" != 1 ]; then
		decodes "$name" --elf "$K" --vmcs 0x1c0000 --guest-elf "$G" \
			--vmcs 0x1c3000 --guest-raw "$out/code.bin@$vaddr"
	fi
	# Images of every machine: host and guest code at the same
	# addresses mix.
	"$VMPT" script --pt "$out/t.pt" $rc --elf "$K" --elf "$G" --itrace=i0nse -F ip |
		sed 's/^ *//' > "$out/vmpt"
	cmp -s "$out/truth" "$out/vmpt" && fail "$name: host and guest code did not mix"
done

# The guest image of another VM: the VM entry leads nowhere.  The
# instructions up to it are the truth's, then the error names the guest's
# first instruction and the packet after the entry's TIP (where the
# decoder was: it reads on to know what the code needs next).
"$SYNTH" -q --vm --guest-elf "$G" --host-kernel "$K" --branches 2000 --seed 4 -o "$out/t"
entry=$(grep -v '^#' "$out/t.branches" | awk '$NF == "vmentry" { print $2; exit }')
at=$("$VMPT" dump "$out/t.pt" |
	awk 'tip { print $1; exit } $2 == "pip" && $NF == "nr" { nr = 1; next }
	     nr && $2 == "tip" { tip = 1 }')
"$VMPT" script --pt "$out/t.pt" --retcomp --elf "$K" --vmcs 0x1c3000 --guest-elf "$G" \
	--itrace=e > "$out/e"
want=" instruction trace error type 1 time [0-9]* cpu -1 pid -1 tid -1 ip 0x$entry offset 0x$(echo "$at" | sed 's/^0*//') code 5: Failed to get instruction"
head -n 1 "$out/e" | grep -qx "$want" || fail "guest image of another VMCS: '$(head -n 1 "$out/e")', want '$want'"
"$VMPT" script --pt "$out/t.pt" --retcomp --elf "$K" --vmcs 0x1c3000 --guest-elf "$G" \
	--itrace=i0ns -F ip | sed 's/^ *//' > "$out/vmpt"
n=$(grep -v '^#' "$out/t.insn" | grep -n -m1 -x "$entry" | cut -d: -f1)
grep -v '^#' "$out/t.insn" | head -n $((n - 1)) > "$out/before"
head -n $((n - 1)) "$out/vmpt" | cmp -s "$out/before" - ||
	fail "guest image of another VMCS: the host's instructions before the entry differ"

# A guest image that is not there, a bad VMCS.
# fails STATUS MESSAGE ARGS...: vmpt script exits so, saying exactly that.
fails() {
	want_status=$1 want=$2
	shift 2
	status=0
	"$VMPT" script "$@" 2> "$out/err" || status=$?
	if [ $status -ne "$want_status" ] || [ "$(cat "$out/err")" != "$want" ]; then
		fail "$*: status $status, '$(cat "$out/err")'"
	fi
}
fails 1 "vmpt script: $out/none: No such file or directory" \
	--pt "$out/t.pt" --elf "$K" --guest-elf "$out/none"
fails 2 "vmpt script: --vmcs 0x1c0001: not a VMCS base address (a 4 KiB aligned address as vmpt dump shows it, or any)" \
	--pt "$out/t.pt" --vmcs 0x1c0001 --guest-elf "$G"
echo "ok: $insns instructions equal to the ground truth with guest images apart; the truth's $perf_insns equal to perf's"
