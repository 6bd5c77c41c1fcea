#!/bin/sh
# perf.data written by vmpt, judged by perf 6.1: the real recordings
# rewritten record by record, and a minimal synthetic intel_pt recording
# over code of a real binary (file and directory form).
set -eu
. "$SRCDIR/perfdata/tests/perf-lib.sh"
F=$SHARED/realtraces/perf-data/perf.data.intel_pt-4.14

# ---- the real recording, every record re-encoded by the writer ----
"$WRITE" copy "$F" "$T/copy.data" || fail "copy"
vmpt_records "$F" | no_offsets >"$T/orig.rec"
vmpt_records "$T/copy.data" | no_offsets >"$T/copy.rec"
diff -u "$T/orig.rec" "$T/copy.rec" || fail "written records differ from the original's"
"$LIST" --info "$F" | grep -v '^auxtrace index' >"$T/orig.info"
"$LIST" --info "$T/copy.data" | grep -v '^auxtrace index' | sed 's/ size 128 / size 112 /' >"$T/copy.info"
diff -u "$T/orig.info" "$T/copy.info" || fail "attrs/features differ after writing"
perf script -D -i "$F" >"$T/orig.D" 2>"$T/orig.err"
perf script -D -i "$T/copy.data" >"$T/copy.D" 2>"$T/copy.err"
# perf reads both the same: records, packet dumps and its one warning
# (the recording's kernel is not on this machine).
perf_records "$T/orig.D" | no_offsets | sort >"$T/a"
perf_records "$T/copy.D" | no_offsets | sort >"$T/b"
diff -u "$T/a" "$T/b" || fail "perf reads the copy differently"
# Every detail perf prints of every record (TIME_CONV's time_zero, the
# AUXTRACE_INFO words, the sample fields...), as perf reads them: only the
# file offsets and names differ, and the raw record bytes (the kernel left
# bytes of older strings in a name's padding; the writer pads with zeros).
details() { sed -E 's/0x[0-9a-f]+(@[^ ]*)? \[0x/[0x/' "$1" | grep -vE '^\.  [0-9a-f]{4}:  '; }
details "$T/orig.D" >"$T/a"
details "$T/copy.D" >"$T/b"
grep -q '^\.\.\. Time Zero  *[0-9]' "$T/a" && grep -q '^  Max non-turbo ratio [0-9]' "$T/a" &&
	[ "$(wc -l <"$T/a")" -gt 10000 ] || fail "perf printed no details of the original"
diff -u "$T/a" "$T/b" || fail "perf reads details of the copy differently"
grep '^\.  [0-9a-f]\{8\}:' "$T/orig.D" >"$T/a"
grep '^\.  [0-9a-f]\{8\}:' "$T/copy.D" >"$T/b"
diff -q "$T/a" "$T/b" >/dev/null || fail "perf dumps different trace data from the copy"
diff -u "$T/orig.err" "$T/copy.err" || fail "perf's warnings differ for the copy"
perf report --header-only -i "$T/copy.data" >"$T/hdr" 2>"$T/err"
[ ! -s "$T/err" ] || { cat "$T/err"; fail "perf report --header-only complained"; }
grep -q '^# contains AUX area data' "$T/hdr" || fail "no AUX area in the header"

