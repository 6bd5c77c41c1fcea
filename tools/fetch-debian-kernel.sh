#!/bin/bash
# fetch-debian-kernel.sh: Debian's real kernel (the package linux-image-amd64
# depends on), fetched once with apt-get download and cached; prints the
# cache directory, holding
#   linux-image.deb  the package (vm-tests/guest/build-image.sh boots it)
#   vmlinuz, config  its /boot files
#   vmlinux          the ELF kernel inside vmlinuz (the bzImage payload,
#                    decompressed), with the text symbols of System.map
#                    added as a .symtab (the package's vmlinux is stripped)
#   System.map       from the -dbg package (the package's own is a stub
#                    that says so); kallsyms format: "ADDR TYPE NAME"
# Exit 1 with the reason on stderr when apt cannot get the packages.
set -euo pipefail
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/vmpt
export DEBIAN_FRONTEND=noninteractive

die() {
	echo "fetch-debian-kernel: $*" >&2
	exit 1
}

kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
	awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
[ -n "$kpkg" ] || die "apt knows no linux-image-amd64 (run apt-get update)"
kver=$(apt-cache policy "$kpkg" | awk '/Candidate:/ { print $2 }')
OUT=$CACHE/debian-kernel-$kpkg-$kver
if [ -f "$OUT/ready" ]; then
	echo "$OUT"
	exit 0
fi
for tool in objcopy readelf xz zstd python3 flock; do
	command -v "$tool" >/dev/null || die "$tool missing (tools/install-deps.sh)"
done

# One fetch at a time (the synth and guest-vm tests may ask together).
mkdir -p "$CACHE"
exec 9> "$CACHE/.fetch-debian-kernel.lock"
flock 9
if [ -f "$OUT/ready" ]; then
	echo "$OUT"
	exit 0
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/vmpt-fetch-kernel.XXXXXX")
trap 'rm -rf "$T"' EXIT
chmod 777 "$T"	# apt's download sandbox user writes here
(cd "$T" && apt-get download -q "$kpkg" "$kpkg-dbg" >&2) ||
	die "apt-get download $kpkg $kpkg-dbg failed"
chmod 700 "$T"
mv "$T/${kpkg}_"*.deb "$T/linux-image.deb"
dpkg-deb --fsys-tarfile "$T/linux-image.deb" | tar -x -C "$T" ./boot
# Only System.map from the 860 MB -dbg package: tar stops once it has it.
dpkg-deb --fsys-tarfile "$T/${kpkg}-dbg_"*.deb 2>/dev/null |
	tar -x -C "$T" --occurrence=1 "./usr/lib/debug/boot/System.map-${kpkg#linux-image-}" ||
	true
rm -f "$T/${kpkg}-dbg_"*.deb
map="$T/usr/lib/debug/boot/System.map-${kpkg#linux-image-}"
[ -s "$map" ] || die "no System.map in $kpkg-dbg"

# The bzImage payload: setup_sects at 0x1f1 (0 means 4), payload_offset
# and payload_length at 0x248 (boot protocol 2.08+), from the start of
# the protected-mode code; its magic says how it is compressed.
python3 - "$T"/boot/vmlinuz-* "$T/payload" <<'P'
import struct, sys
d = open(sys.argv[1], "rb").read()
if d[0x202:0x206] != b"HdrS":
    sys.exit(sys.argv[1] + ": not a bzImage (no HdrS at 0x202)")
setup = (d[0x1f1] or 4) + 1
off, length = struct.unpack_from("<II", d, 0x248)
start = setup * 512 + off
open(sys.argv[2], "wb").write(d[start:start + length])
P
case $(od -An -tx1 -N4 "$T/payload" | tr -d ' ') in
fd377a58) xz -dc --single-stream < "$T/payload" > "$T/vmlinux.bin" ;;
28b52ffd) zstd -dcq < "$T/payload" > "$T/vmlinux.bin" ;;
1f8b08*) gzip -dc < "$T/payload" > "$T/vmlinux.bin" ;;
*) die "vmlinuz: unknown payload compression ($(od -An -tx1 -N4 "$T/payload"))" ;;
esac
readelf -h "$T/vmlinux.bin" 2>/dev/null | grep -q 'Machine:.*X86-64' ||
	die "the vmlinuz payload is not an x86-64 ELF"

# System.map's text symbols inside .text as .symtab entries (.text-relative:
# perf and vmpt-synth read them like any vmlinux's).
text=$(readelf -SW "$T/vmlinux.bin" |
	sed -n 's/.* \.text *PROGBITS *\([0-9a-f]*\) [0-9a-f]* \([0-9a-f]*\) .*/\1 \2/p')
[ -n "$text" ] || die "vmlinux has no .text"
read -r text_addr text_size <<< "$text"
python3 - "$map" "$text_addr" "$text_size" "$T/symbols" <<'P'
import sys
lo, size = int(sys.argv[2], 16), int(sys.argv[3], 16)
bind = {"t": "local", "T": "global", "w": "weak", "W": "weak"}
with open(sys.argv[4], "w") as out:
    for line in open(sys.argv[1]):
        f = line.split()
        if len(f) != 3 or f[1] not in bind:
            continue
        a = int(f[0], 16)
        if lo <= a < lo + size:
            out.write("--add-symbol %s=.text:0x%x,function,%s\n" %
                      (f[2], a - lo, bind[f[1]]))
P
objcopy @"$T/symbols" "$T/vmlinux.bin" "$T/vmlinux"

mkdir -p "$OUT.tmp"
mv "$T/linux-image.deb" "$T/vmlinux" "$OUT.tmp/"
cp "$map" "$OUT.tmp/System.map"
cp "$T"/boot/vmlinuz-* "$OUT.tmp/vmlinuz"
cp "$T"/boot/config-* "$OUT.tmp/config"
echo "$kpkg $kver" > "$OUT.tmp/ready"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
# Older kernels are not used again.
for old in "$CACHE"/debian-kernel-*; do
	[ "$old" = "$OUT" ] || rm -rf "$old"
done
echo "$OUT"
