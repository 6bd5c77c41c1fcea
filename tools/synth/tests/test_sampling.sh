#!/bin/bash
# vmpt script samples the instruction flow where perf script 6.1 does, on
# traces with PSBs every 512 bytes, overflows, VMs and interrupts: time
# periods (--itrace=iNns: a PSB+'s FUP walked to in the time before its
# TSC, then counted anew; an overflow neither starts the period again nor
# keeps the count since the timestamp), the time estimate after an iret
# behind a PSB+, --itrace=s counting a branch between host and guest as
# the two samples perf makes of it, and the callchains of --itrace=g,
# whose frames show symbols (perf adds ip and sym to the fields of the
# first hardware event it synthesizes when it has callchains: not when
# branches come first; in a pipe also for l's branch stacks); --reltime
# and --deltatime; the samples of per-CPU buffers in perf's order (also
# where its estimate on returns to user space orders them); snapshot
# mode's overlapping buffers.
. "$(dirname "$0")/synth-lib.sh"
: "${VMPT:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

VM=(--vm --tsc-offset 0 --host-kernel "$VMX_KERNEL" --guest-elf "$GUEST_KERNEL"
    --guest-start start_kernel --guest-period 500)
VMK=(--vmlinux "$VMX_KERNEL" --guestvmlinux "$GUEST_KERNEL")
PERIODS=("--itrace=i100ns --ns -F time,ip,period" "--itrace=i37ns --ns -F time,ip,period"
	 "--itrace=i1us -F ip,period,ipc")
forms=0

