#!/usr/bin/env bash
# Probe for the memory gate's compute-sanitizer sub-check, the device-memory poisons and the
# provenance gate's host-copy rule on the GPU machine (docs/memory.md, docs/gpu.md). Run it through
# the device tool from the repo root (name .deps in carry, as for run-on-h200.sh):
#   bash tools/gpu/probe_sanitizer.sh
# It builds gauntlet + gauntlet-worker (through run-on-h200.sh's build step when build-gpu/ lacks
# them), then prints, and writes under $OUT/sanitizer/:
#   1. where compute-sanitizer is, its version, and what its injection looks like from inside a
#      target (environment, open descriptors, Unix sockets): what the sandbox has to let through;
#   2. memcheck and initcheck on the CUDA relu control through `gauntlet verify --gates memory`,
#      then the determinism and provenance gates on it (their messages say what was checked);
#   3. the planted bugs in tests/data/cuda: an out-of-bounds store (memory gate: memcheck fail), an
#      unwritten last element (memory gate: poison and initcheck fail), host computation
#      (provenance gate fail); each verdict line with its message;
#   4. when the sanitizer sub-check was skipped in 2, the same run again with more relaxed sanitizer
#      children (GAUNTLET_SANITIZER_RELAX=uid, then uid,seccomp, then uid,seccomp,ns), to tell which
#      sandbox layer stops the tool.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-build-gpu}
OUT=${OUT:-$ROOT/$BUILD_DIR/out}
P=$OUT/sanitizer
mkdir -p "$P"
t0=$(date +%s)
say() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$P/steps.log"; }

if [ ! -x "$BUILD_DIR/gauntlet" ] || [ ! -x "$BUILD_DIR/gauntlet-worker" ] || [ "${PROBE_REBUILD:-1}" = 1 ]; then
  say "build (run-on-h200.sh, no verify)"
  GPU_VERIFY=0 GPU_CPU_CHECK=0 GPU_TESTS=0 BUILD_DIR=$BUILD_DIR OUT=$P bash tools/gpu/run-on-h200.sh > "$P/build-step.log" 2>&1
  tail -5 "$P/build-step.log"
fi
export GAUNTLET_CACHE=$ROOT/$BUILD_DIR/kernel-cache
export GAUNTLET_WORKER=$ROOT/$BUILD_DIR/gauntlet-worker
G=$ROOT/$BUILD_DIR/gauntlet

# ---- 1. the tool --------------------------------------------------------------------------------
CS=$(command -v compute-sanitizer || true)
for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  [ -z "$CS" ] && [ -x "$c" ] && CS=$c
done
say "compute-sanitizer: ${CS:-absent}"
if [ -n "$CS" ]; then
  "$CS" --version 2>&1 | tail -2
  ls "$(dirname "$(readlink -f "$CS")")" 2>&1 | tr '\n' ' '; echo
  # What a target sees: the injection's environment, descriptors and sockets (no CUDA needed).
  "$CS" --tool memcheck --require-cuda-init no bash -c '
    echo "target pid $$"; tr "\0" "\n" < /proc/$$/environ | grep -E "^(LD_PRELOAD|CUDA_INJECTION|NV_|COMPUTE_SANITIZER|TMPDIR)" ;
    ls -l /proc/$$/fd; cat /proc/net/unix 2>/dev/null | grep -v "^Num" | head -20' > "$P/target-view.log" 2>&1
  cat "$P/target-view.log"
fi

# ---- 2. the CUDA relu control ---------------------------------------------------------------------
verdicts() {  # the gate lines of a verify log
  grep -E "^\s*(memory|provenance|determinism)\b|PASS|FAIL|skipped|compute-sanitizer" "$1" | cut -c1-1200
}
run_verify() {  # name manifest gates [env...]
  local name=$1 manifest=$2 gates=$3; shift 3
  say "verify $manifest --gates $gates $*"
  env "$@" timeout 580 "$G" verify "$manifest" --seed 1 --gates "$gates" --json "$P/$name.json" \
    > "$P/$name.log" 2>&1
  echo "  exit $?"
  verdicts "$P/$name.log"
  python3 - "$P/$name.json" <<'PY' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))
for g in r.get("gates", []):
    print("  %-12s %-6s %-12s %s" % (g.get("name"), g.get("status"), g.get("category", ""), g.get("message", "")[:1500]))
PY
}
run_verify relu-memory corpus/controls_cuda/relu.json memory
run_verify relu-det-prov corpus/controls_cuda/relu.json determinism,provenance

# ---- 3. the planted bugs ------------------------------------------------------------------------
run_verify oob-store tests/data/cuda/relu_oob_store.json memory
run_verify skip-last tests/data/cuda/relu_skip_last.json memory
run_verify on-host tests/data/cuda/relu_on_host.json provenance
# The poisons without the sanitizer: must still catch the unwritten element.
run_verify skip-last-nosan tests/data/cuda/relu_skip_last.json memory GAUNTLET_COMPUTE_SANITIZER=none

# ---- 4. which layer stops the tool (only when it was skipped) -------------------------------------
if grep -q "sanitizer_skipped\|memcheck skipped\|initcheck skipped" "$P/relu-memory.json" "$P/relu-memory.log" 2>/dev/null; then
  for relax in uid uid,seccomp uid,seccomp,ns; do
    run_verify "relax-${relax//,/-}" corpus/controls_cuda/relu.json memory GAUNTLET_SANITIZER_RELAX=$relax
  done
fi
# A failing child's captured output (the tool's own lines) is in the logs; the last of them:
grep -h "=========" "$P"/*.log 2>/dev/null | sort | uniq -c | sort -rn | head -30
say "done"
