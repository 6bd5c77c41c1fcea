#!/bin/bash
# make demo's run (tools/demo.sh) shows what it says: the correlator's
# offsets equal perf's, the VM's lines with offsets equal those without,
# the decoded trace equals the ground truth and perf's, --guest-code equals
# perf's; no step reports a difference.
# usage: demo.sh   (env: SRCDIR BUILDDIR)
set -u
: "${SRCDIR:?}" "${BUILDDIR:?}"
out=$(sh "$SRCDIR/tools/demo.sh" "$BUILDDIR" 2>&1) || { echo "$out"; echo "FAIL: tools/demo.sh exited $?"; exit 1; }
fail=0
for want in \
	"-- perf inject --vm-time-correlation=dry-run finds the same offsets" \
	"lines, times included, equals the same VM traced without TSC offsets" \
	"-- vmpt's instruction trace equals the ground truth:" \
	"-- perf script agrees too" \
	"-- perf script --guest-code prints the same"; do
	grep -qF -- "$want" <<<"$out" || { echo "FAIL: the demo does not say: $want"; fail=1; }
done
if grep -E "differs|DIFFER|disagrees" <<<"$out"; then
	echo "FAIL: the demo reports a difference"
	fail=1
fi
[ $fail = 0 ] && echo "ok: make demo's steps agree ($(wc -l <<<"$out") lines)"
exit $fail
