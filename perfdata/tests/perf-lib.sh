# Shared by the perfdata shell tests (sourced): comparing vmpt's reading of
# a perf.data with perf's own (`perf script -D`), parsed at test time.
: "${BUILDDIR:?}" "${SHARED:?}" "${VMPT:?}"
LIST=$BUILDDIR/perfdata/tests/pd-list
WRITE=$BUILDDIR/perfdata/tests/pd-write
command -v perf >/dev/null || { echo "SKIP: perf (linux-perf) not installed"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# perf script -D's one-line record summaries.  User records carry no
# sample_id: their "cpu time" prefix is perf's filler and is dropped, and
# so are the details of the records vmpt has no fields for.
perf_records() {
	grep -oE '^([0-9-]+ )*(0x[0-9a-f]+|0) \[0x[0-9a-f]+\]: PERF_RECORD_.*' "$1" |
	sed -E '/: PERF_RECORD_(TIME_CONV|AUXTRACE|FINISHED_ROUND|ATTR|FEATURE|ID_INDEX|FINISHED_INIT|EVENT_UPDATE|THREAD_MAP|CPU_MAP|STAT|BUILD_ID)/s/^([0-9-]+ )+((0x[0-9a-f]+|0) \[)/\2/' |
	sed -E 's/(PERF_RECORD_(CPU_MAP|FINISHED_INIT|EVENT_UPDATE)).*/\1/'
}
# In pipe mode perf prints offsets without the 16-byte pipe header (the
# first record at "0").
pipe_offsets() {
	while IFS= read -r line; do
		off=$(echo "$line" | sed -E 's/^([0-9-]+ )*(0x[0-9a-f]+|0) \[.*/\2/')
		printf '%s\n' "$line" |
			sed -E "s/(^|[ ])$off \\[/\\1$(printf '%#x' $((off + 16))) [/"
	done
}
# vmpt's listing of the same (pd-list), without the detail lines.
vmpt_records() { "$LIST" "$1" | grep -v '^ *\.\.\. '; }
# The TIME_CONV fields as perf -D prints them (and pd-list).
time_conv() { grep -E '^\.\.\. (Time|Cap Time)' "$1" || true; }
no_offsets() { sed -E 's/0x[0-9a-f]+ \[/[/'; }
# perf must leave stderr empty (what "accepted without complaint" means).
quiet_perf() {
	what=$1
	shift
	rc=0
	perf "$@" >"$T/out" 2>"$T/err" || rc=$?
	[ $rc -eq 0 ] || { cat "$T/err"; fail "perf $* exited $rc ($what)"; }
	[ ! -s "$T/err" ] || { cat "$T/err"; fail "perf $* complained ($what)"; }
}
