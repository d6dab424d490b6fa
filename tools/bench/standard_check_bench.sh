#!/usr/bin/env bash
# What the standard check costs an audit: the CPU corpus audited with --jobs N with the check (the
# default) and with --no-standard-check, alternating, and the check's own seconds as stored.
# Figures go to docs/audit.md ("The standard check").
# Usage: tools/bench/standard_check_bench.sh [build-dir] [rounds] [jobs] [timeout-seconds]
# The build cache is warmed first (one untimed audit), so no timed run compiles anything.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(cd "${1:-build}" && pwd)
rounds=${2:-2}
jobs=${3:-2}
timeout=${4:-10}
export GAUNTLET_CACHE=${GAUNTLET_CACHE:-$build/kernel-cache}
export GAUNTLET_WORKER=$build/gauntlet-worker
work=$(mktemp -d /tmp/gauntlet-standard-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "machine: $(nproc) cores, $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir "$work/corpus"
# STANDARD_BENCH_DIRS: the corpus folders audited (default: the CPU corpus; modules only where the
# worker's interpreter, GAUNTLET_PYTHON or /usr/bin/python3, has torch).
dirs=${STANDARD_BENCH_DIRS:-controls bugs hostile contracts modules}
for d in $dirs; do
  if [ "$d" = modules ] && ! "${GAUNTLET_PYTHON:-/usr/bin/python3}" -c 'import torch' 2>/dev/null; then continue; fi
  ln -s "$PWD/corpus/$d" "$work/corpus/$d"
done
echo "corpus: $(ls "$work/corpus" | tr '\n' ' ')($(find -L "$work/corpus" -name '*.json' | wc -l) manifests), --jobs $jobs, --timeout $timeout"

audit() {  # audit DB [flags...] -> "WALL CPU" seconds (CPU: user + system of the audit and every process it reaped)
  local db=$1
  shift
  /usr/bin/time -f "%e %U %S" -o "$db.time" "$build"/gauntlet audit "$work/corpus" --db "$db" --jobs "$jobs" \
    --timeout "$timeout" --seed 1 --replay-dir "$work/replays" --work-dir "$work/w" --progress-every 600 "$@" \
    >"$db.out" 2>"$db.err" || true
  awk '/^[0-9]/ {printf "%.2f %.2f\n", $1, $2 + $3}' "$db.time"  # after time's "Command exited with non-zero status" line
}

if [ "${STANDARD_BENCH_WARM:-1}" = 1 ]; then  # STANDARD_BENCH_WARM=0: the caches are known to be warm
  echo "== warming the build cache (untimed)"
  audit "$work/warm.db" >/dev/null
fi
tw=0 tn=0 cw=0 cn=0
for r in $(seq 1 "$rounds"); do
  # Alternating which goes first, so that a load that drifts over a round favours neither.
  if [ $((r % 2)) = 1 ]; then
    read -r aw ac < <(audit "$work/with$r.db")
    read -r bw bc < <(audit "$work/without$r.db" --no-standard-check)
  else
    read -r bw bc < <(audit "$work/without$r.db" --no-standard-check)
    read -r aw ac < <(audit "$work/with$r.db")
  fi
  echo "round $r: with the standard check $aw s wall, $ac s CPU; without $bw s wall, $bc s CPU (load $(cut -d' ' -f1-3 /proc/loadavg))"
  tw=$(awk "BEGIN {print $tw + $aw}") tn=$(awk "BEGIN {print $tn + $bw}")
  cw=$(awk "BEGIN {print $cw + $ac}") cn=$(awk "BEGIN {print $cn + $bc}")
done
echo "all rounds: wall with $tw s, without $tn s ($(awk "BEGIN {printf \"%+.1f%%\", ($tw / $tn - 1) * 100}")); CPU with $cw s, without $cn s ($(awk "BEGIN {printf \"%+.1f%%\", ($cw / $cn - 1) * 100}"))"
python3 - "$work/with1.db" <<'EOF'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
checks = [json.loads(c) for (c,) in db.execute("SELECT standard_check FROM kernels WHERE standard_check IS NOT NULL")]
gates = db.execute("SELECT coalesce(sum(seconds), 0) FROM gates").fetchone()[0]
by = {}
for c in checks:
    k = by.setdefault(c["check"], [0, 0.0])
    k[0] += 1
    k[1] += c["seconds"]
total = sum(c["seconds"] for c in checks)
print("standard checks: %d kernels, %.2f s in all (%s); the gates' own seconds: %.1f s; checks/gates %.1f%%" % (
    len(checks), total, ", ".join("%s %d, mean %.0f ms" % (k, n, 1000 * s / n) for k, (n, s) in sorted(by.items())),
    gates, 100 * total / gates if gates else 0))
verdicts = {}
for c in checks:
    verdicts[c["verdict"]] = verdicts.get(c["verdict"], 0) + 1
print("standard check verdicts:", verdicts)
EOF
grep -A3 "^standard check against" "$work/with1.db.out" || true
