#!/bin/bash
# vCPUs as threads of a QEMU-like VMM process ("CPU n/KVM"), each entering
# KVM_RUN from its own thread, scheduled on host CPUs:
# - perf record --per-thread: a buffer per thread.  perf script must show,
#   per thread (-F tid), exactly the truth's instructions and branches;
# - perf record -a: a buffer per CPU and cpu-wide context switch records.
#   perf needs the guest TSCs corrected first (perf inject
#   --vm-time-correlation, whose dry-run must report only true offsets),
#   then shows per CPU (-F tid,cpu) exactly the truth, each instruction of
#   the thread that ran it, across migrations;
# - the .tsc file names each VMCS's thread: the VMCS packets a thread's own
#   buffer carries outside PSB+ (its VMPTRLDs) are its vCPU's.
. "$(dirname "$0")/synth-lib.sh"
: "${VMX_KERNEL:?}" "${GUEST_KERNEL:?}" "${VMPT:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

KERNELS=(--vmlinux "$VMX_KERNEL" --guestvmlinux "$GUEST_KERNEL")

synth() {
	"$SYNTH" --vm --host-kernel "$VMX_KERNEL" --guest-elf "$GUEST_KERNEL" \
		--guest-start start_kernel --guest-period 500 --psb-period 1024 \
		"$@" -q
}

# KEY|... lines of perf's branches: KEY is the tid, or "tid|cpu".
perf_branches_by() {
	local with_cpu=$1 file=$2
	shift 2
	perf script -i "$file" --itrace=be -F tid,cpu,flags,ip,addr "${KERNELS[@]}" "$@" 2>&1 |
	awk -v c="$with_cpu" '{ to = $NF; from = $(NF-2); f = "";
		for (i = 3; i <= NF-3; i++) f = f (f == "" ? "" : " ") $i;
		if (f == "bcyh") f = "vmexit";
		cpu = $2; gsub(/[][]/, "", cpu);
		print $1 (c ? "|" cpu + 0 : "") "|" f "|" from "|" to }'
}

perf_insns_by() {
	local with_cpu=$1 file=$2
	shift 2
	perf script -i "$file" --itrace=i0nse -F tid,cpu,ip "${KERNELS[@]}" "$@" 2>&1 |
	awk -v c="$with_cpu" '/error/ { print; next }
		{ cpu = $2; gsub(/[][]/, "", cpu); print $1 (c ? "|" cpu + 0 : "") "|" $3 }'
}

# The truth's "FROM TO TSC MACHINE TID CPU FLAGS" the same way.
truth_branches_by() {
	grep -v '^#' "$2" |
	awk -v c="$1" '{ f = ""; for (i = 7; i <= NF; i++) f = f (f == "" ? "" : " ") $i;
		k = $5 (c ? "|" $6 : "");
		if (f == "vmentry" || f == "vmexit") {
			print k "|" f "|" $1 "|0"; print k "|" f "|0|" $2
		} else
			print k "|" f "|" $1 "|" $2 }'
}

truth_insns_by() {
	grep -v '^#' "$2" | awk -v c="$1" '{ print $2 (c ? "|" $3 : "") "|" $1 }'
}

# compare_streams WHAT KEYS WANT GOT: equal stream by stream (perf
# interleaves the streams by time; within one, the order is exact).
compare_streams() {
	local what=$1 keys=$2
	for k in $keys; do
		grep "^$k|" "$3" > want.s || true
		grep "^$k|" "$4" > got.s || true
		[ -s want.s ] || continue
		compare "$what ($k)" want.s got.s
	done
	[ "$(wc -l < "$3")" = "$(wc -l < "$4")" ] ||
		fail "$what: $(wc -l < "$4") lines from perf, $(wc -l < "$3") in the truth"
}

tids() { awk '{ print $6 }' "$1".tsc | sort -u | tr '\n' ' '; }

# The VMCS packets of a thread's buffer outside PSB+ must be its vCPU's.
check_vmcs_owner() {
	local prefix=$1
	while read -r vmcs _ _ _ _ tid; do
		want=$(printf '%x000' "$vmcs")
		"$VMPT" dump "$prefix.tid$tid.pt" | awk -v w="$want" -v t="$tid" '
			$2 == "psb" { in_psb = 1 } $2 == "psbend" { in_psb = 0 }
			$2 == "vmcs" && !in_psb { n++; if ($3 != w) { print "thread " t " loaded VMCS " $3 ", its own is " w; bad = 1 } }
			END { if (!n) { print "thread " t ": no VMPTRLD"; bad = 1 } exit bad }' ||
			fail "VMCS of thread $tid"
	done < "$prefix.tsc"
}

