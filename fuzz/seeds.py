#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Seeds for the libFuzzer targets that take more than a file (fuzz/run.sh).

  seeds.py corr PERF.DATA OUT   fuzz-correlate's input: the head from
                                AUXTRACE_INFO and the intel_pt config, then
                                each AUXTRACE buffer after "BUF:" idx cpu|tid
  seeds.py dir PERF.DATA OUT    fuzz-perf-forms' directory form: DIR/data
                                with the first half of the records, data.0
                                the rest (perf record --threads' layout)
  seeds.py pipe FILE OUT        fuzz-perf-forms' pipe form: mode byte 1, FILE
"""
import struct
import sys

PRIV_PMU, PRIV_PER_CPU, PRIV_TSC_BIT, PRIV_MTC_BIT, PRIV_MTC_FREQ = 0, 9, 5, 10, 11
PRIV_CTC_N, PRIV_CTC_D = 12, 13
AUXTRACE_INFO, AUXTRACE = 70, 71


def header(buf):
    magic, size, attr_size = struct.unpack_from('<8sQQ', buf, 0)
    if magic != b'PERFILE2' or size != 104:
        sys.exit('not a perf.data in file form')
    attrs = struct.unpack_from('<QQ', buf, 24)
    data = struct.unpack_from('<QQ', buf, 40)
    return attr_size, attrs, data


def records(buf, data):
    off, end = data[0], data[0] + data[1]
    while off + 8 <= end:
        typ, _misc, size = struct.unpack_from('<IHH', buf, off)
        if size < 8:
            break
        extra = struct.unpack_from('<Q', buf, off + 8)[0] if typ == AUXTRACE else 0
        yield off, typ, size + extra
        off += size + extra


def corr(buf):
    attr_size, attrs, data = header(buf)
    configs = {}
    for a in range(attrs[0], attrs[0] + attrs[1], attr_size):
        typ, _size, config = struct.unpack_from('<IIQ', buf, a)
        configs[typ] = config
    priv, bufs = None, []
    for off, typ, size in records(buf, data):
        if typ == AUXTRACE_INFO:
            n = (struct.unpack_from('<H', buf, off + 6)[0] - 16) // 8
            priv = struct.unpack_from('<%dQ' % n, buf, off + 16)
        elif typ == AUXTRACE:
            length, _o, _ref, idx, tid, cpu = struct.unpack_from('<QQQIiI', buf, off + 8)
            bufs.append((idx, tid, cpu, buf[off + 48:off + 48 + length]))
    if priv is None or len(priv) <= PRIV_CTC_D:
        sys.exit('no intel_pt AUXTRACE_INFO')
    config = configs.get(priv[PRIV_PMU], 0)
    per_cpu = bool(priv[PRIV_PER_CPU])
    # The config's format bits as masks (perf's perf_pmu__format_bits).
    flags = bool(config & priv[PRIV_TSC_BIT]) | bool(config & priv[PRIV_MTC_BIT]) << 1
    flags |= per_cpu << 5
    freq = priv[PRIV_MTC_FREQ]
    period = (config & freq) >> ((freq & -freq).bit_length() - 1) if freq else 0
    out = struct.pack('<BBIIBB', flags, period & 15,
                      priv[PRIV_CTC_N] & 0xffffffff, priv[PRIV_CTC_D] & 0xffffffff, 0, 0)
    for idx, tid, cpu, trace in bufs:
        out += b'BUF:' + bytes([idx & 255, (cpu if per_cpu else tid) & 255]) + trace
    return out


def dirform(buf):
    _attr_size, _attrs, data = header(buf)
    recs = list(records(buf, data))
    if len(recs) < 2:
        sys.exit('too few records to split')
    cut = recs[len(recs) // 2][0]
    first = bytearray(buf)
    struct.pack_into('<Q', first, 48, cut - data[0])
    return b'\0' + bytes(first) + b'VMPTPART' + buf[cut:data[0] + data[1]]


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ('corr', 'dir', 'pipe'):
        sys.exit(__doc__)
    buf = open(sys.argv[2], 'rb').read()
    out = {'corr': corr, 'dir': dirform, 'pipe': lambda b: b'\1' + b}[sys.argv[1]](buf)
    open(sys.argv[3], 'wb').write(out)


main()
