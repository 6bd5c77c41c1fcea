#!/bin/sh
# Build the libFuzzer targets with clang (ASan + UBSan + libFuzzer) in their
# own build dir and run each for SECONDS (default 600).  Seeds: the real
# traces and recordings of ../shared/realtraces, perf's pipe form of one,
# a reply stream of the guest agent, recordings vmpt-synth makes (host and
# VM scenarios; $SYNTH_DIR or a build dir's tools/synth, skipped when
# none); dictionaries in fuzz/dict/.  The inputs of earlier findings
# (made here, not committed) run first.  Any crash, leak, timeout or
# sanitizer report makes it exit non-zero and leaves the input in
# $BUILD/fuzz-artifacts/TARGET/.
#   usage: [RUNS=N] [SEED=S] [TIMEOUT=T] fuzz/run.sh [SECONDS [BUILD_DIR [TARGET...]]]
# RUNS: stop each target after N executions (or SECONDS, the first).
# TIMEOUT: seconds of wall time one input may take (default 10); libFuzzer
# counts wall time, so a run under nice beside busier jobs wants more.
# SEED: libFuzzer's random seed (0, the default: a new one each run);
# make check's brief runs take 1, so what they try is the same sequence on
# every machine (a slower one tries less of it), not a new one each time.
#   targets: packet perf-data perf-forms flow pack session correlate
#   (default: all)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-600}
build=${2:-$src/build-fuzz}
[ $# -gt 2 ] && shift 2 || set --
all="packet perf-data perf-forms flow pack session correlate"
targets=${*:-$all}
shared=${SHARED:-$src/../shared}
rt=$shared/realtraces
hase=$rt/perf-data-hase
# vmpt-synth and its VM scenario's kernels: a gcc build's (make check runs
# this inside its build dir) or the source tree's build/.
synth_dir=${SYNTH_DIR:-}
for d in "$(dirname "$build")/tools/synth" "$src/build/tools/synth"; do
	[ -z "$synth_dir" ] && [ -x "$d/vmpt-synth" ] && [ -f "$d/guest-kernel" ] &&
		synth_dir=$d
done

if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" "$src" -Dbuildtype=debugoptimized \
		-Db_sanitize=address,undefined -Db_lundef=false >"$build.setup.log" 2>&1 ||
		{ cat "$build.setup.log"; exit 1; }
	rm -f "$build.setup.log"
fi
# fuzz-session finds the binaries its recordings map here, by name.
images=$build/fuzz-images
mkdir -p "$images"
cp -f "$hase/loopy/loopy" "$hase/control_flow/control_flow" "$images/" 2>/dev/null || true
export VMPT_FUZZ_IMAGES=$images
for t in $targets; do
	ninja -C "$build" "fuzz/fuzz-$t" >/dev/null
done

# seed TARGET: the first corpus of a target.
seed() {
	c=$build/fuzz-corpus/$1
	case $1 in
	packet)
		for f in "$rt"/kvm-pt/*/trace "$rt"/kvm-pt/*/ptlog "$rt"/kvm-pt/*/sample_raw_0 \
			 "$rt"/kvm-pt/*/failed_trace_*; do
			[ -f "$f" ] && split -b 4096 -a 3 "$f" "$c/seed-$(basename "$(dirname "$f")")-"
		done;;
	perf-data)
		find "$rt" -type f \( -name '*.perf.data' -o -name '*.perf' -o -name data \) \
			-size -1024k | while read -r f; do
			cp "$f" "$c/seed-$(echo "$f" | md5sum | cut -c1-12)"
		done
		# perf's pipe form of the smallest one.
		f=$(find "$rt" -type f -name '*.perf.data' -size -1024k | head -1)
		[ -n "$f" ] && perf inject -i "$f" -o - > "$c/seed-pipe" 2>/dev/null || true
		samples_seed "$c/seed-samples";;
	perf-forms)
		# The pipe form of each small recording, the directory form of
		# it cut in two (data, data.0).
		for f in "$hase"/*/*.perf "$hase"/*/*.perf.data "$rt"/perf-data/perf.data.intel_pt-4.14; do
			[ -f "$f" ] || continue
			n=$(basename "$f")
			python3 "$src/fuzz/seeds.py" dir "$f" "$c/seed-dir-$n"
			perf inject -i "$f" -o - 2>/dev/null > "$c/pipe.tmp" &&
				python3 "$src/fuzz/seeds.py" pipe "$c/pipe.tmp" "$c/seed-pipe-$n"
			rm -f "$c/pipe.tmp"
		done;;
	session)
		cp "$hase"/*/*.perf "$hase"/*/*.perf.data "$c/"
		samples_seed "$c/seed-samples"
		tracepoints_seed "$c/seed-tracepoints"
		unwind_seed "$c/seed-unwind"
		synth_seeds "$c" session;;
	correlate)
		synth_seeds "$c" correlate;;
	flow)
		# No code (errors, resyncs) and 'jmp .' at 0x1000, over real traces.
		for f in "$rt"/kvm-pt/*/trace "$rt"/kvm-pt/*/ptlog; do
			[ -f "$f" ] || continue
			n=$(basename "$(dirname "$f")")
			head -c 4096 "$f" > "$c/trace-$n"
			printf '\000\000\000' | cat - "$c/trace-$n" > "$c/seed-$n-nocode"
			printf '\004\002\000\353\376' | cat - "$c/trace-$n" > "$c/seed-$n-loop"
			rm "$c/trace-$n"
		done;;
	pack)
		python3 - "$c/seed-reply" <<'PY'
