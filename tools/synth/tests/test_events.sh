#!/bin/bash
# Event Trace, PTWRITE and power events: perf script must decode every
# synthesized one to exactly the truth (P.events), with the instruction and
# branch truth unchanged by them:
# - --itrace=I: each CFE (VM entries and exits with the exit's reason and
#   qualification as VMXR/VMXQ, interrupts with their vector, IRET), its
#   IP where it binds to one;
# - --itrace=w: each PTWRITE payload, at the PTWRITE with fup_on_ptw, and
#   perf's emulated PTWRITE at its function;
# - --itrace=p: MWAIT, PWRE, EXSTOP, PWRX of the host's idle loop and of a
#   guest that runs HLT/MWAIT itself (cpu-pm), and each frequency change
#   (perf 6.1 prints the payload of a PWRE after HLT wrong: not compared);
# - P.exits: every VM exit of the branch truth with its reason, and the
#   KVM handler perf's branches show the host running after it is the
#   one P.exits names (a decoder can tell the reason from the host code).
. "$(dirname "$0")/synth-lib.sh"
: "${VMX_KERNEL:?}" "${GUEST_KERNEL:?}" "${KVM_SELFTEST:?}" "${VMPT:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

VM=(--vm --host-kernel "$VMX_KERNEL" --guest-elf "$GUEST_KERNEL" --guest-start start_kernel
    --guest-period 500 --psb-period 1024)
VMK=(--vmlinux "$VMX_KERNEL" --guestvmlinux "$GUEST_KERNEL")

# perf's event samples as "TID KIND IP DETAIL" (as P.events has them):
# IP is "-" where the event binds to none (perf's "IP: 0", PWRE, PWRX,
# CBR); a PTW without fup_on_ptw has perf's IP: 0 (also an emulated one)
# unless fup is 1, so KEEP_EPTW=1 keeps the IP of those (emulated: a
# trace with fup_on_ptw, where real ones have IP: 1).
perf_events() {
	local file=$1 keep=$2
	shift 2
	perf script -i "$file" --itrace=Iwpe -F tid,event,ip,synth "$@" 2>&1 |
	awk -v keep="$keep" '
	/error/ { print; next }
	{ tid = $1; ev = $2; ip = $NF; d = ""
	  for (i = 3; i < NF; i++) d = d (d == "" ? "" : " ") $i
	  if (ev != "pwre:") last[tid] = ev }
	ev == "evt:" { # cfe: TYPE IP: b vector: v [EVD: x]...
		n = split(d, f, " "); out = f[2]
		for (i = 5; i <= n; i++) out = out " " f[i]
		print tid, "cfe", (f[4] == 1 ? ip : "-"), out; next }
	ev == "ptwrite:" { # IP: b payload: x [string]
		split(d, f, " ")
		print tid, "ptw", (f[2] == 1 || keep ? ip : "-"), "fup: " f[2] " payload: " f[4]; next }
	ev == "mwait:" { print tid, "mwait", ip, d; last[tid] = ev; next }
	ev == "pwre:" { # perf 6.1 keeps a PWRE of its own (HLT) in
		# pwrx_payload and prints the last PWRE after an MWAIT again
		print tid, "pwre", "-", (last[tid] == "mwait:" ? d : "(HLT)")
		last[tid] = ev; next }
	ev == "exstop:" { print tid, "exstop", ip; next }
	ev == "pwrx:" { print tid, "pwrx", "-", d; next }
	ev == "cbr:" { # the first is where the trace starts, no change
		split(d, f, " ")
		if (cbr[tid]++) print tid, "cbr", "-", "cbr: " f[2]
		next }
	'
}

# The truth the same way: TID from the threaded lines (or the one pid),
# the emulated PTWRITEs marked so only by their IP, lost ones dropped.
truth_events() {
	local file=$1 keep=$2 pid=$3
	awk -v keep="$keep" -v pid="$pid" '
	$NF == "lost" { next }
	{ tid = pid; k = 2
	  if ($2 ~ /^[0-9]+$/) { tid = $2; k = 4 }
	  kind = $k; ip = $(k + 1); d = ""
	  for (i = k + 2; i <= NF; i++) d = d (d == "" ? "" : " ") $i }
	kind == "ptw" {
		em = sub(/ emulated$/, "", d)
		if (d ~ /^fup: 0/ && !(em && keep)) ip = "-"
		print tid, kind, ip, d; next }
	kind == "pwre" { print tid, kind, "-", (ip == "-" ? "(HLT)" : d); next }
	kind == "exstop" { print tid, kind, ip; next }
	{ print tid, kind, ip, d }' "$file"
}

