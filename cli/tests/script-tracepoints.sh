#!/bin/bash
# vmpt script prints tracepoints' samples as perf script 6.1 does: a
# system-wide recording of some forty tracepoints of ten systems (their
# print formats use __get_str, __print_flags, __print_symbolic, %pS of a
# kernel address, which perf names from this machine's kallsyms, arrays)
# and cpu-clock, in the file and pipe forms, is perf script's lines byte
# for byte in the default and -F forms.  Then what goes wrong: tracing
# data that does not read (an error naming the file, the offset and the
# part), a sample's raw data shorter than its format (said on its line),
# -F hw:trace refused, and libtraceevent missing (a warning; the lines
# without their payloads).
set -u
: "${VMPT:?}"
command -v perf >/dev/null || { echo "SKIP: perf (linux-perf) not installed"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

events=(-e 'sched:*' -e 'timer:*' -e 'irq:*' -e kmem:kmalloc -e kmem:kfree
	-e syscalls:sys_enter_openat -e syscalls:sys_exit_openat -e 'signal:*'
	-e 'task:*' -e raw_syscalls:sys_enter -e cpu-clock -c 100000)
work='ls / >/dev/null; cat /etc/passwd >/dev/null; sleep 0.05; kill -0 $$'
perf record -q -a "${events[@]}" -o "$T/tp.data" -- sh -c "$work" >"$T/rec.log" 2>&1 ||
	{ cat "$T/rec.log"; echo "SKIP: perf record of tracepoints not permitted"; exit 77; }
perf record -q -a "${events[@]}" -o - -- sh -c "$work" >"$T/pipe.data" 2>"$T/rec.log" ||
	{ cat "$T/rec.log"; fail "perf record -o -"; }

# in_order FILE: the lines' times (sec.frac: with -F time) never go back.
in_order() {
	awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { t = $i + 0; break }
	       if (t < last) exit 1; last = t }' "$1"
}
# no_comm FILE: the lines sorted, each without its comm.
no_comm() { perl -pe 's/^ *\S+ (?=\d+(\/\d+)? )//' "$1" | sort; }
# same FILE [options]: vmpt script's lines are perf script's, stderr empty.
checked=
for f in tp.data pipe.data; do
	perf script -i "$T/$f" --ns >"$T/$f.perf-ns" 2>/dev/null
	"$VMPT" script -i "$T/$f" --ns >"$T/$f.vmpt-ns" 2>/dev/null
	in_order "$T/$f.vmpt-ns" || fail "$f: vmpt's lines out of time order"
done
same() {
	local f=$1
	shift
	perf script -i "$T/$f" "$@" >"$T/perf" 2>/dev/null
	"$VMPT" script -i "$T/$f" "$@" >"$T/vmpt" 2>"$T/err" ||
		{ cat "$T/err"; fail "vmpt script -i $f $*: exit status"; }
	[ "$(wc -l <"$T/perf")" -gt 100 ] || fail "$f $*: perf script printed under 100 lines"
	if ! cmp -s "$T/perf" "$T/vmpt"; then
		# Under load perf prints a sample that came after its round
		# was flushed out of time order; vmpt prints all in order. A
		# late COMM also names the samples before it with the old comm
		# in perf's lines: compare those without the comm.
		if in_order "$T/$f.perf-ns" ||
		   ! cmp -s <(no_comm "$T/perf") <(no_comm "$T/vmpt"); then
			diff -u "$T/perf" "$T/vmpt" >&2
			fail "$f $*: not perf script's lines"
		fi
		checked="$checked (perf's out of time order)"
	fi
	[ ! -s "$T/err" ] || { cat "$T/err"; fail "$f $*: vmpt wrote to stderr"; }
	checked="$checked $f($*)"
}
same tp.data
# The kinds of payload the test is for, in perf's lines.
perf script -i "$T/tp.data" >"$T/perf" 2>/dev/null
kinds=$(grep -o ' [a-z_]*:[a-z_0-9]*: ' "$T/perf" | sort -u | wc -l)
[ "$kinds" -ge 20 ] || fail "only $kinds tracepoints in perf's lines"
for want in 'sched:sched_switch: prev_comm=' 'cpu-clock:' 'call_site=[a-z_]*+0x' \
	    'gfp_flags=GFP_' 'sched:sched_process_exec: filename=' 'raw_syscalls:sys_enter: NR '; do
	grep -q "$want" "$T/perf" || fail "no line with '$want' in perf's lines"
done
same tp.data --ns -F comm,pid,tid,cpu,time,event,trace
same tp.data -F trace:comm,tid,trace
same tp.data -F +ip
same tp.data -F trace:ip,sym,symoff,dso,trace
same tp.data -F -trace
# The pipe form: perf names no kernel address there (its resolver is set
# before the tracing data comes).
same pipe.data
same pipe.data -F comm,pid,tid,time,event,trace
grep -q 'call_site=0xffff' "$T/vmpt" || fail "pipe: call_site named"

