#!/usr/bin/env python3
"""inject-vcpus.py GUEST_SCRIPT INJECTED_SCRIPT QEMU_PID: do the guest
records perf inject --guest-data put into a host recording all come out of
`perf script -F+machine_pid,+vcpu` as 'VM:QEMU_PID VCPU:N', N the CPU the
guest recorded each on?  GUEST_SCRIPT is perf script of the guest's own
perf.data, INJECTED_SCRIPT of the injected file (both with
--show-task-events --show-mmap-events --show-switch-events).  Records are
compared without their cpu and time columns: the injected copy carries the
host CPU, and its time went through both TIME_CONVs.  Prints the mismatches,
then 'RECORDS VCPU...'; exit 0 when all match.
"""
import collections
import re
import sys

REC = re.compile(r"^\s*(.*?) \[(\d+)\] +\d+\.\d+: (.*)$")
INJ = re.compile(r"^VM: *(\d+) VCPU: *(\d+) +(.*)$")  # perf: VM:%5d VCPU:%03d


def key(m):
    return (" ".join(m.group(1).split()), m.group(3))


def main():
    guest, injected, vms = collections.Counter(), collections.Counter(), set()
    for line in open(sys.argv[1]):
        m = REC.match(line)
        if m:
            guest[(int(m.group(2)),) + key(m)] += 1
    unread = []
    for line in open(sys.argv[2]):
        v = INJ.match(line)
        m = REC.match(v.group(3)) if v else None
        if m:
            vms.add(v.group(1))
            injected[(int(v.group(2)),) + key(m)] += 1
        elif line.startswith("VM:"):
            unread.append(line.rstrip())
    for line in unread[:3]:
        print("not understood:", line)
    missing, extra = guest - injected, injected - guest
    for k in list(missing)[:3]:
        print("not injected:", k)
    for k in list(extra)[:3]:
        print("injected, not in the guest's:", k)
    if vms - {sys.argv[3]}:
        print("other machines:", vms)
    print(sum(guest.values()), " ".join(str(c) for c in sorted({k[0] for k in injected})))
    return 0 if guest and not missing and not extra and vms == {sys.argv[3]} else 1


sys.exit(main())
