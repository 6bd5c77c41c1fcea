#!/bin/sh
# vmpt record --kcore: perf's directory form (OUT/data, OUT/kcore_dir) with
# the kernel and module text cut from a kcore.  The kcore is a synthetic
# procfs (test_kcore procfs) since this machine may have no /proc/kcore;
# test_kcore here covers the real one.
set -u
LOOP="$BUILDDIR/vm-tests/vcpu_loop"
if ! [ -r /dev/kvm ] || ! [ -w /dev/kvm ]; then
	echo "SKIP: /dev/kvm is not accessible to this user"
	exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
ok() { echo "ok: $*"; }
"$BUILDDIR/host/tests/test_kcore" procfs "$T" || exit 1
"$VMPT" record --event dummy --kcore --procfs-root "$T" -o "$T/out.data" -- "$LOOP" 2 5 100 1000 \
	>"$T/rec.out" 2>"$T/rec.err"
rc=$?
cat "$T/rec.err"
[ $rc -eq 0 ] || fail "vmpt record --kcore: exit $rc"
grep -q "^vmpt record: kcore_dir: 2 segments, 1839104 bytes of kernel and module text$" "$T/rec.err" &&
	ok "kcore_dir: kernel and module text" || fail "kcore_dir summary"
for f in data kcore_dir/kcore kcore_dir/kallsyms kcore_dir/modules; do
	[ -s "$T/out.data/$f" ] && ok "out.data/$f" || fail "out.data/$f missing"
done
cmp -s "$T/kallsyms" "$T/out.data/kcore_dir/kallsyms" && cmp -s "$T/modules" "$T/out.data/kcore_dir/modules" &&
	ok "kallsyms and modules copied as they were" || fail "kallsyms/modules differ"
loads=$(readelf -lW "$T/out.data/kcore_dir/kcore" | awk '$1 == "LOAD" { print $3, $5 }' | tr '\n' ' ')
[ "$loads" = "0xffffffff81000000 0x181000 0xffffffffc0010000 0x040000 " ] &&
	ok "kcore LOAD segments: $loads" || fail "kcore LOAD segments: $loads"
perf report --header-only -i "$T/out.data" >/dev/null 2>"$T/h.err" && [ ! -s "$T/h.err" ] &&
	ok "perf report --header-only reads the directory" || fail "perf report: $(cat "$T/h.err")"
perf script -i "$T/out.data" --show-mmap-events --show-task-events >"$T/script" 2>"$T/s.err"
grep -q "PERF_RECORD_MMAP -1/0: \[0xffffffff81000000(0x7effffff) @ 0xffffffff81000000\]: x \[kernel.kallsyms\]_text" "$T/script" &&
	ok "kernel map from the kallsyms read" || fail "no kernel map: $(head -n 3 "$T/script")"
grep -q "PERF_RECORD_COMM: CPU 1/KVM" "$T/script" && ok "vCPU threads in the data" || fail "no vCPU COMM"
exit $status
