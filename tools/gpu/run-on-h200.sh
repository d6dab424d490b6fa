#!/usr/bin/env bash
# Builds gauntlet on the lent GPU machine (Ubuntu 24.04, nvcc 13, PyTorch 2.11+cu130 in python3)
# and runs the CUDA corpus through the real pipeline. Logs and reports go to $OUT (the device
# tool's folder that comes back), or to build-gpu/out/ when run elsewhere. docs/gpu.md says how to run it.
#
# The host lacks some Debian -dev packages gauntlet needs (libseccomp-dev, librapidcheck-dev,
# libsqlite3-dev). Prepare them on a Debian/Ubuntu machine with network, in the repo root:
#   mkdir -p .deps/debs && cd .deps/debs && apt-get update &&
#   apt-get download librapidcheck-dev libseccomp-dev libseccomp2 libsqlite3-dev libsqlite3-0
# and name .deps in the device run's carry. They are unpacked under .deps/root (never into /).
#
# Steps (each optional through the environment):
#   GPU_TESTS=1       also build and run the unit tests (default 0): Cuda*:Gpu*, Timing*, then
#   GPU_TEST_FILTER=  this gtest filter (default Wire*:Builder*)
#   GPU_PREBUILD=1    build every CUDA corpus kernel, in parallel (GPU_PREBUILD_JOBS, default 12)
#   GPU_SELFTEST=1    `gauntlet selftest` over the CUDA corpus (GPU_SELFTEST_FILTER, default _cuda;
#                     GPU_SELFTEST_LIMIT: seconds before a selftest run is cut short;
#                     GPU_SELFTEST_KBCHECK=1: also the KernelBench-style check, --no-kbcheck otherwise)
#   GPU_CTX_BENCH=1   fresh CUDA context starts, 1-16 processes at once (tools/gpu/ctx_bench.cu)
#   GPU_TWO=1         issue 21, on nvidia-h200-x2 (written, not yet run there): contexts on one GPU
#                     against two, the CUDA corpus audited with --gpus 0 against --gpus 0,1 (verdicts
#                     compared), and hostile kernels on GPU 0 beside the controls on GPU 1
#   GPU_DOBENCH=1     the timing gate's medians against triton's do_bench (needs GPU_SELFTEST's JSON)
#   GPU_SPINNER=1     the CUDA controls' audit alone and beside a spinning kernel (spinner.md;
#                     GPU_SPINNER_KERNELS: control names, default every CUDA control; GPU_SPINNER_REPEATS=N pairs;
#                     GPU_SPINNER_TIMEOUT, GPU_SPINNER_UNBOUNDED=1 also without the turn bound,
#                     GPU_SPINNER_SLOTS="1 8" also with GAUNTLET_GPU_TURN_SLOTS=N)
#   GPU_LATENCY=1     one kernel verified alone, all gates and timing, under each of GPU_LATENCY_VARIANTS
#                     (env settings "A=1,B=2", "args:--gpu-jobs,12" for flags, "default" for none; default
#                     "default GAUNTLET_PREPARE_AHEAD=0"),
#                     taking turns GPU_LATENCY_REPEATS times (default 3) over GPU_LATENCY_KERNELS: latency.md
#   GPU_THROUGHPUT=1  kernels per hour through all gates and timing (GPU_TP_CPU=1: CPU by process; GPU_TP_CONFIGS, GPU_TP_SEEDS,
#                     GPU_TP_FLOOR_ROUNDS: bursts of the context floor, default 3, the fastest kept;
#                     GPU_TP_FLOOR_AFTER=1: the floor again after the batches;
#                     GPU_TP_KERNELS: control names, default every CUDA control; GPU_TP_POISON="address
#                     blocks": one batch per device poisoning, compared)
#   GPU_AUDIT=1       `gauntlet audit --gpus 0` of the CUDA controls and bugs (GPU_AUDIT_JOBS,
#                     GPU_AUDIT_PARTS; GPU_AUDIT_RESUME: a folder of earlier audit-PART.db to resume;
#                     GPU_AUDIT_REPLAY=N: replay the first N failures it left, one per kernel)
#   GPU_KB=DIR        a KernelBench checkout's candidates paired with its problems, audited (below;
#                     GPU_KB_RESUME=FILE: an earlier call's kb-audit.db to resume; GPU_KB_PER_PROBLEM=N
#                     candidates of each problem at most, GPU_KB_SPREAD=1 round-robin over problems,
#                     GPU_KB_PROBLEMS=12-15,19 only those problem ids)
#   GPU_VERIFY_LIST=  manifests to `gauntlet verify` one by one (GPU_GATES: a subset of gates)
#   GPU_QUEUE_RACE=   manifests verified with the determinism and timing children's hardware queues
#                     at the driver's default, then GPU_QUEUE_RACE_QUEUES (default "2 1"), over
#                     GPU_QUEUE_RACE_SEEDS (default "1 2 3"): queue-race.md
#   GPU_BUILD_BENCH=1 first, before gauntlet's build: where a load_inline build's time goes
#                     (tools/gpu/bench_module_build.py; BENCH_STEPS=light: torch's cold build,
#                     then the light headers, the precompiled header and gauntlet's cold build)
#   GPU_ORACLE_BENCH=1 the host's float64 oracle calls side by side, with and without turns
#                     (tools/bench/oracle_concurrency_bench.cpp; ORACLE_BENCH_N, ORACLE_BENCH_K, and
#                     ORACLE_BENCH_BUSY spinning processes beside ORACLE_BENCH_THREADS per call)
#   GPU_EXACT_BENCH=1 the accumulation gate's exact matmul oracle at a problem's size, filtered vs
#                     superaccumulating all (tools/bench/exact_oracle_bench.cpp; EXACT_BENCH_N, EXACT_BENCH_SMALL_N)
#   GPU_CPU_CHECK=1   also the CPU relu control, for comparison (default 0)
#   GPU_PROBE=1       first run tools/gpu/probe_cuda_sandbox.py (which sandbox layer stops CUDA)
#   GPU_PACK=0        leave $OUT as it is (default: everything but *.md, steps.log and env.txt is
#                     packed into rest.tgz at the end, since only a few files come back)
#   GPU_PARENT_TORCH_CPU=OFF configure with -DGAUNTLET_PARENT_TORCH_CPU_ONLY=OFF: the parent links
#                     all of LibTorch, CUDA half included (default ON, the CPU half only; compare
#                     with another BUILD_DIR, as tools/gpu/ab_parent_torch.sh does)
#   GPU_ISSUE18=1     issue 18's acceptance in one call (about 8 minutes on a fresh machine): every
#                     CUDA control built, the throughput benchmark (8x4 under the defaults, six
#                     controls, seeds 1-8, the floor in 2 rounds), the audit of every CUDA control alone
#                     and beside a spinning kernel, then tools/gpu/issue18_check.py's judgement
#                     (issue18.md). Any of those settings given as well overrides the preset's.
#   BUILD_DIR=...     build folder (default build-gpu, git-ignored)
set -uo pipefail
if [ "${GPU_ISSUE18:-0}" = 1 ]; then
  : "${GPU_PREBUILD:=1}" "${GPU_PREBUILD_JOBS:=16}" "${GPU_PREBUILD_DIRS:=corpus/controls_cuda}"
  : "${GPU_THROUGHPUT:=1}" "${GPU_TP_TRACE:=1}" "${GPU_TP_FLOOR_ROUNDS:=2}" "${GPU_TP_CONFIGS:=8x4}"
  : "${GPU_TP_SEEDS:=1 2 3 4 5 6 7 8}" "${GPU_TP_KERNELS:=relu softmax layer_norm sum cumsum matmul}"
  : "${GPU_SPINNER:=1}"
fi
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-build-gpu}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac  # absolute: a snapshot may build elsewhere
OUT=${OUT:-$BUILD_DIR/out}
mkdir -p "$OUT"
DEPS=${DEPS_ROOT:-$ROOT/.deps/root}
LIBARCH=x86_64-linux-gnu
t_start=$(date +%s)
stamp() { echo "[$(($(date +%s) - t_start)) s] $*" | tee -a "$OUT/steps.log"; }

# ---- 1. what the machine is --------------------------------------------------------------------
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1
  nvcc --version 2>&1 | tail -2
  g++ --version | head -1
  cmake --version | head -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cxx11abi", torch._C._GLIBCXX_USE_CXX11_ABI)' 2>&1
  grep PRETTY_NAME /etc/os-release
  echo "cores $(nproc)"
} > "$OUT/env.txt" 2>&1
stamp "env recorded"

if [ "${GPU_PROBE:-0}" = 1 ]; then
  python3 tools/gpu/probe_cuda_sandbox.py > "$OUT/probe.log" 2>&1
  stamp "probe: $(grep -c FAILED "$OUT/probe.log") sandbox variants failed (probe.log)"
fi

