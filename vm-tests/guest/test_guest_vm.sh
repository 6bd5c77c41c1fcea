#!/bin/bash
# A real Linux guest: Debian's kernel and a minimal root with sshd (see
# build-image.sh, cached), booted under QEMU TCG.  vmpt deploys the agent
# over SFTP, checks the guest's clock, records guest sideband of a command
# run in the guest, fetches the binaries it maps and the guest's compact
# kcore; perf and vmpt must read the result.  Then docs/vm-tracing.md's
# path on it: vmpt record --pid QEMU --guest, and perf inject --guest-data
# shows every guest record with the vCPU it ran on.  A second boot without
# tsc=reliable (the kernel marks the TSC unstable) must not pass the check,
# for the reasons the kernel gives.  One guest at a time; QEMU is killed at
# the end, whatever happens.
set -euo pipefail
: "${VMPT:?}" "${BUILDDIR:?}" "${SRCDIR:?}"
for p in qemu-system-x86_64 perf python3 apt-get; do
	command -v "$p" >/dev/null || { echo "SKIP: $p missing (tools/install-deps.sh)"; exit 77; }
done
HERE=$SRCDIR/vm-tests/guest
W=$(mktemp -d /tmp/vmpt-guest-vm.XXXXXX)
stop_guest() {	# stop_guest DIR: the QEMU boot-guest.sh started there
	if [ -f "$1/qemu.pid" ]; then
		pid=$(cat "$1/qemu.pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
		rm -f "$1/qemu.pid"
	fi
}
cleanup() {
	stop_guest "$W"
	stop_guest "$W/plain"
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fails=0
check() {	# check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then
		echo "ok: $what"
	else
		echo "FAIL: $what"
		fails=$((fails + 1))
	fi
}

t0=$(date +%s)
IMG=$(timeout 600 "$HERE/build-image.sh")
t1=$(date +%s)
echo "image: $IMG ($((t1 - t0)) s)"
PORT=$(timeout 300 "$HERE/boot-guest.sh" "$IMG" "$W" 240 1200)
t2=$(date +%s)
echo "boot: SSH on 127.0.0.1:$PORT after $((t2 - t1)) s"
echo "[127.0.0.1]:$PORT $(cat "$IMG/host_key.pub")" > "$W/known_hosts"
URL=ssh://root@127.0.0.1:$PORT
CONN=(-i "$IMG/client_key" --known-hosts "$W/known_hosts" --timeout 120)

timeout 300 "$VMPT" guest check "$URL" "${CONN[@]}" > "$W/check.out" 2> "$W/check.err" ||
	{ echo "FAIL: vmpt guest check"; cat "$W/check.out" "$W/check.err"; exit 1; }
cat "$W/check.out"
check "the agent was deployed over SFTP" grep -q "vmpt: deploying .* to 127.0.0.1:.cache/vmpt/vmpt-agent" "$W/check.err"
# Booted with no-kvmclock tsc=reliable clocksource=tsc and the JIT off: all
# the agent reads for real (CPUID, the kernel log, perf's mmap page) says
# the clock can be lined up.
check "check: no-kvmclock on the cmdline" grep -qx "cmdline no-kvmclock: yes" "$W/check.out"
check "check: tsc=reliable on the cmdline" grep -qx "cmdline tsc=reliable: yes" "$W/check.out"
check "check: CPUID says QEMU TCG" grep -qx "hypervisor: QEMU TCG (CPUID 'TCGTCGTCGTCG')" "$W/check.out"
check "check: no kvmclock" grep -qx "kvmclock: no" "$W/check.out"
check "check: clocksource tsc" grep -qx "clocksource: tsc" "$W/check.out"
check "check: the kernel log read, TSC not marked unstable" \
	grep -qx "kernel log: the TSC was not marked unstable" "$W/check.out"
check "check: perf's mmap page has cap_user_time_zero" grep -qx "perf cap_user_time_zero: 1" "$W/check.out"
check "check: the guest's paranoid level" grep -qE "^perf_event_paranoid: -?[0-9]+$" "$W/check.out"
check "check: the BPF JIT off" grep -qx "bpf_jit_enable: 0" "$W/check.out"
check "check: TCG said" grep -q "^note: QEMU emulates this guest (TCG)" "$W/check.out"
check "check: no problem" bash -c "! grep -q '^problem' '$W/check.out'"
check "check: ready" grep -qx "verdict: ready" "$W/check.out"

timeout 600 "$VMPT" guest collect "$URL" "${CONN[@]}" -o "$W/rec" --kcore -- /bin/ls /proc/self/ \
	> "$W/collect.out" 2> "$W/collect.err" ||
	{ echo "FAIL: vmpt guest collect"; cat "$W/collect.err"; exit 1; }
t3=$(date +%s)
echo "collect: $((t3 - t2)) s: $(cat "$W/collect.out")"
G=$W/rec/guest
check "no redeploy" bash -c "! grep -q deploying '$W/collect.err'"
check "the guest command ran" grep -q "vmpt-agent: command exited with status 0" "$W/collect.err"
perf script -i "$G/perf.data" --show-mmap-events --show-task-events > "$W/script.out" 2> "$W/script.err" ||
	{ echo "FAIL: perf script"; cat "$W/script.err"; fails=$((fails + 1)); }
check "perf script: exec of ls" grep -q "PERF_RECORD_COMM exec: ls:" "$W/script.out"
lspid=$(grep -m1 "PERF_RECORD_COMM exec: ls:" "$W/script.out" | sed 's/.*exec: ls:\([0-9]*\).*/\1/')
check "perf script: ls maps /bin/busybox" \
	grep -qE "PERF_RECORD_MMAP2 $lspid/$lspid: .* r-xp /bin/busybox\$" "$W/script.out"
check "perf script: ls maps the vdso" grep -qE "PERF_RECORD_MMAP2 $lspid/$lspid: .* r-xp \[vdso\]\$" "$W/script.out"
check "perf script: ls exits" grep -qE "PERF_RECORD_EXIT\($lspid:$lspid\)" "$W/script.out"
check "perf script: synthesized sshd mapping" grep -qE "PERF_RECORD_MMAP2 .* r-xp /usr/sbin/sshd\$" "$W/script.out"
PD_LIST=$BUILDDIR/perfdata/tests/pd-list
if [ -x "$PD_LIST" ]; then
	"$PD_LIST" "$G/perf.data" > "$W/pd.out"
	check "vmpt reads as many MMAP2 records as perf" test \
		"$(grep -c PERF_RECORD_MMAP2 "$W/pd.out")" = "$(grep -c PERF_RECORD_MMAP2 "$W/script.out")"
	check "vmpt reads as many COMM records as perf" test \
		"$(grep -c PERF_RECORD_COMM "$W/pd.out")" = "$(grep -c PERF_RECORD_COMM "$W/script.out")"
	check "vmpt reads the TIME_CONV" grep -q PERF_RECORD_TIME_CONV "$W/pd.out"
fi
"$VMPT" guest maps "$W/rec" > "$W/maps.out"
check "vmpt guest maps: ls ran busybox, in the sysroot" \
	grep -qE "^$lspid/$lspid +ls +[0-9a-f]{16}-[0-9a-f]{16} /bin/busybox \(in sysroot\)\$" "$W/maps.out"
check "vmpt guest maps: nothing missing" bash -c "! grep -q '(missing)' '$W/maps.out'"
check "guest busybox in the sysroot" cmp -s /bin/busybox "$G/root/bin/busybox"
check "guest sshd in the sysroot" cmp -s /usr/sbin/sshd "$G/root/usr/sbin/sshd"
check "guest vdso is an ELF image" test "$(head -c4 "$G/vdso" | od -An -c | tr -d ' ')" = '177ELF'
check "guest kcore: kernel and module text" python3 "$SRCDIR/guest-agent/tests/check_kcore.py" "$G/kcore_dir"
check "guest modules: e1000" grep -q "^e1000 " "$G/kcore_dir/modules"
check "collect summary" grep -qE "^guest: [0-9]+ files \([0-9]+ bytes\) in $W/rec/guest, 0 missing, 0 rejected$" "$W/collect.out"

# vmpt-agent kcore DIR by hand in the guest: vmpt_kcore_copy on a real /proc.
timeout 300 "$VMPT" guest collect "$URL" "${CONN[@]}" -o "$W/kdir" --no-binaries -- /bin/sh -c \
	'/root/.cache/vmpt/vmpt-agent kcore /tmp/kd && cmp /proc/modules /tmp/kd/modules &&
	 echo "kcore DIR: $(wc -c < /tmp/kd/kcore) bytes, $(head -c 4 /tmp/kd/kcore | tail -c 3)"' \
	> /dev/null 2> "$W/kdir.err" || { echo "FAIL: vmpt-agent kcore DIR"; cat "$W/kdir.err"; fails=$((fails + 1)); }
grep "^kcore DIR" "$W/kdir.err" || true
check "vmpt-agent kcore DIR: an ELF core of over 1 MB" \
	grep -qE "^kcore DIR: [0-9]{7,} bytes, ELF$" "$W/kdir.err"

# A user who may use sudo -n, and one who may not.
if timeout 300 "$VMPT" guest collect "ssh://vmpt@127.0.0.1:$PORT" "${CONN[@]}" -o "$W/urec" \
	--no-binaries -- /bin/true > "$W/sudo.out" 2> "$W/sudo.err"; then
	check "sudo -n: deployed into the user's home" \
		grep -q "vmpt: deploying .* to 127.0.0.1:.cache/vmpt/vmpt-agent" "$W/sudo.err"
	perf script -i "$W/urec/guest/perf.data" --show-task-events > "$W/sudo.script" 2>&1 || true
	check "sudo -n: sideband of the command" grep -q "PERF_RECORD_COMM exec: true:" "$W/sudo.script"
else
	echo "FAIL: collect as vmpt with sudo -n"
	cat "$W/sudo.err"
	fails=$((fails + 1))
fi
if timeout 300 "$VMPT" guest collect "ssh://nosudo@127.0.0.1:$PORT" "${CONN[@]}" -o "$W/nrec" \
	--no-binaries -d 0.1 > "$W/nosudo.out" 2> "$W/nosudo.err"; then
	echo "FAIL: collect as nosudo succeeded"
	fails=$((fails + 1))
else
	check "no sudo: the guest's stderr in the error" grep -qx \
		"vmpt guest: vmpt-agent record in the guest failed (exit 1): sudo: a password is required" \
		"$W/nosudo.err"
fi

# vmpt record --guest: guest sideband starts and stops with a host recording
# (sideband-only host events: this machine may have no Intel PT), here of
# the guest's QEMU, found through the QMP socket on its command line, for
# as long as 'sleep 3' runs (as perf record -p PID -- sleep 3).
QPID=$(cat "$W/qemu.pid")
mkdir -p "$W/hrec"
H=$W/hrec/host.data
if timeout 300 "$VMPT" record -e dummy --pid "$QPID" -o "$H" --guest "$URL" \
	--guest-identity "$IMG/client_key" --guest-known-hosts "$W/known_hosts" -- sleep 3 \
	> "$W/record.out" 2> "$W/record.err"; then
	cat "$W/record.err"
	check "record --guest: host perf.data" test -s "$H"
	perf script -i "$H.guest/perf.data" --show-task-events > "$W/hscript.out" 2>&1 || true
	check "record --guest: guest sideband beside it" grep -q PERF_RECORD_ "$W/hscript.out"
	check "record --guest: guest binaries beside it" cmp -s /bin/busybox "$H.guest/root/bin/busybox"
	check "record --guest: collect's summary" grep -qE \
		"^guest: [1-9][0-9]* files \([0-9]+ bytes\) in $H.guest, 0 missing, 0 rejected$" "$W/record.err"
	tids=$(for t in /proc/$QPID/task/*; do
		c=$(cat "$t/comm"); case "$c" in "CPU "*/TCG) echo "${c#CPU } ${t##*/}";; esac
	done | sort -n | awk '{ printf "%s%s", sep, $2; sep = " " }')
	check "record --guest: QEMU's vCPU threads found through QMP ($tids)" grep -qx \
		"vmpt record: 2 vCPU threads of process $QPID (QMP query-cpus-fast): $tids" "$W/record.err"
	check "record --guest: the vCPU map" test "$(cut -d' ' -f1-4,6 "$H.vcpus" | tr '\n' ' ')" = \
		"vcpu 0 tid ${tids%% *} qmp vcpu 1 tid ${tids##* } qmp "
	# perf's recipe: the guest sideband injected into the host recording
	rc=0
	perf inject -i "$H" -o "$W/inj.data" --guest-data="$H.guest/perf.data,$QPID" > "$W/inject.out" 2>&1 ||
		rc=$?
	check "perf inject --guest-data=$H.guest/perf.data,$QPID (exit $rc) $(cat "$W/inject.out")" test $rc -eq 0
	SHOW=(--show-task-events --show-mmap-events --show-switch-events)
	perf script -i "$H.guest/perf.data" "${SHOW[@]}" > "$W/g.txt" 2>/dev/null
	perf script -i "$W/inj.data" "${SHOW[@]}" -F+machine_pid,+vcpu > "$W/i.txt" 2>"$W/i.err" || true
	rc=0
	python3 "$SRCDIR/host/tests/inject-vcpus.py" "$W/g.txt" "$W/i.txt" "$QPID" > "$W/cmp.out" || rc=$?
	cat "$W/cmp.out"
	if [ $rc -ne 0 ]; then
		echo "perf script of the injected file: $(wc -l < "$W/i.txt") lines, $(grep -c '^VM:' "$W/i.txt") of VM:"
		head -n 5 "$W/i.err"
		perf script -i "$W/inj.data" -D 2>/dev/null | grep -E "FINISHED_INIT|ID_INDEX|HEADER_ATTR" | head -5
	fi
	check "perf script -F+machine_pid,+vcpu: every guest record as VM:$QPID with the guest CPU it was recorded on (records, VCPUs: $(tail -n 1 "$W/cmp.out"))" \
		test $rc -eq 0 -a "$(tail -n 1 "$W/cmp.out" | cut -d' ' -f2-)" = "0 1"
else
	echo "FAIL: vmpt record --guest"
	cat "$W/record.err"
	fails=$((fails + 1))
fi

# The same guest booted as it comes (no no-kvmclock, no tsc=reliable, the
# JIT on): under TCG the kernel marks the TSC unstable and falls back to
# hpet.  The check says that, with the fix, and not "no-kvmclock missing"
# (TCG has no kvmclock).
stop_guest "$W"
mkdir -p "$W/plain"
PORT2=$(timeout 300 "$HERE/boot-guest.sh" "$IMG" "$W/plain" 240 1200 "")
echo "[127.0.0.1]:$PORT2 $(cat "$IMG/host_key.pub")" >> "$W/known_hosts"
rc=0
timeout 300 "$VMPT" guest check "ssh://root@127.0.0.1:$PORT2" "${CONN[@]}" > "$W/plain.out" 2> "$W/plain.err" ||
	rc=$?
cat "$W/plain.out"
check "plain boot: not ready (exit $rc)" test $rc -eq 1
check "plain boot: the TSC marked unstable, from the kernel log" grep -qE \
	"^problem: the kernel marked the TSC unstable \('\[ *[0-9.]+\] tsc: Marking TSC unstable due to .*'\): guest perf time no longer follows the TSC; boot with tsc=reliable " "$W/plain.out"
check "plain boot: the clocksource, and why tsc is gone" grep -qE \
	"^problem: the clocksource is (hpet|acpi_pm), not tsc: tsc is no longer offered since it was marked unstable: boot with tsc=reliable \(above\)$" "$W/plain.out"
check "plain boot: cap_user_time_zero 0" grep -q "^problem: perf's mmap page has cap_user_time_zero 0" "$W/plain.out"
check "plain boot: the BPF JIT, with its sysctl" grep -q "^problem: the BPF JIT is on: .* sysctl -w net.core.bpf_jit_enable=0" "$W/plain.out"
check "plain boot: no kvmclock complaint on TCG" bash -c "grep -qx 'kvmclock: no' '$W/plain.out' && ! grep -q '^problem:.*kvmclock' '$W/plain.out'"
check "plain boot: verdict not ready" grep -qx "verdict: not ready" "$W/plain.out"
stop_guest "$W/plain"

if [ "$fails" -ne 0 ]; then
	echo "$fails checks failed; guest console:"
	tail -20 "$W/console.log"
	exit 1
fi
echo "guest-vm: all checks passed (image $((t1 - t0)) s, boot $((t2 - t1)) s, collect $((t3 - t2)) s)"
