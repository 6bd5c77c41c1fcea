#!/bin/bash
# vmpt script prints perf script's lines (perf 6.1 on PATH), on:
# - the real recordings of perf-data-hase (binaries beside them, given with
#   --symfs at their recorded paths): default output, branches, calls and
#   returns, instructions, callchains, power events, --call-trace,
#   --call-ret-trace; the 20180404 ones' branch lists equal the .trace
#   files perf wrote on the recording machine;
# - synthesized recordings of user code, of user and kernel code, and a
#   per-cpu recording of four processes with context switches: every
#   output mode, --itrace's syntax (a bare period is ns), perf's filters
#   (-C, --pid, --tid, --comms, --dsos, --symbols, --time with times,
#   percentages and several ranges) and --show-*-events;
# - lost data: LOST, truncated AUX and recorded AUXTRACE_ERROR records;
# - a recording of no Intel PT (perf record -e dummy): its sideband;
# - a recording whose binary is gone or changed: the dso named from the
#   MMAP, and vmpt's summary on stderr naming it with its build-id.
# Error lines: vmpt adds " offset 0x..." (the packet's file offset).
# usage: script-vs-perf.sh VMPT_SYNTH PERCPU_MERGE ADD_RECORDS
set -u
SYNTH=$1
MERGE=$2
ADD=$3
D=$(dirname "$SYNTH")
H="$SHARED/realtraces/perf-data-hase"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v perf > /dev/null || { echo "perf not found"; exit 77; }
# perf and vmpt look binaries up in ~/.debug: an empty one of our own.
export HOME=$tmp/home
mkdir -p "$HOME"
fail=0
runs=0

# same NAME "PERF-AND-VMPT ARGS" MODE... : equal stdout in each mode.
same() {
	local name=$1 args=$2 m
	shift 2
	for m in "$@"; do
		# shellcheck disable=SC2086
		perf script $args $m > "$tmp/p" 2> /dev/null
		# shellcheck disable=SC2086
		"$VMPT" script $args $m 2> /dev/null |
			sed 's/ offset 0x[0-9a-f]* code / code /' > "$tmp/v"
		runs=$((runs + 1))
		if ! cmp -s "$tmp/p" "$tmp/v"; then
			echo "FAIL $name [$m]: $(diff "$tmp/p" "$tmp/v" | head -3)"
			fail=1
		elif [ ! -s "$tmp/p" ] && [ -z "${EMPTY_OK:-}" ]; then
			echo "FAIL $name [$m]: perf printed nothing"
			fail=1
		fi
	done
}

MODES=("" --itrace=b --itrace=cr --itrace=i0ns --itrace=i0nsg --itrace=bxwpe
       "--itrace=bxwpe -F+flags" --call-trace --call-ret-trace "-F+flags,+insnlen --itrace=i0ns"
       "--itrace=i0ns -F+addr")
# The lines of output/vmpt_script_fast.c (no field but ip, addr, sym,
# symoff, dso): every instruction, every Nth, branches, errors among them.
FAST=("--itrace=i0ns -F ip" "--itrace=b -F ip,addr" "--itrace=b -F ip,addr,sym,dso"
      "--itrace=i0nse -F ip,sym,symoff,dso" "--itrace=b -F ip,sym,symoff" "--itrace=be -F addr,dso"
      "--itrace=i3i -F ip,addr,dso" "--itrace=b -F ip")

# The hase recordings, their binaries where the MMAPs say.
for p in /home/joerg/git/hase /home/joerg/git/angr/hase; do
	for n in loopy control_flow; do
		mkdir -p "$tmp/symfs$p/tests/bin/$n"
		ln -s "$H/$n/$n" "$tmp/symfs$p/tests/bin/$n/$n"
	done
done
for f in "$H"/loopy/loopy-20180404T162955.perf "$H"/control_flow/control_flow-20180404T163033.perf \
	 "$H"/loopy/loopy-201805.perf.data; do
	same "$(basename "$f")" "-i $f --symfs $tmp/symfs" "${MODES[@]}" "${FAST[@]}"