# ---- 2. unpack the missing -dev packages -------------------------------------------------------
if ls .deps/debs/*.deb >/dev/null 2>&1; then
  mkdir -p "$DEPS"
  for deb in .deps/debs/*.deb; do dpkg-deb -x "$deb" "$DEPS" || stamp "cannot unpack $deb"; done
  # The .pc files name prefix=/usr: point them at the unpacked tree.
  for pc in "$DEPS"/usr/lib/$LIBARCH/pkgconfig/*.pc; do
    [ -f "$pc" ] && sed -i "s|^prefix=/usr\$|prefix=$DEPS/usr|" "$pc"
  done
  # Link against the host's runtime libraries (same soname) rather than the unpacked copies.
  for so in libseccomp.so libsqlite3.so; do
    real=$(ls /usr/lib/$LIBARCH/$so.[0-9]* 2>/dev/null | head -1)
    [ -n "$real" ] && ln -sf "$real" "$DEPS/usr/lib/$LIBARCH/$so"
  done
  stamp "unpacked $(ls .deps/debs/*.deb | wc -l) packages into $DEPS"
else
  stamp "no .deps/debs/*.deb: relying on the host's packages"
fi

# ---- 3. configure and build ---------------------------------------------------------------------
if [ "${GPU_BUILD_BENCH:-0}" = 1 ]; then
  stamp "load_inline build benchmark (nothing else running)"
  python3 tools/gpu/bench_module_build.py "$OUT/module-build" 4 > "$OUT/module-build.log" 2>&1
  stamp "load_inline build benchmark: exit $? ($(tail -1 "$OUT/module-build.log"))"
fi

TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
export PKG_CONFIG_PATH="$DEPS/usr/lib/$LIBARCH/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
tests=OFF
targets=(gauntlet gauntlet-worker)
if [ "${GPU_TESTS:-0}" = 1 ]; then tests=ON; targets+=(gauntlet_unit_tests); fi
[ "${GPU_ORACLE_BENCH:-0}" = 1 ] && targets+=(gauntlet_oracle_bench)
[ "${GPU_EXACT_BENCH:-0}" = 1 ] && targets+=(gauntlet_exact_bench)
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
stamp "configure"
if ! cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$DEPS/usr" -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DGAUNTLET_BUILD_TESTS=$tests -DGAUNTLET_PARENT_TORCH_CPU_ONLY="${GPU_PARENT_TORCH_CPU:-ON}" > "$OUT/build.log" 2>&1; then
  stamp "configure FAILED (build.log)"; tail -40 "$OUT/build.log"; exit 1
fi
stamp "build ${targets[*]}"
keep_going=(); [ ${#GEN[@]} -gt 0 ] && keep_going=(-- -k 0)  # every error in one run
if ! cmake --build "$BUILD_DIR" -j"$(nproc)" --target "${targets[@]}" "${keep_going[@]}" >> "$OUT/build.log" 2>&1; then
  stamp "build FAILED (build.log)"; grep -E -m 40 -A3 'error:|Error ' "$OUT/build.log"; exit 1
fi
stamp "built"
# Whether the worker poisons the CUDA cache's free blocks by address (CMakeLists.txt's snapshot check).
grep -m1 "CUDA allocator snapshot" "$OUT/build.log" | tee -a "$OUT/steps.log"
[ -f "$BUILD_DIR/snapshot_check/why.log" ] && grep -m 12 -E "error" "$BUILD_DIR/snapshot_check/why.log" > "$OUT/snapshot-check.log"

export GAUNTLET_CACHE=${GAUNTLET_CACHE:-$BUILD_DIR/kernel-cache}  # shared by builds compared in one call
export GAUNTLET_WORKER=$BUILD_DIR/gauntlet-worker
export GAUNTLET_SCHEMAS=$ROOT/opschemas
export GAUNTLET_CUDA_ARCH=${GAUNTLET_CUDA_ARCH:-sm_90}
# The Python module worker runs under the python3 that has torch (and Triton) on this host.
export GAUNTLET_PYTHON=${GAUNTLET_PYTHON:-$(command -v python3)}
python3 -c 'import torch.utils.cpp_extension as c, importlib.util as u; print("ninja", c.is_ninja_available(), "triton", u.find_spec("triton") is not None)' >> "$OUT/env.txt" 2>&1
rc=0

# ---- 4. unit tests (optional) -------------------------------------------------------------------
if [ "$tests" = ON ]; then
  stamp "unit tests"
  # stdbuf: a crash must not swallow gtest's buffered lines (which test was running). The GPU
  # tests first, each group in its own process (a test that runs CUDA in-process stays apart).
  # GPU_TEST_FILTERS: space-separated gtest filters, each run in its own process (replaces the three).
  read -r -a filters <<< "${GPU_TEST_FILTERS:-Cuda*:Gpu* Timing* ${GPU_TEST_FILTER:-Wire*:Builder*}}"
  for filter in "${filters[@]}"; do
    echo "=== $filter" >> "$OUT/tests.log"
    stdbuf -oL -eL "$BUILD_DIR"/tests/gauntlet_unit_tests --gtest_filter="$filter" >> "$OUT/tests.log" 2>&1 || rc=1
    grep -E '^\[  (PASSED|FAILED) |^\[  SKIPPED|tests? ran' "$OUT/tests.log" | tail -3 | tee -a "$OUT/steps.log"
  done
fi

if [ "${GPU_ORACLE_BENCH:-0}" = 1 ]; then
  stamp "oracle concurrency bench"
  # shellcheck disable=SC2086
  env -u GAUNTLET_ORACLE_CALL_THREADS "$BUILD_DIR"/gauntlet_oracle_bench "${ORACLE_BENCH_N:-2048}" "${ORACLE_BENCH_K:-8}" \
    "${ORACLE_BENCH_BUSY:-16}" ${ORACLE_BENCH_THREADS:-16 8 4 2} > "$OUT/oracle-bench.md" 2>&1
  cat "$OUT/oracle-bench.md" | tee -a "$OUT/steps.log"
fi
if [ "${GPU_EXACT_BENCH:-0}" = 1 ]; then
  stamp "exact oracle bench"
  "$BUILD_DIR"/gauntlet_exact_bench "${EXACT_BENCH_N:-2048}" "${EXACT_BENCH_SMALL_N:-128}" > "$OUT/exact-bench.md" 2>&1
  cat "$OUT/exact-bench.md" | tee -a "$OUT/steps.log"
fi

# ---- 5. the CUDA corpus -------------------------------------------------------------------------
# GPU_PREBUILD=1: build every CUDA corpus kernel in parallel first (nvcc takes 30-40 s a kernel;
# `verify --gates contract` builds and runs the cheapest gate), so the selftest below measures
# already-built kernels (the throughput figure).
if [ "${GPU_PREBUILD:-0}" = 1 ]; then
  # GPU_PREBUILD_DIRS: which corpus folders or manifests (default all *_cuda; the hostile ones spin
  # to the timeout).
  prebuild_list=$(for d in ${GPU_PREBUILD_DIRS:-corpus/*_cuda}; do
                    if [ -f "$d" ]; then echo "$d"; else ls "$d"/*.json "$d"/*/*.json 2>/dev/null; fi; done)
  stamp "prebuild the CUDA corpus ($(echo "$prebuild_list" | wc -l) manifests)"
  echo "$prebuild_list" |
    xargs -P "${GPU_PREBUILD_JOBS:-12}" -I{} sh -c '"$0" verify "$1" --seed 1 --gates contract --quiet > /dev/null 2>&1; echo "$1 $?"' \
      "$BUILD_DIR"/gauntlet {} > "$OUT/prebuild.log" 2>&1
  stamp "prebuilt: $(awk '$2==0' "$OUT/prebuild.log" | wc -l) contract-pass, $(awk '$2!=0' "$OUT/prebuild.log" | wc -l) other"
fi
# GPU_SELFTEST=1: `gauntlet selftest` over the CUDA corpus (controls_cuda, bugs_cuda, hostile_cuda).
# GPU_SELFTEST_FILTER may name several filters (space-separated), each its own selftest run
# (selftest-cuda-N.json); GPU_SELFTEST_ARGS adds flags (e.g. --timeout 5 for the hostile kernels).
if [ "${GPU_SELFTEST:-0}" = 1 ]; then
  n=0
  kb_flag=--no-kbcheck  # GPU_SELFTEST_KBCHECK=1: also the KernelBench-style check of every bug declaring one
  [ "${GPU_SELFTEST_KBCHECK:-0}" = 1 ] && kb_flag=

  for f in ${GPU_SELFTEST_FILTER:-_cuda}; do
    n=$((n + 1))
    stamp "selftest $f"
    # shellcheck disable=SC2086
    timeout "${GPU_SELFTEST_LIMIT:-3000}" "$BUILD_DIR"/gauntlet selftest --filter "$f" --seed 1 $kb_flag ${GPU_SELFTEST_ARGS:-} \
      --json "$OUT/selftest-cuda-$n.json" > "$OUT/selftest-cuda-$n.log" 2>&1 || rc=1
    tail -30 "$OUT/selftest-cuda-$n.log"
  done
