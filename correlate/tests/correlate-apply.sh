#!/bin/bash
# Applying the correlation, three ways on synthesized VM recordings:
# - with perf's grammar (--vm-time-correlation=OFFSET:VMCS... --force, and
#   with no offsets, perf learning them) vmpt rewrites the file in place
#   byte for byte as perf inject does, and prints what perf prints;
# - by default vmpt writes a new perf.data (the input untouched), and
#   --force rewrites in place the same bytes; every guest TSC packet then
#   holds the host TSC of the truth: the AUX data equals the trace
#   synthesized without offset (and scaling), which is also perf's rewrite
#   where perf is right;
# - where perf is wrong (an offset that changes mid-trace, TSC scaling x1.5
#   and x0.75, both at once) its rewrite differs from the truth, vmpt's
#   does not;
# - a queue of buffers that continue one another, packets split across
#   them: perf's lines and bytes, and the truth (vmpt reads the queue as
#   one stream, rewriting TSC packets cut by a buffer's end);
# - snapshot mode (overlapping buffers): every copy of a guest TSC packet
#   corrected, vmpt script's times those of the trace without offsets;
# - perf's directory form is written as a directory (data patched, the
#   rest copied).
. "$(dirname "$0")/correlate-lib.sh"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

checked=0
# $1 name, $2 "perf right" or "perf wrong", rest: synth options; the
# truth is the same walk with no offset and no scaling.
case_() {
	name=$1 verdict=$2
	shift 2
	vm_synth "$@" -o "$name" || fail "vmpt-synth $name"
	zero=()
	skip=0
	for a in "$@"; do
		if [ $skip = 1 ]; then
			skip=0
			case $prev in
			--tsc-offset) zero+=(--tsc-offset "$(echo "$a" | sed 's/[^,]*/0/g')") ;;
			esac
			continue
		fi
		case $a in
		--tsc-offset|--tsc-scale|--tsc-offset-change) skip=1 prev=$a ;;
		*) zero+=("$a") ;;
		esac
	done
	vm_synth "${zero[@]}" -o "$name.zero" || fail "vmpt-synth $name.zero"
	cmp -s "$name.pt" "$name.zero.pt" && fail "$name: the offsets changed nothing"
	in=$name.perf.data
	sum=$(md5sum < "$in")
	off=$(aux_offset "$in" "$name.pt")
	len=$(stat -c %s "$name.pt")

	# perf's grammar, the offsets perf found: perf's bytes and messages.
	spec=$(perf_spec "$in")
	cp "$in" perf.data
	cp "$in" vmpt.data
	perf inject -i perf.data --vm-time-correlation="$spec" --force 2> perf.err ||
		fail "$name: perf inject --force"
	"$VMPT" correlate -i vmpt.data --vm-time-correlation="$spec" --force \
		> /dev/null 2> vmpt.err || fail "$name: vmpt correlate --force: $(cat vmpt.err)"
	cmp -s perf.data vmpt.data || fail "$name: in-place rewrite differs from perf's ($spec)"
	# (perf may have nothing to say: then vmpt neither)
	if [ -s perf.err ]; then
		compare "$name: messages with the offsets given" perf.err vmpt.err
	else
		[ ! -s vmpt.err ] || fail "$name: vmpt says '$(head -1 vmpt.err)', perf nothing"
	fi
	# perf's grammar, no offsets: perf learns them as it goes.
	cp "$in" perf2.data
	cp "$in" vmpt2.data
	perf inject -i perf2.data --vm-time-correlation --force 2> perf.err
	"$VMPT" correlate -i vmpt2.data --vm-time-correlation --force > /dev/null 2> vmpt.err
	cmp -s perf2.data vmpt2.data || fail "$name: rewrite with perf's learning differs"
	compare "$name: messages of perf's learning" perf.err vmpt.err

	# vmpt's own: a new file, the input untouched; in place the same.
	rm -f out.data
	"$VMPT" correlate -i "$in" -o out.data > report || fail "$name: vmpt correlate"
	grep -q "^# wrote out.data$" report || fail "$name: where it went: $(tail -1 report)"
	[ "$(md5sum < "$in")" = "$sum" ] || fail "$name: the input changed"
	cp "$in" inplace.data
	"$VMPT" correlate -i inplace.data --force -q || fail "$name: vmpt correlate --force"
	cmp -s out.data inplace.data || fail "$name: in place and out of place differ"
	bytes_at out.data "$off" "$len" out.pt
	cmp -s out.pt "$name.zero.pt" ||
		fail "$name: guest TSC packets do not hold the truth's host TSCs"
	bytes_at perf.data "$off" "$len" perf.pt
	if [ "$verdict" = right ]; then
		cmp -s out.data perf.data || fail "$name: vmpt's file differs from perf's"
	else
		cmp -s perf.pt "$name.zero.pt" && fail "$name: perf was expected to be wrong"
	fi
	checked=$((checked + 1))
}

case_ off3 right --branches 40000 --guest-period 5000 --psb-period 2048 --seed 1 \
	--vcpus 3 --tsc-offset -0x123456789a,0x5000000,0x7777
case_ off4 right --branches 40000 --guest-period 5000 --psb-period 2048 --seed 3 \
	--vcpus 4 --tsc-offset 0xfff000,-0x1000,0x3000000000,-0x2a00000000
case_ big right --branches 30000 --guest-period 3000 --psb-period 1024 --seed 4 \
	--vcpus 2 --tsc-offset 0x90000000000000,-0x90000000000000
