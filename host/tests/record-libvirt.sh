#!/bin/sh
# vmpt record --domain through a real libvirt daemon: libvirtd (and
# virtlogd, when none runs) are started by hand with their sockets in a
# temporary directory, a transient TCG domain with 2 vCPUs is created,
# its vCPU threads are found through libvirt-qemu and recorded for as long
# as '-- sleep 1.5' runs; the vCPU map names libvirt as its source.
set -u
. "$(dirname "$0")/recorder-lib.sh"
for p in libvirtd virtlogd virsh qemu-system-x86_64; do
	if ! command -v $p >/dev/null; then
		echo "SKIP: $p is not installed (tools/install-deps.sh installs libvirt-daemon-system and qemu-system-x86)"
		exit 77
	fi
done
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: starting a system libvirtd needs root"
	exit 77
fi
T=$(mktemp -d)
NAME=vmpt-test-$$
STARTED=""
URI=""
cleanup() {
	[ -n "$URI" ] && timeout 30 virsh -c "$URI" destroy "$NAME" >/dev/null 2>&1
	for f in $STARTED; do
		[ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
ok() { echo "ok: $*"; }

if pgrep -x libvirtd >/dev/null || pgrep -x virtqemud >/dev/null; then
	URI="qemu:///system"	# the machine's own daemon
else
	if ! [ -S /run/libvirt/virtlogd-sock ] || ! pgrep -x virtlogd >/dev/null; then
		timeout 20 virtlogd -d -p "$T/virtlogd.pid" || { fail "virtlogd did not start"; exit 1; }
		STARTED="$T/virtlogd.pid"
	fi
	cat >"$T/libvirtd.conf" <<CONF
unix_sock_dir = "$T"
auth_unix_rw = "none"
auth_unix_ro = "none"
log_outputs = "3:file:$T/libvirtd.log"
CONF
	timeout 30 libvirtd -d -f "$T/libvirtd.conf" -p "$T/libvirtd.pid" ||
		{ fail "libvirtd did not start: $(cat "$T/libvirtd.log" 2>/dev/null)"; exit 1; }
	STARTED="$STARTED $T/libvirtd.pid"
	for i in $(seq 100); do
		[ -S "$T/libvirt-sock" ] && break
		sleep 0.1
	done
	URI="qemu:///system?socket=$T/libvirt-sock"
fi
cat >"$T/dom.xml" <<XML
<domain type='qemu'>
  <name>$NAME</name>
  <memory unit='MiB'>64</memory>
  <vcpu>2</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <on_poweroff>destroy</on_poweroff>
  <devices><emulator>$(command -v qemu-system-x86_64)</emulator></devices>
</domain>
XML
# libvirt probes QEMU's capabilities first: tens of seconds here
if ! timeout 150 virsh -c "$URI" create "$T/dom.xml" >"$T/create.out" 2>&1; then
	fail "virsh create: $(cat "$T/create.out") $(tail -n 5 "$T/libvirtd.log" 2>/dev/null)"
	exit 1
fi
ok "domain $NAME created through $URI"

# -- sleep N times the recording, as with perf record -p PID -- sleep N
timeout 120 "$VMPT" record --event dummy -c "$URI" --domain "$NAME" -o "$T/dom.data" -- sleep 1.5 \
	>"$T/rec.out" 2>"$T/rec.err"
rc=$?
cat "$T/rec.err"
[ $rc -eq 0 ] || fail "vmpt record --domain: exit $rc"
line=$(grep "vCPU threads of process" "$T/rec.err")
qpid=$(echo "$line" | sed -n 's/.* of process \([0-9]*\) .*/\1/p')
if [ -z "$qpid" ] || ! tr '\0' ' ' </proc/$qpid/cmdline | grep -q "guest=$NAME"; then
	fail "the process found is not the domain's QEMU: $line"
	exit 1
fi
want=$(for t in /proc/$qpid/task/*; do
	c=$(cat "$t/comm")
	case "$c" in "CPU "*/*) echo "${c#CPU } ${t##*/}";; esac
done | sort -n | awk '{ printf "%s%s", sep, $2; sep = " " }')
[ "$line" = "vmpt record: 2 vCPU threads of process $qpid (libvirt-qemu query-cpus-fast): $want" ] &&
	ok "libvirt-qemu found the vCPU threads $want of QEMU $qpid" || fail "discovery: $line, want $want"
map=$(i=0; for tid in $want; do echo "vcpu $i tid $tid source libvirt"; i=$((i + 1)); done)
[ "$(cat "$T/dom.data.vcpus")" = "$map" ] && ok "vCPU map saved: $(echo $map)" ||
	fail "dom.data.vcpus: $(cat "$T/dom.data.vcpus" 2>&1), want $map"
perf script -i "$T/dom.data" --show-task-events --show-mmap-events --show-switch-events \
	>"$T/script" 2>"$T/script.err"
[ -s "$T/script.err" ] && fail "perf script: $(cat "$T/script.err")"
i=0
for tid in $want; do
	grep -q "PERF_RECORD_COMM: CPU $i/TCG:$qpid/$tid\$" "$T/script" &&
		ok "COMM of CPU $i/TCG ($tid)" || fail "no COMM of CPU $i/TCG"
	i=$((i + 1))
done
grep -q "PERF_RECORD_MMAP2 $qpid/$qpid: .* r-xp .*qemu-system-x86_64\$" "$T/script" &&
	ok "MMAP2 of the QEMU binary" || fail "no MMAP2 of QEMU"
n=$(grep -c "PERF_RECORD_SWITCH" "$T/script")
others=$(grep "PERF_RECORD_SWITCH" "$T/script" |
	awk -v t=" $want " '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/) { if (index(t, " " $i " ") == 0) print; break } }' | wc -l)
[ "$n" -gt 0 ] && [ "$others" -eq 0 ] && ok "$n context switches, all of vCPU threads" ||
	fail "$n switches, $others of other threads"

"$VMPT" record --event dummy -c "$URI" --domain nope-$$ -o "$T/x" >"$T/nope.out" 2>"$T/nope.err"
rc=$?
want="vmpt record: libvirt $URI: domain 'nope-$$': Domain not found: no domain with matching name 'nope-$$'"
[ $rc -eq 1 ] && [ "$(tail -n 1 "$T/nope.err")" = "$want" ] && ok "$want" ||
	fail "unknown domain: exit $rc: $(cat "$T/nope.err")"
exit $status
