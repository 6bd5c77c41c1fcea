#!/bin/bash
# Without the libraries only some commands open (libvirt, libpq, libsqlite3, libssh;
# libdebuginfod in symbols/tests/debuginfod.sh): vmpt starts, and those commands fail with
# a message naming the soname, dlerror()'s words and the Debian package,
# never a crash.  A library is hidden by mounting /dev/null over its file in
# a mount namespace of our own (root only).
set -u
[ "$(id -u)" = 0 ] && unshare -m true 2> /dev/null ||
	{ echo "needs root and unshare -m to hide a library"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# path SONAME: the file the dynamic linker opens for it.
path() { ldconfig -p | awk -v s="$1" '$1 == s && /x86-64|x86_64/ { print $NF; exit }'; }
# hidden "SONAME..." CMD...: CMD with those libraries unreadable as ELF.
hidden() {
	local libs=$1 m=
	shift
	for s in $libs; do
		m+="mount --bind /dev/null $(readlink -f "$(path "$s")") && "
	done
	unshare -m sh -c "$m"'exec "$@"' sh "$@"
}
# expect NAME STATUS WANT-STDERR CMD...
expect() {
	local name=$1 status=$2 want=$3 rc
	shift 3
	"$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ "$rc" = "$status" ] || { echo "FAIL $name: exit $rc, not $status"; fail=1; }
	[ "$(cat "$tmp/err")" = "$want" ] ||
		{ echo "FAIL $name: stderr"; diff <(echo "$want") "$tmp/err"; fail=1; }
}
file_too_short() { echo "$(path "$1"): file too short"; }

# Never needed to start: loaded only by the commands that use them.
expect "--version" 0 "" \
	hidden "libvirt.so.0 libvirt-qemu.so.0 libpq.so.5 libsqlite3.so.0 libdebuginfod.so.1 \
		libssh.so.4" \
	"$VMPT" --version
grep -qx "vmpt $(sed -n "s/^  version : '\(.*\)',/\1/p" "$SRCDIR/meson.build")" "$tmp/out" ||
	{ echo "FAIL --version: $(cat "$tmp/out")"; fail=1; }

PD=$SHARED/realtraces/perf-data-hase/loopy/loopy-20180404T162955.perf
expect "export postgresql" 1 "vmpt export: vmpt_dl_test: connecting: cannot use libpq.so.5 \
(Debian package libpq5): $(file_too_short libpq.so.5)" \
	hidden libpq.so.5 "$VMPT" export postgresql -i "$PD" -o vmpt_dl_test
expect "export sqlite" 1 "vmpt export: $tmp/e.db: opening: cannot use libsqlite3.so.0 \
(Debian package libsqlite3-0): $(file_too_short libsqlite3.so.0)" \
	hidden libsqlite3.so.0 "$VMPT" export sqlite -i "$PD" -o "$tmp/e.db"

expect "record --domain" 1 "vmpt record: cannot use libvirt.so.0 (Debian package libvirt0): \
$(file_too_short libvirt.so.0)" \
	hidden libvirt.so.0 "$VMPT" record --event dummy --domain d -o "$tmp/r.data"
expect "record --domain, no libvirt-qemu" 1 "vmpt record: cannot use libvirt-qemu.so.0 \
(Debian package libvirt0): $(file_too_short libvirt-qemu.so.0)" \
	hidden libvirt-qemu.so.0 "$VMPT" record --event dummy --domain d -o "$tmp/r.data"

hidden libvirt.so.0 "$VMPT" doctor -c qemu:///system > "$tmp/doc" 2>&1
want="PROBLEM libvirt: cannot use libvirt.so.0 (Debian package libvirt0): $(file_too_short libvirt.so.0)"
grep -qxF "$want" "$tmp/doc" || { echo "FAIL doctor: $(grep libvirt "$tmp/doc")"; fail=1; }

expect "guest check" 1 "vmpt guest: cannot use libssh.so.4 (Debian package libssh-4): \
$(file_too_short libssh.so.4)" \
	hidden libssh.so.4 "$VMPT" guest check ssh://127.0.0.1:1

[ $fail = 0 ] && echo "without libvirt, libpq, libsqlite3, libssh or libdebuginfod: vmpt starts, the commands that need them say so"
exit $fail