# expect NAME STATUS WANT-STDERR CMD...
expect() {
	local name=$1 status=$2 want=$3 rc
	shift 3
	"$@" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" = "$status" ] || { cat "$T/err"; fail "$name: exit $rc, not $status"; }
	[ "$(cat "$T/err")" = "$want" ] ||
		{ diff <(echo "$want") "$T/err"; fail "$name: stderr"; }
}

# Tracing data that does not read: its magic, a size past the end.
python3 - "$T" <<'EOF'
import struct, sys
t = sys.argv[1]
d = open(t + '/tp.data', 'rb').read()
at = d.find(b'\x17\x08Dtracing')
page = d.find(b'header_page\0', at)
bad = bytearray(d); bad[at + 3] = ord('T')
open(t + '/magic.data', 'wb').write(bad)
bad = bytearray(d); bad[page + 12:page + 20] = struct.pack('<Q', 1 << 40)
open(t + '/size.data', 'wb').write(bad)
open(t + '/offsets', 'w').write('%#x %#x\n' % (at, page + 12))
EOF
read -r magic size <"$T/offsets"
expect magic 1 "vmpt script: $T/magic.data: offset $magic: tracing data: the magic \\027\\010Dtracing does not read as perf's" \
	"$VMPT" script -i "$T/magic.data"
expect size 1 "vmpt script: $T/size.data: offset $size: tracing data: header_page does not read as perf's" \
	"$VMPT" script -i "$T/size.data"
checked="$checked bad-tracing-data(magic,size)"

# A sample of sched_switch alone whose raw data is cut to 8 bytes: the
# format's fields lie beyond them.
perf record -q -a -e sched:sched_switch -o "$T/one.data" -- sleep 0.05 >"$T/rec.log" 2>&1 ||
	{ cat "$T/rec.log"; fail "perf record sched_switch"; }
python3 - "$T" <<'EOF'
import struct, sys
t = sys.argv[1]
d = bytearray(open(t + '/one.data', 'rb').read())
attr_size, attrs_off = struct.unpack_from('<QQ', d, 16)
sample_type = struct.unpack_from('<Q', d, attrs_off + 24)[0]
data_off, data_size = struct.unpack_from('<QQ', d, 40)
# the fields before RAW: IDENTIFIER IP TID TIME ADDR ID STREAM_ID CPU PERIOD
before = sum(8 for b in (1 << 16, 1, 2, 4, 8, 64, 512, 128, 256) if sample_type & b)
assert not sample_type & (16 | 32), 'READ or CALLCHAIN sampled'
pos = data_off
while pos < data_off + data_size:
    typ, misc, size = struct.unpack_from('<IHH', d, pos)
    if typ == 9:
        struct.pack_into('<I', d, pos + 8 + before, 8)
        break
    pos += size
open(t + '/short.data', 'wb').write(d)
EOF
"$VMPT" script -i "$T/short.data" >"$T/out" 2>"$T/err" || { cat "$T/err"; fail "short: exit status"; }
[ "$(grep -c 'sched:sched_switch: \[8 bytes that do not fit the format of sched:sched_switch\]$' "$T/out")" = 1 ] ||
	{ head -3 "$T/out"; fail "short: no line saying the data does not fit"; }
[ "$(wc -l <"$T/out")" = "$(perf script -i "$T/one.data" 2>/dev/null | wc -l)" ] ||
	fail "short: not one line per sample"
checked="$checked short-raw"

# A format that crashes libtraceevent 1.7 (its print format names
# prev_state, a field renamed by a cut line; perf script dies of SIGSEGV):
# read in a child process first, it is left out with a warning, and its
# samples are printed without payload.
python3 - "$T" <<'EOF'
import sys
t = sys.argv[1]
d = bytearray(open(t + '/one.data', 'rb').read())
old = b'field:long prev_state;\toffset'
i = d.find(old)
assert i >= 0, 'no prev_state field'
d[i:i + len(old)] = b'field:long prev_sta\tet;offset'
open(t + '/crash.data', 'wb').write(d)
EOF
"$VMPT" script -i "$T/crash.data" >"$T/out" 2>"$T/err" || { cat "$T/err"; fail "crash: exit status"; }
[ "$(cat "$T/err")" = "vmpt script: warning: $T/crash.data: 1 event format of the tracing data crashes libtraceevent: not read, its events print no payload" ] ||
	{ cat "$T/err"; fail "crash: not the warning"; }
[ "$(wc -l <"$T/out")" = "$(perf script -i "$T/one.data" 2>/dev/null | wc -l)" ] ||
	fail "crash: not one line per sample"
[ "$(grep -c 'sched:sched_switch: $' "$T/out")" = "$(wc -l <"$T/out")" ] ||
	{ head -3 "$T/out"; fail "crash: a payload printed"; }
