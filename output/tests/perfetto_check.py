#!/usr/bin/python3
"""A Perfetto protobuf trace by Perfetto's rules, decoded with the
protobuf library over perfetto_trace.proto (compiled by protoc): no
field unknown to Perfetto's schema, every packet on sequence 1 and the
first one clearing incremental state, every track an event uses
described before (thread tracks under their process's), slice ends
matching begins per track, timestamps forward per track.  Prints the
slice count, the tracks and the slice names seen.
usage: perfetto_check.py GENERATED_DIR TRACE"""
import sys

sys.path.insert(0, sys.argv[1])
import perfetto_trace_pb2 as pb  # noqa: E402


def main():
    trace = pb.Trace()
    with open(sys.argv[2], "rb") as f:
        trace.ParseFromString(f.read())
    tracks, procs = {}, set()
    depth, last = {}, {}
    begins = 0
    names = set()
    for i, p in enumerate(trace.packet):
        if p.UnknownFields() if hasattr(p, "UnknownFields") else False:
            sys.exit("packet %d: fields unknown to Perfetto's schema" % i)
        if p.trusted_packet_sequence_id != 1:
            sys.exit("packet %d: sequence %d" % (i, p.trusted_packet_sequence_id))
        if i == 0 and p.sequence_flags != 1:
            sys.exit("the first packet does not clear incremental state")
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.HasField("process"):
                procs.add(d.uuid)
                tracks[d.uuid] = "process %d %s" % (d.process.pid, d.process.process_name)
            elif d.HasField("thread"):
                if d.parent_uuid not in procs:
                    sys.exit("thread track %x before its process's" % d.uuid)
                tracks[d.uuid] = "thread %d/%d %s" % (d.thread.pid, d.thread.tid,
                                                      d.thread.thread_name)
            else:
                sys.exit("track %x is neither a process's nor a thread's" % d.uuid)
            continue
        if not p.HasField("track_event"):
            sys.exit("packet %d: neither a track nor an event" % i)
        e = p.track_event
        if e.track_uuid not in tracks:
            sys.exit("packet %d: track %x not described" % (i, e.track_uuid))
        if p.timestamp < last.get(e.track_uuid, 0):
            sys.exit("packet %d: time goes back on track %x" % (i, e.track_uuid))
        last[e.track_uuid] = p.timestamp
        d = depth.get(e.track_uuid, 0)
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            if not e.name:
                sys.exit("packet %d: a slice without a name" % i)
            names.add(e.name)
            depth[e.track_uuid] = d + 1
            begins += 1
        elif e.type == pb.TrackEvent.TYPE_SLICE_END:
            if not d:
                sys.exit("packet %d: a slice end with none open" % i)
            depth[e.track_uuid] = d - 1
        elif e.type == pb.TrackEvent.TYPE_INSTANT:
            if not e.name:
                sys.exit("packet %d: an instant without a name" % i)
            names.add(e.name)
        else:
            sys.exit("packet %d: event type %d" % (i, e.type))
    open_ = [t for t, d in depth.items() if d]
    if open_:
        sys.exit("slices never end on %s" % tracks[open_[0]])
    print("%d slices" % begins)
    for t in sorted(tracks.values()):
        print(t)
    for n in sorted(names):
        print("name", n)


main()
