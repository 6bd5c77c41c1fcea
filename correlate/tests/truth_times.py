#!/usr/bin/env python3
"""Compare vmpt script --ns -F time,flags,ip,addr lines with the
synthesizer's ground truth (PREFIX.branches: from to host-TSC side flags):
the same branches in the same order (a VM entry or exit is two samples, one
per side), and per side the window of truth - printed time in ns.  Prints
"host LO HI" and "guest LO HI"; exits 1 on a different branch.
usage: truth_times.py BRANCHES LINES TIME_SHIFT TIME_MULT"""
import sys

br, out, shift, mult = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])


def ns(t):
    return (t >> shift) * mult + (((t & ((1 << shift) - 1)) * mult) >> shift)


truth = []
for line in open(br):
    if line.startswith('#'):
        continue
    f = line.split()
    frm, to, tsc, side, flags = int(f[0], 16), int(f[1], 16), int(f[2]), f[3], ' '.join(f[4:])
    if flags in ('vmentry', 'vmexit'):
        other = 'guest' if flags == 'vmentry' else 'host'
        truth += [(tsc, side, frm, 0), (tsc, other, 0, to)]
    else:
        truth.append((tsc, side, frm, to))
lines = [l for l in open(out) if '=>' in l]
if len(lines) != len(truth):
    sys.exit("%d branch lines, the truth has %d" % (len(lines), len(truth)))
win = {}
for line, (tsc, side, frm, to) in zip(lines, truth):
    a, b = line.split('=>')
    sec, frac = a.split(':')[0].strip().split('.')
    got = (int(a.split()[-1], 16), int(b.split()[-1], 16))
    if got != (frm, to):
        sys.exit("line '%s' is not the truth's %x => %x" % (line.strip(), frm, to))
    d = ns(tsc) - (int(sec) * 10**9 + int(frac))
    lo, hi = win.get(side, (d, d))
    win[side] = (min(lo, d), max(hi, d))
for side in sorted(win):
    print(side, *win[side])
