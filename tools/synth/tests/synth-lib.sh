# Shared by the synth tests (sourced).  Needs SYNTH (vmpt-synth) and a
# scratch directory in WORK; perf from linux-perf is the judge.
set -eu

command -v perf >/dev/null || { echo "SKIP: perf not installed"; exit 77; }

# perf's instruction trace: one hex IP per line (errors stay in, so any
# decoder error makes the comparison fail).
perf_insns() {
	perf script -i "$1" --itrace=i0nse -F ip "${@:2}" 2>&1 | awk '{print $1}'
}

# perf's branches as "FLAGS|FROM|TO".  perf 6.1.y prints a VM exit, whose
# flags gained "async" in a stable backport, by letters ("bcyh": branch,
# call, async, vmexit) rather than by name; it is a vmexit.
perf_branches() {
	perf script -i "$1" --itrace=be -F flags,ip,addr "${@:2}" 2>&1 |
	awk '{ to = $NF; from = $(NF-2); f = "";
	       for (i = 1; i <= NF-3; i++) f = f (f == "" ? "" : " ") $i;
	       if (f == "bcyh") f = "vmexit";
	       print f "|" from "|" to }'
}

# The truth's branches the same way.  A VM entry or exit is one branch in
# the truth; perf shows it as two samples, one per side (host and guest),
# each with the other side's address 0.
truth_branches() {
	grep -v '^#' "$1" |
	awk '{ f = ""; for (i = 5; i <= NF; i++) f = f (f == "" ? "" : " ") $i;
	       if (f == "vmentry" || f == "vmexit") {
		       print f "|" $1 "|0"; print f "|0|" $2
	       } else
		       print f "|" $1 "|" $2 }'
}

# vmpt_like_perf DATA [OPTION...] -- FORM...: vmpt script prints perf
# script's lines (stdout) for each output FORM (options word-split), with
# the OPTIONs both take (--vmlinux K, say) and VMPT_ONLY's (-j 2, say).
# Needs VMPT.
vmpt_like_perf() {
	local data=$1 f
	local args=()
	shift
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do
		args+=("$1")
		shift
	done
	shift
	for f in "$@"; do
		# shellcheck disable=SC2086
		perf script -i "$data" "${args[@]}" $f > perf.out 2>/dev/null
		# shellcheck disable=SC2086
		"$VMPT" script ${VMPT_ONLY:-} -i "$data" "${args[@]}" $f > vmpt.out 2>/dev/null ||
			fail "vmpt script $f ($data): exit status"
		cmp -s perf.out vmpt.out || {
			diff perf.out vmpt.out | head -5
			fail "vmpt script $f ($data): not perf script's lines"
		}
	done
}

truth_insns() {
	grep -v '^#' "$1"
}

fail() {
	echo "FAIL: $*"
	exit 1
}

# compare WHAT EXPECTED ACTUAL: exact equality, with the first difference
# shown; an empty EXPECTED is a failure (two empty sides compare nothing).
compare() {
	[ -s "$2" ] || fail "$1: nothing to compare ($2 is empty)"
	if ! cmp -s "$2" "$3"; then
		echo "FAIL: $1 differ (truth < > perf):"
		diff "$2" "$3" | head -10
		exit 1
	fi
}

# perf_guest_pipeline REC GUEST_DATA OFFSET VMM_PID VMLINUX OUT: perf's manual
# way to a guest's user space (man perf-intel-pt, "TRACING VIRTUAL MACHINES
# (INCLUDING USER SPACE)") on a copy of the recording directory REC: the
# guest TSCs corrected in place (--vm-time-correlation --force), the guest
# sideband GUEST_DATA with REC/guest/kcore_dir injected as machine VMM_PID
# (--guest-data, a guestmount of REC/guest/root), then perf script's
# instruction samples into OUT.
perf_guest_pipeline() {
	local rec=$1 gdata=$2 off=$3 pid=$4 vmlinux=$5 out=$6 p
	p=$(mktemp -d "$WORK/pipe.XXXXXX")
	cp -r "$rec" "$p/rec"
	mkdir -p "$p/gm" "$p/gdir"
	ln -s "$p/rec/guest/root" "$p/gm/$pid"
	perf inject -i "$p/rec" --vm-time-correlation="$off" --force > "$p/log" 2>&1 ||
		{ cat "$p/log"; fail "perf inject --vm-time-correlation=$off --force"; }
	cp "$gdata" "$p/gdir/data"
	cp -r "$p/rec/guest/kcore_dir" "$p/gdir/kcore_dir"
	perf inject -i "$p/rec" -o "$p/inj" --guestmount "$p/gm" \
		--guest-data="$p/gdir,$pid,$off" > "$p/log" 2>&1 ||
		{ cat "$p/log"; fail "perf inject --guest-data"; }
	perf script -i "$p/inj" --itrace=i0nse -F machine_pid,vcpu,comm,tid,ip,sym,dso \
		--vmlinux "$vmlinux" --guestmount "$p/gm" > "$out" 2>&1
	GUEST_ROOT=$p/rec/guest/root
}

