#!/bin/sh
# The real perf.data files (Linux 4.14, file and pipe mode) read by vmpt as
# perf 6.1 reads them: every record, the attrs, the feature sections, the
# AUXTRACE_INFO fields, and `vmpt dump`'s buffers.  perf's output is parsed
# at test time.
set -eu
. "$SRCDIR/perfdata/tests/perf-lib.sh"
DIR=$SHARED/realtraces/perf-data
F=$DIR/perf.data.intel_pt-4.14
P=$DIR/perf.data.piped.intel_pt-4.14

# ---- file mode: every record, as perf lists them (perf sorts by time) ----
perf script -D -i "$F" >"$T/perf.D" 2>"$T/perf.err"
perf_records "$T/perf.D" | sort >"$T/perf.rec"
vmpt_records "$F" | sort >"$T/vmpt.rec"
diff -u "$T/perf.rec" "$T/vmpt.rec" || fail "records of $F differ from perf's"
[ "$(wc -l <"$T/vmpt.rec")" -eq 257 ] || fail "expected 257 records"
for t in MMAP MMAP2 COMM EXIT SWITCH_CPU_WIDE ITRACE_START AUX AUXTRACE \
	 AUXTRACE_INFO TIME_CONV FINISHED_ROUND SAMPLE; do
	grep -q "PERF_RECORD_$t[ (:]\|PERF_RECORD_$t\$" "$T/vmpt.rec" || fail "no $t record"
done

# ---- TIME_CONV (the 32-byte form of older perf) ----
"$LIST" "$F" >"$T/vmpt.full"
time_conv "$T/perf.D" >"$T/a"
time_conv "$T/vmpt.full" >"$T/b"
diff -u "$T/a" "$T/b" || fail "TIME_CONV fields differ"
[ "$(wc -l <"$T/b")" -eq 3 ] || fail "expected the 3 TIME_CONV fields of perf 4.14"

# ---- AUXTRACE_INFO: the Intel PT fields, in perf's order and wording ----
sed -n '/PERF_RECORD_AUXTRACE_INFO/,/^$/p' "$T/perf.D" | grep '^  ' >"$T/perf.info"
"$LIST" --info "$F" | grep '^  ' >"$T/vmpt.info"
diff -u "$T/perf.info" "$T/vmpt.info" || fail "AUXTRACE_INFO fields differ"
[ "$(wc -l <"$T/vmpt.info")" -eq 18 ] || fail "expected 17 priv words + filter"

# ---- attrs and ids, feature sections ----
perf report --header-only -i "$F" >"$T/perf.hdr" 2>/dev/null
# perf omits type and config when they are 0.
grep '^# event : ' "$T/perf.hdr" | while IFS= read -r line; do
	name=$(echo "$line" | sed -E 's/^# event : name = ([^,]*),.*/\1/')
	ids=$(echo "$line" | sed -E 's/.*id = \{ ([0-9, ]*) \}.*/\1/; s/,//g')
	type=$(echo "$line" | sed -nE 's/.*, type = ([0-9]+),.*/\1/p')
	size=$(echo "$line" | sed -E 's/.*, size = ([0-9]+),.*/\1/')
	config=$(echo "$line" | sed -nE 's/.*, config = (0x[0-9a-f]+),.*/\1/p')
	echo "event $name type ${type:-0} size $size config ${config:-0} ids $ids"
done >"$T/perf.attrs"
"$LIST" --info "$F" | grep '^event ' | sed -E 's/ sample_type [0-9a-fx]+//' >"$T/vmpt.attrs"
diff -u "$T/perf.attrs" "$T/vmpt.attrs" || fail "attrs differ"
[ "$(wc -l <"$T/vmpt.attrs")" -eq 4 ] || fail "expected 4 attrs"

hdr() { sed -nE "s/^# $1 *: (.*)/\\1/p" "$T/perf.hdr" | sed -E 's/ +$//'; }
"$LIST" --info "$F" >"$T/vmpt.info.all"
info() { sed -nE "s/^$1 (.*)/\\1/p" "$T/vmpt.info.all"; }
for f in hostname 'os release' arch cpuid cpudesc 'total memory' cmdline 'pmu mappings'; do
	[ -n "$(hdr "$f")" ] || fail "perf's header has no $f"
done
[ "$(hdr hostname)" = "$(info hostname)" ] || fail hostname
[ "$(hdr 'os release')" = "$(info 'os release')" ] || fail "os release"
[ "$(hdr arch)" = "$(info arch)" ] || fail arch
[ "$(hdr cpuid)" = "$(info cpuid)" ] || fail cpuid
[ "$(hdr cpudesc)" = "$(info cpudesc)" ] || fail cpudesc
[ "nrcpus online $(hdr 'nrcpus online') avail $(hdr 'nrcpus avail')" = \
  "nrcpus $(info nrcpus)" ] || fail nrcpus
[ "$(hdr 'total memory')" = "$(info 'total memory')" ] || fail "total memory"
[ "$(hdr cmdline)" = "$(info 'cmdline :')" ] || fail cmdline
[ "$(hdr 'pmu mappings' | sed 's/ = /=/g; s/, /,/g')" = "$(info 'pmu mappings')" ] ||
	fail "pmu mappings"
