#!/bin/sh
# vmpt script's -F fields of a recorded sample beyond the defaults print
# perf script 6.1's lines byte for byte, nothing on stderr, on recordings
# made here with perf record: iregs (-I), uregs (--user-regs, --call-graph
# dwarf, with -g callchains and in their order on the line), weight and
# ins_lat (-W), data_src (-d), phys_addr, data_page_size, code_page_size,
# misc (samples and sideband records), srccode (a program built here with
# -g, two threads); and copies of them crafted as perf would never record
# them: data_src values over every bit of its decoding, weights, page sizes
# and physical addresses of every size, x86 register names beyond the
# general ones (XMM, unknown), other ABIs and samples without registers,
# every cpumode.  A field the event does not sample is perf's error when
# -F asks for it without a type, left out with one.  perf 6.1 has no
# cgroup field: invalid for both.  On a synthesized Intel PT recording
# (Intel PT's samples carry none of these: zeros, or perf's error naming
# the intel_pt event) misc, srccode, weight, data_src, phys_addr and iregs
# are perf's too.
set -eu
: "${VMPT:?}"
SYNTH=${1:-}
command -v perf >/dev/null || { echo "SKIP: perf (linux-perf) not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# shellcheck disable=SC2016 # perl's variables
PERL='my $x = 0; for (1..2000000) { $x += $_ }'
# rec NAME [perf record options]: perl adding numbers, as NAME.data.
rec() {
	n=$1
	shift
	perf record -q "$@" -o "$T/$n.data" -- perl -e "$PERL" >"$T/$n.log" 2>&1 ||
		{ cat "$T/$n.log"; fail "perf record $*"; }
}

# same NAME [options]: vmpt script's lines are perf script's, stderr empty.
lines=0
runs=0
same() {
	n=$1
	shift
	perf script -i "$T/$n.data" "$@" >"$T/$n.perf" 2>/dev/null
	"$VMPT" script -i "$T/$n.data" "$@" >"$T/$n.vmpt" 2>"$T/$n.err" ||
		{ cat "$T/$n.err"; fail "vmpt script $n $*: exit status"; }
	[ "$(wc -l <"$T/$n.perf")" -gt 10 ] || fail "$n $*: perf script printed under 10 lines"
	diff -u "$T/$n.perf" "$T/$n.vmpt" >&2 || fail "$n $*: not perf script's lines"
	[ ! -s "$T/$n.err" ] || { cat "$T/$n.err"; fail "$n $*: vmpt wrote to stderr"; }
	lines=$((lines + $(wc -l <"$T/$n.perf")))
	runs=$((runs + 1))
}

# has NAME TEXT: vmpt printed this exact fragment (none of the
# comparisons passes on empty fields).
has() {
	grep -qF -- "$2" "$T/$1.vmpt" || fail "$1: no '$2' in vmpt's lines"
}

# refused NAME FIELDS MESSAGE: vmpt's error is perf's (exit status 2, a
# bad argument), and perf refuses them too.
refused() {
	st=0
	"$VMPT" script -i "$T/$1.data" -F "$2" >/dev/null 2>"$T/err" || st=$?
	[ "$st" -eq 2 ] || fail "$1 -F $2: exit status $st"
	[ "$(cat "$T/err")" = "vmpt script: $3" ] || { cat "$T/err"; fail "$1 -F $2: not perf's error"; }
	perf script -i "$T/$1.data" -F "$2" >/dev/null 2>"$T/perr" && fail "$1 -F $2: perf printed it"
	case $3 in
	-F:*) grep -q "Invalid field requested" "$T/perr" ;;
	*) [ "$(head -n "$(printf '%s\n' "$3" | wc -l)" "$T/perr")" = "$3" ] ;;
	esac || { cat "$T/perr"; fail "$1 -F $2: perf's error is another"; }
}

