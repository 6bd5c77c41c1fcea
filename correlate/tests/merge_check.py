#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Check a merged recording as `perf script --ns --show-task-events
# --show-mmap-events --show-switch-events -F+machine_pid,+vcpu` prints it,
# against the same listings of the host and guest inputs:
#  - the lines without "VM:" are the host's, in its order;
#  - the "VM:PID VCPU:n" lines are the guest's records, one for one, in its
#    order, each with the guest's comm, pid/tid and text, VCPU n the guest
#    CPU it was recorded on and the host CPU that vCPU's thread is pinned to
#    (stand-in QEMU: vCPU n on CPU n modulo NCPUS), CPU 0 before the host
#    recording first sees the thread run (perf's convention);
#  - host and guest lines interleave by time, a guest line first on a tie
#    (but the host's synthesized records, at time 0, come first);
#  - with --times, each guest line's host time is the guest's converted as
#    perf inject computes it (perf: (guest TSC - OFFSET) / SCALE in double,
#    truncated) or as vmpt does (vmpt: the first host tick whose guest TSC
#    reaches it, exact integers); --count-differences prints how many guest
#    records the two give different host nanoseconds.
import argparse
import math
import re
import sys

LINE = re.compile(r'^(?:VM: *(\d+) VCPU:(\d+) )?(.*?) \[(-?\d+)\]\s+(\d+)\.(\d{9}): (.*)$')


def parse(path):
    out = []
    for n, line in enumerate(open(path).read().splitlines(), 1):
        m = LINE.match(line)
        if not m:
            sys.exit('%s:%d: not a perf script --ns line: %r' % (path, n, line))
        vm, vcpu, who, cpu, sec, ns, text = m.groups()
        out.append(dict(vm=vm, vcpu=vcpu, who=who.split(), cpu=int(cpu),
                        time=int(sec) * 10**9 + int(ns), text=text.split(), n=n))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('out')
    ap.add_argument('host')
    ap.add_argument('guest')
    ap.add_argument('--pid', type=int, required=True)
    ap.add_argument('--ncpus', type=int, required=True)
    ap.add_argument('--times', choices=['perf', 'vmpt'])
    ap.add_argument('--tc', nargs=6, type=lambda s: int(s, 0), metavar=('SHIFT', 'GMULT', 'GZERO', 'HMULT', 'HZERO', 'OFFSET'))
    ap.add_argument('--scale', type=float, default=1.0)
    ap.add_argument('--count-differences', action='store_true')
    a = ap.parse_args()
    out, host, guest = parse(a.out), parse(a.host), parse(a.guest)
    out_host = [r for r in out if not r['vm']]
    out_guest = [r for r in out if r['vm']]
    err = []
    # When each vCPU thread is first seen switching in: CPU 0 before, as
    # perf says (the guest recording starts after the host's, so only its
    # time-0 records come before).
    first_run = {}
    for r in host:
        m = re.match(r'CPU (\d+)/KVM$', ' '.join(r['who'][:-1]))
        if m and r['text'][0].startswith('PERF_RECORD_SWITCH') and r['text'][1] == 'IN':
            first_run.setdefault(int(m.group(1)), r['time'])

    def same(x, y):
        return x['who'] == y['who'] and x['text'] == y['text']
    if len(out_host) != len(host) or not all(
            same(x, y) and x['cpu'] == y['cpu'] and x['time'] == y['time']
            for x, y in zip(out_host, host)):
        err.append('the host lines are not the host recording\'s')
    if len(out_guest) != len(guest):
        err.append('%d guest lines for %d guest records' % (len(out_guest), len(guest)))
    for x, y in zip(out_guest, guest):
        if not same(x, y):
            err.append('line %d: guest record %d is not the guest\'s: %s' % (x['n'], y['n'], ' '.join(x['text'])))
        elif int(x['vm']) != a.pid or int(x['vcpu']) != y['cpu']:
            err.append('line %d: VM:%s VCPU:%s for a record of guest CPU %d' % (x['n'], x['vm'], x['vcpu'], y['cpu']))
        elif x['cpu'] != (y['cpu'] % a.ncpus if x['time'] >= first_run.get(y['cpu'], 2**64) else 0):
            err.append('line %d: host CPU %d for vCPU %d' % (x['n'], x['cpu'], y['cpu']))
        if len(err) > 5:
            break
    for prev, cur in zip(out, out[1:]):
        # time 0: perf record's synthesized records, the host's first
        if cur['time'] < prev['time'] or (cur['time'] == prev['time'] > 0 and cur['vm'] and not prev['vm']):
            err.append('line %d: out of order (%d after %d)' % (cur['n'], cur['time'], prev['time']))
            break
    if a.tc:
        shift, gmult, gzero, hmult, hzero, offset = a.tc
        mult48 = round(a.scale * 2**48)
        m64 = 2**64

        def to_tsc(ns):
            t = (ns - gzero) % m64
            return ((t // gmult << shift) + ((t % gmult) << shift) // gmult) % m64

        def to_ns(tsc):
            return (hzero + (tsc >> shift) * hmult + (((tsc & ((1 << shift) - 1)) * hmult) >> shift)) % m64

        def perf_time(g):
            return to_ns(int(float((to_tsc(g) - offset) % m64) / a.scale)) if g else 0

        def vmpt_time(g):
            return to_ns(-(-(((to_tsc(g) - offset) % m64) << 48) // mult48)) if g else 0
        want = perf_time if a.times == 'perf' else vmpt_time
        for x, y in zip(out_guest, guest):
            if x['time'] != want(y['time']):
                err.append('line %d: host time %d, not %d (%s) of guest time %d' % (x['n'], x['time'], want(y['time']), a.times, y['time']))
                break
        if a.count_differences:
            print(sum(perf_time(y['time']) != vmpt_time(y['time']) for y in guest))
    if err:
        sys.exit('%s: %s' % (a.out, '; '.join(err[:5])))


main()
