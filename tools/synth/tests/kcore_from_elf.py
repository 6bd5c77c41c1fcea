#!/usr/bin/env python3
# kcore_from_elf.py ELF OUT: the executable PT_LOAD segments of ELF as an ELF core
# (ET_CORE, PT_LOAD R+X at their addresses), as /proc/kcore and the guest
# agent's compact kcore lay out kernel text.
import struct, sys
d = open(sys.argv[1], "rb").read()
phoff, = struct.unpack_from("<Q", d, 0x20)
phentsize, phnum = struct.unpack_from("<HH", d, 0x36)
segs = []
for i in range(phnum):
    p_type, p_flags, p_off, p_vaddr, _, p_filesz, _, _ = struct.unpack_from("<IIQQQQQQ", d, phoff + i * phentsize)
    if p_type == 1 and p_flags & 1 and p_filesz:
        segs.append((p_vaddr, d[p_off:p_off + p_filesz]))
ehdr = bytearray(d[:16]) + struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, 0, 0, 64, 56, len(segs), 64, 0, 0)
out = bytearray(ehdr)
off = 64 + 56 * len(segs)
off = (off + 4095) & ~4095
data = b""
for vaddr, body in segs:
    out += struct.pack("<IIQQQQQQ", 1, 5, off + len(data), vaddr, 0, len(body), len(body), 4096)
    data += body + bytes((4096 - len(body) % 4096) % 4096)
out += bytes(off - len(out)) + data
open(sys.argv[2], "wb").write(out)
