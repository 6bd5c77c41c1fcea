#!/bin/sh
# vmpt record's error messages, exactly, on fixture trees and here.
set -u
cd "$SRCDIR" || exit 1
F=host/tests/fixtures
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
status=0
# check WANT CMD...: exit status 1 (2 for usage errors) and the last line of stderr
check() {
	want=$1
	shift
	"$@" >"$T/out" 2>"$T/err"
	rc=$?
	got=$(tail -n 1 "$T/err")
	if [ $rc -eq 0 ] || [ "$got" != "$want" ]; then
		echo "FAIL: $*"
		echo "  exit $rc"
		echo "  got:  $got"
		echo "  want: $want"
		status=1
	else
		echo "ok: $want"
	fi
}
R="$VMPT record -o $T/perf.data"
check "vmpt record: no intel_pt PMU ($F/sysfs-vm-no-pt/bus/event_source/devices/intel_pt does not exist): this CPU has no Intel PT, the kernel lacks CONFIG_PERF_EVENTS_INTEL_PT, or this is a VM without PT passthrough. Run 'vmpt doctor' for what this machine has; '--event dummy' records the sideband only." \
	$R --sysfs-root $F/sysfs-vm-no-pt -- true
check "vmpt record: Invalid psb_period for intel_pt. Valid values are: 0-5" \
	$R --sysfs-root $F/sysfs-skylake-5.4 -e intel_pt/psb_period=15/u -- true
check "vmpt record: Invalid mtc_period for intel_pt. Valid values are: 0,3,6,9" \
	$R --sysfs-root $F/sysfs-skylake-5.4 -e intel_pt/mtc_period=15/u -- true
check "vmpt record: Invalid cyc_thresh for intel_pt. Valid values are: 0-13" \
	$R --sysfs-root $F/sysfs-icelake-6.1 -e intel_pt/cyc,cyc_thresh=15/u -- true
check "vmpt record: cyc is not supported by intel_pt on this machine (caps/psb_cyc is 0)" \
	$R --sysfs-root $F/sysfs-broadwell-4.14 -e intel_pt/cyc/ -- true
check "vmpt record: Too many address filters: 3 given, intel_pt has 2 (caps/num_address_ranges)" \
	$R --sysfs-root $F/sysfs-skylake-5.4 --filter "filter 0x1000/16@/bin/true,start 0x1000@/bin/true,stop 0x1004@/bin/true" -- true
# Tracepoints beside the trace: a name tracefs lacks, no name, no tracefs.
if [ -r /sys/kernel/tracing/events/header_page ]; then
	check "vmpt record: tracepoint 'nosuch:thing': none such in /sys/kernel/tracing/events (/sys/kernel/tracing/available_events lists them)" \
		$R -e dummy -e nosuch:thing -- true
	check "vmpt record: tracepoint 'sched:': not SYSTEM:NAME (as kvm:kvm_exit)" \
		$R -e dummy -e sched: -- true
fi
check "vmpt record: tracepoints: no tracefs readable at $F/sysfs-skylake-5.4/kernel/tracing or $T/none/tracing (mount -t tracefs nodev /sys/kernel/tracing; root may read it)" \
	$R --sysfs-root $F/sysfs-skylake-5.4 --debugfs-root "$T/none" -e dummy -e kvm:kvm_exit -- true
check "vmpt record: intel_pt PMU: $F/sysfs-bad-format/bus/event_source/devices/intel_pt/format/psb_period: cannot parse format 'config:24-x'" \
	$R --sysfs-root $F/sysfs-bad-format -- true
check "vmpt record: give one target: --pid PID, --domain NAME or -- COMMAND (or -a / -C for CPUs)" \
	$R --event dummy
check "vmpt record: give one target: --pid PID, --domain NAME or -- COMMAND (or -a / -C for CPUs)" \
	$R --event dummy --pid 1 --domain guest1 -- true
check "vmpt record: --duration 0: expected seconds (e.g. 2.5)" \
	$R --event dummy --duration 0 -- true
check "vmpt record: --duration 2x: expected seconds (e.g. 2.5)" \
	$R --event dummy --duration 2x -- true
# Where the recording goes is checked before anything starts.
check "vmpt record: cannot write $T/nodir/p.data: directory $T/nodir does not exist" \
	"$VMPT" record --event dummy -o "$T/nodir/p.data" -- true
: >"$T/afile"
check "vmpt record: cannot write $T/afile/p.data: $T/afile is not a directory" \
	"$VMPT" record --event dummy -o "$T/afile/p.data" -- true
mkdir "$T/adir"
check "vmpt record: cannot write $T/adir: it is a directory that holds no recording (no $T/adir/data)" \
	"$VMPT" record --event dummy -o "$T/adir" -- true
check "vmpt record: cannot write /dev/null: --kcore writes a directory, /dev/null is a device" \
	"$VMPT" record --event dummy --kcore -o /dev/null -- true
# A previous recording is kept as .old, but an unknown directory there is
# not removed for it.
echo x >"$T/k.data"
mkdir "$T/k.data.old" && : >"$T/k.data.old/notes"
check "vmpt record: cannot remove the old $T/k.data.old: it is a directory that holds no recording" \
	"$VMPT" record --event dummy -o "$T/k.data" -- true
[ "$(cat "$T/k.data")" = x ] && [ -f "$T/k.data.old/notes" ] && echo "ok: both left as they were" ||
	{ echo "FAIL: $T/k.data or $T/k.data.old changed"; status=1; }
check "vmpt record: -m: 3,1024 pages: both counts must be powers of two" \
	$R --event dummy -m 3 -- true
check "vmpt record: -m 1,x: expected PAGES[,AUXPAGES] (counts or sizes like 4M)" \
	$R --event dummy -m 1,x -- true
check "vmpt record: -C 9-2: not a CPU list (e.g. 0-3,6)" \
	$R --event dummy -C 9-2 -- true
check "vmpt record: cannot find the vCPU threads of process 99999999: no QMP socket on the command line of process 99999999; /proc/99999999/task: No such file or directory (no such process?)" \
	$R --event dummy --pid 99999999
check "vmpt record: control FIFO $T/nofifo: No such file or directory (create it with mkfifo)" \
	$R --event dummy --control fifo:$T/nofifo -- true
# This machine: without Intel PT the default event fails, pointing at doctor.
if [ ! -e /sys/bus/event_source/devices/intel_pt ]; then
	check "vmpt record: no intel_pt PMU (/sys/bus/event_source/devices/intel_pt does not exist): this CPU has no Intel PT, the kernel lacks CONFIG_PERF_EVENTS_INTEL_PT, or this is a VM without PT passthrough. Run 'vmpt doctor' for what this machine has; '--event dummy' records the sideband only." \
		$R -- true
fi
if [ ! -e /proc/kcore ]; then
	check "vmpt record: --kcore: /proc/kcore: No such file or directory (kernel built without CONFIG_PROC_KCORE)" \
		$R --event dummy --kcore -- true
fi
# A write error is reported with what was kept.
"$VMPT" record --event dummy -o /dev/full -- true >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -ne 1 ] || ! grep -qx "vmpt record: writing /dev/full: No space left on device; /dev/full could not be repaired: nothing in it is usable; lost: all 0 records (0 bytes), and 0 records and 0 AUX bytes read after the error" "$T/err"; then
	echo "FAIL: -o /dev/full: exit $rc"
	cat "$T/err"
	status=1
else
	echo "ok: $(tail -n 1 "$T/err")"
fi
exit $status