# craft IN OUT SPEC...: a copy of IN whose SAMPLE records and attr are
# rewritten: "OFF=V,V,..." puts the values in turn as the u64 at byte OFF
# of each sample; "misc=M,..." sets their cpumode; "attr:OFF=V" the u64
# at byte OFF of the first attr; "noregs=OFF,MASK" makes every third
# sample's registers at OFF (their mask at byte MASK of the attr) none
# (ABI 0): the records after it move up, and the feature sections.
craft() {
	python3 - "$T/$1.data" "$T/$2.data" "$@" <<'PY' || fail "$2: not crafted"
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
samples, noregs = [], None
for spec in sys.argv[5:]:
    key, vals = spec.split('=')
    vals = [int(v, 0) for v in vals.split(',')]
    if key == 'noregs':
        noregs, regmask = vals
    elif key.startswith('attr:'):
        struct.pack_into('<Q', d, struct.unpack_from('<Q', d, 24)[0] + int(key[5:]), vals[0])
    else:
        samples.append((key, vals))
attr = struct.unpack_from('<Q', d, 24)[0]
doff, dsize = struct.unpack_from('<QQ', d, 40)
data = bytearray()
pos, n = doff, 0
while pos < doff + dsize:
    t, misc, sz = struct.unpack_from('<IHH', d, pos)
    r = d[pos:pos + sz]
    if t == 9:
        for key, vals in samples:
            v = vals[n % len(vals)]
            if key == 'misc':
                struct.pack_into('<H', r, 4, misc & ~7 | v)
            else:
                struct.pack_into('<Q', r, int(key), v)
        if noregs is not None and n % 3 == 1:
            cut = 8 * bin(struct.unpack_from('<Q', d, attr + regmask)[0]).count('1')
            struct.pack_into('<Q', r, noregs, 0)
            struct.pack_into('<H', r, 6, sz - cut)
            del r[noregs + 8:noregs + 8 + cut]
        n += 1
    data += r
    pos += sz
# the feature sections' table follows the data: one {offset, size} per bit
moved = dsize - len(data)
feats = sum(bin(b).count('1') for b in d[72:104])
table = bytearray(d[doff + dsize:doff + dsize + 16 * feats])
for i in range(feats):
    struct.pack_into('<Q', table, 16 * i, struct.unpack_from('<Q', table, 16 * i)[0] - moved)
struct.pack_into('<Q', d, 48, len(data))
open(sys.argv[2], 'wb').write(d[:doff] + data + table + d[doff + dsize + 16 * feats:])
PY
}

perf record -q -e cpu-clock:u -c 500000 -o "$T/plain.data" -- perl -e "$PERL" >"$T/plain.log" 2>&1 ||
	{ cat "$T/plain.log"; echo "SKIP: perf record of cpu-clock not permitted"; exit 77; }

# Registers at the interrupt (-I, REGS_INTR: IP|TID|TIME, then the ABI
# at byte 32 and 20 registers).
rec iregs -e cpu-clock:u -c 500000 -I
same iregs -F ip,iregs
same iregs -F +iregs
has iregs " ABI:2    AX:0x"
has iregs " FLAGS:0x"
has iregs "   R15:0x"
# 20 bits still: AX..SP, four unknown, XMM0-3 (two bits each); ABIs 1-3;
# every third sample none.
craft iregs iregsx 'attr:96=0xff0f0000ff' 32=2,1,3,1 noregs=32,96
same iregsx -F ip,iregs
grep -q "^ *[0-9a-f]*$" "$T/iregsx.vmpt" || fail "iregsx: no sample without registers"
same iregsx -F +iregs,+misc
has iregsx " ABI:1 "
has iregsx " unknown:0x"
has iregsx "  XMM0:0x"
has iregsx "  XMM3:0x"
# The user's registers (--user-regs, REGS_USER).
rec uregs -e cpu-clock:u -c 500000 --user-regs=ax,bx,sp,ip
same uregs -F ip,uregs
has uregs " ABI:2    AX:0x"
has uregs "    SP:0x"
craft uregs uregsx 'attr:80=0xc000000001000001' 32=2,1 noregs=32,80
same uregsx -F ip,uregs
has uregsx " XMM15:0x"
# Both with frame-pointer callchains: after the chain, interrupt's first.
rec chain -e cpu-clock:u -c 500000 -g -I --user-regs=ax,bx,sp,ip
same chain -F +iregs,+uregs
same chain -F comm,ip,uregs,iregs,misc
same chain -F ip,sym,uregs -G
# --call-graph dwarf's registers, with the stacks unwound.
rec dwarf -e cpu-clock:u -c 500000 --call-graph dwarf
same dwarf -F +uregs
has dwarf "    BP:0x"

# -W: WEIGHT_STRUCT at byte 32 (weight its low 32 bits, ins_lat 16 above).
rec weight -e cpu-clock:u -c 500000 -W
same weight -F +weight,+ins_lat
craft weight weightx 32=0,1,0xffffffff,0x1234567800000005,0xffffffffffffffff,0x7fff000000000010
same weightx -F ip,ins_lat
same weightx -F +weight,+ins_lat
has weightx "       4294967295           65535 "
has weightx "                5           22136 "
# as WEIGHT (its 64 bits the weight): no ins_lat
craft weightx weight64 attr:24=0x4007
same weight64 -F +weight
has weight64 " 1311768464867721221 "
same weight64 -F sw:ip,weight,ins_lat
refused weight64 +ins_lat "Samples for 'cpu-clock:u' event do not have WEIGHT_STRUCT attribute set. Cannot print 'ins_lat' field."