fi
# GPU_CTX_BENCH=1: how fresh CUDA contexts start when 1, 2, 4, 8, 16 processes start at once
# (tools/gpu/ctx_bench.cu: the driver alone), then what a gauntlet child's context costs under each
# context-creation setting (tools/gpu/ctx_settings_bench.py: torch imported first, as in the zygote;
# GPU_CTX_SETTINGS: a subset of its setting names, "|"-separated). The serial cost per context of
# gauntlet's own setting becomes CTX_SERIAL, the throughput ceiling's unit below.
# The ceiling's prices from a ctx_settings_bench.py output: CTX_SERIAL (default queues), CTX_SERIAL_ONE
# (one queue), CTX_SERIAL_QUEUES ("Q=SECONDS ..." for every other queue count it measured).
read_context_prices() {
  CTX_SERIAL=$(sed -n 's/^serial_seconds_per_context=//p' "$1")
  CTX_SERIAL_ONE=$(sed -n 's/^serial_seconds_per_context_one_queue=//p' "$1")
  CTX_SERIAL_QUEUES=$(sed -n 's/^serial_seconds_per_context_queues_//p' "$1" | tr '\n' ' ')
}
if [ "${GPU_CTX_BENCH:-0}" = 1 ]; then
  stamp "context start bench"
  nvcc -O2 -o "$BUILD_DIR/ctx_bench" tools/gpu/ctx_bench.cu -lcuda > "$OUT/ctx-bench.md" 2>&1 &&
    "$BUILD_DIR/ctx_bench" 1 1 2 4 8 16 16 >> "$OUT/ctx-bench.md" 2>&1
  cat "$OUT/ctx-bench.md"
  stamp "context settings bench"
  IFS='|' read -r -a ctx_settings <<< "${GPU_CTX_SETTINGS:-}"
  python3 tools/gpu/ctx_settings_bench.py 16 "${ctx_settings[@]}" > "$OUT/ctx-settings.md" 2>&1
  cat "$OUT/ctx-settings.md" | tee -a "$OUT/steps.log"
  read_context_prices "$OUT/ctx-settings.md"
fi
# GPU_CTX_STEADY=1: fresh contexts started one after another in 8, 16 and 24 slots for 8 s each,
# each child running 35 turn-held cases (a gauntlet child's average) or none, against the burst's
# serial cost (tools/gpu/ctx_steady_bench.py): how much of the ceiling any scheduling can reach.
if [ "${GPU_CTX_STEADY:-0}" = 1 ]; then
  stamp "steady context bench"
  { python3 tools/gpu/ctx_steady_bench.py 8 35 "LAZY + 1 hardware queue" 8 16 24
    python3 tools/gpu/ctx_steady_bench.py 8 0 "LAZY + 1 hardware queue" 16
    # Namespaces made and torn down child after child, as the zygote's clones do (a burst of 16
    # showed no cost; a network namespace's teardown is asynchronous and serialized in the kernel).
    python3 tools/gpu/ctx_steady_bench.py 8 35 "LAZY + 1 queue + net, ipc, mount namespaces" 16
    # Cases that hold the GPU as a gauntlet child's do (35 turns of ~1.2 ms): do context creation and
    # the turns' GPU work overlap, or add up (thirty-first session's hypothesis)?
    python3 tools/gpu/ctx_steady_bench.py 8 35x2000000 "LAZY + 1 hardware queue" 16
    # A cudaFree and a cudaMalloc before each case, outside its turn: do the driver's memory calls
    # queue with context creation?
    python3 tools/gpu/ctx_steady_bench.py 8 35m20 "LAZY + 1 hardware queue" 16; } > "$OUT/ctx-steady.md" 2>&1
  tee -a "$OUT/steps.log" < "$OUT/ctx-steady.md"
