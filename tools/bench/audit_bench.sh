#!/usr/bin/env bash
# Audit throughput on the CPU corpus: --jobs 2 against --jobs 1 (speedup), and the audit's overhead
# per kernel beyond its gate processes. Figures go to docs/audit.md.
# Usage: tools/bench/audit_bench.sh [build-dir] [timeout-seconds]   (expects a built tree)
# The build cache is warmed first (one untimed audit), so neither timed run compiles anything.
# Timed runs are wall-clock: run it on an otherwise idle machine (the load average is printed).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(cd "${1:-build}" && pwd)
timeout=${2:-10}
export GAUNTLET_CACHE=${GAUNTLET_CACHE:-$build/kernel-cache}
export GAUNTLET_WORKER=$build/gauntlet-worker
work=$(mktemp -d /tmp/gauntlet-audit-bench-XXXXXX)
[ "${AUDIT_BENCH_KEEP:-0}" = 1 ] && echo "work dir kept: $work" || trap 'rm -rf "$work"' EXIT

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
# The CPU corpus: the native CPU folders (the CUDA twins need a GPU; corpus/modules needs python3-torch).
mkdir "$work/corpus"
for d in controls bugs hostile; do ln -s "$PWD/corpus/$d" "$work/corpus/$d"; done
# Python modules too when this machine runs them.
if python3 -c 'import torch' 2>/dev/null; then ln -s "$PWD/corpus/modules" "$work/corpus/modules"; fi
echo "corpus: $(ls "$work/corpus" | tr '\n' ' ')($(find -L "$work/corpus" -name '*.json' | wc -l) manifests), --timeout $timeout, seed 1"

audit() {  # audit JOBS DB -> wall seconds on stdout; summary in $work/JOBS.out
  local start end
  start=$(date +%s.%N)
  "$build"/gauntlet audit "$work/corpus" --db "$2" --jobs "$1" --timeout "$timeout" --seed 1 \
    --replay-dir "$work/replays" --work-dir "$work/w" --progress-every 600 >"$work/$1.out" 2>"$work/$1.err" || true
  end=$(date +%s.%N)
  awk "BEGIN {printf \"%.2f\", $end - $start}"
}

if [ "${AUDIT_BENCH_WARM:-1}" = 1 ]; then  # AUDIT_BENCH_WARM=0: the cache is known to be warm
  echo "== warming the build cache (untimed)"
  audit 2 "$work/warm.db" >/dev/null
fi
echo "== process start (an audit of an empty folder)"
mkdir "$work/empty"
start=$(date +%s.%N)
"$build"/gauntlet audit "$work/empty" --db "$work/empty.db" >/dev/null
startup=$(awk "BEGIN {printf \"%.3f\", $(date +%s.%N) - $start}")
echo "startup: $startup s"

t1=$(audit 1 "$work/j1.db")
t2=$(audit 2 "$work/j2.db")
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for j in 1 2; do
  grep -E "^gauntlet audit|^verdicts|bookkeeping" "$work/$j.out" | sed "s/^/  jobs $j: /"
done
# Gate time as the gates measured it (sequential under --jobs 1); kernels from the kernels table.
stats() { python3 - "$1" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
gates = db.execute("SELECT count(*), coalesce(sum(seconds), 0) FROM gates").fetchone()
kernels = db.execute("SELECT count(*) FROM kernels WHERE entry_error IS NULL").fetchone()[0]
print(gates[0], "%.3f" % gates[1], kernels)
EOF
}
read -r g1 gs1 k1 < <(stats "$work/j1.db")
read -r g2 gs2 k2 < <(stats "$work/j2.db")
echo "jobs 1: $t1 s wall, $k1 kernels, $g1 gate runs, $gs1 s of gate time"
echo "jobs 2: $t2 s wall, $k2 kernels, $g2 gate runs, $gs2 s of gate time"
echo "speedup (jobs 1 wall / jobs 2 wall): $(awk "BEGIN {printf \"%.2f\", $t1 / $t2}")"
# Everything but the gates themselves, per kernel, under --jobs 1: the audit's bookkeeping, verify's
# per-kernel work (schema, build-cache hit, hashing) and the lane's zygote start, less process start.
echo "non-gate time per kernel (jobs 1, process start excluded): $(awk "BEGIN {printf \"%.2f\", ($t1 - $startup - $gs1) * 1000 / $k1}") ms"
