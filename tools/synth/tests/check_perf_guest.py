#!/usr/bin/env python3
# check_perf_guest.py GTRUTH PERF_OUT VMM_PID GUEST_ROOT: perf script's
# instruction samples (-F machine_pid,vcpu,comm,tid,ip,sym,dso) of a host
# recording after perf's guest pipeline (perf inject --vm-time-correlation,
# --guest-data) against vmpt-synth's PREFIX.gtruth, vCPU by vCPU: machine,
# task, comm, address, symbol and dso of every instruction.  Two things
# perf does its own way are allowed for: it takes a binary's symbols from
# this host's debug file of the same build-id when there is one (the sym
# is not compared then), and it names a sample's comm by the sample's
# estimated time, so within 4096 ticks of an exec it may give the task's
# other name.  Prints the instructions compared and the comms allowed.
import os, re, subprocess, sys
vmm = int(sys.argv[3])
root = sys.argv[4] if len(sys.argv) > 4 else None

def host_debug(dso, cache={}):
    """perf names a binary's symbols from this host's debug file of the
    same build-id (/usr/lib/debug/.build-id) when there is one."""
    if dso not in cache:
        cache[dso] = False
        path = os.path.join(root, dso.lstrip("/")) if root and dso.startswith("/") else None
        if path and os.path.isfile(path):
            out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
            m = re.search(r"Build ID: ([0-9a-f]+)", out)
            if m:
                bid = m.group(1)
                cache[dso] = os.path.exists("/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:]))
    return cache[dso]

want, tscs, names, changes = {}, {}, {}, {}
for l in open(sys.argv[1]):
    ip, tsc, vcpu, mach, pid, tid, comm, dso, sym = l.rstrip("\n").split("\t")
    if dso == "[guest.kernel.kallsyms]":
        dso = "[guest.kernel.kallsyms.%d]" % vmm
    want.setdefault(int(vcpu), []).append((mach, int(tid), comm, int(ip, 16), sym, dso))
    tscs.setdefault(int(vcpu), []).append(int(tsc))
    if mach == "guest":
        seen = names.setdefault(int(tid), [])
        if seen and seen[-1] != comm:
            changes.setdefault(int(tid), []).append(int(tsc))
        seen.append(comm)

def near_exec(tid, tsc):
    """perf names a sample's comm by its estimated time: close to an exec
    it may give the other name"""
    return any(abs(tsc - c) <= 4096 for c in changes.get(tid, []))

tolerated = 0
got = {}
pat = re.compile(r"^(?:VM:\s*(\d+) VCPU:(\d+))?\s*(.*?)\s+(\d+)\s+([0-9a-f]+) (.*) \((.*)\)$")
for l in open(sys.argv[2]):
    l = l.rstrip("\n")
    if "instruction trace error" in l:
        got.setdefault(-1, []).append(l)
        continue
    m = pat.match(l)
    if not m:
        got.setdefault(-1, []).append("unparsed: " + l)
        continue
    vm, vcpu, comm, tid, ip, sym, dso = m.groups()
    tid = int(tid)
    if vm is None or dso == "[kernel.kallsyms]":
        # the host (perf gives the VM entry instruction the guest's machine)
        mach, v = "host", (tid - vmm - 1 if vm is None else int(vcpu))
        tid = vmm + 1 + v
        comm = "CPU %d/KVM" % v
    else:
        mach, v = "guest", int(vcpu)
    got.setdefault(v, []).append((mach, tid, comm, int(ip, 16), sym, dso))
bad = got.pop(-1, [])
if bad:
    sys.exit("perf: " + bad[0])
n = 0
for v in sorted(set(want) | set(got)):
    w, g = want.get(v, []), got.get(v, [])
    for i, (a, b) in enumerate(zip(w, g)):
        if a != b and host_debug(a[5]):
            a, b = a[:4] + a[5:], b[:4] + b[5:]
        if (a != b and a[0] == "guest" and a[:2] + a[3:] == b[:2] + b[3:] and
                b[2] in names.get(a[1], []) and near_exec(a[1], tscs[v][i])):
            tolerated += 1
            continue
        if a != b:
            sys.exit("vCPU %d line %d: truth %s, perf %s" % (v, i + 1, a, b))
    if len(w) != len(g):
        sys.exit("vCPU %d: %d lines in the truth, %d from perf" % (v, len(w), len(g)))
    n += len(w)
print(n, tolerated)
