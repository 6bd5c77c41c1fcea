#!/usr/bin/env python3
"""vmpt report --vm-exits --json against the synthesizer's truth (P.exits).

usage: report_exits_check.py REPORT.json P.exits SCHEMA.json [--no-event-trace]

Every exit of the truth is in the report, thread by thread in time order,
with its vCPU, host thread, guest RIP, basic reason, qualification, vector
and KVM handler; the reason comes from Event Trace when the trace has it
(else from the handler), and the handler's reason agrees with it; the
aggregates per reason and per vCPU count what the truth counts and add up.
The JSON is valid against docs/report.schema.json.  Prints the counts
compared and how many host/guest times equal the truth's to the tick.
"""
import collections
import json
import sys

import jsonschema


def main():
    rep = json.load(open(sys.argv[1]))
    truth = [l.split() for l in open(sys.argv[2]) if l.strip()]
    schema = json.load(open(sys.argv[3]))
    event_trace = '--no-event-trace' not in sys.argv
    jsonschema.validate(rep, schema)
    truth = [t for t in truth if t[-1] != 'lost']
    fails = []

    exits = rep['exits']
    if len(exits) != len(truth):
        fails.append('%d exits, the truth has %d' % (len(exits), len(truth)))
    by_tid = collections.defaultdict(list)
    for x in exits:
        by_tid[x['tid']].append(x)
    want_tid = collections.defaultdict(list)
    for t in sorted(truth, key=lambda t: int(t[0])):
        want_tid[int(t[2])].append(t)
    host_exact = guest_exact = timed = 0
    for tid, want in want_tid.items():
        got = by_tid.get(tid, [])
        for i, (x, t) in enumerate(zip(got, want)):
            where = 'tid %d exit %d (truth %s)' % (tid, i, ' '.join(t))
            exp = {'vcpu': int(t[1]), 'rip': int(t[3], 16), 'handler': t[7],
                   'handler_reason': int(t[4])}
            if event_trace:
                exp.update({'reason': int(t[4]), 'qualification': int(t[5], 16),
                            'source': 'event-trace',
                            # VMEXIT_INTR: interrupts and exceptions
                            'vector': int(t[6], 0) if int(t[4]) in (0, 1) else None})
            else:
                exp.update({'reason': int(t[4]), 'source': 'handler',
                            'qualification': None})
            for k, v in exp.items():
                if x[k] != v:
                    fails.append('%s: %s %r, want %r' % (where, k, x[k], v))
            if t[8] != '-' and x['host_ticks'] is not None:
                timed += 1
                host_exact += x['host_ticks'] == int(t[8])
                guest_exact += x['guest_ticks'] == int(t[10])
    # aggregates: counts as the truth's, totals adding up
    want_reason = collections.Counter(int(t[4]) for t in truth)
    got_reason = {r['reason']: r['count'] for r in rep['by_reason']}
    if got_reason != dict(want_reason):
        fails.append('by reason %r, want %r' % (got_reason, dict(want_reason)))
    want_vcpu = collections.Counter(int(t[1]) for t in truth)
    got_vcpu = {v['vcpu']: v['count'] for v in rep['by_vcpu']}
    if got_vcpu != dict(want_vcpu):
        fails.append('by vCPU %r, want %r' % (got_vcpu, dict(want_vcpu)))
    host = sum(x['host_time'] for x in exits if x['host_time'] is not None)
    for part in ('by_reason', 'by_vcpu'):
        tot = sum(r['host_total'] for r in rep[part])
        if tot != host or rep['all']['host_total'] != host:
            fails.append('%s host total %d, the exits add up to %d' % (part, tot, host))
    for r in rep['by_reason'] + rep['by_vcpu'] + [rep['all']]:
        if r['with_entry'] and not (r['host_min'] <= r['host_p50'] <= r['host_p99'] <=
                                    r['host_max']):
            fails.append('percentiles out of order: %r' % r)
        if sum(h['count'] for h in r['histogram']) != r['with_entry']:
            fails.append('histogram does not add up: %r' % r)
    rips = collections.Counter(int(t[3], 16) for t in truth)
    top = rep['top_rips'][0] if rep['top_rips'] else None
    if top and top['count'] != max(rips.values()):
        fails.append('top RIP %d exits, the truth\'s %d' % (top['count'], max(rips.values())))
    for f in fails[:10]:
        print('FAIL', f)
    print('%d exits (%s), %d of %d host times and %d guest times equal to the tick' %
          (len(truth), ', '.join('%s %d' % (k, v) for k, v in sorted(want_reason.items())),
           host_exact, timed, guest_exact))
    return 1 if fails else 0


sys.exit(main())