# make_guest_fixture DIR [SPREAD]: the guest's side as vmpt guest collects it
# (docs/guest.md) in DIR/guest, made by hand (make-guest-fixture: two guest
# CPUs, processes forked and exec'd, cpu-wide switches moving them, a
# kworker and the idle task); host binaries as its root/, the
# guest-kernel model as its kcore and kallsyms.  Needs GUEST_KERNEL and
# MAKE_GUEST_FIXTURE; sets GK_START and GK_END (hex, the kernel text).
# SPREAD multiplies the workload's times (long idle spans).
make_guest_fixture() {
	local g=$1/guest here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	mkdir -p "$g/root/bin" "$g/root/usr/bin" "$g/root/lib/x86_64-linux-gnu" "$g/kcore_dir"
	cp /usr/bin/busybox "$g/root/bin/busybox"
	cp /usr/bin/bash "$g/root/usr/bin/bash"
	cp /lib/x86_64-linux-gnu/libc.so.6 "$g/root/lib/x86_64-linux-gnu/libc.so.6"
	python3 "$here/kcore_from_elf.py" "$GUEST_KERNEL" "$g/kcore_dir/kcore"
	GK_START=ffffffff81000000
	GK_END=$(readelf -lW "$GUEST_KERNEL" |
		awk '$1 == "LOAD" && $NF == "0x1000" && $(NF-1) ~ /E/ { print $3, $5 }' |
		python3 -c 'import sys; a, n = sys.stdin.read().split(); print("%x" % (int(a, 16) + int(n, 16)))')
	{ echo "$GK_START T _text"; echo "$GK_START T _stext"
	  nm "$GUEST_KERNEL" | awk '$2 ~ /^[tT]$/'; echo "$GK_END T _etext"; } > "$g/kcore_dir/kallsyms"
	: > "$g/kcore_dir/modules"
	"$MAKE_GUEST_FIXTURE" "$g/perf.data" "0x$GK_START" "$((0x$GK_END - 0x$GK_START))" ${2:-} ||
		fail "make-guest-fixture"
}

# perf_guest_inject REC GUEST_DATA OFFSET VMM_PID: perf_guest_pipeline's
# two perf inject steps; prints the directory holding inj (the merged
# recording) and gm (the guestmount) for perf script.
perf_guest_inject() {
	local rec=$1 gdata=$2 off=$3 pid=$4 p
	p=$(mktemp -d "$WORK/pipe.XXXXXX")
	cp -r "$rec" "$p/rec"
	mkdir -p "$p/gm" "$p/gdir"
	ln -s "$p/rec/guest/root" "$p/gm/$pid"
	perf inject -i "$p/rec" --vm-time-correlation="$off" --force > "$p/log" 2>&1 ||
		{ cat "$p/log" >&2; fail "perf inject --vm-time-correlation=$off --force"; }
	cp "$gdata" "$p/gdir/data"
	cp -r "$p/rec/guest/kcore_dir" "$p/gdir/kcore_dir"
	perf inject -i "$p/rec" -o "$p/inj" --guestmount "$p/gm" \
		--guest-data="$p/gdir,$pid,$off" > "$p/log" 2>&1 ||
		{ cat "$p/log" >&2; fail "perf inject --guest-data"; }
	echo "$p"
}
