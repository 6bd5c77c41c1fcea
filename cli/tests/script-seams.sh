#!/bin/bash
# A queue's trace split over consecutive AUXTRACE buffers decodes as one
# stream, as perf decodes it: vmpt script prints the same lines as for the
# trace in one buffer, and as perf script does.
# - buffers cut at packet ends (vmpt-synth --aux-buffer: perf record reading
#   the AUX area as it fills): perf's lines equal its lines of the trace in
#   one buffer, vmpt's equal perf's, the instruction count the
#   synthesizer's;
# - buffers cut anywhere (corr_fixture split, packets cut in two): vmpt's
#   lines still equal those of the trace in one buffer (perf 6.1 reads a
#   cut packet as a bad one on 64-bit hosts: 'Bad packet' errors);
# - a VM recording per cpu and one per thread (vCPU threads), guest TSCs
#   corrected across the seams (TSC packets cut in two);
# - -j 2 and -j 3 print what one thread prints.
# usage: script-seams.sh VMPT_SYNTH CORR_FIXTURE
set -u
SYNTH=$1
FIXTURE=$2
D=$(dirname "$SYNTH")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v perf > /dev/null || { echo "perf not found"; exit 77; }
export HOME=$tmp/home
mkdir -p "$HOME"
fail=0
runs=0

bad() {
	echo "FAIL $*"
	fail=1
}

# AUXTRACE buffers of a recording, per queue: "N" for each queue.
buffers() {
	perf report -D -i "$1" 2> /dev/null | awk '/PERF_RECORD_AUXTRACE size/ {
		for (i = 1; i < NF; i++) if ($i == "idx:") n[$(i + 1)]++ }
		END { for (q in n) s = s (s ? "," : "") n[q]; print s }'
}

# same NAME REF FILE ARGS... : vmpt script on FILE prints REF's lines
# (stdout), with one thread and with -j 2, -j 3 (stdout and stderr).
same() {
	local name=$1 ref=$2 file=$3 j
	shift 3
	"$VMPT" script -i "$file" "$@" > "$tmp/one" 2> "$tmp/one.err"
	runs=$((runs + 1))
	cmp -s "$ref" "$tmp/one" ||
		bad "$name [$*]: $(diff "$ref" "$tmp/one" | head -3)"
	for j in 2 3; do
		"$VMPT" script -j $j -i "$file" "$@" > "$tmp/many" 2> "$tmp/many.err"
		runs=$((runs + 1))
		cmp -s "$tmp/one" "$tmp/many" && cmp -s "$tmp/one.err" "$tmp/many.err" ||
			bad "$name [$*] -j $j: $(diff "$tmp/one" "$tmp/many" | head -3)"
	done
}

# User code, PSBs every 512 bytes (pieces for -j).
U="--elf /usr/bin/bash --branches 20000 --seed 2 --psb-period 512"
"$SYNTH" -q $U -o "$tmp/u" || bad "vmpt-synth"
"$SYNTH" -q $U --aux-buffer 1000 -o "$tmp/b" || bad "vmpt-synth --aux-buffer"
nb=$(buffers "$tmp/b.perf.data")
[ "${nb:-0}" -ge 10 ] 2> /dev/null || bad "--aux-buffer 1000 made '$nb' buffers"
insns=$(grep -c "^[0-9a-f]" "$tmp/u.insn")
for m in "--itrace=i0ns -F ip" "" --itrace=b --itrace=cr --itrace=bxwpe \
	 "--itrace=i0ns -F+ipc" --call-ret-trace; do
	# shellcheck disable=SC2086
	perf script -i "$tmp/u.perf.data" $m > "$tmp/pu" 2> /dev/null
	# shellcheck disable=SC2086
	perf script -i "$tmp/b.perf.data" $m > "$tmp/pb" 2> /dev/null
	# (PSB offsets count the PADs perf record pads each buffer with)
	sed 's/psb offs: 0x[0-9a-f]* */psb/' "$tmp/pu" > "$tmp/pu.x"
	sed 's/psb offs: 0x[0-9a-f]* */psb/' "$tmp/pb" > "$tmp/pb.x"
	cmp -s "$tmp/pu.x" "$tmp/pb.x" || bad "perf: buffers of 1000 bytes [$m] differ from one"
	[ -s "$tmp/pb" ] || bad "perf printed nothing [$m]"
	# shellcheck disable=SC2086
	same "buffers of 1000 bytes" "$tmp/pb" "$tmp/b.perf.data" $m
	if [ "$m" = "--itrace=i0ns -F ip" ]; then
		n=$(wc -l < "$tmp/pb")
		[ "$n" = "$insns" ] || bad "perf decoded $n instructions of $insns"
		echo "buffers of ~1000 bytes ($nb): vmpt = perf = $n instructions (the truth $insns)"
	fi
	# Cut anywhere: the lines of the trace in one buffer.
	for chunk in 0x1008 0x18; do
		"$FIXTURE" split "$tmp/u.perf.data" "$tmp/c.data" $chunk || bad "split"
		# shellcheck disable=SC2086
		same "buffers of $chunk" "$tmp/pu" "$tmp/c.data" $m
	done
done
perf script -i "$tmp/c.data" --itrace=e 2>&1 | grep -q "Bad packet" ||
	bad "perf now joins cut packets: compare vmpt with it on buffers cut anywhere"

# A VM: two vCPU threads on two CPUs, traced per cpu, then per thread;
# buffers of ~700 bytes (packet ends), of 0x18 bytes (TSC packets cut).
for mode in "--cpus 2" "--per-thread"; do
	V="--vm --host-kernel $D/vmx-kernel --guest-elf $D/guest-kernel --guest-start start_kernel
	   --branches 20000 --guest-period 2000 --psb-period 1024 --seed 5 --vcpus 2 $mode
	   --tsc-offset -0x1000000000,0x5000000"
	# shellcheck disable=SC2086
	"$SYNTH" -q $V -o "$tmp/vu" && "$SYNTH" -q $V --aux-buffer 700 -o "$tmp/vb" ||
		bad "vmpt-synth $mode"
	"$FIXTURE" split "$tmp/vu.perf.data" "$tmp/vc.data" 0x18 || bad "split $mode"
	for m in "--itrace=be -F time,flags,ip,addr" "--itrace=i0ns -F time,ip"; do
		# shellcheck disable=SC2086
		"$VMPT" script -i "$tmp/vu.perf.data" --vmlinux "$D/vmx-kernel" \
			--guest-elf "$D/guest-kernel" --ns $m > "$tmp/ref" 2> /dev/null
		[ -s "$tmp/ref" ] || bad "VM $mode [$m]: no output"
		# shellcheck disable=SC2086
		same "VM $mode, buffers of 700 bytes" "$tmp/ref" "$tmp/vb.perf.data" \
			--vmlinux "$D/vmx-kernel" --guest-elf "$D/guest-kernel" --ns $m
		# shellcheck disable=SC2086
		same "VM $mode, buffers of 0x18 bytes" "$tmp/ref" "$tmp/vc.data" \
			--vmlinux "$D/vmx-kernel" --guest-elf "$D/guest-kernel" --ns $m
	done
	echo "VM $mode: $(buffers "$tmp/vb.perf.data") and $(buffers "$tmp/vc.data") buffers" \
	     "per queue: $(wc -l < "$tmp/ref") instructions, as in one buffer"
done

echo "$runs runs"
exit $fail
