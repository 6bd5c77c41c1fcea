#!/bin/bash
# --guest-recording over a real guest (suite guest-vm): the QEMU TCG Debian
# guest of vm-tests/guest boots, vmpt guest collect records its sideband
# while two processes run (a shell loop and md5sum, so the guest CPUs
# switch), with its kcore and binaries.  The host's Intel PT is synthesized
# over that guest's real kernel text and user binaries, 2 vCPUs, a TSC
# offset != 0, then:
# - the truth against the guest sideband as perf reads it: every guest
#   instruction of the task perf's switch records put on that guest CPU at
#   that time, with its comm and the mapping that holds it;
# - vmpt script -i REC decodes the truth's every instruction with its
#   guest task, symbol and dso by itself (guest/ as vmpt record --guest
#   saves it), with the TSC offsets it learns from the trace (the truth's,
#   every sample agreeing) and with KVM's in REC/kvm-tsc;
# - perf's own guest pipeline (man perf-intel-pt, TRACING VIRTUAL MACHINES)
#   shows every instruction, host and guest, with the truth's task,
#   address, symbol and dso.  perf needs what vmpt-agent's sideband lacks
#   (an ID_INDEX of each id's CPU, the kernel text MMAP): guest-for-perf
#   adds them to its copy; perf reads a guest binary from the host's file
#   of the same path, so the run for perf leaves out what only the guest
#   has (the agent itself, the vdso) or has other bytes of (a host library
#   updated since the guest image was built).
# The trace starts at md5sum's COMM: how long each task runs in the guest
# varies from boot to boot, and from there md5sum and the shell run in the
# trace whatever the timing was.  busybox is read into the guest's page
# cache first: md5sum reading it from the disk slept through the trace in
# one boot (its exec's kernel path never got back to user space: no
# instructions of md5sum in busybox).
# QEMU is killed at the end, whatever happens.
. "$(dirname "$0")/synth-lib.sh"
: "${VMPT:?}" "${SRCDIR:?}" "${VMX_KERNEL:?}" "${GUEST_FOR_PERF:?}"
for p in qemu-system-x86_64 python3 apt-get; do
	command -v "$p" >/dev/null || { echo "SKIP: $p missing (tools/install-deps.sh)"; exit 77; }
