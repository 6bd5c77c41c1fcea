#!/bin/sh
# Print the suite's result as one plain line: "N passed, N failed, N skipped".
log="$1/meson-logs/testlog.json"
[ -f "$log" ] || { echo "test-summary: no $log"; exit 1; }
python3 - "$log" <<'PY'
import json, sys
counts = {"OK": 0, "FAIL": 0, "SKIP": 0}
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"):
        counts["OK"] += 1
    elif r == "SKIP":
        counts["SKIP"] += 1
    else:
        counts["FAIL"] += 1
print(f"{counts['OK']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
PY
