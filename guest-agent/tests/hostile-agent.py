#!/usr/bin/env python3
# A hostile vmpt-agent for the tests: deployed like the real one, it says
# the right version and then misbehaves as the file "mode" beside it says.
# "version" beside it holds the version to claim (its hash it computes as
# the real agent does); "sideband" the perf.data
# it sends for `record`; "size" the bytes of each file in the modes that
# send big files; "fill" a path and a byte count: the file the modes that
# fill the host's disk write there (this "guest" is the host).
import os
import struct
import sys
import time

here = os.path.dirname(os.path.abspath(sys.argv[0]))


def read(name):
    with open(os.path.join(here, name), 'rb') as f:
        return f.read()


def fill():
    path, size = read('fill').decode().split()
    with open(path, 'wb') as f:
        f.write(b'\0' * int(size))


def frame(kind, name, data=b'', size=None, err=0):
    name = name.encode()
    size = len(data) if size is None else size
    return struct.pack('<IIIIQ', kind, len(name), err, 0, size) + name + data


out = sys.stdout.buffer
cmd = sys.argv[1] if len(sys.argv) > 1 else ''
mode = read('mode').decode().strip()
if cmd == '--version':
    h = 0xcbf29ce484222325
    for b in open(sys.argv[0], 'rb').read():
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    out.write(b'vmpt-agent %s fnv1a64:%016x\n' % (read('version').strip(), h))
    sys.exit(0)
if cmd == 'record':
    if mode == 'fail':
        sys.stderr.write('boom: the guest kernel said no\n')
        sys.exit(3)
    if mode == 'noready':
        out.write(b'Welcome to the guest! Have a nice day\n')
        sys.exit(0)
    out.write(b'VMPT-AGENT READY\n')
    out.flush()
    sys.stdin.buffer.read()
    if mode == 'silent':
        time.sleep(10)  # bounded: this "guest" is the test machine
    elif mode == 'garbage':
        out.write(b'\x7fELF this is not a reply stream' * 10)
    elif mode == 'badperf':
        out.write(b'VMPTPAK1' + frame(1, '[perf.data]', b'PERFILE2' + b'\xff' * 200) + frame(3, ''))
    else:
        out.write(b'VMPTPAK1' + frame(1, '[perf.data]', read('sideband')) + frame(3, ''))
    if mode == 'fillafterrecord':
        # The disk fills after the sideband came: before the binaries.
        out.flush()
        fill()
    sys.exit(0)
if cmd == 'pack':
    names = [n for n in sys.stdin.buffer.read().decode().split('\n') if n]
    reply = b'VMPTPAK1'
    for i, name in enumerate(names):
        if mode == 'rename' and i == 0:
            # Answer with a path that climbs out of the sysroot.
            reply += frame(1, '/../../../../../../tmp/vmpt-pwned', b'pwned')
        elif mode == 'oversize' and i == 0:
            reply += frame(1, name, b'x' * 64, size=1 << 40)
            break
        elif mode == 'big':
            reply += frame(1, name, b'x' * int(read('size')))
        elif mode == 'fillwhile' and i == 0:
            # A quarter of the file, then the disk fills, then the rest.
            size = int(read('size'))
            out.write(reply + frame(1, name, b'x' * (size // 4), size=size))
            out.flush()
            fill()
            out.write(b'x' * (size - size // 4))
            reply = b''
        else:
            reply += frame(1, name, b'guest copy of ' + name.encode())
    out.write(reply + frame(3, ''))
    sys.exit(0)
sys.exit(2)
