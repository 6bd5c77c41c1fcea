#!/bin/sh
# Install the Debian 12 packages vmpt builds and tests with, when missing.
set -e
pkgs="build-essential meson ninja-build pkg-config libelf-dev libcapstone-dev
libzstd-dev libssh-dev libvirt-dev libcmocka-dev libipt-dev libzydis-dev linux-perf clang
libclang-rt-14-dev python3
openssh-server busybox-static cpio qemu-system-x86
libvirt-daemon-system xz-utils zstd pandoc man-db libc6-i386 libc6-dbg
libiberty-dev libdw-dev libdebuginfod-dev debuginfod curl
libsqlite3-dev libpq-dev libtraceevent-dev sqlite3 postgresql python3-pyside2.qtsql python3-pyside2.qtcore
libqt5sql5-sqlite libqt5sql5-psql protobuf-compiler python3-protobuf chromium nodejs npm"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
# nodejs from another source may bring its own npm (Debian's would clash)
command -v npm > /dev/null && missing=$(echo "$missing" | sed 's/ npm\b//; s/ nodejs\b//')
if [ -n "$missing" ]; then
	echo "install-deps: installing$missing"
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo"
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq
	# shellcheck disable=SC2086
	$SUDO apt-get install -y -qq --no-install-recommends $missing
fi
# The clients vmpt export's tests open its output in (speedscope), as
# output/tests/clients/package-lock.json pins them.
clients=$(dirname "$0")/../output/tests/clients
want=$(sed -n 's/^ *"speedscope": "\(.*\)"$/\1/p' "$clients/package.json")
grep -qs "^  \"version\": \"$want\"" "$clients/node_modules/speedscope/package.json" ||
	(cd "$clients" && npm ci --no-audit --no-fund --loglevel=error)
