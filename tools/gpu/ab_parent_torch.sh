#!/usr/bin/env bash
# Issue 18's A/B of the parent's LibTorch, in one device call: the same throughput batch through a
# gauntlet whose parent links all of TORCH_LIBRARIES (A, the default) and one linked with LibTorch's
# CPU half only (B, -DGAUNTLET_PARENT_TORCH_CPU_ONLY=ON), run A, B, A so a drift of the machine shows.
# Both builds share one kernel cache (builds are keyed by content), and the later batches reuse the
# first's measured context floor. Each batch's figures land in $OUT/a1, $OUT/b, $OUT/a2; the
# start-up probe of each binary in $OUT/startup-{a,b}.txt. Usage (carry .deps):
#   AB_KERNELS="relu softmax layer_norm sum cumsum matmul" AB_SEEDS="1 2 3 4" OUT=$OUT bash tools/gpu/ab_parent_torch.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-build-gpu/out-ab}
mkdir -p "$OUT"
export GAUNTLET_CACHE=$PWD/build-gpu-kernel-cache
K=${AB_KERNELS:-relu softmax layer_norm sum cumsum matmul}
common=(GPU_PACK=0 GPU_THROUGHPUT=1 GPU_TP_CONFIGS=${AB_CONFIG:-4x4} "GPU_TP_SEEDS=${AB_SEEDS:-1 2 3 4}" "GPU_TP_KERNELS=$K")
t0=$(date +%s)
note() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$OUT/ab.log"; }

# Both builds first, so neither batch runs beside a compile.
note "build A (default) and B (parent on torch_cpu)"
env GPU_PACK=0 GPU_PARENT_TORCH_CPU=OFF OUT="$OUT/build-a" bash tools/gpu/run-on-h200.sh > "$OUT/build-a.log" 2>&1
env GPU_PACK=0 GPU_PARENT_TORCH_CPU=ON BUILD_DIR=build-gpu-cpuparent OUT="$OUT/build-b" bash tools/gpu/run-on-h200.sh \
  > "$OUT/build-b.log" 2>&1
for v in a:build-gpu b:build-gpu-cpuparent; do
  bash tools/gpu/startup_probe.sh "${v#*:}/gauntlet" 7 > "$OUT/startup-${v%%:*}.txt" 2>&1
done
note "prebuild"
env "${common[@]}" GPU_PARENT_TORCH_CPU=OFF GPU_THROUGHPUT=0 GPU_PREBUILD=1 GPU_PREBUILD_JOBS=16 \
  GPU_PREBUILD_DIRS="$(for k in $K; do printf 'corpus/controls_cuda/%s.json ' "$k"; done)" OUT="$OUT/prebuild" \
  bash tools/gpu/run-on-h200.sh > "$OUT/prebuild.log" 2>&1
for run in a1:build-gpu:OFF b:build-gpu-cpuparent:ON a2:build-gpu:OFF; do
  IFS=: read -r label dir parent <<< "$run"
  note "batch $label ($dir)"
  env "${common[@]}" GPU_PARENT_TORCH_CPU="$parent" BUILD_DIR="$dir" OUT="$OUT/$label" \
    ${CTX_SERIAL:+CTX_SERIAL=$CTX_SERIAL CTX_SERIAL_ONE=$CTX_SERIAL_ONE} bash tools/gpu/run-on-h200.sh > "$OUT/$label.log" 2>&1
  if [ -z "${CTX_SERIAL:-}" ]; then
    CTX_SERIAL=$(sed -n 's/^serial_seconds_per_context=//p' "$OUT/$label/ctx-floor.md")
    CTX_SERIAL_ONE=$(sed -n 's/^serial_seconds_per_context_one_queue=//p' "$OUT/$label/ctx-floor.md")
  fi
  grep -h -E "kernels/hour|ceiling|host CPU|verify process" "$OUT/$label"/throughput-*.md | sed "s/^/$label: /" | tee -a "$OUT/ab.log"
done
for v in a b; do echo "startup $v:"; cat "$OUT/startup-$v.txt"; done | tee -a "$OUT/ab.log"
note "done"
