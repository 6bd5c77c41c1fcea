# Sourced by the record tests.
# wait_recording PID: until vmpt record catches SIGINT and SIGUSR2 (its
# handlers are set).  Before that a background job of sh ignores SIGINT
# and dies of SIGUSR2, so a signal sent too early (a slow start under
# ASan on a busy machine) would leave it recording for ever or kill it.
wait_recording() {
	for _ in $(seq 600); do
		mask=$(awk '/^SigCgt:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
		[ -n "$mask" ] || return 1	# it has exited
		[ $((0x$mask & 0x802)) -eq $((0x802)) ] && return 0
		sleep 0.05
	done
	return 1
}

# wait_for_record REC PATTERN [PERF-SCRIPT-OPTIONS]: until perf script
# reads a line matching PATTERN (grep -E) in the recording REC while it is
# being written (the recorder brings its header up to date every 100 ms),
# for at most 30 s: readiness, instead of a sleep before a signal.
wait_for_record() {
	wf_rec=$1
	wf_pat=$2
	shift 2
	for _ in $(seq 300); do
		perf script -i "$wf_rec" "$@" 2>/dev/null | grep -qE -- "$wf_pat" && return 0
		sleep 0.1
	done
	return 1
}

# perf_count REC TYPE: how many TYPE records (MMAP2, TOTAL, ...) perf
# report --stats counts in REC (0 when it lists none).
perf_count() {
	perf report --stats -i "$1" 2>/dev/null |
		awk -v t="$2" '$1 == t && $2 == "events:" { n = $3 } END { print n + 0 }'
}
