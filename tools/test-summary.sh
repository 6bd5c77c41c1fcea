#!/bin/sh
# Print the suite's result: "N passed, N failed, N skipped", then each test
# that failed and each that was skipped with its reason, in the test's own
# words: its last "SKIP: ..." line (the convention of this project's tests
# and perf's), else the last line it printed.
log="$1/meson-logs/testlog.json"
[ -f "$log" ] || { echo "test-summary: no $log"; exit 1; }
python3 - "$log" <<'PY'
import json, re, sys

ok, failed, skipped = 0, [], []
for line in open(sys.argv[1]):
    r = json.loads(line)
    result = r["result"]
    if result in ("OK", "EXPECTEDFAIL"):
        ok += 1
    elif result == "SKIP":
        skipped.append(r)
    else:
        failed.append(r)


def reason(r):
    out = ((r.get("stdout") or "") + "\n" + (r.get("stderr") or "")).splitlines()
    out = [l.strip() for l in out if l.strip()]
    said = [l for l in out if re.match(r"(?i)^(\d+\.\.\d+ # )?skip(ped)?\b", l)]
    if said:
        return re.sub(r"(?i)^(\d+\.\.\d+ # )?skip(ped)?\s*:?\s*", "", said[-1]) or said[-1]
    if out:
        return out[-1]
    return "no reason printed (exit status %s)" % r.get("returncode")


print(f"{ok} passed, {len(failed)} failed, {len(skipped)} skipped")
for r in failed:
    print(f"failed: {r['name']} ({r['result']}, exit status {r.get('returncode')})")
for r in skipped:
    print(f"skipped: {r['name']}: {reason(r)}")
PY
