#!/bin/sh
# vmpt doctor on this machine tells the truth: each line is checked
# against what the script finds itself.
set -u
out=$("$VMPT" doctor -c "qemu:///system?socket=/nonexistent/libvirt-sock" 2>&1)
rc=$?
echo "$out"
status=0
expect() {	# expect PATTERN: a line of the output matches
	if echo "$out" | grep -q -- "$1"; then
		echo "ok: $1"
	else
		echo "FAIL: no line matching: $1"
		status=1
	fi
}
if [ -e /sys/bus/event_source/devices/intel_pt/type ]; then
	expect "^ok      intel_pt PMU: type $(cat /sys/bus/event_source/devices/intel_pt/type),"
else
	expect "^PROBLEM intel_pt PMU: absent (/sys/bus/event_source/devices/intel_pt)"
fi
if [ -e /dev/kvm ]; then
	expect "^ok      KVM: /dev/kvm present"
else
	expect "^PROBLEM KVM: /dev/kvm absent"
fi
# /dev/kvm is asked for real (KVM_CREATE_VM); VMX guests need VMX and kvm_intel
if [ -c /dev/kvm ] && ! grep -qw vmx /proc/cpuinfo; then
	expect "^PROBLEM KVM VMX guests: /dev/kvm cannot run VMX guests: this CPU has no VMX (cpuinfo flags lack vmx)"
	[ -e /sys/module/kvm_pvm ] &&
		expect "and kvm_pvm (paravirtual KVM) runs its VMs without hardware virtualization (KVM_CREATE_VM works)"
elif [ -c /dev/kvm ] && [ -e /sys/module/kvm_intel ]; then
	expect "^ok      KVM VMX guests: kvm_intel runs guests in VMX non-root (KVM_CREATE_VM works)"
fi
if [ -e /sys/module/kvm_intel/parameters/pt_mode ]; then
	expect "kvm_intel pt_mode: $(cat /sys/module/kvm_intel/parameters/pt_mode) "
elif [ ! -e /sys/module/kvm_intel ]; then
	expect "^PROBLEM kvm_intel pt_mode: kvm_intel is not loaded"
fi
if ! grep -qw vmx /proc/cpuinfo; then
	expect "^PROBLEM VMX_MISC bit 14: no VMX on this CPU"
fi
expect "perf_event_paranoid: $(cat /proc/sys/kernel/perf_event_paranoid)"
if [ -e /proc/kcore ]; then
	expect "/proc/kcore: "
else
	expect "^PROBLEM /proc/kcore: absent"
fi
if grep -q " debugfs " /proc/mounts; then
	expect "debugfs: .*kvm"
else
	expect "^PROBLEM debugfs: not mounted"
fi
expect "^PROBLEM libvirt: qemu:///system?socket=/nonexistent/libvirt-sock: "
problems=$(echo "$out" | grep -c '^PROBLEM')
expect "^$problems problems\?$"
if [ "$problems" -gt 0 ] && [ $rc -ne 1 ]; then
	echo "FAIL: exit status $rc with problems"
	status=1
fi
exit $status