checked="$checked format-crashing-libtraceevent"

# A length a format takes from another field: kvm:kvm_emulate_insn prints
# __print_hex(REC->insn, REC->len) from its 15-byte insn.  vmpt record
# writes the format; two samples are added: len 3 (perf's line), and len
# 200 (past the sample: said on its line, never read).
if [ -r /sys/kernel/tracing/events/kvm/kvm_emulate_insn/format ]; then
	"$VMPT" record -q -e dummy -e kvm:kvm_emulate_insn -a -o "$T/emu.data" -- true ||
		fail "vmpt record -e kvm:kvm_emulate_insn"
	python3 - "$T/emu.data" <<'PY'
import struct, sys
path = sys.argv[1]
d = bytearray(open(path, 'rb').read())
attr_size, attrs_off, attrs_size, data_off, data_size = struct.unpack_from('<QQQQQ', d, 16)
# each: the attr, then the file section of its ids (attr_size counts both)
for a in range(attrs_off, attrs_off + attrs_size, attr_size):
    typ, _, config, _, sample_type = struct.unpack_from('<IIQQQ', d, a)
    ids_off, ids_size = struct.unpack_from('<QQ', d, a + attr_size - 16)
    if typ == 2:
        break
ident = struct.unpack_from('<Q', d, ids_off)[0]
assert sample_type == 0x10587, hex(sample_type)  # IP TID TIME CPU PERIOD RAW IDENTIFIER
def sample(time, length):
    raw = struct.pack('<HBBiQIB15sBB', config, 0, 0, 4242, 0xffffffff81000000, 0, length,
                      b'\x0f\x01\xc1', 9, 0)
    raw += b'\0' * (44 - len(raw))
    body = struct.pack('<QQIIQIIQI', ident, 0xffffffff81000000, 4242, 4242, time, 0, 0, 1,
                       len(raw)) + raw
    return struct.pack('<IHH', 9, 1, 8 + len(body)) + body
new = sample(1000, 3) + sample(2000, 200)
end = data_off + data_size
for i in range(sum(bin(x).count('1') for x in d[72:104])):
    off, = struct.unpack_from('<Q', d, end + 16 * i)
    struct.pack_into('<Q', d, end + 16 * i, off + len(new))
struct.pack_into('<Q', d, 48, data_size + len(new))
d[end:end] = new
open(path, 'wb').write(d)
PY
	perf script -i "$T/emu.data" 2>/dev/null | grep 'kvm:kvm_emulate_insn:' >"$T/emu.perf"
	"$VMPT" script -i "$T/emu.data" 2>"$T/err" | grep 'kvm:kvm_emulate_insn:' >"$T/emu.vmpt"
	[ ! -s "$T/err" ] || { cat "$T/err"; fail "emulate_insn: vmpt wrote to stderr"; }
	grep -q 'kvm:kvm_emulate_insn: 0:ffffffff81000000:0f 01 c1 (prot64)$' "$T/emu.perf" ||
		fail "emulate_insn: perf's line is not the one made: $(head -1 "$T/emu.perf")"
	[ "$(head -1 "$T/emu.vmpt")" = "$(head -1 "$T/emu.perf")" ] ||
		fail "emulate_insn: not perf's line: $(head -1 "$T/emu.vmpt")"
	[ "$(sed -n 2p "$T/emu.vmpt" | sed 's/.*kvm:kvm_emulate_insn: //')" = \
	  "[44 bytes that do not fit the format of kvm:kvm_emulate_insn]" ] ||
		fail "emulate_insn: len 200: $(sed -n 2p "$T/emu.vmpt")"
	checked="$checked emulate_insn-length"
fi

expect hw:trace 2 "vmpt script: 'trace' not valid for hardware events." \
	"$VMPT" script -i "$T/tp.data" -F hw:trace

# Without libtraceevent: a warning, the lines without their payloads.
lib=$(ldconfig -p | awk '$1 == "libtraceevent.so.1" && /x86-64/ { print $NF; exit }')
if [ "$(id -u)" = 0 ] && [ -n "$lib" ] && unshare -m true 2>/dev/null; then
	unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh \
		"$(readlink -f "$lib")" "$VMPT" script -i "$T/one.data" >"$T/out" 2>"$T/err" ||
		fail "no libtraceevent: exit status"
	[ "$(cat "$T/err")" = "vmpt script: warning: tracepoints' payloads not printed: cannot use libtraceevent.so.1 (Debian package libtraceevent1): $lib: file too short" ] ||
		{ cat "$T/err"; fail "no libtraceevent: the warning"; }
	perf script -i "$T/one.data" 2>/dev/null | sed 's/\(sched:sched_switch: \).*/\1/' >"$T/perf"
	diff -u "$T/perf" "$T/out" >&2 || fail "no libtraceevent: not perf's lines without payloads"
	checked="$checked no-libtraceevent"
fi
echo "ok: perf script's lines:$checked"
