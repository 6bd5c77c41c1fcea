#!/bin/bash
# vmpt export's timelines and flame graphs on synthesized recordings (user
# code; a per-cpu recording of four processes; a VM's vCPU thread with its
# guest):
# - chrome: the Trace Event Format's rules (trace_event_check.py: B/E
#   nesting per track, times forward, thread and process names); one slice
#   per call of perf's calls table (the sqlite export's), guest slices on
#   the vCPU thread's track with the guest's calls inside;
# - perfetto: Perfetto's schema (perfetto_trace.proto with protoc and
#   python3-protobuf: nothing unknown, tracks described, slices nested),
#   the same slices as chrome's;
# - folded: "frames count" lines; --weight samples counts the branch
#   samples vmpt script prints; a guest's stacks go through the host's
#   VM entry and [guest];
# - the TSC offsets used for a VM recording, first on stderr;
# - --max-depth, --time; bad arguments and output errors, with their
#   messages and exit status.
# usage: export-formats.sh VMPT_SYNTH
set -u
SYNTH=$(realpath "$1")
D=$(dirname "$SYNTH")
HERE=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
for need in protoc /usr/bin/python3 sqlite3; do
	command -v "$need" > /dev/null ||
		{ echo "FAIL: $need not installed (tools/install-deps.sh)"; exit 1; }
done
/usr/bin/python3 -c 'import google.protobuf' 2> /dev/null ||
	{ echo "FAIL: python3-protobuf not installed (tools/install-deps.sh)"; exit 1; }
protoc --proto_path="$HERE" --python_out="$tmp" "$HERE/perfetto_trace.proto" ||
	{ echo "FAIL: protoc on perfetto_trace.proto"; exit 1; }
cd "$tmp" || exit 1

"$SYNTH" -q --branches 4000 --elf /usr/bin/bash --seed 41 -o u
T0=$((0x2a00000000))
"$SYNTH" -q --branches 1500 --elf /usr/bin/bash --seed 21 --pid 100 --tsc0 $T0 -o a
"$SYNTH" -q --branches 1500 --elf /usr/bin/ls --seed 22 --pid 200 --tsc0 $((T0 + 5000)) -o b
"$BUILDDIR/decoder/flow/tests/percpu_merge" m.data 0:a.perf.data 1:b.perf.data
"$SYNTH" -q --vm --host-kernel "$D/vmx-kernel" --guest-elf "$D/guest-kernel" \
	--guest-start start_kernel --branches 3000 --guest-period 500 --vcpus 1 \
	--psb-period 1024 --seed 3 --cyc -o vm
VMARGS="--vmlinux $D/vmx-kernel --guest-elf $D/guest-kernel"

