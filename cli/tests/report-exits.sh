#!/bin/bash
# vmpt report --vm-exits on synthesized VM recordings whose exits the
# synthesizer knows (P.exits: reason, qualification, guest RIP, vCPU,
# host thread, KVM handler): every exit is reported with them, the reason
# from Event Trace where recorded and from the KVM handler the host ran
# otherwise (the two agree where both exist), the aggregates per reason
# and per vCPU count what the truth counts, the JSON is valid against
# docs/report.schema.json (report_exits_check.py), and the text's tables
# say the same counts.  Host and guest times are the decoder's estimates
# (MTC, CYC): how many equal the truth to the tick is printed, not judged.
# usage: report-exits.sh   (env: VMPT SYNTH VMX_KERNEL GUEST_KERNEL KVM_SELFTEST SRCDIR)
set -u
: "${VMPT:?}" "${SYNTH:?}" "${VMX_KERNEL:?}" "${GUEST_KERNEL:?}" "${KVM_SELFTEST:?}" "${SRCDIR:?}"
python3 -c 'import jsonschema' 2> /dev/null || { echo "python3-jsonschema missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
CHECK=$SRCDIR/cli/tests/report_exits_check.py
SCHEMA=$SRCDIR/docs/report.schema.json
fail=0 total=0
VM=(--vm --host-kernel "$VMX_KERNEL" --guest-elf "$GUEST_KERNEL" --guest-start start_kernel
    --psb-period 1024 --branches 8000)
K=(--vmlinux "$VMX_KERNEL" --guestvmlinux "$GUEST_KERNEL")

# check NAME PREFIX [--no-event-trace] -- REPORT ARGS...
check() {
	local name=$1 p=$2 et=$3
	shift 4
	"$VMPT" report --vm-exits --json -i "$p.perf.data" "$@" > "$p.json" 2> "$p.err" ||
		{ echo "FAIL $name: vmpt report: $(cat "$p.err")"; fail=1; return; }
	# shellcheck disable=SC2086
	out=$(python3 "$CHECK" "$p.json" "$p.exits" "$SCHEMA" $et) || fail=1
	echo "$name: $out"
	total=$((total + $(grep -vc 'lost$' "$p.exits")))
	# the text says the same: the count, and each reason's count
	"$VMPT" report --vm-exits --per-exit -i "$p.perf.data" "$@" > "$p.txt" 2> /dev/null
	n=$(grep -vc 'lost$' "$p.exits")
	grep -q "^# $n VM exits" "$p.txt" || { echo "FAIL $name: text: $(sed -n 3p "$p.txt")"; fail=1; }
	awk '$NF != "lost" { n[$5]++ } END { for (r in n) print r, n[r] }' "$p.exits" | sort -n > want.r
	sed -n '/^# reason/,/^  all/p' "$p.txt" | grep -v '^#\|^  all' |
		sed -E 's/.*\(([0-9]+)\) +([0-9]+) .*/\1 \2/' | sort -n > got.r
	cmp -s want.r got.r || { echo "FAIL $name: text reasons: $(diff want.r got.r | head -3)"; fail=1; }
	[ "$(grep -c '^  [0-9]*\.[0-9]* ' "$p.txt")" = "$n" ] ||
		{ echo "FAIL $name: --per-exit rows"; fail=1; }
}

"$SYNTH" "${VM[@]}" --event --vcpus 2 --seed 7 -o et1 -q || exit 1
check "Event Trace, 2 vCPUs" et1 "" -- "${K[@]}"
"$SYNTH" "${VM[@]}" --event --ptw --pwr-evt --vcpus 3 --guest-period 200 --seed 11 -o et2 -q || exit 1
check "Event Trace, 3 vCPUs, frequent interrupts" et2 "" -- "${K[@]}"
"$SYNTH" "${VM[@]}" --event --cyc --vcpus 2 --seed 2 -o et3 -q || exit 1
check "Event Trace, CYC" et3 "" -- "${K[@]}"
"$SYNTH" "${VM[@]}" --vcpus 2 --seed 7 -o h1 -q || exit 1
check "no Event Trace: the handler" h1 --no-event-trace -- "${K[@]}"
"$SYNTH" "${VM[@]}" --per-thread --cpus 2 --vcpus 3 --seed 6 --tsc-offset 0,0,0 -o h2 -q || exit 1
check "no Event Trace, vCPU threads per thread" h2 --no-event-trace -- "${K[@]}"
"$SYNTH" "${VM[@]}" --event --per-thread --cpus 2 --vcpus 4 --seed 5 -o et4 -q || exit 1
check "Event Trace, vCPU threads, guest TSC offsets" et4 "" -- "${K[@]}"
"$SYNTH" --vm --guest-code --elf "$KVM_SELFTEST" --host-kernel "$VMX_KERNEL" --event \
	--branches 6000 --seed 7 -o gc -q || exit 1
check "KVM selftest guest code" gc "" -- --guest-code --vmlinux "$VMX_KERNEL" --elf "$KVM_SELFTEST"
echo "$total VM exits checked"

# bad input: a message naming what is wrong, exit status 1 (input) or 2 (usage)
msg() {
	local want=$1 status=$2
	shift 2
	"$VMPT" report "$@" > /dev/null 2> err.txt
	local got=$?
	[ "$got" = "$status" ] && grep -qxF -- "$want" err.txt ||
		{ echo "FAIL vmpt report $*: status $got, $(cat err.txt)"; fail=1; }
}
printf "%0200d\n" 0 > notperf
msg "vmpt report: notperf: offset 0: not a perf.data file (no PERFILE2 magic)" 1 -i notperf
msg "vmpt report: missing.data: No such file or directory" 1 -i missing.data
msg "vmpt report: unknown sort key 'cpu' (machine, comm, pid, tid, dso, sym)" 2 \
	--sort comm,cpu -i et1.perf.data
msg "vmpt report: --percent-limit -1: a percentage (0.5, say)" 2 --percent-limit -1
msg "vmpt report: --time 5,x: invalid time string (START,STOP in seconds, or percentages A%/N, A%-B%)" \
	2 --time 5,x -i et1.perf.data
if [ -w /dev/full ]; then
	"$VMPT" report -i et1.perf.data "${K[@]}" > /dev/full 2> err.txt
	[ $? = 1 ] && grep -qx "vmpt report: writing output: No space left on device" err.txt ||
		{ echo "FAIL vmpt report > /dev/full: $(cat err.txt)"; fail=1; }
fi
exit $fail