done
# control_flow-201805 runs into 0x60 (PUSHA, invalid in 64-bit mode):
# perf's x86 decoder takes it for a 1-byte instruction, vmpt's reports a
# mismatch there; the branches agree.
same control_flow-201805 "-i $H/control_flow/control_flow-201805.perf.data --symfs $tmp/symfs" \
	--itrace=b --itrace=cr "--itrace=b -F+flags"
# As a user types it, no --symfs: the binaries are found beside the
# recordings (their recorded paths do not exist here).
for n in loopy/loopy-201805.perf.data control_flow/control_flow-201805.perf.data; do
	perf script -i "$H/$n" --symfs "$tmp/symfs" --itrace=b > "$tmp/p" 2> /dev/null
	(cd / && "$VMPT" script -i "$H/$n" --itrace=b 2> /dev/null) > "$tmp/v"
	[ -s "$tmp/p" ] && cmp -s "$tmp/p" "$tmp/v" ||
		{ echo "FAIL $n: plain vmpt script differs from perf --symfs"; fail=1; }
	runs=$((runs + 1))
done
for n in loopy/loopy-20180404T162955 control_flow/control_flow-20180404T163033; do
	"$VMPT" script -i "$H/$n.perf" --itrace=b -F ip,addr 2> /dev/null |
		awk '{ printf "%s\t%s\n", $1, $3 }' > "$tmp/v"
	tr -d '\r' < "$H/$n.trace" | cmp -s - "$tmp/v" ||
		{ echo "FAIL $n: branches differ from its .trace"; fail=1; }
	runs=$((runs + 1))
done

# Synthesized: user code; user and kernel code.
"$SYNTH" -q --branches 4000 --elf /usr/bin/bash --seed 41 -o "$tmp/u"
"$SYNTH" -q --branches 4000 --elf /usr/bin/bash --seed 42 --irq-period 300 \
	--host-kernel "$D/guest-kernel" -o "$tmp/uk"
same user "-i $tmp/u.perf.data" "${MODES[@]}" --itrace=i100ns --itrace=i5 --itrace=i5ns \
	--itrace=i1us --itrace=i1000i --itrace=i10000t "--itrace=i0ns -F+ipc" \
	"--itrace=bl -F+brstacksym" --itrace=i0nss100 "--itrace=bg4" --insn-trace --ns \
	"${FAST[@]}"
same user+kernel "-i $tmp/uk.perf.data --vmlinux $D/guest-kernel" "${MODES[@]}" \
	"--itrace=i0nsg8" "--itrace=bl4 -F+brstack" "${FAST[@]}"

# Per-cpu: four processes on two CPUs, one switched in after another.
T0=$((0x2a00000000))
"$SYNTH" -q --branches 1500 --elf /usr/bin/bash --seed 21 --pid 100 --tsc0 $T0 -o "$tmp/a"
"$SYNTH" -q --branches 1500 --elf /usr/bin/ls --seed 22 --pid 200 --tsc0 $((T0 + 5000)) -o "$tmp/b"
"$SYNTH" -q --branches 1500 --elf /usr/bin/dash --seed 23 --pid 300 --tsc0 $((T0 + 400000)) \
	-o "$tmp/c"
"$SYNTH" -q --branches 1500 --elf /usr/bin/bash --seed 24 --pid 400 --tsc0 $((T0 + 800000)) \
	-o "$tmp/e"
"$MERGE" "$tmp/m.data" 0:"$tmp/a.perf.data" 1:"$tmp/b.perf.data" 0:"$tmp/c.perf.data" \
	1:"$tmp/e.perf.data":100
# (instruction samples of two CPUs at the same ns interleave otherwise
# than perf's: not compared here, synth_test.sh compares them per CPU)
same per-cpu "-i $tmp/m.data" "" --itrace=b --itrace=cr --itrace=bxwpe --call-trace \
	--call-ret-trace "--itrace=bl -F+brstacksym" \
	"-C 1" "-C 0 --itrace=i0ns" "--pid 200" "--tid 100,300" "--comms proc300" \
	"--comm proc100" "--dsos /usr/bin/ls" "-S _obstack_free" "--symbols=_obstack_free,main" \
	"--time 10%/1" "--time 0%-10%,30%-40%" "--time 56.371447,56.371448 --itrace=cr" \
	"--time ,56.3714475" \
	--show-task-events --show-mmap-events --show-switch-events \
	"--show-task-events --show-mmap-events --show-switch-events --itrace=cr"
