#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Give a perf.data a TIME_CONV record: replace the one perf record wrote, or
# insert one at the start of the data section when there is none (a machine
# whose perf clock is not the TSC: a KVM guest with kvm-clock, like the
# machines these tests run on).  Everything else stays byte for byte; the
# feature section, which follows the data, moves by the record's size.
#
#   time_conv.py IN OUT SHIFT MULT ZERO [CAP_USER_TIME_ZERO]
#   time_conv.py --tsc-to-ns SHIFT MULT ZERO TSC      (perf's tsc_to_perf_time)
import struct
import sys

TIME_CONV = 79


def tsc_to_ns(shift, mult, zero, tsc):
    quot, rem = tsc >> shift, tsc & ((1 << shift) - 1)
    return (zero + quot * mult + ((rem * mult) >> shift)) % 2**64


def main():
    if sys.argv[1] == '--tsc-to-ns':
        print(tsc_to_ns(*(int(a, 0) for a in sys.argv[2:6])))
        return
    src, dst = sys.argv[1], sys.argv[2]
    shift, mult, zero = (int(a, 0) for a in sys.argv[3:6])
    cap_zero = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    b = bytearray(open(src, 'rb').read())
    magic, hsize = struct.unpack_from('<QQ', b, 0)
    if magic != 0x32454c4946524550 or hsize != 104:
        sys.exit('%s: not a perf.data file' % src)
    data_off, data_size = struct.unpack_from('<QQ', b, 40)
    if b[72 + 18 // 8] >> (18 % 8) & 1:
        sys.exit('%s: has AUX area data, whose index would move: not supported' % src)
    rec = struct.pack('<IHH5Q8B', TIME_CONV, 0, 56, shift, mult, zero % 2**64, 0, 0,
                      cap_zero, 0, 0, 0, 0, 0, 0, 0)
    pos = data_off
    while pos < data_off + data_size:
        rtype, _, size = struct.unpack_from('<IHH', b, pos)
        if rtype == TIME_CONV and size == len(rec):
            b[pos:pos + size] = rec
            break
        if rtype == 71:      # AUXTRACE: its data follows
            size += struct.unpack_from('<Q', b, pos + 8)[0]
        pos += size
    else:
        nfeat = sum(bin(x).count('1') for x in b[72:104])
        table = data_off + data_size
        for i in range(nfeat):
            off, = struct.unpack_from('<Q', b, table + 16 * i)
            struct.pack_into('<Q', b, table + 16 * i, off + len(rec))
        struct.pack_into('<Q', b, 48, data_size + len(rec))
        b[data_off:data_off] = rec
    open(dst, 'wb').write(b)


main()
