#!/bin/sh
# vmpt-agent check on fixture guests, exactly: a KVM guest set up for
# vmpt (ready), one on kvmclock, one whose kernel marked the TSC unstable
# (clocksource hpet, the issue's case: no longer "ready"), QEMU TCG guests
# without and with tsc=reliable (no "no-kvmclock" complaint: TCG has no
# kvmclock; what is wrong is said), and a kernel that forces the BPF JIT.
# The real readers (klogctl, CPUID, perf's mmap page) run on the real TCG
# guest of the guest-vm suite.
set -u
cd "$SRCDIR/guest-agent/tests" || exit 1
AGENT=$BUILDDIR/guest-agent/vmpt-agent
status=0
for d in fixtures/check-*; do
	name=${d#fixtures/}
	got=$("$AGENT" check --root "$d" 2>&1; echo "exit $?")
	if [ "$got" != "$(cat "expected/$name.txt")" ]; then
		echo "FAIL: $name:"
		echo "$got" | diff "expected/$name.txt" - || true
		status=1
	else
		echo "ok: $name: $(echo "$got" | grep '^verdict')"
	fi
done
got=$("$AGENT" check --root 2>&1; echo "exit $?")
want="usage: vmpt-agent check [--root DIR]
exit 2"
[ "$got" = "$want" ] && echo "ok: usage" || { echo "FAIL: usage: $got"; status=1; }
exit $status