# compare_by_tid WHAT WANT GOT: equal thread by thread (perf interleaves
# the threads' buffers by time; within one, the order is exact), the
# frequency changes apart: perf reports a CBR in the order of the packets,
# so one that comes while the TNT bits of an emulated PTWRITE collect goes
# before that PTWRITE, which perf knows only at its TNT packet.
compare_by_tid() {
	local what=$1
	for t in $(awk '{ print $1 }' "$2" "$3" | sort -u); do
		for k in cbr other; do
			awk -v t="$t" -v k="$k" '$1 == t && (($2 == "cbr") == (k == "cbr"))' "$2" > want.t
			awk -v t="$t" -v k="$k" '$1 == t && (($2 == "cbr") == (k == "cbr"))' "$3" > got.t
			if [ -s want.t ]; then
				compare "$what (thread $t, $k)" want.t got.t
			else
				[ ! -s got.t ] || fail "$what (thread $t, $k): perf has $(wc -l < got.t), the truth none"
			fi
		done
	done
}

# The KVM handler perf's branches reach after each VM exit, in order.
perf_handlers() {
	perf script -i "$1" --itrace=be -F flags,ip,sym,addr "${@:2}" 2>&1 |
	awk 'BEGIN { n = split("handle_exception_nmi handle_external_interrupt " \
		"kvm_emulate_cpuid kvm_emulate_halt kvm_emulate_hypercall handle_io " \
		"kvm_emulate_rdmsr kvm_emulate_wrmsr kvm_emulate_mwait " \
		"handle_ept_violation", h, " "); for (i = 1; i <= n; i++) is[h[i]] = 1 }
	/=> *[0-9a-f]+ vmx_vmexit$/ { want = 1; next }
	want && ($NF in is) { print $NF; want = 0 }'
}

events=0 exits=0 ptws=0 pwr=0
# check PREFIX PID KEEP_EPTW THREADED KERNELS...: instructions, branches,
# events; for the VM scenario the exits too.
check() {
	local p=$1 pid=$2 keep=$3 threaded=$4
	shift 4
	if [ "$threaded" = 0 ]; then
		truth_insns "$p.insn" > want.i
		perf_insns "$p.perf.data" "$@" > got.i
		compare "$p instructions" want.i got.i
		truth_branches "$p.branches" > want.b
		perf_branches "$p.perf.data" "$@" > got.b
		compare "$p branches" want.b got.b
	fi
	truth_events "$p.events" "$keep" "$pid" > want.e
	perf_events "$p.perf.data" "$keep" "$@" > got.e
	grep -q error got.e && { grep error got.e | head -3; fail "$p: perf reports errors"; }
	[ -s want.e ] || fail "$p: no events"
	compare_by_tid "$p events" want.e got.e
	events=$((events + $(wc -l < want.e)))
	ptws=$((ptws + $(grep -c ' ptw ' want.e || true)))
	pwr=$((pwr + $(grep -c ' pwrx \| cbr ' want.e || true)))
	[ -f "$p.exits" ] || return 0
	# P.exits: one line per VM exit of the branch truth, at its guest RIP
	# and TSC, with the CFE's reason and qualification
	grep -v '^#' "$p.branches" | awk '$NF == "vmexit" { print $3, $1 }' | sort > want.x
	awk '{ print $1, $4 }' "$p.exits" | sort > got.x
	compare "$p exits (TSC, RIP)" want.x got.x
	awk '$NF != "lost" && ($2 == "cfe" || $4 == "cfe") && / VMEXIT/ {
		print $(NF), $(NF - 2) }' "$p.events" | sort > want.r
	awk '$NF != "lost" { printf "%#x %s\n", $5, $6 }' "$p.exits" | sort > got.r
	if grep -q ' cfe ' want.e; then
		compare "$p exit reasons (CFE)" want.r got.r
	fi
	if [ "$threaded" = 0 ]; then
		perf_handlers "$p.perf.data" "$@" > got.h
		sort -n "$p.exits" | awk '{ print $8 }' > want.h
		# the last exit's handler may be cut off by the trace's end
		head -n "$(wc -l < got.h)" want.h > want.h2
		[ "$(wc -l < got.h)" -ge "$(( $(wc -l < want.h) - 1 ))" ] ||
			fail "$p: perf shows $(wc -l < got.h) handlers for $(wc -l < want.h) exits"
		compare "$p exit handlers" want.h2 got.h
	fi
	exits=$((exits + $(wc -l < "$p.exits")))
}

