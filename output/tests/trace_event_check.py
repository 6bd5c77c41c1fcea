#!/usr/bin/env python3
"""The Trace Event Format's rules on a JSON trace (Chrome's "Trace Event
Format" document): every event has ph, pid, tid and ts (not metadata);
B/E pairs nest per track (pid, tid) and an E closes the last open B; ts
never goes back on a track; every track used has thread_name metadata
and every process process_name.  Prints what it counted; exit 1 with the
first rule broken.
usage: trace_event_check.py FILE [MIN_SLICES]"""
import json
import sys


def main():
    path = sys.argv[1]
    need = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    open_b = {}
    last_ts = {}
    named_threads = set()
    named_procs = set()
    used = set()
    slices = 0
    for i, e in enumerate(events):
        ph = e.get("ph")
        track = (e.get("pid"), e.get("tid"))
        if ph == "M":
            if e["name"] == "thread_name":
                named_threads.add(track)
            elif e["name"] == "process_name":
                named_procs.add(e["pid"])
            continue
        for k in ("pid", "tid", "ts"):
            if k not in e:
                sys.exit("event %d: no %s: %s" % (i, k, e))
        used.add(track)
        ts = float(e["ts"])
        if ts < last_ts.get(track, ts):
            sys.exit("event %d: ts %s before %s on track %s" % (i, ts, last_ts[track], track))
        last_ts[track] = ts
        stack = open_b.setdefault(track, [])
        if ph == "B":
            if not e.get("name"):
                sys.exit("event %d: B without a name" % i)
            stack.append(e["name"])
            slices += 1
        elif ph == "E":
            if not stack:
                sys.exit("event %d: E with no B open on track %s" % (i, track))
            stack.pop()
        elif ph not in ("i", "I", "X", "C"):
            sys.exit("event %d: unexpected ph %r" % (i, ph))
    for track, stack in open_b.items():
        if stack:
            sys.exit("track %s: %d slices never end (%s)" % (track, len(stack), stack[-1]))
    for track in used:
        if track not in named_threads:
            sys.exit("track %s has no thread_name" % (track,))
        if track[0] not in named_procs:
            sys.exit("process %s has no process_name" % track[0])
    if slices < need:
        sys.exit("%d slices, expected at least %d" % (slices, need))
    print("%d slices on %d tracks" % (slices, len(used)))


main()