runs=0
insns=0
branches=0
# per thread: 1 CPU (the threads take turns), 2 and 3 CPUs (they overlap)
for cfg in "1 --vcpus 2" "2 --vcpus 3 --cpus 2 --cyc" \
	   "3 --vcpus 3 --cpus 3 --noretcomp" "4 --vcpus 4 --cpus 2 --tnt64 --no-timing"; do
	set -- $cfg
	seed=$1
	shift
	synth --per-thread --seed "$seed" --branches 12000 "$@" \
		--tsc-offset -0x123456789,0x5000000,-0x40,0x7777 -o pt ||
		fail "vmpt-synth --per-thread $cfg"
	what="per-thread seed $cfg"
	truth_branches_by 0 pt.branches > want.b
	perf_branches_by 0 pt.perf.data > got.b
	compare_streams "branches ($what)" "$(tids pt)" want.b got.b
	truth_insns_by 0 pt.insn > want.i
	perf_insns_by 0 pt.perf.data > got.i
	compare_streams "instructions ($what)" "$(tids pt)" want.i got.i
	check_vmcs_owner pt
	runs=$((runs + 1))
	insns=$((insns + $(wc -l < want.i)))
	branches=$((branches + $(wc -l < want.b)))
done

# per CPU: perf record -a
switches=0
migrations=0
for cfg in "5 --vcpus 2 --cpus 2" "6 --vcpus 3 --cpus 2 --cyc" \
	   "7 --vcpus 4 --cpus 3 --noretcomp" "8 --vcpus 2 --cpus 4 --tnt64"; do
	set -- $cfg
	seed=$1
	shift
	synth --seed "$seed" --branches 12000 "$@" \
		--tsc-offset -0x123456789,0x5000000,-0x40,0x7777 -o pc ||
		fail "vmpt-synth --cpus $cfg"
	what="per-cpu seed $cfg"
	# perf's dry-run: each offset it reports is a true one
	perf inject -i pc.perf.data --vm-time-correlation=dry-run 2>&1 |
		sed -n 's/^VMCS: \(0x[0-9a-f]*\)  TSC Offset \(0x[0-9a-f]*\)$/\1 \2/p' |
		sort -u > got.off
	awk '{ print $1, $2 }' pc.tsc | sort > want.off
	[ -s got.off ] || fail "$what: perf inject found no offset"
	[ -z "$(comm -13 want.off got.off)" ] ||
		fail "$what: perf inject reported offsets not in the truth: $(comm -13 want.off got.off)"
	spec=$(awk '{ printf "%s%s:%s", (NR > 1 ? " " : ""), $2, $1 }' pc.tsc)
	perf inject -i pc.perf.data --vm-time-correlation="$spec" --force > inject.log 2>&1 ||
		{ cat inject.log; fail "$what: perf inject --force"; }
	keys=$(for t in $(tids pc); do for c in $(seq 0 3); do echo "$t|$c"; done; done)
	truth_branches_by 1 pc.branches > want.b
	perf_branches_by 1 pc.perf.data > got.b
	compare_streams "branches ($what)" "$keys" want.b got.b
	truth_insns_by 1 pc.insn > want.i
	perf_insns_by 1 pc.perf.data > got.i
	compare_streams "instructions ($what)" "$keys" want.i got.i
	# the VMM and its threads as perf sees them
	perf script -i pc.perf.data --show-task-events --show-switch-events 2>/dev/null |
		grep PERF_RECORD > side.txt || true
	grep -q "PERF_RECORD_COMM exec: qemu-system-x86:4242/4242" side.txt ||
		fail "$what: no VMM process COMM"
	for t in $(tids pc); do
		grep -q "PERF_RECORD_COMM: CPU $((t - 4243))/KVM:4242/$t" side.txt ||
			fail "$what: no COMM of vCPU thread $t"
	done
	n=$(grep -c 'SWITCH_CPU_WIDE OUT' side.txt) || fail "$what: no context switches"
	switches=$((switches + n))
	# threads that ran on more than one CPU
	m=$(grep -v '^#' pc.insn | awk '{ print $2, $3 }' | sort -u |
		awk '{ n[$1]++ } END { for (t in n) if (n[t] > 1) m++; print m + 0 }')
	migrations=$((migrations + m))
	runs=$((runs + 1))
	insns=$((insns + $(wc -l < want.i)))
	branches=$((branches + $(wc -l < want.b)))
done
[ "$migrations" -gt 0 ] || fail "no thread migrated between CPUs"
echo "perf agreed on $runs vCPU-thread traces (4 per thread, 4 per CPU): $insns" \
	"instructions and $branches branches, each of its thread (and CPU);" \
	"$switches context switches, $migrations threads that migrated"