# -d: DATA_SRC at byte 40 (after ADDR), the kernel's "not available".
rec mem -e cpu-clock:u -c 50000 -d
same mem -F ip,addr,data_src
same mem -F +data_src
has mem "       1e05080021 |OP N/A|LVL N/A or N/A|SNP N/A|TLB N/A|LCK N/A|BLK  N/A"
# Every bit of each part alone, every level number with and without
# remote, hops, blocks and snoops, and random values of at most three
# cache levels (more overrun perf's own buffer); the column widens as
# perf's does.
python3 - >"$T/ds" <<'PY'
import random
random.seed(1)
S = dict(op=0, lvl=5, snoop=19, lock=24, tlb=26, num=33, remote=37, snoopx=38, blk=40, hops=43)
W = dict(op=5, lvl=14, snoop=5, lock=2, tlb=7, num=4, remote=1, snoopx=2, blk=3, hops=3)
vals = {0, 0x1e05080021, 0x5080021}
for k in S:
    vals.update(1 << (S[k] + b) for b in range(W[k]))
for n in range(16):
    vals.update({n << 33, n << 33 | 1 << 37 | 2 << 5, n << 33 | 4 << 5})
for h in range(5):
    vals.update({h << 43 | 1 << 37 | 0x48 << 5 | 2 << 33, h << 43 | 2 << 5})
while len(vals) < 400:
    v = 0
    for k in S:
        v |= random.getrandbits(W[k]) << S[k]
    lv = v >> 5 & 0x3fff
    while bin(lv).count('1') > 3:
        lv &= lv - 1
    vals.add(v & ~(0x3fff << 5 | 7 << 43) | lv << 5 | random.randrange(5) << 43)
print(','.join(hex(v) for v in sorted(vals)))
PY
craft mem memx "40=$(cat "$T/ds")"
same memx -F ip,data_src
same memx -F +data_src
has memx "|OP LOAD|"
has memx "|LVL Remote core, same node CXL"
has memx "|SNP Peer|"
has memx "|TLB Walker miss|"
has memx "|LCK Yes|"
has memx "|BLK  Data Addr"

# --phys-data, --data-page-size, --code-page-size: each at byte 32.
rec phys -e cpu-clock:u -c 500000 --phys-data
same phys -F +phys_addr
craft phys physx 32=0,1,0x1234,0xfffffffffff,0xffffffffffffffff
same physx -F +phys_addr
has physx "     fffffffffff"
rec dpage -e cpu-clock:u -c 500000 --data-page-size
same dpage -F ip,data_page_size
has dpage " N/A"
# perf's units: divided while the quotient is above 1 ("1024K", not "1M")
craft dpage dpagex 32=0,1,512,1024,2048,4096,8192,65536,1048576,2097152,1073741824,0x80000000,0x10000000000,0xffffffffffffffff
same dpagex -F ip,data_page_size
has dpagex " 1024B"
has dpagex " 1024K"
has dpagex " 2M"
has dpagex " 17179869183G"
rec cpage -e cpu-clock:u -c 500000 --code-page-size
same cpage -F +code_page_size
has cpage " 4K"
craft cpage cpagex 32=4096,2097152,1073741824,123456789
same cpagex -F ip,code_page_size
has cpagex " 1024M"

# misc: the sample's cpumode; a sideband record's kind (M data mapping,
# E exec, S switch out, p preempted).
same plain -F +misc
has plain " U     "
craft plain miscx misc=0,1,2,3,4,5,6,7
same miscx -F +misc
has miscx " KUH   "	# (the column is 5 wide; the time may fill its own)
has miscx " KUHGg "
perf record -q -e cpu-clock:u -c 500000 -d --switch-events -o "$T/side.data" -- \
	sh -c "perl -e '$PERL'; sleep 0.01" >"$T/side.log" 2>&1 ||
	{ cat "$T/side.log"; fail "perf record --switch-events"; }
same side --show-task-events --show-mmap-events --show-switch-events -F +misc
has side " UM    "
has side " E     "
has side " S     "

# srccode: a program of two threads built here with -g; each thread's
# sample on the line its last one printed prints none.
cat >"$T/loop.c" <<'EOF'
#include <pthread.h>
#include <stdlib.h>

static volatile unsigned long sink;

static inline unsigned long step(unsigned long x, unsigned long i)
{
	return x + i * i;
}