EMPTY_OK=1 same per-cpu "-i $tmp/m.data" "--time 10%/2,40%/5" "-C 1 --time 20%-60%"

# Two programs' code at the same addresses on one CPU (dash's text where
# bash's is, bash again after it): what vmpt keeps by address (the section
# there, the symbol last found there, with its text) is another program's.
"$SYNTH" -q --branches 3000 --elf /usr/bin/dash@0x55555557f000 --seed 23 --pid 300 \
	--tsc0 $((T0 + 400000)) -o "$tmp/o"
"$SYNTH" -q --branches 3000 --elf /usr/bin/bash --seed 25 --pid 500 --tsc0 $((T0 + 900000)) \
	-o "$tmp/o2"
"$MERGE" "$tmp/mo.data" 0:"$tmp/a.perf.data" 0:"$tmp/o.perf.data" 0:"$tmp/o2.perf.data"
same overlaid "-i $tmp/mo.data" "" "${FAST[@]}"

# Lost data: a LOST record (--show-lost-events), an AUX record flagged
# truncated (perf's "Lost trace data" error at its time, and its warning
# at the end), a recorded AUXTRACE_ERROR (as perf prints it; vmpt puts it
# at its time among the samples, perf where it reads it).
"$ADD" "$tmp/u.perf.data" "$tmp/l.data" 1500 2500 3500
for m in "" --show-lost-events "--itrace=be --show-lost-events" --itrace=i0ns; do
	# shellcheck disable=SC2086
	perf script -i "$tmp/l.data" $m > "$tmp/p" 2> "$tmp/pe"
	# shellcheck disable=SC2086
	"$VMPT" script -i "$tmp/l.data" $m 2> "$tmp/ve" | sed 's/ offset 0x[0-9a-f]* code / code /' > "$tmp/v"
	err=' instruction trace error type 1 time 56.371447260 cpu -1 pid 4242 tid 4242 ip 0x555555583eea code 8: Lost trace data'
	grep -vxF "$err" "$tmp/p" > "$tmp/p2"
	grep -vxF "$err" "$tmp/v" > "$tmp/v2"
	cmp -s "$tmp/p2" "$tmp/v2" || { echo "FAIL lost [$m]: $(diff "$tmp/p2" "$tmp/v2" | head -3)"; fail=1; }
	n=$(grep -nxF "$err" "$tmp/v" | cut -d: -f1)
	[ -n "$n" ] && [ "$n" -gt 1 ] && sed -n "$((n - 1))p" "$tmp/v" | grep -q ' 56\.37144[5-7]' ||
		{ echo "FAIL lost [$m]: the recorded error not at its time (line ${n:-none})"; fail=1; }
	# perf's warnings (the count of events perf processed aside: vmpt
	# counts the records and the samples and errors it made, perf a few
	# more of its own).
	sed 's/^Processed [0-9]* events and lost/Processed N events and lost/' "$tmp/pe" > "$tmp/pe2"
	grep -v '^vmpt script:' "$tmp/ve" |
		sed 's/^Processed [0-9]* events and lost/Processed N events and lost/' |
		cmp -s "$tmp/pe2" - || { echo "FAIL lost [$m]: stderr: $(diff "$tmp/pe" "$tmp/ve")"; fail=1; }
	runs=$((runs + 1))
done

