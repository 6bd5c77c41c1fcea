#!/bin/sh
# vmpt dump against libipt's packet decoder (ipt-listing) on every raw stream
# recorded by real hardware in $SHARED/realtraces/kvm-pt, and on damaged
# copies of them (bytes overwritten, end cut off) so the error and resync
# paths are compared too: every packet's offset, name and payload, and the
# IP each TIP/FUP gives (vmpt's last-IP against ipt-listing's, written
# from the SDM on libipt's payloads).  Both sides are counted now, nothing
# is stored.
#   usage: test_realtraces.sh IPT_LISTING
set -eu
ipt=$1
traces="$SHARED/realtraces/kvm-pt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# vmpt's listing as "OFFSET  NAME PAYLOAD ip=IP" (column padding
# squeezed); its error line becomes ipt-listing's "[OFFSET: error]"; the
# "skipped N bytes" notes have no libipt counterpart.
vmpt_listing() {
	"$VMPT" dump "$1" | awk '
		/^\[.*: error:/ { sub(/: error:.*/, ": error]"); print; next }
		/^\[/ { next }
		{
			line = $1 "  " $2
			for (i = 3; i <= NF; i++)
				line = line " " $i
			print line
		}'
}

compare() {
	name=$1 file=$2 bad=0
	"$ipt" --stats "$file" >"$tmp/ipt.stats"
	"$VMPT" dump --stats "$file" >"$tmp/vmpt.stats"
	if ! diff -u "$tmp/ipt.stats" "$tmp/vmpt.stats" >"$tmp/diff"; then
		echo "FAIL $name: --stats differs from libipt (- libipt, + vmpt):"
		cat "$tmp/diff"
		bad=1
	fi
	"$ipt" "$file" >"$tmp/ipt.list"
	vmpt_listing "$file" >"$tmp/vmpt.list"
	if ! diff -u "$tmp/ipt.list" "$tmp/vmpt.list" >"$tmp/diff"; then
		echo "FAIL $name: listing differs from libipt (- libipt, + vmpt):"
		head -40 "$tmp/diff"
		bad=1
	fi
	lines=$(wc -l <"$tmp/vmpt.list")
	ips=$(grep -c ' ip=[0-9a-f]*$' "$tmp/vmpt.list")
	errors=$(sed -n 's/^errors //p' "$tmp/vmpt.stats")
	if [ "$lines" -eq 0 ] || [ "$ips" -eq 0 ]; then
		echo "FAIL $name: $lines packets, $ips IPs: nothing compared"
		bad=1
	fi
	if [ $bad -ne 0 ]; then
		fail=1
		return
	fi
	echo "ok   $name: $lines lines (offset, name, payload), $ips IPs and $errors errors, same as libipt"
}

# Overwrite one byte at each given offset (dd keeps the rest).
damage() {
	src=$1 dst=$2 byte=$3
	shift 3
	cp "$src" "$dst"
	chmod u+w "$dst"
	for off in "$@"; do
		printf "$byte" | dd of="$dst" bs=1 seek="$off" conv=notrunc 2>/dev/null
	done
}

for t in Unzip/trace foo/trace dyn_test/sample_raw_0 \
	 avscript_32/failed_trace_12709_1 icelake_tip/ptlog; do
	f="$traces/$t"
	if [ ! -r "$f" ]; then
		echo "FAIL $t: missing $f"
		fail=1
		continue
	fi
	compare "$t" "$f"
	size=$(wc -c <"$f")
	# 0xc9 is no opcode; 0x02 0xff no extended opcode; an odd-sized cut
	# leaves a packet truncated at the end.
	d="$tmp/damaged"
	damage "$f" "$d" '\311' $((size / 7)) $((size / 3)) $((size / 2 + 1))
	compare "$t (bad opcodes)" "$d"
	damage "$f" "$d" '\002' $((size / 5)) $((size * 2 / 3))
	compare "$t (bad ext opcodes)" "$d"
	head -c $((size * 3 / 4 + 1)) "$f" >"$d"
	compare "$t (cut at $((size * 3 / 4 + 1)))" "$d"
done
exit $fail