for r in u m vm; do
	f=$r.perf.data
	[ "$r" = m ] && f=m.data
	args=""
	[ "$r" = vm ] && args=$VMARGS
	# shellcheck disable=SC2086
	"$VMPT" export chrome -i "$f" $args -o "$r.json" 2> "$r.err" ||
		{ echo "FAIL $r: chrome: $(cat "$r.err")"; fail=1; continue; }
	python3 "$HERE/trace_event_check.py" "$r.json" 100 > "$r.chk" ||
		{ echo "FAIL $r: chrome: $(cat "$r.chk")"; fail=1; }
	# shellcheck disable=SC2086
	"$VMPT" export perfetto -i "$f" $args -o "$r.pftrace" 2> /dev/null ||
		{ echo "FAIL $r: perfetto"; fail=1; }
	/usr/bin/python3 "$HERE/perfetto_check.py" "$tmp" "$r.pftrace" > "$r.pchk" 2>&1 ||
		{ echo "FAIL $r: perfetto: $(tail -1 "$r.pchk")"; fail=1; }
	nb=$(grep -c '"ph":"B"' "$r.json")
	check "$r: perfetto's slices ($(head -1 "$r.pchk")) are chrome's ($nb)" \
		'[ "$(head -1 "$r.pchk")" = "$nb slices" ]'
	# shellcheck disable=SC2086
	"$VMPT" export sqlite -i "$f" $args -o "$r.db" 2> /dev/null
	calls=$(sqlite3 "$r.db" 'SELECT COUNT(*) FROM calls WHERE id > 0')
	guests=$(grep -c '"ph":"B".*"name":"guest"' "$r.json")
	# (a guest's calls open again at each VM entry: more slices)
	if [ "$r" = vm ]; then
		check "$r: a slice per call ($nb slices, $calls calls, $guests guest slices)" \
			'[ "$nb" -gt $((calls + guests)) ]'
	else
		check "$r: a slice per call ($nb slices, $calls calls)" '[ "$nb" -eq "$calls" ]'
	fi
	# shellcheck disable=SC2086
	"$VMPT" export folded --weight samples -i "$f" $args > "$r.folded" 2> /dev/null
	check "$r: folded lines" '! grep -qv "^[^ ]* [0-9][0-9]*$" "$r.folded"'
	# shellcheck disable=SC2086
	n=$("$VMPT" script -i "$f" $args --itrace=b 2> /dev/null | wc -l)
	s=$(awk '{ s += $NF } END { print s }' "$r.folded")
	check "$r: folded samples ($s) are vmpt script's branch samples ($n)" '[ "$s" -eq "$n" ]'
done
check "user: one track, named" 'grep -q "\"thread_name\",\"pid\":4242,\"tid\":4242,\"args\":{\"name\":\"synth 4242\"}" u.json'
check "per-cpu: two processes' tracks" '[ "$(grep -c "\"process_name\"" m.json)" -eq 2 ]'
check "perfetto: per-cpu thread tracks" 'grep -q "^thread 100/100 proc100 100" m.pchk && grep -q "^thread 200/200 proc200 200" m.pchk'
# The guest: its slice on the vCPU thread's host calls, guest code inside.
check "vm: guest slices" '[ "$(grep -c "\"name\":\"guest\"" vm.json)" -gt 20 ]'
check "vm: vmx_vmenter then guest then start_kernel" \
	'grep -A2 "\"B\".*\"vmx_vmenter\"" vm.json | grep -A1 "\"B\".*\"guest\"" | grep -q "\"B\".*\"start_kernel\""'
check "vm: folded guest stacks through the VM entry" \
	'grep -q "^synth-4242;entry_SYSCALL_64;do_syscall_64;kvm_vcpu_ioctl;vcpu_enter_guest;__vmx_vcpu_run;vmx_vmenter;\[guest\];start_kernel " vm.folded'