# ---- a synthetic intel_pt recording over this test's own code ----
ELF=$WRITE
ADDR=0x$(nm "$ELF" | awk '$3 == "main" { print $1 }')
[ "$ADDR" != 0x ] || fail "no main in $ELF"
IP=$(printf '%x' $((0x555555554000 + ADDR)))
for form in file dir; do
	out=$T/synth-$form.data
	if [ $form = dir ]; then
		"$WRITE" synth "$out" "$ELF" "$ADDR" 8 --dir || fail "synth --dir"
		[ -f "$out/data" ] || fail "directory form without data"
	else
		"$WRITE" synth "$out" "$ELF" "$ADDR" 8 || fail synth
	fi
	quiet_perf "$form" report --header-only -i "$out"
	grep -q '^# event : name = intel_pt//u, , id = { 11 }, type = 8, ' "$T/out" ||
		fail "intel_pt attr in the header"
	grep -q '^# event : name = dummy:u, , id = { 12 }, type = 1, ' "$T/out" ||
		fail "sideband attr in the header"
	grep -q '^# cpuid : ' "$T/out" || fail "no cpuid"
	grep -q '^# contains AUX area data' "$T/out" || fail "no AUX area"
	quiet_perf "$form" script -D -i "$out"
	cp "$T/out" "$T/synth.D"
	perf_records "$T/synth.D" | sort >"$T/a"
	vmpt_records "$out" | sort >"$T/b"
	diff -u "$T/a" "$T/b" || fail "perf lists vmpt's records differently ($form)"
	grep '^ \.\.\. id: ' "$T/synth.D" >"$T/a"
	"$LIST" "$out" | grep '^ \.\.\. id: ' >"$T/b"
	diff -u "$T/a" "$T/b" || fail "perf reads the ID_INDEX differently ($form)"
	[ $form = file ] || grep -q '  machine_pid: 0  vcpu: 2$' "$T/b" || fail "guest id fields"
	time_conv "$T/synth.D" >"$T/a"
	"$LIST" "$out" >"$T/b.full"
	time_conv "$T/b.full" >"$T/b"
	diff -u "$T/a" "$T/b" || fail "perf reads the TIME_CONV differently ($form)"
	# what pd-write put there, as perf 5.10+ reads it
	printf '%s\n' "... Time Shift      31" "... Time Muliplier  1789569706" \
		"... Time Zero       0" "... Time Cycles     0" "... Time Mask       0" \
		"... Cap Time Zero   1" "... Cap Time Short  0" | diff -u - "$T/a" ||
		fail "perf reads another TIME_CONV than pd-write wrote ($form)"
	grep -q "TIP.PGE 0x$IP" "$T/synth.D" || fail "perf's dump lacks the TIP.PGE"
	quiet_perf "$form" script --itrace=b -F comm,tid,ip,addr,sym,dso -i "$out"
	grep -q "pd-synth  4242 .*=> *$IP main ($ELF)$" "$T/out" ||
		{ cat "$T/out"; fail "perf's intel_pt decoder did not decode the branch into main"; }
	# perf inject edits vmpt's files in place (VM time correlation).
	quiet_perf "$form" inject -i "$out" --vm-time-correlation=dry-run
	[ ! -s "$T/out" ] || { cat "$T/out"; fail "perf inject dry-run output ($form)"; }
	if [ $form = file ]; then
		cp "$out" "$T/inject.data"
		quiet_perf "$form" inject -i "$T/inject.data" --vm-time-correlation=0 --force
		cmp -s "$out" "$T/inject.data" || fail "perf inject changed a trace without VMCS"
	fi
	"$VMPT" dump "$out" >"$T/dump" || fail "vmpt dump $form"
	grep -q "tip.pge .*$IP" "$T/dump" || { cat "$T/dump"; fail "vmpt dump: tip.pge"; }
done
# ---- vmpt dump names the file and offset of what is broken ----
out=$T/synth-file.data
data_size=$(od -An -t u8 -j 48 -N 8 "$out" | tr -d ' ')
head -c 1000 "$out" >"$T/cut.data"
"$VMPT" dump "$T/cut.data" >/dev/null 2>"$T/err" || fail "vmpt dump of a cut file failed"
echo "vmpt dump: warning: $T/cut.data: offset 0x30: data section (offset 0x198, size $data_size) goes beyond the end of the file (1000 bytes): the file was cut, read up to where it ends" >"$T/want"
diff -u "$T/want" "$T/err" || fail "vmpt dump warning for a cut file"
echo "ok: perf accepts vmpt's perf.data"
