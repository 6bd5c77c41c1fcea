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