check() {	# name, synth args, --, options of both, --, forms
	local name=$1 s=() o=()
	shift
	while [ "$1" != "--" ]; do s+=("$1"); shift; done
	shift
	while [ "$1" != "--" ]; do o+=("$1"); shift; done
	shift
	"$SYNTH" "${s[@]}" -o t -q || fail "vmpt-synth $name"
	vmpt_like_perf t.perf.data "${o[@]}" -- "$@"
	forms=$((forms + $#))
}

for seed in 3 4; do
	check "vm $seed" "${VM[@]}" --seed $seed --branches 6000 --psb-period 512 -- \
		"${VMK[@]}" -- "${PERIODS[@]}" "--itrace=bs100 -F ip,addr,flags"
	check "vm events $seed" "${VM[@]}" --seed $seed --branches 6000 --psb-period 512 \
		--event --ptw --fup-on-ptw --pwr-evt -- "${VMK[@]}" -- "${PERIODS[@]}"
	check "ovf $seed" --elf /usr/bin/bash --seed $seed --branches 5000 --ovf-at 3000 -- -- \
		"${PERIODS[@]}"
	check "ovf kernel $seed" --elf /usr/bin/bash --host-kernel "$GUEST_KERNEL" --irq-period 300 \
		--seed $seed --branches 5000 --ovf-at 3000 -- --vmlinux "$GUEST_KERNEL" -- \
		"${PERIODS[@]}" "--itrace=b --ns -F time,ip,addr"
done

# Per-CPU buffers of vCPU threads: the queues merged as perf's heap does
# (the instructions of a block walked before the packet deciding its
# branch at the walk's time, ties to the queue waiting longest).
for seed in 3 4; do
	check "vm cpus $seed" "${VM[@]}" --seed $seed --branches 6000 --vcpus $((seed - 1)) \
		--tsc-offset "$( [ $seed = 3 ] && echo 0,0 || echo 0,0,0)" --cpus 2 -- "${VMK[@]}" -- \
		"--itrace=i0nse -F cpu,time,ip,flags --ns" "--itrace=be -F cpu,time,ip,addr --ns" \
		"--call-ret-trace" "" "--show-switch-events --itrace=cewp -F cpu,tid,time,ip --ns"
	# vmpt record's way: a buffer per vCPU thread, the threads on two
	# CPUs (a CBR of the ratio a queue had moves none of perf's queues)
	check "vm threads $seed" "${VM[@]}" --seed $seed --branches 6000 --vcpus 2 \
		--tsc-offset 0,0 --per-thread --cpus 2 -- "${VMK[@]}" -- \
		"--itrace=i0nse -F tid,time,ip,flags --ns" "--itrace=be -F tid,time,ip,addr --ns" ""
done

# A KVM selftest's guest code on 2 vCPUs, per-CPU buffers: perf orders its
# queues by their state times, which its estimate sets on a return to
# user space (est_timestamp), ahead of the TSC.
check "guest-code cpus" --vm --host-kernel "$VMX_KERNEL" --elf "$KVM_SELFTEST" --guest-code \
	--seed 4 --branches 5000 --tsc-offset 0,0 --vcpus 2 --cpus 2 -- \
	--vmlinux "$VMX_KERNEL" --guest-code -- "--itrace=be -F ip,addr,flags,sym" \
	"--itrace=i0nse --ns -F time,ip" "" "--call-ret-trace"

# Snapshot mode: each snapshot from where the one before ends (perf's
# overlap by TSC or bytes; one with nothing new left out, the next judged
# against the last with something), one thread and -j 2.
for snap in "--seed 2 --irq-period 700 --snapshot 8192:6000 --psb-period 1024" \
	    "--seed 4 --snapshot 8192:3000" \
	    "--seed 5 --irq-period 700 --no-timing --snapshot 8192:1000 --psb-period 1024"; do
	t="--ns -F time,"	# (no timing: no time field, as perf)
	[ "${snap#*no-timing}" != "$snap" ] && t="-F "
	# shellcheck disable=SC2086
	check "snapshot $snap" --elf /usr/bin/bash --branches 8000 $snap -- -- \
		"--itrace=be -F ip,addr,flags" "--itrace=i0nse ${t}ip" "--itrace=ce"
	VMPT_ONLY="-j 2" vmpt_like_perf t.perf.data -- "--itrace=be -F ip,addr,flags"
done

# Times since the first line and since the line before (sideband too).
check "reltime" --elf /usr/bin/ls --seed 3 --branches 4000 --cyc --psb-period 512 -- -- \
	"--itrace=cre --reltime -F time,ip,sym" "--itrace=cre --deltatime --ns -F time,ip" \
	"--deltatime --show-mmap-events --itrace=c -F time,event,ip" "--reltime --show-mmap-events"
"$VMPT" script -i t.perf.data --reltime --deltatime > out 2> err && fail "--reltime --deltatime: exit status 0"
grep -q "reltime and deltatime - the two don't get along well" err || fail "--reltime --deltatime: $(cat err)"

# Callchains, in the file and in perf's pipe form (where perf 6.1 stops
# at "unexpected end of event stream" before the trace's last branches:
# its lines are the first of vmpt's then).
"$SYNTH" --elf /usr/bin/bash --seed 3 --branches 4000 --psb-period 512 -o u -q ||
	fail "vmpt-synth callchains"
perf inject -i u.perf.data -o - > u.pipe 2>/dev/null || fail "perf inject -o -"
CHAINS=("--itrace=i1000ig4 --ns -F time,ip" "--itrace=i1000ig4 -F ip,dso"
	"--itrace=bi1000ig4 -F ip,addr" "--itrace=i1000ig4 -G -F ip"
	"--itrace=i1000il4 -F ip" "--itrace=i1000ig4pw -F synth:ip")
vmpt_like_perf u.perf.data -- "${CHAINS[@]}" "--itrace=i1000ig4 -F -sym,-symoff"
for f in "${CHAINS[@]}"; do
	# shellcheck disable=SC2086
	perf script -i - $f < u.pipe > perf.out 2> perf.err
	# shellcheck disable=SC2086
	"$VMPT" script -i - $f < u.pipe > vmpt.out 2>/dev/null || fail "vmpt script -i - $f: exit status"
	if grep -q 'unexpected end of event stream' perf.err; then
		head -n "$(wc -l < perf.out)" vmpt.out > vmpt.head
		mv vmpt.head vmpt.out
	fi
	cmp -s perf.out vmpt.out || { diff perf.out vmpt.out | head -5; fail "pipe $f: not perf's lines"; }
done
forms=$((forms + 2 * ${#CHAINS[@]} + 1))
echo "vmpt script printed perf script's lines in $forms forms: time periods over PSBs, overflows and VMs, --itrace=s, callchains, --reltime, --deltatime"
