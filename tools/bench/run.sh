#!/usr/bin/env bash
# Runs gauntlet's benchmarks (not tests) and prints the figures recorded in docs/performance.md.
# Usage: tools/bench/run.sh [build-dir]   (expects a built tree; see README)
set -euo pipefail
cd "$(dirname "$0")/../.." 2>/dev/null || true
build=$(cd "${1:-build}" && pwd)

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
export GAUNTLET_CACHE=${GAUNTLET_CACHE:-$build/kernel-cache}
export GAUNTLET_WORKER=$build/gauntlet-worker
echo "== sandbox overhead, all namespaces (net, mount, pid, ipc)"
"$build"/gauntlet_sandbox_bench corpus/controls/relu.cpp 60
echo "== sandbox overhead without the pid namespace (GAUNTLET_NAMESPACES=net,mount,ipc)"
GAUNTLET_NAMESPACES=net,mount,ipc "$build"/gauntlet_sandbox_bench corpus/controls/relu.cpp 60
echo "== float64 oracle calls at a problem's size side by side, with and without run_oracle's turns"
"$build"/gauntlet_oracle_bench "${ORACLE_BENCH_N:-1024}" "${ORACLE_BENCH_K:-4}"
echo "== the accumulation gate's exact matmul oracle at a problem's size: filtered vs superaccumulating all"
"$build"/gauntlet_exact_bench "${EXACT_BENCH_N:-1024}" "${EXACT_BENCH_SMALL_N:-128}"
echo "== all implemented gates on controls (default budget): wall time per verify, per-gate times in the table"
for k in relu softmax layer_norm matmul; do
  start=$(date +%s.%N)
  "$build"/gauntlet verify corpus/controls/$k.json --seed 1 --quiet --json "$build/bench-$k.json" | grep -vE " skip " || true
  end=$(date +%s.%N)
  echo "verify $k: $(awk "BEGIN {printf \"%.2f\", $end - $start}") s wall (process start, zygote start, build-cache hit and all gates)"
done