import struct, sys
def frame(kind, path, err, data):
    p = path.encode()
    return struct.pack('<IIIIQ', kind, len(p), err, 0, len(data)) + p + data
s = b'VMPTPAK1' + frame(1, '/usr/bin/ls', 0, b'\x7fELF' + b'\0' * 60) + \
    frame(2, '/lib/libc.so.6', 2, b'') + frame(1, '[perf.data]', 0, b'PERFILE2') + \
    frame(3, '', 0, b'')
open(sys.argv[1], 'wb').write(b'/usr/bin/ls\n' + s)
PY
		;;
	esac
}

# samples_seed FILE: other events' samples (a cpu-clock and task-clock
# group) with callchains and READ values, made here by perf record (none
# where it may not).
samples_seed() {
	perf record -q -g -e '{cpu-clock:u,task-clock:u}:S' -c 200000 -o "$1" -- \
		perl -e 'my $x = 0; for (1..300000) { $x += $_ }' >/dev/null 2>&1 || rm -f "$1"
}

# tracepoints_seed FILE: three tracepoints' samples and their formats
# (~30 KB: libtraceevent reads the formats), none where perf may not.
tracepoints_seed() {
	perf record -q -e sched:sched_switch -e kmem:kfree -e sched:sched_process_exec \
		-o "$1" -- sh -c 'ls >/dev/null' >/dev/null 2>&1 || rm -f "$1"
}

# unwind_seed FILE: a few samples of perf record --call-graph dwarf (their
# registers and 512 bytes of stack: ~7 KB) of a shell.
unwind_seed() {
	perf record -q -e cpu-clock:u -c 1000000 --call-graph dwarf,512 -o "$1" -- \
		sh -c 'i=0; while [ $i -lt 3000 ]; do i=$((i + 1)); done' >/dev/null 2>&1 ||
		rm -f "$1"
}

# synth_seeds DIR TARGET: recordings vmpt-synth makes, as TARGET takes them.
synth_seeds() {
	[ -n "$synth_dir" ] || return 0
	tmp=$1/synth.tmp
	mkdir -p "$tmp"
	vm="$synth_dir/vmpt-synth --vm --host-kernel $synth_dir/vmx-kernel -q
	    --guest-elf $synth_dir/guest-kernel --guest-start start_kernel
	    --guest-period 500 --psb-period 1024 --branches 3000"
	# One vCPU; two on two CPUs (per-cpu buffers); a scaled TSC; an
	# offset that changes; cycle-accurate.
	$vm --seed 1 -o "$tmp/vm1"
	$vm --seed 2 --vcpus 2 --cpus 2 -o "$tmp/vm2"
	$vm --seed 3 --tsc-scale 1.5 -o "$tmp/vm3"
	$vm --seed 4 --vcpus 2 --tsc-offset-change 1000:1:-0x2000000000 -o "$tmp/vm4"
	$vm --seed 5 --cyc -o "$tmp/vm5"
	"$synth_dir/vmpt-synth" --elf "$images/loopy" --seed 7 --branches 300 -q -o "$tmp/host"
	# snapshot mode: overlapping buffers
	"$synth_dir/vmpt-synth" --elf "$images/loopy" --seed 8 --branches 1500 -q \
		--snapshot 4096:400 --psb-period 512 -o "$tmp/snap"
	for n in 1 2 3 4 5; do
		if [ "$2" = correlate ]; then
			python3 "$src/fuzz/seeds.py" corr "$tmp/vm$n.perf.data" "$1/seed-vm$n"
		else
			cp "$tmp/vm$n.perf.data" "$1/seed-vm$n"
		fi
	done
	if [ "$2" = correlate ]; then
		# The perf.data mode: flag 0x80, MTC period 3, TSC:CTC 84/2.
		printf '\200\003\124\000\000\000\002\000\000\000\000\000' |
			cat - "$tmp/vm2.perf.data" > "$1/seed-file-vm2"
	else
		cp "$tmp/host.perf.data" "$1/seed-host"
		cp "$tmp/snap.perf.data" "$1/seed-snapshot"
	fi
	rm -rf "$tmp"
}

