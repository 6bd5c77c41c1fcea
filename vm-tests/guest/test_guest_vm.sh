#!/bin/bash
# A real Linux guest: Debian's kernel and a minimal root with sshd (see
# build-image.sh, cached), booted under QEMU TCG.  vmpt deploys the agent
# over SFTP, records guest sideband of a command run in the guest, fetches
# the binaries it maps and the guest's compact kcore; perf and vmpt must
# read the result.  QEMU is killed at the end, whatever happens.
set -euo pipefail
: "${VMPT:?}" "${BUILDDIR:?}" "${SRCDIR:?}"
for p in qemu-system-x86_64 perf python3 apt-get; do
	command -v "$p" >/dev/null || { echo "SKIP: $p missing (tools/install-deps.sh)"; exit 77; }
done
HERE=$SRCDIR/vm-tests/guest
W=$(mktemp -d /tmp/vmpt-guest-vm.XXXXXX)
cleanup() {
	if [ -f "$W/qemu.pid" ]; then
		pid=$(cat "$W/qemu.pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
	fi
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
check "check: no-kvmclock on the cmdline" grep -qx "cmdline no-kvmclock: yes" "$W/check.out"
check "check: clocksource tsc" grep -qx "clocksource: tsc" "$W/check.out"
check "check: the guest's paranoid level" grep -qE "^perf_event_paranoid: -?[0-9]+$" "$W/check.out"
check "check: the BPF JIT state" grep -qE "^bpf_jit_enable: [0-2]$" "$W/check.out"
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
# (sideband-only host events: this machine may have no Intel PT).
mkdir -p "$W/hrec"
if timeout 300 "$VMPT" record -e dummy -a -o "$W/hrec/perf.data" --guest "$URL" \
	--guest-identity "$IMG/client_key" --guest-known-hosts "$W/known_hosts" -- sleep 1 \
	> "$W/record.out" 2> "$W/record.err"; then
	check "record --guest: host perf.data" test -s "$W/hrec/perf.data"
	perf script -i "$W/hrec/guest/perf.data" --show-task-events > "$W/hscript.out" 2>&1 || true
	check "record --guest: guest sideband beside it" grep -q PERF_RECORD_ "$W/hscript.out"
	check "record --guest: guest binaries beside it" cmp -s /bin/busybox "$W/hrec/guest/root/bin/busybox"
else
	echo "FAIL: vmpt record --guest"
	cat "$W/record.err"
	fails=$((fails + 1))
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails checks failed; guest console:"
	tail -20 "$W/console.log"
	exit 1
fi
echo "guest-vm: all checks passed (image $((t1 - t0)) s, boot $((t2 - t1)) s, collect $((t3 - t2)) s)"