fi
# GPU_CTX_STEADY_GAUNTLET=1: the same steady loop with gauntlet's own children: 16 slots, each
# running `gauntlet verify relu --gates contract` (one CUDA child) after another for 10 s. Against
# ctx_steady_bench's bare children (14-15 a second on an H100, thirty-first session), it says
# whether a gauntlet child's own start (the worker's load, first poisoning, device info) or the
# gates' orchestration around it holds a run at ~7 children a second whatever its slots.
# GPU_CTX_STEADY_GAUNTLET_NS: namespace sets to compare, "default" for the default (e.g. "default
# mount,pid,ipc none": without the network namespace, without any; the contract gate starts no
# compute-sanitizer, whose stall without a network namespace is the memory gate's).
# GPU_CTX_STEADY_GAUNTLET_GATES: the gates each verify runs (default "contract"; e.g. "contract memory
# determinism timing": one steady run per gate, its children a second counted from the reports, so
# a gate whose children hold the driver longer than their contexts do, such as the memory gate's
# compute-sanitizer children, shows as fewer children a second than the contract gate's).
if [ "${GPU_CTX_STEADY_GAUNTLET:-0}" = 1 ]; then
  for steady_gate in ${GPU_CTX_STEADY_GAUNTLET_GATES:-contract}; do
  for ns in ${GPU_CTX_STEADY_GAUNTLET_NS:-default}; do
    stamp "steady gauntlet children, gate $steady_gate, namespaces $ns"
    steady_end=$(( $(date +%s) + 10 )); steady_t0=$(date +%s.%N)
    rm -rf "$BUILD_DIR"/steady-*.txt "$BUILD_DIR"/steady-reports && mkdir -p "$BUILD_DIR"/steady-reports
    for slot in $(seq 16); do
      ( [ "$ns" = default ] || export GAUNTLET_NAMESPACES=$ns
        n=0; while [ "$(date +%s)" -lt "$steady_end" ]; do
          "$BUILD_DIR"/gauntlet verify corpus/controls_cuda/relu.json --gates "$steady_gate" --seed $((slot * 1000 + n)) --quiet \
            --json "$BUILD_DIR/steady-reports/$slot-$n.json" > /dev/null 2>&1 && echo ok; n=$((n + 1)); done > "$BUILD_DIR/steady-$slot.txt" ) &
    done
    wait
    steady_wall=$(python3 -c "import time; print(time.time() - $steady_t0)")
    steady_done=$(cat "$BUILD_DIR"/steady-*.txt | grep -c ok)
    steady_children=$(python3 -c "
import glob, json
n = 0
for f in glob.glob('$BUILD_DIR/steady-reports/*.json'):
    try: n += sum(g.get('evidence', {}).get('time', {}).get('children', 0) for g in json.load(open(f))['gates'])
    except Exception: pass
print(n)")
    python3 -c "print(f'gauntlet verify --gates $steady_gate in 16 slots, namespaces $ns: {$steady_done} verifies, {$steady_children} children in {$steady_wall:.1f} s = {$steady_children / $steady_wall:.2f} children a second')" \
      | tee -a "$OUT/ctx-steady-gauntlet.md" | tee -a "$OUT/steps.log"
  done
  done
fi
# GPU_SANITIZER_NONET=1: compute-sanitizer children without a private network namespace (a host
# that refuses one). Four memory gates of the relu control at once under each namespace set of
# GPU_SANITIZER_NONET_NS (default: "mount,pid,ipc/concurrent mount,pid,ipc mount,ipc/concurrent
# default"; "/concurrent": GAUNTLET_SANITIZER_SHARED_NETWORK=concurrent, the sanitizers at once as
# before the host-wide sanitizer turn, memory_sanitizer.h): each gate's wall and whether
# its sanitizer runs printed a summary; while they run, the abstract Unix sockets the host's network
# namespace holds (/proc/net/unix, names starting "@") are sampled, to see what the front-end and
# its target meet through and whether concurrent sandboxes, whose pids are equal in their own pid
# namespaces, name it alike. Also the sanitizer's own options about ports and connections.
if [ "${GPU_SANITIZER_NONET:-0}" = 1 ]; then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  "$cs" --help 2>&1 | grep -i -B1 -A3 "port\|connection" > "$OUT/sanitizer-nonet-options.txt"
  for run in ${GPU_SANITIZER_NONET_NS:-mount,pid,ipc/concurrent mount,pid,ipc mount,ipc/concurrent default}; do
    ns=${run%/*}; rule=turn; [ "$run" != "$ns" ] && rule=${run#*/}
    stamp "sanitizer children, namespaces $ns, $rule: four memory gates at once"
    d="$OUT/sanitizer-nonet/$(echo "$run" | tr ,/ __)"; mkdir -p "$d"
    ( for i in $(seq 40); do grep -o '@[^ ]*$' /proc/net/unix 2>/dev/null | sort | uniq -c > "$d/unix-$i.txt"; sleep 0.5; done ) &
    sampler=$!
    gate_pids=()
    for i in 1 2 3 4; do
      ( [ "$ns" = default ] || export GAUNTLET_NAMESPACES=$ns
        [ "$rule" = concurrent ] && export GAUNTLET_SANITIZER_SHARED_NETWORK=concurrent
        s=$(date +%s.%N)
        "$BUILD_DIR"/gauntlet verify corpus/controls_cuda/relu.json --gates memory --seed $i --quiet --json "$d/memory-$i.json" > "$d/memory-$i.log" 2>&1
        echo "gate $i: $(python3 -c "import time; print(f'{time.time() - $s:.1f}')") s" >> "$d/walls.txt" ) &
      gate_pids+=($!)
    done
    wait "${gate_pids[@]}"
    kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
    { cat "$d/walls.txt"
      echo "gates whose sanitizer printed no summary: $(grep -l "no ERROR SUMMARY" "$d"/memory-*.json 2>/dev/null | wc -l) of 4"
      echo "abstract Unix socket names seen (count of samples, name):"
      cat "$d"/unix-*.txt 2>/dev/null | awk '{print $2}' | sed 's/[0-9]\{3,\}/N/g' | sort | uniq -c | sort -rn | head -15
      echo "the same, with their digits:"; cat "$d"/unix-*.txt 2>/dev/null | awk '{print $2}' | sort -u | head -20
      echo "gates that took the host-wide sanitizer turn: $(grep -l sanitizer_one_at_a_time "$d"/memory-*.json 2>/dev/null | wc -l) of 4"
    } | sed "s|^|[$run] |" | tee -a "$OUT/sanitizer-nonet.md" >> "$OUT/steps.log"
  done
fi
# GPU_TWO=1 (issue 21; needs two visible GPUs, else it says so and does nothing): (1) ctx_bench with N
# processes on one GPU and spread over two; (2) `gauntlet audit` of controls_cuda and bugs_cuda with
# --gpus 0 and with --gpus 0,1 (fresh databases), wall time, and every kernel's verdict compared;
# (3) the hostile CUDA kernels audited on GPU 0 while the controls are audited on GPU 1, against the
# controls alone on GPU 1 (their verdicts and wall time). Figures: two-gpus.md. Run it with
# GPU_PREBUILD=1, so that neither audit pays the nvcc builds and the walls compare the GPUs alone.
if [ "${GPU_TWO:-0}" = 1 ]; then
  gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
  if [ "$gpus" -lt 2 ]; then
    echo "GPU_TWO: $gpus GPU(s) visible; two are needed (the nvidia-h200-x2 kind)" | tee -a "$OUT/steps.log"
  else
    two="$OUT/two-gpus.md"
    stamp "two GPUs: contexts"
    nvcc -O2 -o "$BUILD_DIR/ctx_bench" tools/gpu/ctx_bench.cu -lcuda >> "$two" 2>&1 &&
      { "$BUILD_DIR/ctx_bench" 2 8 16 >> "$two" 2>&1; "$BUILD_DIR/ctx_bench" --devices 2 2 8 16 >> "$two" 2>&1; }
    mkdir -p "$OUT/two"
    for gpuset in 0 0,1; do
      stamp "two GPUs: audit --gpus $gpuset"
      t0=$(date +%s.%N)
      for part in controls_cuda bugs_cuda; do  # audit takes one PATH: the two folders, one after the other
        "$BUILD_DIR"/gauntlet audit "corpus/$part" --gpus "$gpuset" --gpu-jobs 4 --db "$OUT/two/audit-$gpuset.db" \
          --json "$OUT/two/audit-$gpuset-$part.json" >> "$OUT/two/audit-$gpuset.log" 2>&1
      done
      echo "audit --gpus $gpuset (controls_cuda, bugs_cuda): wall $(python3 -c "import time; print(round(time.time() - $t0, 1))") s" | tee -a "$two" "$OUT/steps.log"
    done
    python3 - "$OUT/two" >> "$two" 2>&1 <<'PY'
import json, sys
load = lambda s: [r for part in ("controls_cuda", "bugs_cuda") for r in json.load(open(f"{sys.argv[1]}/audit-{s}-{part}.json"))]
one, two = load("0"), load("0,1")
key = lambda r: r.get("source", "?")
a = {key(r): (r.get("verdict"), sorted((g["name"], g["status"]) for g in r.get("gates", []))) for r in one}
b = {key(r): (r.get("verdict"), sorted((g["name"], g["status"]) for g in r.get("gates", []))) for r in two}
same = [k for k in a if b.get(k) == a[k]]
print(f"verdicts: {len(same)} of {len(a)} kernels identical gate for gate between --gpus 0 and --gpus 0,1")
for k in sorted(set(a) | set(b)):
    if a.get(k) != b.get(k): print(f"  DIFFERENT: {k}: {a.get(k, ('absent',))[0]} vs {b.get(k, ('absent',))[0]}")
for r in two:
    env = r.get("environment", {})
    print(f"  {key(r)}: gpu_index {env.get('gpu_index')}, CUDA_VISIBLE_DEVICES {env.get('gpu', {}).get('cuda_visible_devices')}")
PY
    stamp "two GPUs: controls on GPU 1, alone and beside hostile kernels on GPU 0"
    t0=$(date +%s.%N)
    "$BUILD_DIR"/gauntlet audit corpus/controls_cuda --gpus 1 --gpu-jobs 4 --db "$OUT/two/alone.db" \
      --json "$OUT/two/alone.json" > "$OUT/two/alone.log" 2>&1
    echo "controls on GPU 1 alone: exit $? wall $(python3 -c "import time; print(round(time.time() - $t0, 1))") s" | tee -a "$two"
    "$BUILD_DIR"/gauntlet audit corpus/hostile_cuda --gpus 0 --gpu-jobs 4 --db "$OUT/two/hostile.db" > "$OUT/two/hostile.log" 2>&1 &
    hostile=$!
    sleep 5
    t0=$(date +%s.%N)
    "$BUILD_DIR"/gauntlet audit corpus/controls_cuda --gpus 1 --gpu-jobs 4 --db "$OUT/two/beside.db" \
      --json "$OUT/two/beside.json" > "$OUT/two/beside.log" 2>&1
    echo "controls on GPU 1 beside hostile kernels on GPU 0: exit $? wall $(python3 -c "import time; print(round(time.time() - $t0, 1))") s" | tee -a "$two"
    wait "$hostile"
    echo "hostile audit on GPU 0: exit $?" >> "$two"
    cat "$two"
  fi
fi
# GPU_THROUGHPUT=1: already-built CUDA kernels through all twelve gates and timing, as kernels per
# hour, under each of GPU_TP_CONFIGS (default: 4x4 and 8x4 under the defaults, a host-wide cap of
# 16 gates and 3 starting contexts, and 4x4 under the settings before those): PxJ is P `gauntlet verify`
# processes at once, each with --gpu-jobs J, over the CUDA controls under GPU_TP_SEEDS seeds
# (default 1 2 3 4; the pass path, where timing runs). 1x1 is the baseline of the same run: one
# sandbox on the GPU at a time, start to end. Children take turns executing on the GPU
# (file_lock.h), so only their starts overlap. Kernels per hour and where the time went:
# throughput-PxJ.md; the figures in docs/gpu.md.
tp_batch() {  # label processes gpu_jobs seeds manifests...  (TP_AUDIT=1: through `gauntlet audit`)
  local label=$1 procs=$2 jobs=$3 seeds=$4; shift 4
  local dir="$OUT/throughput-$label"; mkdir -p "$dir/reports"
  local corpus="$BUILD_DIR/tp-audit-$label"
  if [ "${TP_AUDIT:-0}" = 1 ]; then
    # The same kernels and seeds through the audit (what a corpus run uses): P audits at once, one a
    # seed (an audit takes one --seed), each one lane on GPU 0 running J gates of its kernel at once
    # (--gpu-gate-jobs J), with one launcher for all its kernels: the same P x J children in flight
    # as P verify processes of --gpu-jobs J. TP_AUDIT_LANES=1 ("audit-lanes"): J lanes of one gate
    # at a time each instead (the audit before the thirtieth session).
    rm -rf "$corpus" && mkdir -p "$corpus"
    for m in "$@"; do cp "$m" "$corpus/"; cp "$(dirname "$m")/$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['source'])" "$m")" "$corpus/"; done
  fi
  # GPU_TP_TRACE=1: every gauntlet process of the batch writes its timeline (GAUNTLET_TRACE_DIR,
  # common/trace.h), read into timeline-LABEL.md by trace_timeline.py: which serial resource (the
  # driver creating contexts, the GPU's turn) was busy when, and what the slots did meanwhile.
  if [ "${GPU_TP_TRACE:-0}" = 1 ]; then rm -rf "$dir/trace"; mkdir -p "$dir/trace"; export GAUNTLET_TRACE_DIR="$dir/trace"; fi
  local t0; t0=$(date +%s.%N)
  local cpu0; cpu0=$(head -1 /proc/stat)  # the host's CPU time over the batch: is the host the limit?
  # GPU_TP_CPU=1: which processes and threads used it (cpu_by_process.py, sampled every 0.2 s).
  local cpu_sampler=""
  if [ "${GPU_TP_CPU:-0}" = 1 ]; then
    rm -f "$dir/cpu.stop"; python3 tools/gpu/cpu_by_process.py "$dir/cpu.stop" > "$dir/cpu-by-process.md" 2>&1 &
    cpu_sampler=$!
  fi
  if [ "${TP_AUDIT:-0}" = 1 ]; then
    # sh -c's $0 gauntlet, $1 lanes, $2 folder, $3 corpus, $4 gate jobs, then xargs' seed as $5.
    local lanes=1 gate_jobs=$jobs
    [ "${TP_AUDIT_LANES:-0}" = 1 ] && lanes=$jobs gate_jobs=1
    for seed in $seeds; do echo "$seed"; done |
      xargs -P "$procs" -L 1 sh -c '"$0" audit "$3" --seed "$5" --gpus 0 --gpu-jobs "$1" --gpu-gate-jobs "$4" --db "$2/audit-$5.db" \
        --json "$2/reports/audit-$5.json" > "$2/audit-$5.log" 2>&1; true' "$BUILD_DIR"/gauntlet "$lanes" "$dir" "$corpus" "$gate_jobs"
  else
  # sh -c's $0 gauntlet, $1 gpu jobs, $2 folder, then xargs' "seed manifest" as $3 $4. Each
  # process's own wall (start and end, walls/) against its report's seconds: what a verify process
  # costs outside its kernel's gates (loading LibTorch, the zygote's start, exit).
  mkdir -p "$dir/walls"
  for seed in $seeds; do for m in "$@"; do echo "$seed $m"; done; done |
    xargs -P "$procs" -L 1 sh -c 'n=$(echo "$4" | tr / _)-$3; s=$(date +%s.%N); "$0" verify "$4" --seed "$3" --gpu-jobs "$1" --quiet \
      --json "$2/reports/$n.json" > /dev/null 2>&1; echo "$s $(date +%s.%N)" > "$2/walls/$n.txt"; true' \
      "$BUILD_DIR"/gauntlet "$jobs" "$dir"
  fi
  local wall; wall=$(python3 -c "import time; print(time.time() - $t0)")
  local cpu1; cpu1=$(head -1 /proc/stat)
  if [ -n "$cpu_sampler" ]; then touch "$dir/cpu.stop"; wait "$cpu_sampler"; fi
  # shellcheck disable=SC2086  # CTX_SERIAL_QUEUES: "Q=SECONDS ..." for the other queue counts measured
  python3 tools/gpu/throughput_summary.py "$dir" "$wall" "$label" "${CTX_SERIAL:-}" "${CTX_SERIAL_ONE:-}" ${CTX_SERIAL_QUEUES:-} \
    > "$OUT/throughput-$label.md" 2>&1
  python3 - "$cpu0" "$cpu1" "$(nproc)" >> "$OUT/throughput-$label.md" <<'PY'
import sys
a, b = ([int(x) for x in s.split()[1:]] for s in sys.argv[1:3])
d = [y - x for x, y in zip(a, b)]
idle = d[3] + (d[4] if len(d) > 4 else 0)  # idle, iowait
print(f"host CPU over the batch: {(sum(d) - idle) / max(1, sum(d)):.0%} busy of {sys.argv[3]} cores "
      f"(user {d[0] / max(1, sum(d)):.0%}, system {d[2] / max(1, sum(d)):.0%})")
PY
  head -3 "$OUT/throughput-$label.md" | tee -a "$OUT/steps.log"
  tail -1 "$OUT/throughput-$label.md" | tee -a "$OUT/steps.log"
  if [ -n "$cpu_sampler" ]; then
    cat "$dir/cpu-by-process.md" >> "$OUT/throughput-$label.md"
    head -12 "$dir/cpu-by-process.md" | tee -a "$OUT/steps.log"
  fi
  if [ -n "${GAUNTLET_TRACE_DIR:-}" ]; then
    unset GAUNTLET_TRACE_DIR
    python3 tools/gpu/trace_timeline.py "$dir/trace" > "$OUT/timeline-$label.md" 2>&1
    grep "serial resources\|while neither" "$OUT/timeline-$label.md" | tee -a "$OUT/steps.log"
    tar czf "$dir/trace.tgz" -C "$dir" trace && rm -rf "$dir/trace"
  fi
}
# GPU_QUEUE_RACE="MANIFEST ...": does a race between a kernel's streams still show when the
# determinism and timing children get fewer hardware queues? Each manifest verified under
# GAUNTLET_CONCURRENT_GATE_QUEUES=0 (the driver's default), then each of GPU_QUEUE_RACE_QUEUES
# (default "2 1"), over GPU_QUEUE_RACE_SEEDS (default "1 2 3"); every gate's status a run: queue-race.md.
# Before the throughput runs: a call cut short by its timeout keeps the race, which decides whether
# fewer queues are allowed at all.
if [ -n "${GPU_QUEUE_RACE:-}" ]; then
  echo "| kernel | determinism/timing queues | seed | verdict | failing gates |" > "$OUT/queue-race.md"
  echo "|---|---|---|---|---|" >> "$OUT/queue-race.md"
  for m in $GPU_QUEUE_RACE; do
    for q in default ${GPU_QUEUE_RACE_QUEUES:-2 1}; do
      for seed in ${GPU_QUEUE_RACE_SEEDS:-1 2 3}; do
        stamp "queue race: $m, queues $q, seed $seed"
        report="$OUT/queue-race-$(basename "$m" .json)-q$q-s$seed.json"
        queues_env=(GAUNTLET_CONCURRENT_GATE_QUEUES=0)  # the driver's default
        [ "$q" = default ] || queues_env=("GAUNTLET_CONCURRENT_GATE_QUEUES=$q")
        env "${queues_env[@]}" "$BUILD_DIR"/gauntlet verify "$m" --seed "$seed" --quiet --json "$report" > /dev/null 2>&1
        python3 - "$report" "$m" "$q" "$seed" >> "$OUT/queue-race.md" <<'PY'