# The VM scenario: Event Trace, PTWRITE with FUPs, power events with the
# host's idle loop and the guest's own HLT/MWAIT.
n=0
for extra in "--seed 1 --guest-pm" "--seed 2 --cyc --vcpus 2" \
	     "--seed 3 --noretcomp --tnt64 --freq-period 2000 --vcpus 2 --guest-pm" \
	     "--seed 4 --no-timing --guest-pm"; do
	n=$((n + 1))
	# shellcheck disable=SC2086
	"$SYNTH" "${VM[@]}" --branches 8000 --event --ptw --fup-on-ptw --pwr-evt $extra \
		-o vm$n -q || fail "vmpt-synth $extra"
	check vm$n 4242 1 0 "${VMK[@]}"
done
# PTWRITE without FUPs (payloads only), vCPU threads per thread
"$SYNTH" "${VM[@]}" --branches 8000 --event --ptw --pwr-evt --seed 5 -o vm5 -q ||
	fail "vmpt-synth ptw"
check vm5 4242 0 0 "${VMK[@]}"
"$SYNTH" "${VM[@]}" --branches 8000 --event --ptw --fup-on-ptw --pwr-evt --guest-pm \
	--per-thread --cpus 2 --vcpus 3 --seed 6 -o vm6 -q || fail "vmpt-synth per thread"
check vm6 4242 1 1 "${VMK[@]}"
# KVM selftest: the guest runs the program's own code (ucall I/O, PTWRITE)
"$SYNTH" --vm --guest-code --elf "$KVM_SELFTEST" --host-kernel "$VMX_KERNEL" --event \
	--ptw --fup-on-ptw --branches 4000 --seed 7 -o gc -q || fail "vmpt-synth guest-code"
check gc 4242 1 0 --guest-code --vmlinux "$VMX_KERNEL"
# User space with the kernel traced: interrupts and IRET, frequency changes
"$SYNTH" --elf /usr/bin/bash --host-kernel "$GUEST_KERNEL" --irq-period 400 --event \
	--freq-period 3000 --cyc --branches 6000 --seed 8 -o u1 -q || fail "vmpt-synth user"
check u1 4242 1 0 --vmlinux "$GUEST_KERNEL"
# User space only: interrupts leave the trace (TIP.PGD); PTWRITE in a program
"$SYNTH" --elf "$KVM_SELFTEST" --start guest_code --irq-period 300 --event --ptw \
	--fup-on-ptw --branches 4000 --seed 9 -o u2 -q || fail "vmpt-synth user ptw"
check u2 4242 1 0
# vmpt script prints perf's lines with nanosecond times: a PTWRITE or a
# power event is a state of perf's decoder, sampled or not, and moves the
# time of the samples after it.
"$SYNTH" --elf /usr/bin/bash --host-kernel "$GUEST_KERNEL" --irq-period 400 --event --ptw \
	--pwr-evt --branches 4000 --seed 1 -o u3 -q || fail "vmpt-synth user ptw pwr"
vmpt_like_perf u3.perf.data --vmlinux "$GUEST_KERNEL" -- \
	"--itrace=be --ns -F time,ip,addr,flags" "--itrace=i0nse --ns -F time,ip" \
	"--itrace=Iwpe --ns -F time,tid,event,ip,synth" "--call-trace"
echo "perf agreed on $events events ($ptws PTWRITEs, $pwr power exits and" \
     "frequency changes) and on $exits VM exits with their handlers; vmpt script printed" \
     "perf's lines with ns times on a trace with PTWRITE and power events"