done
HERE=$(cd "$(dirname "$0")" && pwd)
GUEST=$SRCDIR/vm-tests/guest
WORK=$(mktemp -d /tmp/vmpt-synth-guest.XXXXXX)
cleanup() {
	rc=$?
	if [ -f "$WORK/qemu.pid" ]; then
		pid=$(cat "$WORK/qemu.pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
	fi
	# A failure's recording stays for a look (each boot's guest differs).
	if [ "$rc" != 0 ]; then
		echo "the recordings are kept in $WORK" >&2
		return
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
cd "$WORK"

IMG=$(timeout 600 "$GUEST/build-image.sh")
PORT=$(timeout 300 "$GUEST/boot-guest.sh" "$IMG" "$WORK" 240 1200)
echo "[127.0.0.1]:$PORT $(cat "$IMG/host_key.pub")" > known_hosts
timeout 600 "$VMPT" guest collect "ssh://root@127.0.0.1:$PORT" -i "$IMG/client_key" \
	--known-hosts known_hosts --timeout 120 -o rec --kcore -- /bin/sh -c \
	'cat /bin/busybox > /dev/null; (i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done) & (md5sum /bin/busybox; ls /proc/self/ > /dev/null) & wait' \
	> collect.out 2> collect.err || { cat collect.err; fail "vmpt guest collect"; }
kill "$(cat qemu.pid)" 2>/dev/null || true
G=rec/guest
perf script -i "$G/perf.data" --show-task-events 2>/dev/null | grep -q "PERF_RECORD_COMM: md5sum" ||
	fail "the guest sideband has no md5sum"

from=$(perf script -i "$G/perf.data" --show-task-events --ns -F time 2>/dev/null |
	awk '/PERF_RECORD_COMM: md5sum/ { sub(":", "", $1); sub("[.]", "", $1); print $1; exit }')
[ -n "$from" ] || fail "no time of md5sum's COMM"
OFF=-0x123456789a
POFF=$(printf '0x%x' $((OFF)))
synth() {
	rm -rf r.perf.data
	"$SYNTH" --vm --host-kernel "$VMX_KERNEL" --guest-recording "$1" --vcpus 2 \
		--tsc-offset "$OFF" --psb-period 1024 --branches "${BRANCHES:-20000}" --guest-from "$from" \
		"${@:2}" -o r -q
}

# the whole guest; on a loaded machine md5sum can spend the first window
# in the kernel and the vdso (a fresh-clone CI and a run beside two
# fuzzers did), so a window three times as long before failing
want=("md5sum	/bin/busybox" "md5sum	[guest.kernel.kallsyms]" "sh	/bin/busybox")
for branches in 20000 60000; do
	BRANCHES=$branches synth rec --seed 1 || fail "vmpt-synth --guest-recording"
	cut -f7,8 r.gtruth | sort -u > tasks
	missing=
	for t in "${want[@]}"; do
		grep -qxF "$t" tasks || missing=$t
	done
	[ -z "$missing" ] && break
	echo "note: no instructions of '$missing' in $branches branches; what ran instead:"
	cut -f7,8 r.gtruth | sort | uniq -c
done
[ -z "$missing" ] || fail "no instructions of '$missing'"
n=$(python3 "$HERE/check_gtruth.py" r.gtruth "$G/perf.data" "$OFF") ||
	fail "truth against the guest sideband: $n"
grep -q "	\[vdso\]	" r.gtruth || echo "note: no vdso code ran"
echo "$n guest instructions of the real guest's tasks, as its sideband says"

# vmpt script follows it all by itself: first with the TSC offsets from
# the trace alone (the vCPU threads sleep while their guest CPUs idle: no
# MTC for milliseconds, the CTC's count wraps), then with those vmpt
# record saves on a KVM host (REC/kvm-tsc), which take another path
vmpt_script_truth() {
	start=$(date +%s%N)
	"$VMPT" script -i r.perf.data --itrace=i0nse -F machine_pid,vcpu,comm,tid,ip,sym,dso \
		> vmpt.out 2> vmpt.err || { cat vmpt.err; fail "vmpt script ($1)"; }
	ms=$((($(date +%s%N) - start) / 1000000))
	res=$(python3 "$HERE/check_perf_guest.py" r.gtruth vmpt.out 4242 "$G/root") ||
		fail "vmpt script ($1) against the truth: $res"
	[ "$(wc -l < vmpt.out)" = "$(wc -l < r.gtruth)" ] ||
		fail "vmpt script ($1): $(wc -l < vmpt.out) lines, $(wc -l < r.gtruth) instructions in the truth"
	echo "vmpt script -i REC ($1): all $(wc -l < r.gtruth) instructions of the truth, each" \
		"with its guest task, symbol and dso ($ms ms)"
}
vmpt_script_truth "offsets from the trace"
# Each VMCS whose guest TSC the trace sampled says the truth's offset,
# every sample agreeing; a vCPU the trace never caught in its guest with
# a TSC packet (it idled through the window) has no line: it takes the
# other's, as KVM gives a VM's vCPUs one (the truth above holds with it).
grep -qvE "^vmpt script: VMCS 0x1c[03] TSC offset $POFF \(from the trace, ([0-9]+) of \1 samples agree\)$" \
	vmpt.err && fail "vmpt script: not the truth's offset $POFF, or more on stderr: $(cat vmpt.err)"
[ -s vmpt.err ] || fail "vmpt script: no offset learned from the trace"
for v in 0x1c0 0x1c3; do
	grep -q "VMCS $v " vmpt.err || echo "note: no guest TSC of VMCS $v in the trace"
done
sed 's/^/  /' vmpt.err
for v in 0 1; do
	echo "vm 4242-11 vcpu $v tsc-offset $((OFF))"
done > r.perf.data/kvm-tsc
vmpt_script_truth "KVM's offsets"

# perf's pipeline, on what perf can read
ks=$(awk '$3 == "_text" { print $1 }' "$G/kcore_dir/kallsyms")
ke=$(awk '$3 == "_etext" { print $1 }' "$G/kcore_dir/kallsyms")
"$GUEST_FOR_PERF" "$G/perf.data" gperf.data "0x$ks" "$((0x$ke - 0x$ks))" ||
	fail "guest-for-perf"
rm -rf forperf && cp -r rec forperf
rm -f forperf/guest/vdso
# perf reads no guest module code (kcore_dir's modules): the run for perf
# calls none
grep -v '\[' rec/guest/kcore_dir/kallsyms > forperf/guest/kcore_dir/kallsyms
find forperf/guest/root -type f | while read -r f; do
	cmp -s "$f" "${f#forperf/guest/root}" || rm "$f"
done
total=0
allowed=0
for cfg in "1" "2 --cyc"; do
	set -- $cfg
	synth forperf --seed "$@" || fail "vmpt-synth ($cfg)"
	python3 "$HERE/check_gtruth.py" r.gtruth "$G/perf.data" "$OFF" > /dev/null ||
		fail "truth against the guest sideband ($cfg)"
	perf inject -i r.perf.data --vm-time-correlation=dry-run 2>&1 |
		sed -n 's/^VMCS: \(0x[0-9a-f]*\)  TSC Offset \(0x[0-9a-f]*\)$/\2/p' | sort -u > off.got
	[ "$(cat off.got)" = "$POFF" ] || fail "perf's dry-run offsets ($cfg): $(cat off.got)"
	start=$(date +%s%N)
	perf_guest_pipeline r.perf.data gperf.data "$POFF" 4242 "$VMX_KERNEL" perf.out
	pms=$((($(date +%s%N) - start) / 1000000))
	res=$(python3 "$HERE/check_perf_guest.py" r.gtruth perf.out 4242 "$GUEST_ROOT") ||
		fail "perf's guest pipeline ($cfg): $res"
	# vmpt script's lines are perf's, vCPU by vCPU
	for v in 0 1; do
		echo "vm 4242-11 vcpu $v tsc-offset $((OFF))"
	done > r.perf.data/kvm-tsc
	start=$(date +%s%N)
	"$VMPT" script -i r.perf.data --itrace=i0nse -F machine_pid,vcpu,comm,tid,ip,sym,dso \
		> vmpt.out 2> vmpt.err || { cat vmpt.err; fail "vmpt script ($cfg)"; }
	vms=$((($(date +%s%N) - start) / 1000000))
	# (but for the comm perf gives by a sample's estimated time near an
	# exec, allowed above: vmpt's is the truth's)
	comms=0
	for v in 0 1; do
		grep -E "^VM: 4242 VCPU:00$v |CPU $v/KVM" perf.out > perf.$v
		grep -E "^VM: 4242 VCPU:00$v |CPU $v/KVM" vmpt.out > vmpt.$v
		for f in perf vmpt; do
			sed -E 's/^(VM: +[0-9]+ VCPU:[0-9]+) +[^ ]+ +/\1 /' $f.$v > $f.$v.nocomm
		done
		compare "vCPU $v: vmpt script and perf's pipeline ($cfg)" perf.$v.nocomm vmpt.$v.nocomm
		comms=$((comms + $(diff perf.$v vmpt.$v | grep -c '^<' || true)))
	done
	echo "$cfg: $(wc -l < vmpt.out) lines of vmpt script = perf's per vCPU ($comms comms" \
		"at an exec apart); vmpt script $vms ms, perf's pipeline $pms ms"
	set -- $res
	total=$((total + $1))
	allowed=$((allowed + $2))
done
echo "perf's guest pipeline agreed on 2 recordings over the real guest: $total" \
	"instructions (Debian's kernel from the guest's kcore, busybox, sshd and its" \
	"libraries); $allowed comm names at an exec allowed"