# regressions TARGET DIR: the inputs of earlier findings, made here.
regressions() {
	mkdir -p "$2"
	case $1 in
	flow)
		# A CYC count past 2^64 TSC ticks at CBR 25 (float-cast UB).
		printf '\004\000\000\002\202\002\202\002\202\002\202\002\202\002\202\002\202\002\202' > "$2/cyc-overflow"
		printf '\031\000\000\000\066\000\000\000\002\003\031\000' >> "$2/cyc-overflow"
		printf '\377\377\377\377\377\377\377\017\321\074' >> "$2/cyc-overflow"
		# An estimated cycle count past 2^64: a TMA, no TSC, then an MTC.
		printf '\004\002\000\377\253\002\202\002\202\002\202\002\202\002\202' > "$2/estimate-overflow"
		printf '\002\202\002\202\002\202\002\163\356\001\000\020\000\002\003' >> "$2/estimate-overflow"
		printf '\041\000\002\043\061\001\112\131\231' >> "$2/estimate-overflow"
		# A PSB+ cut off at the end: walked, the end; batched, an error.
		printf '\000\002\000\164\376\002\202\002\202\002\202\002\202\002\202\002\202' > "$2/psb-cut-end"
		printf '\002\202\002\202\002\043\061\000\020\376\002\202\002\202\002\202\002\202' >> "$2/psb-cut-end"
		printf '\002\202\002\202\002\202\002\202\002' >> "$2/psb-cut-end";;
	correlate)
		# TSC_CTC_D 0 with N 2, a guest TSC in a PSB+ (PIP with NR,
		# VMCS): the learning divided by D (SIGFPE).
		printf '\003\003\002\000\000\000\000\000\000\000\000\000BUF:\000\000' > "$2/ctc-d0"
		printf '\002\202\002\202\002\202\002\202\002\202\002\202\002\202\002\202' >> "$2/ctc-d0"
		printf '\002\103\001\020\000\000\000\000\002\310\034\000\000\000\000' >> "$2/ctc-d0"
		printf '\031\000\000\000\000\000\020\000\002\043' >> "$2/ctc-d0"
		# Two empty buffers of one queue: memcpy from NULL.
		printf '#\003\000:\000BUF:::\000BUF:' > "$2/empty-buffers"
		# perf's pass over a buffer that is one PSB: no records, a
		# NULL array offset.
		printf '\023\000BU\263B\000\0000`\000\002' > "$2/no-records"
		printf '\002\202\002\202\002\202\002\202\002\202\002\202\002\202\002\202' >> "$2/no-records"
		# A wild TSC-to-CTC gap: a signed shift overflowed (whole_wraps).
		printf '\003\003\124\000\011\000\002\202\055\260\000\002\002\202\002\202' > "$2/wild-gap"
		printf '\002\202\002\202\002\202\002\202\002\202\002\202\031\241\322\313' >> "$2/wild-gap"
		printf '\000\000\006\000\002\163\356\002\000\024\000\031\031\031\031\031' >> "$2/wild-gap"
		printf '\031\031\031\002\163\000\140\000\000\000' >> "$2/wild-gap"
		# Samples whose exact fit took the guest's value at the first
		# near 2^80: (k + slack) * 2^48 overflowed 128 signed bits
		# (vmpt_tsc_fit.c, exact_range).
		printf '\003\017\017\017\017\017\000\000\002\010\000\000\002\202\002\202' > "$2/fit-overflow"
		printf '\002\202\002\202\002\202\002\202\002\202\002\202\031\303\236\000' >> "$2/fit-overflow"
		printf '\000\000\370\000\002\163\307\003\000\035\000\202\031\176\143\002' >> "$2/fit-overflow"
		printf '\000\373\377\377\002\163\217\016\000\377\000\002\202\002\202\002' >> "$2/fit-overflow"
		printf '\202\002\202\002\202\002\202\002\202\002\202\031\213\306\001\000' >> "$2/fit-overflow"
		printf '\012\000\000\002\163\322\012\000\000\000\031\213\306\001\000\012' >> "$2/fit-overflow"
		printf '\313\000\002\163\322\040\000\000\000\031\213\306\001\000\012\031' >> "$2/fit-overflow"
		printf '\000\002\163\322\012\000\001\000\002\103\001\020\160\201\377\377' >> "$2/fit-overflow"
		printf '\002\043\250' >> "$2/fit-overflow"
		# A TSC far past the CTC's estimate after a gap: the whole
		# wraps it asked for overflowed the CTC position
		# (vmpt_tsc_offset.c, whole_wraps).
		printf '\043\231\001\000\000\000\002\171\000\000\000\000\102\125\106\072' > "$2/wraps-overflow"
		printf '\000\004\002\202\002\202\002\202\002\202\002\202\002\202\002\202' >> "$2/wraps-overflow"
		printf '\002\202\031\377\377\377\000\000\000\000\002\163\000\000\000\000' >> "$2/wraps-overflow"
		printf '\000\002\003\131\047\053\131\050\131\051\131\052\000\334\000\055' >> "$2/wraps-overflow"
		printf '\260\000\131\067\055\166\000\240\055\031\031\031\031\031\071\031' >> "$2/wraps-overflow"
		printf '\333\031\031\031\031\231\031\031\031\031\031\031\031\031\031\031' >> "$2/wraps-overflow"
		printf '\031\031\031\031\031\031\031\031\363\031\031\031\031\031\031\031' >> "$2/wraps-overflow"
		printf '\031\031\031\031\055\270\003\356\254\000\000\000\000\002\163\000' >> "$2/wraps-overflow"
		printf '\000\000\000\000\002\003\131\047\053\131\050\131\051\131\052\000' >> "$2/wraps-overflow"
		printf '\334\000\055\260\000\131\067\055\166\000\240\055\031\031\031\031' >> "$2/wraps-overflow"
		printf '\031\071\031\333\031\031\031\031\231\031\031\031\031\031\031\031' >> "$2/wraps-overflow"
		printf '\031\031\031\031\031\031\031\031\031\031\031\363\031\031\031\031' >> "$2/wraps-overflow"
		printf '\031\031\031\031\031\031\031\055\270\003\356\254\000\055\334\000' >> "$2/wraps-overflow"
		printf '\350\010\000\000\002\163\060\003\000\000\000\055\055\334\000\350' >> "$2/wraps-overflow"
		printf '\010\000\000\002\163\060\003\000\000\000\055\334\000\055\260\072' >> "$2/wraps-overflow"
		printf '\160\000\000\000\055\205\036\075\155\264\000\002\103\000\015\036' >> "$2/wraps-overflow"
		printf '\000\000\000\055\334\000\345\001\000' >> "$2/wraps-overflow";;
	esac
}