import json, sys
path, m, q, seed = sys.argv[1:5]
try:
    r = json.load(open(path))
except (OSError, ValueError) as e:
    print(f"| {m} | {q} | {seed} | unreadable: {e} | |"); sys.exit()
bad = [f"{g['name']} {g['status']} ({g.get('category', '')}: {g.get('message', '')[:90]})"
       for g in r.get("gates", []) if g.get("status") not in ("pass", "skip")]
print(f"| {m} | {q} | {seed} | {r.get('verdict')} | {'; '.join(bad) or '-'} |")
PY
        tail -1 "$OUT/queue-race.md" | tee -a "$OUT/steps.log"
      done
    done
  done
fi
# The settings before the thirty-seventh session made 3 start slots, 16 gate slots and 2 queues for
# determinism and timing the defaults: no cap on starts or gates, the driver's default queues.
GPU_TP_BEFORE_37="GAUNTLET_GPU_START_SLOTS=0,GAUNTLET_GPU_GATE_SLOTS=0,GAUNTLET_CONCURRENT_GATE_QUEUES=0"
if [ "${GPU_THROUGHPUT:-0}" = 1 ]; then
  # The ceiling's unit, measured in this run: one fresh context's serial cost (gauntlet's setting).
  # The determinism and timing children's queues (2 by default, gates/registry.cpp; a variant's
  # GAUNTLET_CONCURRENT_GATE_QUEUES=N, 0 the driver's default) need their context's price too.
  other_queues=$( (echo 2; echo "${GPU_TP_CONFIGS:-} ${GPU_TP_VARIANTS:-}" | grep -o 'GAUNTLET_CONCURRENT_GATE_QUEUES=[0-9]*' | cut -d= -f2) | grep -v '^0$' | sort -un)
  queue_settings=(); for q in $other_queues; do queue_settings+=("LAZY + $q hardware queues"); done
  # GPU_TP_FLOOR_ROUNDS (default 3): the burst measured that many times, each setting priced at its
  # fastest round (one burst on the same H100 read 0.266 and then 0.210 s, thirty-ninth session).
  measure_floor() {  # file
    CTX_ROUNDS=${GPU_TP_FLOOR_ROUNDS:-3} python3 tools/gpu/ctx_settings_bench.py 16 "gauntlet (LAZY)" \
      "LAZY + 1 hardware queue" "${queue_settings[@]}" > "$1" 2>&1
  }
  floor_rounds() {  # file label: each setting's rounds, into steps.log
    grep '^| ' "$1" | tail -n +2 | awk -F'|' -v label="$2" '{print "  " label "," $2 ":" $9}' | tee -a "$OUT/steps.log"
  }
  if [ -z "${CTX_SERIAL:-}" ]; then
    measure_floor "$OUT/ctx-floor.md"
    read_context_prices "$OUT/ctx-floor.md"
    stamp "context floor: $CTX_SERIAL s per fresh context ($CTX_SERIAL_ONE s with one hardware queue), 16 at once, fastest of ${GPU_TP_FLOOR_ROUNDS:-3} rounds"
    floor_rounds "$OUT/ctx-floor.md" "floor rounds"
  fi
  # A config may name its own variants after slashes ("8x4/env:GAUNTLET_GPU_GATE_SLOTS=16/default"),
  # instead of GPU_TP_VARIANTS for it; an env: variant may set several variables, comma-separated
  # ("env:GAUNTLET_GPU_GATE_SLOTS=16,GAUNTLET_GPU_START_SLOTS=3").
  for config_spec in ${GPU_TP_CONFIGS:-4x4 8x4 4x4/env:$GPU_TP_BEFORE_37}; do
    config=${config_spec%%/*}
    config_variants=${GPU_TP_VARIANTS:-${GPU_TP_POISON:-default}}
    [ "$config_spec" = "$config" ] || config_variants=$(echo "${config_spec#*/}" | tr / ' ')
    stamp "throughput: $config ($config_variants)"
    seeds=${GPU_TP_SEEDS:-1 2 3 4}
    [ "$config" = 1x1 ] && seeds=${GPU_TP_BASELINE_SEEDS:-1}
    # GPU_TP_KERNELS: which controls (names in corpus/controls_cuda, default all of them; the
    # twentieth to twenty-third sessions measured "relu softmax layer_norm sum cumsum matmul").
    tp_kernels=$(if [ -n "${GPU_TP_KERNELS:-}" ]; then for k in $GPU_TP_KERNELS; do echo "corpus/controls_cuda/$k.json"; done
                 else ls corpus/controls_cuda/*.json; fi)
    # GPU_TP_POISON: one batch per device poisoning ("address": the default, free blocks by address
    # where the allocator's snapshot can be read; "blocks": GAUNTLET_CUDA_POISON=blocks, whole blocks
    # from the cache), in the order given, so the two are compared on the same machine.
    # GPU_TP_VARIANTS (or GPU_TP_POISON, its older name) also takes "slackN" (by address, the cache
    # kept up to N MiB beyond twice a case's blocks) and "ns=LIST" (GAUNTLET_NAMESPACES=LIST for the
    # children, e.g. ns=mount,pid,ipc: no network namespace, whose creation and teardown the kernel
    # serializes; docs/gpu.md, "Twenty-seventh session"), and "audit": the same kernels and seeds
    # through P `gauntlet audit --gpus 0 --gpu-jobs 1 --gpu-gate-jobs J` at once, one a seed (one
    # lane, J gates of its kernel at once, one launcher for all its kernels), instead of P `verify`
    # processes of J gates each: the same children in flight; "audit-lanes": J lanes of one gate each.
    # "env:NAME=VALUE" exports one variable for the batch (e.g. env:GAUNTLET_CUDA_PRELOAD=0).
    for poison in $config_variants; do
      label=$config; [ "$poison" = default ] || label=$config-$(echo "$poison" | sed 's/GAUNTLET_//g; s/[,+]/./g; s/[=:]/-/g')
      # A variant given twice (A/B/A) gets its own summary, not the first's overwritten.
      base_label=$label; n=2; while [ -e "$OUT/throughput-$label.md" ]; do label=$base_label-run$n; n=$((n + 1)); done
      unset GAUNTLET_CUDA_POISON GAUNTLET_CUDA_POISON_SLACK_MIB GAUNTLET_NAMESPACES TP_AUDIT TP_AUDIT_LANES
      [ -n "${tp_env_names:-}" ] && unset $tp_env_names; tp_env_names=
      # Several variants at once: joined by "+" (e.g. "audit+env:GAUNTLET_GPU_GATE_SLOTS=16").
      for part in $(echo "$poison" | tr + ' '); do
        case $part in
          audit) export TP_AUDIT=1 ;;
          audit-lanes) export TP_AUDIT=1 TP_AUDIT_LANES=1 ;;
          blocks) export GAUNTLET_CUDA_POISON=blocks ;;
          slack*) export GAUNTLET_CUDA_POISON_SLACK_MIB=${part#slack} ;;
          ns=*) export GAUNTLET_NAMESPACES=${part#ns=} ;;
          env:*=*) for kv in $(echo "${part#env:}" | tr , ' '); do tp_env_names="$tp_env_names ${kv%%=*}"; export "$kv"; done ;;
        esac
      done
      tp_batch "$label" "${config%x*}" "${config#*x}" "$seeds" $tp_kernels
    done
    [ -n "${tp_env_names:-}" ] && unset $tp_env_names; tp_env_names=
    unset GAUNTLET_CUDA_POISON GAUNTLET_CUDA_POISON_SLACK_MIB GAUNTLET_NAMESPACES TP_AUDIT TP_AUDIT_LANES
  done
  # GPU_TP_FLOOR_AFTER=1: the floor again after the batches (ctx-floor-after.md): did the machine
  # drift while they ran? The batches' shares stay priced at the floor measured before them.
  if [ "${GPU_TP_FLOOR_AFTER:-0}" = 1 ]; then
    measure_floor "$OUT/ctx-floor-after.md"
    stamp "context floor after the batches: $(sed -n 's/^serial_seconds_per_context=//p' "$OUT/ctx-floor-after.md") s, $(sed -n 's/^serial_seconds_per_context_one_queue=//p' "$OUT/ctx-floor-after.md") s with one queue"
    floor_rounds "$OUT/ctx-floor-after.md" "floor rounds after"
  fi
fi
# GPU_LATENCY=1: what one kernel's verdict takes alone (a generated kernel gated before merge waits
# for exactly this), wall seconds of `gauntlet verify M --seed 1` with every gate and timing, the
# variants taking turns so a drift of the machine falls on all of them alike; prebuilt kernels.
if [ "${GPU_LATENCY:-0}" = 1 ]; then
  stamp "latency: one kernel alone"
  echo "| kernel | variant | walls s | median s | verdict |" > "$OUT/latency.md"
  echo "|---|---|---|---|---|" >> "$OUT/latency.md"
  for k in ${GPU_LATENCY_KERNELS:-relu matmul}; do
    declare -A walls=() verdicts=()
    for ((rep = 1; rep <= ${GPU_LATENCY_REPEATS:-3}; rep++)); do
      for variant in ${GPU_LATENCY_VARIANTS:-default GAUNTLET_PREPARE_AHEAD=0}; do
        settings=(); flags=()
        case $variant in default) ;; args:*) IFS=, read -r -a flags <<< "${variant#args:}" ;; *) IFS=, read -r -a settings <<< "$variant" ;; esac
        s=$(date +%s.%N)
        env "${settings[@]}" "$BUILD_DIR"/gauntlet verify corpus/controls_cuda/"$k".json --seed 1 --quiet "${flags[@]}" \
          --json "$OUT/latency-$k.json" > /dev/null 2>&1
        walls[$variant]="${walls[$variant]:-} $(python3 -c "import time; print(f'{time.time() - $s:.2f}')")"
        verdicts[$variant]=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('verdict'))" "$OUT/latency-$k.json" 2>/dev/null || echo none)
      done
    done
    for variant in ${GPU_LATENCY_VARIANTS:-default GAUNTLET_PREPARE_AHEAD=0}; do
      median=$(echo "${walls[$variant]}" | tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}')
      echo "| $k | $variant |${walls[$variant]} | $median | ${verdicts[$variant]} |" | tee -a "$OUT/latency.md" "$OUT/steps.log"
    done
    unset walls verdicts
  done
fi
# GPU_SPINNER=1: does one spinning kernel stall an audit? `gauntlet audit corpus/controls_cuda`
# alone, then again while corpus/hostile_cuda/infinite_loop (a kernel that never ends) is verified
# over and over beside it on the same GPU (--timeout GPU_SPINNER_TIMEOUT, default 10, per gate), with
# the default turn bound; GPU_SPINNER_UNBOUNDED=1 adds the same with --gpu-turn-bound 0 (the stall
# the bound removes). Controls' wall times and verdicts: spinner.md.
if [ "${GPU_SPINNER:-0}" = 1 ]; then
  spin_manifest=corpus/hostile_cuda/infinite_loop.json
  # GPU_SPINNER_KERNELS: the controls audited (names in corpus/controls_cuda; default all). Copies in
  # a folder of their own: builds are keyed by content, so they are the cached ones.
  spinner_controls=corpus/controls_cuda
  if [ -n "${GPU_SPINNER_KERNELS:-}" ]; then
    spinner_controls=$BUILD_DIR/spinner-controls
    rm -rf "$spinner_controls" && mkdir -p "$spinner_controls"
    for k in $GPU_SPINNER_KERNELS; do cp corpus/controls_cuda/"$k".json corpus/controls_cuda/"$k".cu "$spinner_controls"/; done
  fi
  "$BUILD_DIR"/gauntlet verify "$spin_manifest" --gates contract --timeout 3 --quiet > /dev/null 2>&1  # build it
  spinner_audit() {  # label, then extra flags for both audit and spinner
    local label=$1; shift
    rm -rf "$OUT/spinner-$label.db"* "$BUILD_DIR/spinner-$label-reports"
    local spin_pid=""
    if [ "${label#alone}" = "$label" ]; then  # every label but alone, alone-2 ... runs the spinner
      ( while [ ! -f "$OUT/spinner-$label.done" ]; do
          "$BUILD_DIR"/gauntlet verify "$spin_manifest" --timeout "${GPU_SPINNER_TIMEOUT:-10}" --quiet "$@" \
            --json "$OUT/spinner-$label-spinner.json" > /dev/null 2>&1
        done ) &
      spin_pid=$!
      sleep 3  # the spinner's children hold the GPU before the audit starts
    fi
    local a0; a0=$(date +%s.%N)
    "$BUILD_DIR"/gauntlet audit "$spinner_controls" --gpus 0 --gpu-jobs "${GPU_AUDIT_JOBS:-4}" "$@" \
      --db "$OUT/spinner-$label.db" --json "$OUT/spinner-$label.json" > "$OUT/spinner-$label.log" 2>&1
    local code=$? wall; wall=$(python3 -c "import time; print(round(time.time() - $a0, 1))")
    touch "$OUT/spinner-$label.done"
    [ -n "$spin_pid" ] && { pkill -f "verify $spin_manifest" ; wait "$spin_pid" 2>/dev/null; }
    python3 - "$OUT/spinner-$label.json" "$label" "$wall" "$code" >> "$OUT/spinner.md" <<'PY'
import json, sys
path, label, wall, code = sys.argv[1:5]
try:
    rows = json.load(open(path))
except (OSError, ValueError) as e:
    print(f"| {label} | {wall} | exit {code} | unreadable: {e} |"); sys.exit()
verdicts = {}
for r in rows:
    verdicts[r.get("verdict")] = verdicts.get(r.get("verdict"), 0) + 1
turns = [r.get("environment", {}).get("gpu_turns", {}) for r in rows]
waited = sum(t.get("waited_seconds", 0) for t in turns)
timing_shared = sum(1 for r in rows for g in r.get("gates", []) if g.get("name") == "timing"
                    and any(d.get("gpu_shared") for d in g.get("evidence", {}).get("dtypes", [g.get("evidence", {})])))
print(f"| {label} | {wall} | exit {code} | {len(rows)} kernels, {verdicts} | {len(rows) / float(wall) * 3600:.0f} kernels/h "
      f"| turn waits {waited:.1f} s | timing gates that shared the GPU: {timing_shared} |")
PY
    tail -1 "$OUT/spinner.md" | tee -a "$OUT/steps.log"
    # Where the controls' time went (worker phases, turns by length): throughput_summary.py reads
    # one report per file.
    python3 -c "
import json, os, sys
rows = json.load(open(sys.argv[1])); os.makedirs(sys.argv[2], exist_ok=True)
for i, r in enumerate(rows): json.dump(r, open(os.path.join(sys.argv[2], f'{i}.json'), 'w'))
" "$OUT/spinner-$label.json" "$BUILD_DIR/spinner-$label-reports" 2>/dev/null &&
      python3 tools/gpu/throughput_summary.py "$BUILD_DIR/spinner-$label-reports" "$wall" "controls, $label" \
        2>&1 | tee -a "$OUT/spinner-phases.md"
  }
  echo "| audit | wall s | exit | verdicts | controls' throughput | | |" > "$OUT/spinner.md"
  echo "|---|---|---|---|---|---|---|" >> "$OUT/spinner.md"
  # GPU_SPINNER_REPEATS=N (default 1): N pairs, alone then beside the spinner, interleaved; one pair
  # of a six-kernel audit varied from 74% to 87% within one session (docs/gpu.md, thirty-seventh),
  # so the ratio is given for each pair and as their median.
  for ((rep = 1; rep <= ${GPU_SPINNER_REPEATS:-1}; rep++)); do
    suffix=""; [ "$rep" -gt 1 ] && suffix="-$rep"
    stamp "spinner: controls alone$suffix"
    spinner_audit "alone$suffix"
    stamp "spinner: controls beside a spinning kernel (turn bound default)$suffix"
    spinner_audit "bounded$suffix"
  done
  python3 - "$OUT/spinner.md" <<'PY' | tee -a "$OUT/spinner.md" "$OUT/steps.log"
import re, statistics, sys
walls = {}
for line in open(sys.argv[1]):
    m = re.match(r"\| (alone|bounded)(-\d+)? \| ([0-9.]+) \|", line)
    if m: walls[(m.group(1), m.group(2) or "")] = float(m.group(3))
ratios = [walls[("alone", k)] / walls[("bounded", k)] for (kind, k) in walls if kind == "alone" and ("bounded", k) in walls]
if ratios:
    print(f"beside the spinner, the controls' speed as a share of alone: {', '.join(f'{r:.0%}' for r in ratios)}; "
          f"median {statistics.median(ratios):.0%} over {len(ratios)} pairs (issue 18: at least 80%)")
PY
  # GPU_SPINNER_SLOTS="1 8": the same beside the spinner with GAUNTLET_GPU_TURN_SLOTS=N (how many
  # cases hold a turn at once while a child overruns; 1 is the one-at-a-time of the 20th-30th
  # sessions; the default run above uses SandboxOptions' default).
  for slots in ${GPU_SPINNER_SLOTS:-}; do
    stamp "spinner: controls beside a spinning kernel, $slots turn slots while it overruns"
    GAUNTLET_GPU_TURN_SLOTS=$slots spinner_audit "bounded-slots$slots"
  done
  if [ "${GPU_SPINNER_UNBOUNDED:-0}" = 1 ]; then
    stamp "spinner: controls beside a spinning kernel, --gpu-turn-bound 0"
    spinner_audit unbounded --gpu-turn-bound 0
  fi
  python3 -c "
import json, sys
for f in sys.argv[1:]:
    try: r = json.load(open(f))
    except Exception: continue
    print(f, r.get('verdict'), r.get('environment', {}).get('gpu_turns'))
" "$OUT"/spinner-*-spinner.json >> "$OUT/spinner.md" 2>&1
fi
# GPU_AUDIT=1: `gauntlet audit` of the CUDA controls and planted bugs with --gpus 0 --gpu-jobs
# GPU_AUDIT_JOBS (default 8): verdicts, summary and wall time (audit-*.log, audit-*.json).
if [ "${GPU_AUDIT:-0}" = 1 ]; then
  for part in ${GPU_AUDIT_PARTS:-controls_cuda bugs_cuda}; do
    stamp "audit: corpus/$part"
    a0=$(date +%s.%N)
    # GPU_AUDIT_RESUME: a folder holding an earlier call's audit-PART.db, carried in: the audit resumes it.
    [ -n "${GPU_AUDIT_RESUME:-}" ] && [ -f "$GPU_AUDIT_RESUME/audit-$part.db" ] &&
      cp "$GPU_AUDIT_RESUME/audit-$part.db"* "$OUT/" && stamp "resuming $GPU_AUDIT_RESUME/audit-$part.db"
    # GPU_AUDIT_LIMIT: seconds at most (SIGTERM: the results so far stay in the database; 0: none).
    timeout -s TERM "${GPU_AUDIT_LIMIT:-0}" "$BUILD_DIR"/gauntlet audit "corpus/$part" --gpus 0 --gpu-jobs "${GPU_AUDIT_JOBS:-8}" \
      --db "$OUT/audit-$part.db" --json "$OUT/audit-$part.json" > "$OUT/audit-$part.log" 2>&1
    echo "exit $? wall $(python3 -c "import time; print(round(time.time() - $a0, 1))") s" | tee -a "$OUT/audit-$part.log" "$OUT/steps.log"
    # An audit cut by SIGTERM leaves its rows in the -wal file; folded into the .db, which then
    # holds everything alone (the device tool brings back only a few files).
    python3 -c "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('PRAGMA wal_checkpoint(TRUNCATE)')" \
      "$OUT/audit-$part.db" 2>> "$OUT/steps.log"
    # GPU_AUDIT_REPLAY=N: `gauntlet replay` of the first N replay files the audit left (one per kernel).
    for rp in $(python3 -c "
import json, sys
seen = set()
for k in json.load(open(sys.argv[1])):
    for g in k.get('gates', []):
        if g.get('replay') and k.get('kernel_hash') not in seen:
            seen.add(k.get('kernel_hash')); print(g['replay'])
" "$OUT/audit-$part.json" 2>/dev/null | head -n "${GPU_AUDIT_REPLAY:-0}"); do
      stamp "replay $rp"
      "$BUILD_DIR"/gauntlet replay "$rp" >> "$OUT/replay-$part.log" 2>&1
      echo "exit $?" >> "$OUT/replay-$part.log"
    done
  done
fi
# GPU_KB=DIR: a public KernelBench corpus, end to end. DIR is a checkout outside the repo's tracked
# files (carried as .deps/...), a KernelBench tree or a leaderboard's (docs/assets/data.json; GPU_KB_LEVELS
# picks levels): tools/corpus/kernelbench_jsonl.py pairs its candidates with their
# problems, `gauntlet audit` runs them with --gpus 0 (GPU_KB_JOBS lanes, GPU_KB_BUILD_JOBS builds,
# GPU_KB_FLAGS more audit flags), for at most GPU_KB_LIMIT seconds (SIGTERM: results kept; a later
# call on the warm machine resumes the same database in $BUILD_DIR), then audit_summary.py's figures.
if [ -n "${GPU_KB:-}" ]; then
  kb_db=$BUILD_DIR/kb-audit.db
  # GPU_KB_RESUME=FILE: an earlier call's kb-audit.db (brought back from $OUT, carried in .deps/),
  # resumed when this machine has none of its own: a corpus longer than one session's device time
  # is audited across sessions, each kernel's finished gates kept.
  if [ -n "${GPU_KB_RESUME:-}" ] && [ ! -e "$kb_db" ] && [ -f "$GPU_KB_RESUME" ]; then
    cp "$GPU_KB_RESUME" "$kb_db" && chmod u+w "$kb_db" && stamp "resuming $GPU_KB_RESUME"
  fi
  python3 tools/corpus/kernelbench_jsonl.py --checkout "$GPU_KB" --out "$BUILD_DIR/kb-pairs.jsonl" \
    ${GPU_KB_GLOBS:-} ${GPU_KB_LEVELS:+--levels "$GPU_KB_LEVELS"} ${GPU_KB_PER_PROBLEM:+--per-problem "$GPU_KB_PER_PROBLEM"} \
    ${GPU_KB_SPREAD:+--spread} ${GPU_KB_PROBLEMS:+--problems "$GPU_KB_PROBLEMS"} --tag "$(basename "$GPU_KB")" 2>> "$OUT/kb.log"
  tail -1 "$OUT/kb.log" | tee -a "$OUT/steps.log"
  # What the database held before this call: the summary's rate counts only what this call completed.
  kb_before=()
  if [ -e "$kb_db" ]; then
    "$BUILD_DIR"/gauntlet report "$kb_db" --json "$OUT/kb-before.json" >> "$OUT/kb.log" 2>&1 &&
      kb_before=(--before "$OUT/kb-before.json")
  fi
  stamp "audit: $GPU_KB (${GPU_KB_LIMIT:-500} s at most)"
  a0=$(date +%s.%N)
  read -r -a kb_flags <<< "${GPU_KB_FLAGS:-}"
  timeout -s TERM "${GPU_KB_LIMIT:-500}" "$BUILD_DIR"/gauntlet audit "$BUILD_DIR/kb-pairs.jsonl" --gpus 0 \
    --gpu-jobs "${GPU_KB_JOBS:-4}" --build-jobs "${GPU_KB_BUILD_JOBS:-8}" --db "$kb_db" \
    --work-dir "$BUILD_DIR/kb-work" --replay-dir "$BUILD_DIR/kb-replays" "${kb_flags[@]}" \
    --progress-every 30 > "$OUT/kb-audit.log" 2>&1
  kb_rc=$?
  kb_wall=$(python3 -c "import time; print(round(time.time() - $a0, 1))")
  echo "exit $kb_rc wall $kb_wall s" | tee -a "$OUT/kb-audit.log" "$OUT/steps.log"
  "$BUILD_DIR"/gauntlet report "$kb_db" --json "$OUT/kb-audit.json" -o "$OUT/kb-report.html" >> "$OUT/kb.log" 2>&1
  python3 tools/corpus/audit_summary.py "$OUT/kb-audit.json" --wall "$kb_wall" "${kb_before[@]}" | tee "$OUT/kb-summary.txt"
  python3 -c "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('PRAGMA wal_checkpoint(TRUNCATE)')" "$kb_db" 2>> "$OUT/steps.log"
  cp "$kb_db" "$OUT/" 2>/dev/null
fi
# What the module build steps took, whether their C++ units read the precompiled header and their
# CUDA units the light torch headers.
if [ "${GPU_AUDIT:-0}" = 1 ] || [ -n "${GPU_KB:-}" ]; then
  python3 - "${GAUNTLET_MODULE_BUILDS:-/var/tmp/gauntlet-module-builds}" > "$OUT/module-builds.txt" 2>&1 <<'PY'
import glob, json, os, sys
root = sys.argv[1]
for rec in sorted(glob.glob(os.path.join(root, "*", "gauntlet-build*.json"))):
    r = json.load(open(rec))
    exts = ["%s:pch %s, light cuda headers %s" % (e.get("name"), e.get("pch", "-"), e.get("light_cuda_headers") or "-")
            for e in r.get("extensions", [])]
    print("%6.1f s  %s  %s%s" % (r.get("seconds", 0), os.path.basename(r.get("source", "?")), " ".join(exts),
                                  "  FAILED " + r.get("error", "")[:80] if "failed" in rec else ""))
secs = sorted(json.load(open(r)).get("seconds", 0) for r in glob.glob(os.path.join(root, "*", "gauntlet-build*.json")))
exts = [e for r in glob.glob(os.path.join(root, "*", "gauntlet-build.json")) for e in json.load(open(r)).get("extensions", [])]
states = lambda key, word: sum(1 for e in exts if str(e.get(key) or "").startswith(word))
if secs:
    print("builds %d: median %.1f s, quartiles %.1f / %.1f s, max %.1f s; light cuda headers used %d, failed %d; "
          "pch used %d" % (len(secs), secs[len(secs) // 2], secs[len(secs) // 4], secs[3 * len(secs) // 4], secs[-1],
                           states("light_cuda_headers", "used"), states("light_cuda_headers", "failed"), states("pch", "used")))
for f in sorted(glob.glob(os.path.join(root, "torch-pch-*", "flags.json"))):
    r = json.load(open(f))
    print("header %r: %.1f s, %d MB, cuda=%s" % (r.get("variant"), r.get("seconds", 0), r.get("bytes", 0) >> 20, r.get("cuda")))
PY
  stamp "module builds: $(grep -m1 '^builds ' "$OUT/module-builds.txt") (module-builds.txt)"
fi
# GPU_DOBENCH=1: the timing gate against triton.testing.do_bench on the same kernels and shapes.
# GPU_DOBENCH_REPORT: the selftest JSON or folder of verify JSONs to compare (default: this run's
# throughput controls, else its first selftest).
default_report=$OUT/selftest-cuda-1.json
[ "${GPU_THROUGHPUT:-0}" = 1 ] && default_report=$OUT/throughput-1x1/reports
DOBENCH_REPORT=${GPU_DOBENCH_REPORT:-$default_report}
if [ "${GPU_DOBENCH:-0}" = 1 ] && [ -e "$DOBENCH_REPORT" ]; then
  stamp "timing vs do_bench ($DOBENCH_REPORT)"
  python3 tools/gpu/timing_vs_do_bench.py "$DOBENCH_REPORT" "$OUT/timing-vs-do-bench" \
    > "$OUT/do-bench.log" 2>&1 || rc=1
  tail -20 "$OUT/do-bench.log"
fi
for m in ${GPU_VERIFY_LIST:-}; do
  name=$(basename "$m" .json)
  stamp "verify $m"
  gates=()
  [ -n "${GPU_GATES:-}" ] && gates=(--gates "$GPU_GATES")
  "$BUILD_DIR"/gauntlet verify "$m" --seed 1 "${gates[@]}" --json "$OUT/verify-$name.json" > "$OUT/verify-$name.log" 2>&1 || rc=1
  tail -20 "$OUT/verify-$name.log"
done
if [ "${GPU_CPU_CHECK:-0}" = 1 ]; then
  stamp "verify corpus/controls/relu.json (CPU)"
  "$BUILD_DIR"/gauntlet verify corpus/controls/relu.json --seed 1 > "$OUT/verify-cpu.log" 2>&1 || rc=1
  tail -16 "$OUT/verify-cpu.log"
fi
# Issue 18's criteria, judged from the files above (issue18.md; its exit status is not the run's).
if [ "${GPU_THROUGHPUT:-0}" = 1 ] || [ "${GPU_SPINNER:-0}" = 1 ]; then
  python3 tools/gpu/issue18_check.py "$OUT" > "$OUT/issue18.md" 2>&1
  cat "$OUT/issue18.md" >> "$OUT/steps.log"
fi
# The device tool brings back a limited number of files: one archive per folder of JSONs.
for d in "$OUT"/throughput-*/; do
  [ -d "$d" ] && tar -czf "${d%/}.tgz" -C "$OUT" "$(basename "$d")" && rm -rf "$d"
done
# The kernel build cache's peaks (timing gate) for the record.
cp -r "$GAUNTLET_CACHE/peaks" "$OUT/" 2>/dev/null
# The device tool brings back a few files only: everything but the summaries goes into one archive.
if [ "${GPU_PACK:-1}" = 1 ]; then
  (cd "$OUT" && find . -mindepth 1 -maxdepth 1 ! -name '*.md' ! -name steps.log ! -name env.txt ! -name rest.tgz \
     -printf '%P\n' | tar -czf rest.tgz -T - && find . -mindepth 1 -maxdepth 1 ! -name '*.md' ! -name steps.log \
     ! -name env.txt ! -name rest.tgz -exec rm -rf {} +)
fi
stamp "done rc=$rc"
exit $rc
