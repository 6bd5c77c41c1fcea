#!/usr/bin/env python3
# check_gtruth.py GTRUTH GUEST_PERF_DATA OFFSET: every guest instruction of
# vmpt-synth's PREFIX.gtruth against the guest sideband as perf reads it
# (perf script --show-*-events): its host TSC, turned into guest perf time
# (guest TSC = host TSC + OFFSET, then the guest's TIME_CONV as perf's
# tsc_to_perf_time), must fall where perf's context switches put that task
# on the guest CPU of its vCPU; its comm is the task's name then; a user
# address lies in an executable mapping of its process then, whose file is
# the dso.  Prints the number of guest instructions checked.
import re
import subprocess
import sys

gtruth, gdata, offset = sys.argv[1], sys.argv[2], int(sys.argv[3], 0)


def perf(*args):
    return subprocess.run(["perf", *args], capture_output=True, text=True,
                          check=True).stdout


conv = {}
for l in perf("script", "-i", gdata, "-D").splitlines():
    m = re.match(r"\.\.\. Time (Shift|Muliplier|Zero)\s+(\d+)", l)
    if m:
        conv[m.group(1)] = int(m.group(2))
shift, mult, zero = conv["Shift"], conv["Muliplier"], conv["Zero"]


def guest_ns(host_tsc):
    tsc = (host_tsc + offset) & ((1 << 64) - 1)
    ns = zero + (tsc >> shift) * mult + (((tsc & ((1 << shift) - 1)) * mult) >> shift)
    return ns & ((1 << 64) - 1)     # u64, as perf computes it


switches = {}       # cpu -> [(ns, tid)]
comms = {}          # tid -> [(ns, comm)]
pids = {}           # tid -> pid
maps = {}           # pid -> [[from, to, start, len, path]]
ev = re.compile(r"^\s*(.*?)\s+(-?\d+) \[(\d+)\]\s+(\d+)\.(\d+): (PERF_RECORD_\w+)(.*)$")
for l in perf("script", "-i", gdata, "--ns", "--show-task-events",
              "--show-switch-events", "--show-mmap-events", "-F",
              "comm,tid,cpu,time").splitlines():
    m = ev.match(l)
    if not m:
        continue
    comm, tid, cpu, sec, frac, kind, rest = m.groups()
    ns, tid, cpu = int(sec) * 10**9 + int(frac), int(tid), int(cpu)
    if kind == "PERF_RECORD_SWITCH_CPU_WIDE" and rest.lstrip().startswith("IN"):
        switches.setdefault(cpu, []).append((ns, tid))
    elif kind == "PERF_RECORD_COMM":
        c = re.match(r"(?: exec)?: (.*):(\d+)/(\d+)$", rest)
        pid, t = int(c.group(2)), int(c.group(3))
        pids[t] = pid
        comms.setdefault(t, []).append((ns, c.group(1)))
        if " exec:" in l:
            for mp in maps.get(pid, []):
                mp[1] = min(mp[1], ns)
    elif kind == "PERF_RECORD_FORK":
        f = re.match(r"\((\d+):(\d+)\):\((\d+):(\d+)\)", rest)
        pid, t, ppid = int(f.group(1)), int(f.group(2)), int(f.group(3))
        pids[t] = pid
        if ppid in pids and comms.get(ppid):
            comms.setdefault(t, []).append((ns, comms[ppid][-1][1]))
        if pid == t and pid != ppid:
            maps[pid] = [[ns, 1 << 64, s, n, p] for f0, to, s, n, p in
                         maps.get(ppid, []) if f0 <= ns < to]
    elif kind == "PERF_RECORD_MMAP2":
        mm = re.match(r" (\d+)/\d+: \[0x([0-9a-f]+)\(0x([0-9a-f]+)\) .*\]: r-xp (.*)$", rest)
        if mm:
            maps.setdefault(int(mm.group(1)), []).append(
                [ns, 1 << 64, int(mm.group(2), 16), int(mm.group(3), 16), mm.group(4)])


def last(seq, ns):
    found = None
    for t, v in seq:
        if t <= ns:
            found = v
    return found


n = 0
for no, l in enumerate(open(gtruth), 1):
    ip, tsc, vcpu, mach, pid, tid, comm, dso, sym = l.rstrip("\n").split("\t")
    if mach != "guest":
        continue
    ns, ip, pid, tid = guest_ns(int(tsc)), int(ip, 16), int(pid), int(tid)
    where = "line %d (ip %x, vCPU %s, guest time %d)" % (no, ip, vcpu, ns)
    on_cpu = last(switches.get(int(vcpu), []), ns)
    if on_cpu != tid:
        sys.exit("%s: tid %d runs, perf's switches say %s" % (where, tid, on_cpu))
    if pids.get(tid, tid) != pid:
        sys.exit("%s: pid %d, perf says %s" % (where, pid, pids.get(tid)))
    if comm != last(comms.get(tid, []), ns):
        sys.exit("%s: comm %s, perf says %s" % (where, comm, last(comms.get(tid, []), ns)))
    if ip >> 63:
        want = "[guest.kernel.kallsyms]"
    else:
        want = [p for f0, to, s, ln, p in maps.get(pid, []) if f0 <= ns < to and s <= ip < s + ln]
        want = want[-1] if want else None
    if dso != want:
        sys.exit("%s: dso %s, perf's mappings say %s" % (where, dso, want))
    n += 1
print(n)
