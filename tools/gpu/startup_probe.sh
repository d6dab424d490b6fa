#!/usr/bin/env bash
# What a process that links LibTorch pays to start, before main (loading and static initializers):
# an empty program linked (a) with the CPU libraries only (torch_cpu, c10), (b) with the CUDA ones
# too (torch, torch_cuda, c10_cuda, as TORCH_LIBRARIES links gauntlet's parent today), and
# gauntlet's own `--version`. Usage: startup_probe.sh GAUNTLET_BINARY [RUNS]; prints medians (s).
set -uo pipefail
gauntlet=$1 runs=${2:-5}
lib=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))') || exit 1
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
echo 'int main() { return 0; }' > "$tmp/empty.cpp"
link() {  # name, libraries...
  local name=$1; shift
  g++ -o "$tmp/$name" "$tmp/empty.cpp" -L"$lib" -Wl,-rpath,"$lib" -Wl,--no-as-needed "$@" 2> "$tmp/$name.err" ||
    { echo "$name: link failed: $(head -c 300 "$tmp/$name.err")"; return 1; }
}
median() {  # command...: the median wall of $runs runs
  python3 - "$runs" "$@" <<'PY'
import statistics, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
t = []
for _ in range(runs):
    t0 = time.perf_counter(); subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); t.append(time.perf_counter() - t0)
print(f"{statistics.median(t):.3f} (min {min(t):.3f}, max {max(t):.3f})")
PY
}
link cpu_only -ltorch_cpu -lc10 && echo "empty program, torch_cpu + c10: $(median "$tmp/cpu_only")"
link with_cuda -ltorch -ltorch_cpu -ltorch_cuda -lc10 -lc10_cuda && echo "empty program, + torch_cuda, c10_cuda: $(median "$tmp/with_cuda")"
echo "gauntlet --version: $(median "$gauntlet" --version)"
echo "gauntlet's libraries: $(ldd "$gauntlet" | wc -l), of them torch's: $(ldd "$gauntlet" | grep -c -E 'torch|c10')"
ldd "$gauntlet" | grep -E 'torch|c10|cudart|cublas|cudnn' | awk '{print "  " $1}'
