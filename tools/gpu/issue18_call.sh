#!/usr/bin/env bash
# Issue 18's acceptance as one device call: run-on-h200.sh under GPU_ISSUE18=1 within the call's
# limit, judged (tools/gpu/issue18_check.py) even when the run was cut, and $OUT left as
# three files (issue18.md, steps.log, all.tgz with everything), since the device tool brings back
# at most eight. Usage, on the device machine in the repo root (carry .deps):
#   bash tools/gpu/issue18_call.sh            # OUT set by the device tool; ISSUE18_LIMIT_S (default 540)
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?OUT must name the folder that comes back}"
timeout "${ISSUE18_LIMIT_S:-540}" env GPU_ISSUE18=1 OUT="$OUT" bash tools/gpu/run-on-h200.sh > "$OUT/run.log" 2>&1
echo "run-on-h200.sh exit $?" >> "$OUT/steps.log"
# run-on-h200.sh judges at its end; a run cut before it is judged here from the files it reached.
[ -s "$OUT/issue18.md" ] || python3 tools/gpu/issue18_check.py "$OUT" > "$OUT/issue18.md" 2>&1
keep=$(mktemp -d)
cp -r "$OUT"/. "$keep"/ && find "$OUT" -mindepth 1 -delete
tar czf "$OUT/all.tgz" -C "$keep" . && cp "$keep/issue18.md" "$keep/steps.log" "$OUT/"
rm -rf "$keep"
cat "$OUT/issue18.md"
