#!/bin/bash
# meson install puts in place what a user and a packager expect: vmpt, the
# agent, the headers, libvmpt and libvmpt-host shared (with sonames) and
# static, their pkg-config files, a man page per command that man renders,
# the bash completion and the guides; and a C program built against the
# installed files with pkg-config links and runs.
set -u
: "${BUILDDIR:?}"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

meson install -C "$BUILDDIR" --no-rebuild --destdir "$D" --quiet > "$D.log" 2>&1 ||
	{ cat "$D.log"; rm -f "$D.log"; fail "meson install"; }
rm -f "$D.log"
option() {
	meson introspect "$BUILDDIR" --buildoptions | python3 -c '
import json, sys
print([o["value"] for o in json.load(sys.stdin) if o["name"] == sys.argv[1]][0])' "$1"
}
prefix=$(option prefix)
libdir=$(option libdir)
# A sanitized build's library needs its program sanitized too.
sanitize=$(option b_sanitize)
[ "$sanitize" = none ] && sanitize="" || sanitize=-fsanitize=$sanitize
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
root=$D$prefix
lib=$D$libdir

want() { [ -e "$1" ] || fail "not installed: ${1#"$D"}"; }
want "$root/bin/vmpt"
want "$root/libexec/vmpt/vmpt-agent"
for h in error.h packet.h flow.h image.h perf_data.h session.h guest_time.h record.h guest.h; do
	want "$root/include/vmpt/$h"
done
for l in libvmpt libvmpt-host; do
	want "$lib/$l.a"
	want "$lib/$l.so"
	soname=$(readelf -d "$lib/$l.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
	[ -n "$soname" ] || fail "$l.so has no soname"
	want "$lib/$soname"
	want "$lib/pkgconfig/${l#lib}.pc"
done
readelf -d "$lib/libvmpt.so" | grep -Eq 'libvirt|libssh' &&
	fail "libvmpt.so needs libvirt or libssh: decoding must not"
want "$root/share/bash-completion/completions/vmpt"
want "$root/share/doc/vmpt/script.md"

pages=0
for cmd in $("$root/bin/vmpt" --list-cmds) ""; do
	page=$root/share/man/man1/vmpt${cmd:+-$cmd}.1
	want "$page"
	out=$(MANWIDTH=80 man -l "$page" 2>&1) || fail "man -l $page: $out"
	printf '%s\n' "$out" | grep -q "^NAME" || fail "$page: no NAME section"
	printf '%s\n' "$out" | grep -Eq "vmpt${cmd:+-$cmd} +- " || fail "$page: no name line"
	pages=$((pages + 1))
done

# A program built against the installed library, found by pkg-config.
export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$D
cat > "$D/use.c" <<'C'
#include <vmpt/error.h>
#include <vmpt/guest_time.h>
#include <stdio.h>
int main(void)
{
	struct vmpt_tsc_scale s = { 5, 0, 48 };
	printf("%s %llu\n", vmpt_strerror(-VMPT_ERR_NOSYNC),
	       (unsigned long long)vmpt_host_tsc(&s, 7));
	return 0;
}
C
# shellcheck disable=SC2046
cc $sanitize -o "$D/use" "$D/use.c" $(pkg-config --cflags --libs vmpt) ||
	fail "building against the installed libvmpt"
got=$(LD_LIBRARY_PATH=$lib "$D/use") || fail "running against the installed libvmpt"
[ "$got" = "no PSB to synchronize on 2" ] || fail "installed libvmpt said '$got'"
echo "installed: binaries, headers, 2 libraries (shared+static, pc), $pages man pages, completion, guides"
