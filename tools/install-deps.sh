#!/bin/sh
# Install the Debian 12 packages vmpt builds and tests with, when missing.
set -e
pkgs="build-essential meson ninja-build pkg-config libelf-dev libcapstone-dev
libssh-dev libvirt-dev libcmocka-dev libipt-dev libzydis-dev linux-perf clang
libclang-rt-14-dev python3
openssh-server busybox-static cpio qemu-system-x86
libvirt-daemon-system xz-utils zstd pandoc man-db libc6-i386 libc6-dbg
libiberty-dev libdw-dev libdebuginfod-dev debuginfod"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
