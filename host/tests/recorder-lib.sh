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
