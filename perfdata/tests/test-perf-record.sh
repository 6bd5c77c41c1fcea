#!/bin/sh
# perf.data as this machine's perf 6.1 writes it (recorded at test time
# with software events: no Intel PT here), file, pipe and threaded
# directory form, perf record -z: vmpt reads every record, attr and feature
# as perf does.
set -eu
. "$SRCDIR/perfdata/tests/perf-lib.sh"

# Sideband as vmpt record asks for it: mmap2, comm, task, switches.
record() {
	perf record -e task-clock -e dummy:u --switch-events -c 100000 "$@" \
		-- sh -c 'ls / >/dev/null' 2>"$T/rec.err"
}
if ! record -o "$T/file.data" >/dev/null; then
	cat "$T/rec.err"
	echo "SKIP: perf record cannot record here (perf_event_paranoid?)"
	exit 77
fi
record -o - >"$T/pipe.data" || fail "perf record -o -"

# ---- file mode ----
quiet_perf file script -D -i "$T/file.data"
cp "$T/out" "$T/file.D"
perf_records "$T/file.D" | sort >"$T/a"
vmpt_records "$T/file.data" | sort >"$T/b"
diff -u "$T/a" "$T/b" || fail "records differ from perf's (file mode)"
for t in ID_INDEX MMAP MMAP2 COMM SAMPLE FINISHED_ROUND THREAD_MAP CPU_MAP \
	 FINISHED_INIT; do
	grep -q "PERF_RECORD_$t[ :(]\|PERF_RECORD_$t\$" "$T/b" || fail "no $t record"
done
grep '^ \.\.\. id: ' "$T/file.D" >"$T/a"
"$LIST" "$T/file.data" | grep '^ \.\.\. id: ' >"$T/b"
diff -u "$T/a" "$T/b" || fail "ID_INDEX entries differ"
[ -s "$T/b" ] || fail "perf 6.1 wrote no ID_INDEX entries"

# attrs, ids, names and the machine description
quiet_perf header report --header-only -i "$T/file.data"
cp "$T/out" "$T/hdr"
grep '^# event : ' "$T/hdr" | while IFS= read -r line; do
	name=$(echo "$line" | sed -E 's/^# event : name = ([^,]*),.*/\1/')
	ids=$(echo "$line" | sed -E 's/.*id = \{ ([0-9, ]*) \}.*/\1/; s/,//g')
	type=$(echo "$line" | sed -nE 's/.*, type = ([0-9]+) .*/\1/p; s/.*, type = ([0-9]+),.*/\1/p' | head -1)
	size=$(echo "$line" | sed -E 's/.*, size = ([0-9]+),.*/\1/')
	echo "event $name type ${type:-0} size $size ids $ids"
done >"$T/a"
"$LIST" --info "$T/file.data" | grep '^event ' |
	sed -E 's/ config [0-9a-fx]+ sample_type [0-9a-fx]+//' >"$T/b"
diff -u "$T/a" "$T/b" || fail "attrs differ"
[ -s "$T/a" ] || fail "perf's header lists no events"
"$LIST" --info "$T/file.data" >"$T/info"
hdr() { sed -nE "s/^# $1 *: (.*)/\\1/p" "$T/hdr" | sed -E 's/ +$//'; }
info() { sed -nE "s/^$1 (.*)/\\1/p" "$T/info"; }
for f in hostname 'os release' arch cpuid cpudesc 'total memory'; do
	[ -n "$(hdr "$f")" ] || fail "perf's header has no $f"
	[ "$(hdr "$f")" = "$(info "$f")" ] || fail "$f: '$(hdr "$f")' vs '$(info "$f")'"
done
[ "nrcpus online $(hdr 'nrcpus online') avail $(hdr 'nrcpus avail')" = \
  "nrcpus $(info nrcpus)" ] || fail nrcpus
[ -n "$(hdr cmdline)" ] && [ "$(hdr cmdline)" = "$(info 'cmdline :')" ] || fail cmdline
time_conv "$T/file.D" >"$T/a"
"$LIST" "$T/file.data" >"$T/b.full"
time_conv "$T/b.full" >"$T/b"
diff -u "$T/a" "$T/b" || fail "TIME_CONV differs"
# perf writes one only where perf time converts to TSC (the mmap page's
# cap_user_time_zero): say so where it did not, instead of comparing nothing.
if grep -q 'PERF_RECORD_TIME_CONV' "$T/file.D"; then
	[ -s "$T/a" ] || fail "perf printed no TIME_CONV fields"
else
	echo "note: perf wrote no TIME_CONV here (no cap_user_time_zero): its fields were not compared"
fi

# ---- pipe mode: attrs and features come as records ----
quiet_perf pipe script -D -i "$T/pipe.data"
cp "$T/out" "$T/pipe.D"
perf_records "$T/pipe.D" | pipe_offsets | sort >"$T/a"
vmpt_records "$T/pipe.data" | sort >"$T/b"
diff -u "$T/a" "$T/b" || fail "records differ from perf's (pipe mode)"
grep -q 'PERF_RECORD_SAMPLE' "$T/b" || fail "no samples read in pipe mode"
"$LIST" --info "$T/pipe.data" | grep '^event ' >"$T/a"
"$LIST" --info "$T/file.data" | grep '^event ' | sed -E 's/ ids.*//' >"$T/b"
sed -E 's/ ids.*//' "$T/a" | diff -u "$T/b" - || fail "pipe-mode attrs differ from the file's"
"$LIST" --info "$T/pipe.data" >"$T/pinfo"
for f in hostname 'os release' arch cpuid; do
	[ "$(sed -nE "s/^$f (.*)/\\1/p" "$T/pinfo")" = "$(info "$f")" ] ||
		fail "pipe-mode $f"
done
# ---- directory form of perf record --threads: records in data.N too ----
record --threads -o "$T/threads.data" >/dev/null || fail "perf record --threads"
ls "$T/threads.data/data.0" >/dev/null || fail "no data.0 in the threaded recording"
quiet_perf threads script -D -i "$T/threads.data"
cp "$T/out" "$T/threads.D"
perf_records "$T/threads.D" | sort >"$T/a"
vmpt_records "$T/threads.data" | sort >"$T/b"
diff -u "$T/a" "$T/b" || fail "records differ from perf's (perf record --threads)"
grep -q 'PERF_RECORD_SAMPLE' "$T/b" || fail "no samples read from the data.N files"
# ---- perf record -z: the records in COMPRESSED records (zstd) ----
record -z -o "$T/z.data" >/dev/null || fail "perf record -z"
quiet_perf z script -D -i "$T/z.data"
perf report -i "$T/z.data" --header-only 2>/dev/null | grep -q '^# compressed : Zstd' ||
	fail "perf record -z wrote no HEADER_COMPRESSED"
perf_records "$T/out" | sort >"$T/a"
vmpt_records "$T/z.data" | sort >"$T/b"
diff -u "$T/a" "$T/b" || fail "records differ from perf's (perf record -z)"
grep -q 'PERF_RECORD_SAMPLE' "$T/b" || fail "no samples read from the COMPRESSED records"
echo "ok: perf 6.1 recordings read as perf reads them (file, pipe, --threads, -z)"