static void *work(void *arg)
{
	unsigned long x = 0, n = (unsigned long)arg;

	for (unsigned long i = 0; i < n; i++)
		x = step(x, i);
	sink += x;
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 100000000;
	pthread_t t;

	pthread_create(&t, NULL, work, (void *)n);
	work((void *)n);
	pthread_join(t, NULL);
	return 0;
}
EOF
if cc -g -O2 -pthread -o "$T/loop" "$T/loop.c" 2>"$T/cc.log"; then
	perf record -q -e cpu-clock:u -c 100000 -g -o "$T/src.data" -- "$T/loop" 20000000 \
		>"$T/src.log" 2>&1 || { cat "$T/src.log"; fail "perf record of the loop"; }
	same src -F +srccode
	same src -F tid,ip,sym,srccode -G
	same src -F ip,srccode,srcline -G
	has src "|8        	return x + i * i;"
	[ "$(grep -c '^|' "$T/src.vmpt")" -gt 2 ] || fail "src: under 3 source lines"
	refused src srccode "Display of source line number requested but sample IP is not
selected. Hence, no address to lookup the source line number."
else
	cat "$T/cc.log"
	fail "cc -g: the srccode test program does not build"
fi

# A field the event does not sample: perf's error when asked for without
# a type (in perf's order of checks), left out with one.
refused plain +iregs "Samples for 'cpu-clock:u' event do not have IREGS attribute set. Cannot print 'iregs' field."
refused plain ip,uregs,iregs "Samples for 'cpu-clock:u' event do not have IREGS attribute set. Cannot print 'iregs' field."
refused plain ip,phys_addr,uregs "Samples for 'cpu-clock:u' event do not have UREGS attribute set. Cannot print 'uregs' field."
refused plain ip,iregs,data_src "Samples for 'cpu-clock:u' event do not have DATA_SRC attribute set. Cannot print 'data_src' field."
refused plain +weight "Samples for 'cpu-clock:u' event do not have WEIGHT attribute set. Cannot print 'weight' field."
refused plain ip,ins_lat "Samples for 'cpu-clock:u' event do not have WEIGHT_STRUCT attribute set. Cannot print 'ins_lat' field."
refused plain ip,phys_addr "Samples for 'cpu-clock:u' event do not have PHYS_ADDR attribute set. Cannot print 'phys_addr' field."
refused plain ip,code_page_size,data_page_size "Samples for 'cpu-clock:u' event do not have DATA_PAGE_SIZE attribute set. Cannot print 'data_page_size' field."
refused plain +code_page_size "Samples for 'cpu-clock:u' event do not have CODE_PAGE_SIZE attribute set. Cannot print 'code_page_size' field."
same plain -F sw:ip,iregs,uregs,weight,ins_lat,data_src,phys_addr,data_page_size,code_page_size
# perf 6.1 has no cgroup (nor retire_lat) field.
rec cgroup -e cpu-clock:u -c 500000 --all-cgroups
refused cgroup ip,cgroup "-F: invalid field 'cgroup' requested"
refused cgroup ip,retire_lat "-F: invalid field 'retire_lat' requested"
# A dummy event first: perf checks the first event with samples.
rec dummy -e dummy:u -e cpu-clock:u -c 500000
refused dummy +uregs "Samples for 'cpu-clock:u' event do not have UREGS attribute set. Cannot print 'uregs' field."

# Intel PT's samples, synthesized over the loop program (the instruction
# samples without sym: perf names the PLT entries of such a binary from
# _init, see docs/script.md).
if [ -n "$SYNTH" ] && [ -x "$T/loop" ]; then
	"$SYNTH" --elf "$T/loop" --seed 3 --branches 2000 -o "$T/pt" -q || fail "vmpt-synth"
	for f in +misc +srccode +weight +data_src +phys_addr +iregs hw:ip,uregs ip,srccode,misc; do
		same pt.perf -F "$f"
	done
	same pt.perf -F synth:ip,ins_lat -F hw:ip
	same pt.perf --itrace=i100ns \
		-F comm,tid,time,period,event,ip,dso,srccode,weight,data_src,phys_addr,misc
	has pt.perf "|8        	return x + i * i;"
	has pt.perf "|OP No|LVL N/A|SNP N/A|TLB N/A|LCK No|BLK  N/A"
	refused pt.perf +uregs "Samples for 'intel_pt//u' event do not have UREGS attribute set. Cannot print 'uregs' field."
	refused pt.perf ip,weight,ins_lat "Samples for 'intel_pt//u' event do not have WEIGHT_STRUCT attribute set. Cannot print 'ins_lat' field."
fi
echo "perf script's lines, $lines in $runs outputs"
