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