check "vm: perfetto names guest code" 'grep -q "^name start_kernel$" vm.pchk && grep -q "^name guest$" vm.pchk'
# --max-depth: no slice deeper, no stack longer.
"$VMPT" export chrome --max-depth 3 -i u.perf.data -o d3.json 2> /dev/null
python3 "$HERE/trace_event_check.py" d3.json > /dev/null || { echo "FAIL: --max-depth 3 JSON"; fail=1; }
check "--max-depth 3: depth" '[ "$(python3 -c "
import json
d = 0; m = 0
for e in json.load(open(\"d3.json\"))[\"traceEvents\"]:
    if e[\"ph\"] == \"B\": d += 1; m = max(m, d)
    elif e[\"ph\"] == \"E\": d -= 1
print(m)")" -eq 3 ]'
"$VMPT" export folded --max-depth 2 -i u.perf.data > d2.folded 2> /dev/null
check "--max-depth 2: folded" '! awk -F";" "NF > 3" d2.folded | grep -q .'
# --time keeps part of the trace.
"$VMPT" export chrome --time 50% -i u.perf.data -o t.json 2> /dev/null
check "--time: fewer slices" '[ "$(grep -c "\"B\"" t.json)" -lt "$(grep -c "\"B\"" u.json)" ]'

# Decoding errors: instant events where vmpt script prints its error lines
# (hase's control_flow-201805 runs into bytes its decoder refuses).
H=$SHARED/realtraces/perf-data-hase
mkdir -p symfs/home/joerg/git/hase/tests/bin/control_flow
ln -s "$H/control_flow/control_flow" symfs/home/joerg/git/hase/tests/bin/control_flow/
CF="-i $H/control_flow/control_flow-201805.perf.data --symfs symfs"
# shellcheck disable=SC2086
"$VMPT" export chrome $CF -o cf.json 2> cf.err
# shellcheck disable=SC2086
"$VMPT" script $CF --itrace=e 2> /dev/null |
	sed -n 's/.* ip \(0x[0-9a-f]*\) offset \(0x[0-9a-f]*\) code 6: .*/error: trace does not match the code at \1 (trace offset \2)/p' > want.err
grep -o '"ph":"i","s":"t",.*"name":"[^"]*"' cf.json | sed 's/.*"name":"//; s/"$//' > got.err
check "errors: instants as vmpt script's error lines ($(wc -l < want.err))" \
	'[ -s want.err ] && cmp -s want.err got.err'
check "errors: counted" 'grep -q ", $(wc -l < want.err) decoding errors;" cf.err'
python3 "$HERE/trace_event_check.py" cf.json > /dev/null || { echo "FAIL: errors JSON"; fail=1; }

# Errors: messages and exit status.
expect() {	# STATUS MESSAGE ARGS...
	local st=$1 msg=$2
	shift 2
	"$VMPT" export "$@" > /dev/null 2> err
	local got=$?
	[ "$got" -eq "$st" ] && grep -qxF "$msg" err ||
		{ echo "FAIL: vmpt export $*: status $got, $(cat err)"; fail=1; }
}
expect 2 "vmpt export: unknown format 'bogus' (folded, chrome, perfetto, sqlite, postgresql)" bogus
expect 2 "vmpt export: sqlite needs -o FILE.db" sqlite -i u.perf.data
expect 2 "vmpt export: u.db already exists" sqlite -i u.perf.data -o u.db
expect 2 "vmpt export: --weight x: insns, time or samples" folded --weight x
expect 2 "vmpt export: --max-depth x: a number" folded --max-depth x
expect 1 "vmpt export: nothere: No such file or directory" chrome -i nothere
expect 1 "vmpt export: u.pt: offset 0: not a perf.data file (no PERFILE2 magic)" chrome -i u.pt
expect 1 "vmpt export: writing the output: No space left on device" chrome -i u.perf.data -o /dev/full
expect 1 "vmpt export: writing the output: No space left on device" perfetto -i u.perf.data -o /dev/full
expect 1 "vmpt export: bad-name: the database name: letters, digits and '_' only" \
	postgresql -i u.perf.data -o bad-name
"$VMPT" export folded -i u.perf.data > /dev/full 2> err
check "folded to a full disk: status 1, the error" \
	'[ $? -eq 1 ] && grep -q "writing the output: No space left on device" err'
check "folded to a full disk: no summary" '! grep -q "samples," err'

# A VM with a guest TSC offset: which one was used comes first, as vmpt
# script says it.
"$SYNTH" -q --vm --host-kernel "$D/vmx-kernel" --guest-elf "$D/guest-kernel" \
	--guest-start start_kernel --branches 3000 --guest-period 500 --psb-period 1024 \
	--seed 1 --vcpus 2 -o off
# shellcheck disable=SC2086
"$VMPT" export chrome -i off.perf.data $VMARGS -o off.json 2> off.err
check "the TSC offset used: $(head -1 off.err)" \
	'[ "$(head -1 off.err)" = "vmpt export: VMCS 0x1c0 TSC offset 0xfffffff000000000 (from the trace, 1 of 1 samples agree)" ]'
exit $fail