# No Intel PT: the sideband alone.
if perf record -q -e dummy:u -o "$tmp/sb.data" -- /bin/true 2> /dev/null; then
	same sideband "-i $tmp/sb.data" --show-task-events --show-mmap-events \
		"--show-task-events --show-mmap-events --show-switch-events" \
		"--show-task-events --ns" "--show-mmap-events -F comm,pid,time"
	"$VMPT" script -i "$tmp/sb.data" > /dev/null 2> "$tmp/err"
	n=$(perf script -i "$tmp/sb.data" --show-task-events --show-mmap-events 2> /dev/null | wc -l)
	[ "$(cat "$tmp/err")" = "vmpt script: no Intel PT data in $tmp/sb.data; it holds $n sideband records: see --show-task-events, --show-mmap-events, --show-switch-events" ] ||
		{ echo "FAIL sideband only: $(cat "$tmp/err")"; fail=1; }
fi

# A binary gone since the recording: perf and vmpt name the mapping.
mkdir -p "$tmp/bin"
cp /usr/bin/bash "$tmp/bin/mybash"
"$SYNTH" -q --branches 2000 --elf "$tmp/bin/mybash" --seed 43 -o "$tmp/g"
rm "$tmp/bin/mybash"
same missing "-i $tmp/g.perf.data" "" --itrace=be
"$VMPT" script -i "$tmp/g.perf.data" > /dev/null 2> "$tmp/err"
want="Warning:
1 instruction trace errors
vmpt script: 0 instructions and 1 branches decoded; errors: 1 no code mapped at this address; 0 bytes of trace skipped
vmpt script: missing $tmp/bin/mybash (build-id not recorded): 1 error (vmpt archive on the recording machine, or --symfs)"
[ "$(cat "$tmp/err")" = "$want" ] || { echo "FAIL missing: stderr: $(cat "$tmp/err")"; fail=1; }
# Its build-id recorded (perf inject caches the binary: here in our
# ~/.debug, which we empty), then another file at its path.
cp /usr/bin/bash "$tmp/bin/mybash"
perf inject --buildid-all -i "$tmp/g.perf.data" -o "$tmp/gb.perf.data" 2> /dev/null
id=$(perf buildid-list -i "$tmp/gb.perf.data" 2> /dev/null | awk '/mybash/ { print $1 }')
rm -rf "$HOME/.debug"
cp /usr/bin/dash "$tmp/bin/mybash"
have=$(perf buildid-list -f -i /usr/bin/dash 2> /dev/null | awk '{ print $1 }')
[ -z "$have" ] && have=$(readelf -n /usr/bin/dash | awk '/Build ID/ { print $3 }')
same changed "-i $tmp/gb.perf.data" "" --itrace=be
"$VMPT" script -i "$tmp/gb.perf.data" > /dev/null 2> "$tmp/err"
want="vmpt: warning: $tmp/bin/mybash has build-id $have, the recording's is $id: not used (the file changed since it was recorded)
Warning:
1 instruction trace errors
vmpt script: 0 instructions and 1 branches decoded; errors: 1 no code mapped at this address; 0 bytes of trace skipped
vmpt script: missing $tmp/bin/mybash (build-id $id; the file here has $have): 1 error (vmpt archive on the recording machine, or --symfs)"
[ "$(cat "$tmp/err")" = "$want" ] || { echo "FAIL changed: stderr: $(cat "$tmp/err")"; fail=1; }

# --itrace's and -F's errors: vmpt names what is wrong, exit status 2.
bad() {
	local want=$1
	shift
	"$VMPT" script -i "$tmp/u.perf.data" "$@" > /dev/null 2> "$tmp/err"
	local rc=$?
	[ $rc = 2 ] && [ "$(cat "$tmp/err")" = "$want" ] ||
		{ echo "FAIL [$*]: rc $rc: $(cat "$tmp/err")"; fail=1; }
}
bad "vmpt script: bad --itrace 'ik': unknown letter 'k'" --itrace=ik
bad "vmpt script: --itrace 'iq': 'q' (quick decoding) is not supported by vmpt" --itrace=iq
bad "vmpt script: --call-trace and --insn-trace conflict: give one" --call-trace --insn-trace
bad "vmpt script: -F: invalid field 'foo' requested" -F ip,foo
bad "vmpt script: -F +ip,sym: cannot mix +-field with overridden fields" -F +ip,sym

[ $fail = 0 ] && echo "script vs perf: $runs outputs equal"
exit $fail