status=0
for t in $targets; do
	reg=$build/fuzz-regressions/$t
	regressions "$t" "$reg"
	if [ -n "$(ls -A "$reg")" ] &&
	   ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	     LSAN_OPTIONS=suppressions=$src/fuzz/lsan.supp \
	     UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		"$build/fuzz/fuzz-$t" "$reg"/* >"$build/fuzz-$t.regressions.log" 2>&1; then
		tail -40 "$build/fuzz-$t.regressions.log"
		echo "fuzz-$t: FAILED on an earlier finding ($reg)"
		status=1
		continue
	fi
	corpus=$build/fuzz-corpus/$t
	artifacts=$build/fuzz-artifacts/$t
	mkdir -p "$corpus" "$artifacts"
	[ -n "$(ls -A "$corpus")" ] || seed "$t"
	# The target's dictionary, and those of what it reads further.
	case $t in
	perf-forms) dicts="perf_data perf_forms";;
	session) dicts="perf_data flow";;
	correlate) dicts="flow correlate";;
	*) dicts=$(echo "$t" | tr - _);;
	esac
	dict=
	for d in $dicts; do
		[ -f "$src/fuzz/dict/$d.dict" ] && cat "$src/fuzz/dict/$d.dict"
	done > "$build/fuzz-$t.dict"
	[ -s "$build/fuzz-$t.dict" ] && dict=-dict=$build/fuzz-$t.dict
	case $t in
	perf-data) max_len=1048576;;
	perf-forms|session|correlate) max_len=65536;;
	*) max_len=4096;;
	esac
	# shellcheck disable=SC2086
	if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	   LSAN_OPTIONS=suppressions=$src/fuzz/lsan.supp \
	   UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		"$build/fuzz/fuzz-$t" -max_total_time="$secs" -runs="${RUNS:--1}" -seed="${SEED:-0}" \
		-max_len=$max_len -timeout="${TIMEOUT:-10}" \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" \
		$dict "$corpus" 2>"$build/fuzz-$t.log"; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/fuzz-$t.log")
		time=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$build/fuzz-$t.log")
		echo "fuzz-$t: ${time}s, $runs runs, no crash, hang or sanitizer report"
	else
		tail -60 "$build/fuzz-$t.log"
		echo "fuzz-$t: FAILED, input saved in $artifacts/"
		status=1
	fi
done
exit $status