case_ cyc right --branches 40000 --guest-period 2000 --psb-period 1024 --seed 7 \
	--vcpus 2 --cyc --tsc-offset -0x1000000000,-0x1000000000
case_ ovf right --branches 40000 --guest-period 2000 --psb-period 1024 --seed 9 \
	--vcpus 2 --ovf-at 15000:200 --tsc-offset -0x1000000000,-0x1000000000
case_ chg wrong --branches 40000 --guest-period 5000 --psb-period 2048 --seed 5 \
	--vcpus 1 --tsc-offset 0x100000 --tsc-offset-change 20000:0:0x200000
case_ sc wrong --branches 40000 --guest-period 5000 --psb-period 2048 --seed 3 \
	--vcpus 1 --tsc-offset -0x1000 --tsc-scale 1.5
case_ chgsc wrong --branches 60000 --guest-period 5000 --psb-period 1024 --seed 11 \
	--vcpus 2 --tsc-offset 0x100000,-0x100000 --tsc-scale 1.5 \
	--tsc-offset-change 40000:1:0x7000000
case_ sc75 wrong --branches 40000 --guest-period 5000 --psb-period 2048 --seed 6 \
	--vcpus 2 --tsc-offset 0x5000000,-0x5000000 --tsc-scale 0.75

# A queue of buffers that continue one another (perf reading the AUX area
# as it fills), cut every 0x888 and 0x1008 bytes, packets split across
# them: perf's lines and rewrite; vmpt's rewrite holds the truth.
: "${CORR_FIXTURE:?}"
"$CORR_FIXTURE" aux off3.zero.perf.data zero.aux || fail "aux"
for chunk in 0x888 0x1008; do
	"$CORR_FIXTURE" split off3.perf.data split.data $chunk || fail "split"
	perf_dry_run split.data > perf.err
	"$VMPT" correlate --dry-run -i split.data 2> vmpt.err > /dev/null
	compare "buffers of $chunk: dry-run lines" perf.err vmpt.err
	cp split.data perf.data
	cp split.data vmpt.data
	perf inject -i perf.data --vm-time-correlation --force 2> /dev/null
	"$VMPT" correlate -i vmpt.data --vm-time-correlation --force > /dev/null 2>&1
	cmp -s perf.data vmpt.data || fail "buffers of $chunk: rewrite differs from perf's"
	rm -f split.out
	"$VMPT" correlate -q -i split.data -o split.out || fail "split: correlate"
	"$CORR_FIXTURE" aux split.out split.aux || fail "aux"
	cmp -s split.aux zero.aux || fail "buffers of $chunk: not the truth's host TSCs"
done
# Buffers of 8 and 0x38 bytes: most TSC packets cut by a buffer's end, read
# and rewritten across it (perf 6.1 reads a cut packet as a bad one on
# 64-bit hosts, and crashes on buffers this small: no oracle there).
for chunk in 0x8 0x38; do
	"$CORR_FIXTURE" split off3.perf.data split.data $chunk || fail "split"
	rm -f split.out
	"$VMPT" correlate -q -i split.data -o split.out || fail "split $chunk: correlate"
	"$CORR_FIXTURE" aux split.out split.aux || fail "aux"
	cmp -s split.aux zero.aux || fail "buffers of $chunk: not the truth's host TSCs"
	cp split.data inplace.data
	"$VMPT" correlate -q -i inplace.data --force || fail "split $chunk: --force"
	cmp -s inplace.data split.out || fail "buffers of $chunk: in place differs"
done

# Snapshot mode, AUX buffers of 8 KiB overlapping by 2 KiB: every copy of a
# guest TSC packet is corrected (each buffer holds the truth's host TSCs),
# and vmpt script prints the lines of the trace without offsets.  (perf
# inject crashes on it with dry-run, and with --force zeroes the overlap in
# the file: no oracle there.)
"$CORR_FIXTURE" snapshot off3.perf.data snap.data 0x2000 0x800 || fail "snapshot"
"$CORR_FIXTURE" snapshot off3.zero.perf.data snapz.data 0x2000 0x800 || fail "snapshot"
rm -f snap.out
"$VMPT" correlate -q -i snap.data -o snap.out || fail "snapshot: correlate"
"$CORR_FIXTURE" aux snap.out snap.aux && "$CORR_FIXTURE" aux snapz.data snapz.aux ||
	fail "aux"
cmp -s snap.aux snapz.aux || fail "snapshot: buffers do not hold the truth's host TSCs"
for r in snap.data snapz.data; do
	"$VMPT" script -i $r --vmlinux "$VMX_KERNEL" --guest-elf "$GUEST_KERNEL" --ns \
		-F time,flags,ip,addr > $r.lines 2>/dev/null || fail "snapshot: script"
done
cmp -s snap.data.lines snapz.data.lines || fail "snapshot: vmpt script's times"

# perf's directory form: REC/data corrected, REC/kcore_dir copied.
mkdir rec rec/kcore_dir
cp off3.perf.data rec/data
echo kallsyms > rec/kcore_dir/kallsyms
"$VMPT" correlate -i rec -o rec.out -q || fail "directory form"
cp off3.perf.data ref.data
"$VMPT" correlate -i ref.data --force -q || fail "file form"
cmp -s rec.out/data ref.data || fail "directory form: data differs"
cmp -s rec.out/kcore_dir/kallsyms rec/kcore_dir/kallsyms || fail "kcore_dir not copied"
[ "$(stat -c %a rec.out)" = "$(stat -c %a rec)" ] || fail "directory mode"

echo "$checked recordings: perf's rewrites byte for byte, vmpt's equal to the truth"