perf buildid-list -i "$F" >"$T/perf.bid" 2>/dev/null
info buildid >"$T/vmpt.bid"
diff -u "$T/perf.bid" "$T/vmpt.bid" || fail "build ids differ"
[ "$(wc -l <"$T/vmpt.bid")" -gt 10 ] || fail "expected the build-id table"
# The AUXTRACE index points at the AUXTRACE records perf lists.
info 'auxtrace index' | awk '{ print $1 }' >"$T/vmpt.idx"
grep -oE '0x[0-9a-f]+ \[0x30\]: PERF_RECORD_AUXTRACE ' "$T/perf.rec" |
	awk '{ print $1 }' | sort >"$T/perf.idx"
diff -u "$T/perf.idx" "$T/vmpt.idx" || fail "auxtrace index"
[ -s "$T/perf.idx" ] || fail "perf lists no AUXTRACE record"

# ---- vmpt dump: one header per buffer, at the data after each record ----
grep -oE '0x[0-9a-f]+ \[0x30\]: PERF_RECORD_AUXTRACE size: 0x[0-9a-f]+ .* tid: -?[0-9]+  cpu: -?[0-9]+' \
	"$T/perf.D" | while read -r off _ _ _ size _ _ _ _ _ _ _ tid _ cpu; do
		printf '[auxtrace: cpu %s, tid %s, offset %016x, size %s]\n' \
			"$cpu" "$tid" $((off + 48)) "$size"
	done >"$T/perf.bufs"
"$VMPT" dump "$F" >"$T/dump" || fail "vmpt dump $F"
grep '^\[auxtrace' "$T/dump" >"$T/vmpt.bufs"
diff -u "$T/perf.bufs" "$T/vmpt.bufs" || fail "vmpt dump buffers"
[ "$(wc -l <"$T/vmpt.bufs")" -eq 2 ] || fail "expected buffers on cpu 0 and 3"
# --stats totals all buffers: equal to the buffers cut out by perf's
# offsets and dumped as raw streams, summed.
while read -r _ _ _ _ _ _ off _ size; do
	off=${off%,}
	size=${size%]}
	tail -c +$((0x$off + 1)) "$F" | head -c $((size)) >"$T/buf.pt"
	"$VMPT" dump --stats "$T/buf.pt"
done <"$T/vmpt.bufs" | awk '{ n[$1] += $2; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
	END { for (i = 1; i <= k; i++) if (order[i] != "errors") print order[i], n[order[i]]; print "errors", n["errors"] }' \
	>"$T/raw.stats"
"$VMPT" dump --stats "$F" >"$T/perf.stats"
diff -u "$T/raw.stats" "$T/perf.stats" || fail "vmpt dump --stats over the buffers"

# ---- pipe mode ----
# perf 6.1 stops after the first AUXTRACE of a pipe-mode file ("bad event
# header size"), and its pipe offsets leave out the 16-byte pipe header.
perf script -D -i "$P" >"$T/pipe.D" 2>"$T/pipe.err" || true
grep -qx 'bad event header size' "$T/pipe.err" || fail "perf's pipe-mode behaviour changed"
perf_records "$T/pipe.D" | pipe_offsets | sort >"$T/pipe.perf"
vmpt_records "$P" | sort >"$T/pipe.vmpt"
# perf prints the first FEATURE record before its summary format starts.
comm -23 "$T/pipe.perf" "$T/pipe.vmpt" >"$T/pipe.missing"
[ ! -s "$T/pipe.missing" ] || { cat "$T/pipe.missing"; fail "pipe records perf lists that vmpt does not"; }
[ "$(grep -c 'PERF_RECORD_AUXTRACE ' "$T/pipe.vmpt")" -eq 2 ] || fail "pipe: expected 2 AUXTRACE"
[ "$(grep -c 'PERF_RECORD_ATTR' "$T/pipe.vmpt")" -eq 4 ] || fail "pipe: expected 4 attrs"
# All of it: written back as a regular file, perf reads the whole
# recording, and its records are the ones vmpt read from the pipe file.
"$WRITE" copy "$P" "$T/pipe.copy" || fail "pipe copy"
perf script -D -i "$T/pipe.copy" >"$T/copy.D" 2>"$T/copy.err"
[ ! -s "$T/copy.err" ] || { cat "$T/copy.err"; fail "perf complains about the converted pipe file"; }
perf_records "$T/copy.D" | no_offsets | sort >"$T/copy.perf"
grep -v 'PERF_RECORD_ATTR\|PERF_RECORD_FEATURE' "$T/pipe.vmpt" | no_offsets | sort >"$T/pipe.vmpt.nooff"
diff -u "$T/copy.perf" "$T/pipe.vmpt.nooff" || fail "pipe records differ from perf's reading of them"
"$VMPT" dump "$P" | grep '^\[auxtrace' >"$T/pipe.bufs"
[ "$(wc -l <"$T/pipe.bufs")" -eq 2 ] || fail "vmpt dump: pipe buffers"
echo "ok: real perf.data files read as perf reads them"
