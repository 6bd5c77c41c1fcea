#!/bin/sh
# vmpt script on the real KVM-PT recordings: instruction counts equal to
# libipt's (flow_vs_libipt checks the addresses), -j output identical to one
# thread, branch and error lines shaped like perf script's.
set -eu
T="$SHARED/realtraces/kvm-pt"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$VMPT" script --pt "$T/Unzip/trace" --pagecache "$T/Unzip/data" \
	--filter 0x400000-0x427000 --itrace=i0ns -F ip > "$out/ip"
[ "$(wc -l < "$out/ip")" -eq 149576 ] || fail "Unzip: $(wc -l < "$out/ip") instructions, libipt has 149576"
[ "$(head -n 2 "$out/ip")" = "           41ac60
           41ac62" ] || fail "Unzip: first instructions: $(head -n 2 "$out/ip")"

# The same from the recording's ELF instead of its page cache.
"$VMPT" script --pt "$T/Unzip/trace" --elf "$T/Unzip/data" \
	--filter 0x400000-0x427000 --itrace=i0ns -F ip > "$out/ipelf"
cmp -s "$out/ip" "$out/ipelf" || fail "Unzip: --elf and --pagecache differ"

for j in 2 3; do
	"$VMPT" script -j $j --pt "$T/avscript_32/failed_trace_12709_1" \
		--pagecache "$T/avscript_32/page_cache" --itrace=i0ns -F ip > "$out/ipj"
	"$VMPT" script --pt "$T/avscript_32/failed_trace_12709_1" \
		--pagecache "$T/avscript_32/page_cache" --itrace=i0ns -F ip > "$out/ip1"
	cmp -s "$out/ip1" "$out/ipj" || fail "avscript_32: -j $j differs from one thread"
done
[ "$(wc -l < "$out/ip1")" -eq 1114194 ] || fail "avscript_32: $(wc -l < "$out/ip1") instructions"

"$VMPT" script --pt "$T/Unzip/trace" --elf "$T/Unzip/data" --itrace=b \
	-F flags,ip,addr > "$out/b"
[ "$(sed -n 2p "$out/b")" = "  call                             41ac8e =>           4019c8" ] ||
	fail "Unzip branches: '$(sed -n 2p "$out/b")'"

# Code missing from the image: error lines with offset and ip, as perf's.
"$VMPT" script --pt "$T/dyn_test/sample_raw_0" --pagecache "$T/dyn_test/page_cache" \
	--itrace=e > "$out/e" 2>/dev/null
[ "$(head -n 1 "$out/e")" = " instruction trace error type 1 time 0 cpu -1 pid -1 tid -1 ip 0x7ffff7fcf000 offset 0x1ac8 code 5: Failed to get instruction" ] ||
	fail "dyn_test errors: '$(head -n 1 "$out/e")'"
[ "$(wc -l < "$out/e")" -eq 14 ] || fail "dyn_test: $(wc -l < "$out/e") errors, expected 14"

# perf.data input: perf script reports this error at the same time and ip
# (" instruction trace error type 1 time 641.256845844 cpu 3 pid 3174 tid
# 3174 ip 0xffffffffb960d302 code 5: Failed to get instruction"): the
# binaries are not in the recording.  The offset is the file's, as vmpt
# dump lists it.
"$VMPT" script -i "$SHARED/realtraces/perf-data/perf.data.intel_pt-4.14" --itrace=e > "$out/pd" 2>/dev/null
grep -q "^ instruction trace error type 1 time 641.256845844 cpu 3 pid 3174 tid 3174 ip 0xffffffffb960d302 offset 0x7818 code 5: Failed to get instruction$" "$out/pd" ||
	fail "perf.data errors: $(head -n 3 "$out/pd")"

"$VMPT" script --pt /nonexistent 2> "$out/err" && fail "missing trace accepted"
grep -q "/nonexistent: No such file or directory" "$out/err" || fail "missing trace: $(cat "$out/err")"
echo ok
