#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Small edits of a perf.data without AUX area data, everything else byte for
# byte (the feature section, which follows the data, moves with it):
#
#   perf_data_edit.py time-conv IN OUT SHIFT MULT ZERO [CAP_USER_TIME_ZERO]
#       give it a TIME_CONV record: replace the one perf record wrote, or
#       insert one at the start of the data when there is none (a machine
#       whose perf clock is not the TSC: a KVM guest with kvm-clock, like
#       the machines these tests run on); in pipe mode (perf record -o -)
#       too, where a new one goes first
#   perf_data_edit.py drop IN OUT TYPE
#       remove the first record of TYPE (82: FINISHED_INIT, which vmpt
#       record's files had none of)
#   perf_data_edit.py tsc-to-ns SHIFT MULT ZERO TSC
#       perf's tsc_to_perf_time
import struct
import sys

TIME_CONV = 79
AUXTRACE = 71
TRACING_DATA = 66


def tsc_to_ns(shift, mult, zero, tsc):
    quot, rem = tsc >> shift, tsc & ((1 << shift) - 1)
    return (zero + quot * mult + ((rem * mult) >> shift)) % 2**64


def load(path):
    b = bytearray(open(path, 'rb').read())
    magic, hsize = struct.unpack_from('<QQ', b, 0)
    if magic == 0x32454c4946524550 and hsize == 16:
        return b
    if magic != 0x32454c4946524550 or hsize != 104:
        sys.exit('%s: not a perf.data file' % path)
    if b[72 + 18 // 8] >> (18 % 8) & 1:
        sys.exit('%s: has AUX area data, whose index would move: not supported' % path)
    return b


def is_pipe(b):
    return struct.unpack_from('<Q', b, 8)[0] == 16


def records(b):
    data_off, data_size = (16, len(b) - 16) if is_pipe(b) else struct.unpack_from('<QQ', b, 40)
    pos = data_off
    while pos < data_off + data_size:
        rtype, _, size = struct.unpack_from('<IHH', b, pos)
        if size < 8:
            sys.exit('record at %#x: size %d' % (pos, size))
        yield pos, rtype, size
        # the data that follows these records, not counted in their size
        if rtype == AUXTRACE:
            size += struct.unpack_from('<Q', b, pos + 8)[0]
        elif rtype == TRACING_DATA:
            size += struct.unpack_from('<I', b, pos + 8)[0]
        pos += size


def resize(b, pos, old, new):
    """Replace old bytes at pos (in the data section) by new."""
    if is_pipe(b):
        b[pos:pos + old] = new
        return
    data_off, data_size = struct.unpack_from('<QQ', b, 40)
    delta = len(new) - old
    table = data_off + data_size
    for i in range(sum(bin(x).count('1') for x in b[72:104])):
        off, = struct.unpack_from('<Q', b, table + 16 * i)
        struct.pack_into('<Q', b, table + 16 * i, off + delta)
    struct.pack_into('<Q', b, 48, data_size + delta)
    b[pos:pos + old] = new


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == 'tsc-to-ns':
        print(tsc_to_ns(*(int(a, 0) for a in args[:4])))
        return
    b = load(args[0])
    if cmd == 'time-conv':
        shift, mult, zero = (int(a, 0) for a in args[2:5])
        cap_zero = int(args[5]) if len(args) > 5 else 1
        rec = struct.pack('<IHH5Q8B', TIME_CONV, 0, 56, shift, mult, zero % 2**64, 0, 0,
                          cap_zero, 0, 0, 0, 0, 0, 0, 0)
        for pos, rtype, size in records(b):
            if rtype == TIME_CONV:
                resize(b, pos, size, rec)
                break
        else:
            resize(b, 16 if is_pipe(b) else struct.unpack_from('<Q', b, 40)[0], 0, rec)
    elif cmd == 'drop':
        for pos, rtype, size in records(b):
            if rtype == int(args[2]):
                resize(b, pos, size, b'')
                break
        else:
            sys.exit('%s: no record of type %s' % (args[0], args[2]))
    else:
        sys.exit('usage: perf_data_edit.py time-conv|drop|tsc-to-ns ...')
    open(args[1], 'wb').write(b)


main()
