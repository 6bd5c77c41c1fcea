#!/usr/bin/env python3
"""check_kcore.py KCORE_DIR [REFERENCE_KCORE]: is KCORE_DIR a compact kcore
as perf's kcore_dir holds it?  An ELF core whose few PT_LOAD segments hold
the kernel text (_stext.._etext of its kallsyms) and every module listed in
its modules file; with REFERENCE_KCORE (a /proc/kcore), the text at _stext
must be the same bytes."""
import struct
import sys


def segments(f):
    f.seek(0)
    eh = f.read(64)
    if eh[:4] != b'\x7fELF' or eh[4] != 2:
        sys.exit('not a 64-bit ELF file')
    phoff, = struct.unpack_from('<Q', eh, 32)
    phentsize, phnum = struct.unpack_from('<HH', eh, 54)
    out = []
    for i in range(phnum):
        f.seek(phoff + i * phentsize)
        p_type, _flags, off, vaddr, _paddr, filesz = struct.unpack('<IIQQQQ', f.read(40))
        if p_type == 1:
            out.append((vaddr, filesz, off))
    return out


def read_at(f, segs, addr, n):
    for vaddr, size, off in segs:
        if vaddr <= addr and addr + n <= vaddr + size:
            f.seek(off + addr - vaddr)
            return f.read(n)
    sys.exit('no PT_LOAD segment holds %#x..%#x' % (addr, addr + n))


def main():
    d = sys.argv[1]
    syms = {}
    for line in open(d + '/kallsyms'):
        parts = line.split()
        if len(parts) >= 3 and parts[2] in ('_stext', '_etext'):
            syms[parts[2]] = int(parts[0], 16)
    stext, etext = syms['_stext'], syms['_etext']
    if not stext:
        sys.exit('kallsyms has no addresses (kptr_restrict)')
    with open(d + '/kcore', 'rb') as f:
        segs = segments(f)
        if not 1 <= len(segs) <= 8:
            sys.exit('%d PT_LOAD segments: not compact' % len(segs))
        text = read_at(f, segs, stext, 4096)
        if text == bytes(4096):
            sys.exit('the kernel text at _stext is all zeros')
        read_at(f, segs, etext - 1, 1)
        for line in open(d + '/modules'):
            parts = line.split()
            size, addr = int(parts[1]), int(parts[5], 16)
            read_at(f, segs, addr, size)
        if len(sys.argv) > 2:
            with open(sys.argv[2], 'rb') as ref:
                if read_at(ref, segments(ref), stext, 4096) != text:
                    sys.exit('the text at _stext differs from ' + sys.argv[2])
    total = sum(s[1] for s in segs)
    print('kcore: %d segments, %d bytes, _stext %#x' % (len(segs), total, stext))


main()
