#!/usr/bin/env bash
# The README's main job: installs dependencies, builds gauntlet, and runs it over the bundled corpus
# (every planted bug, hostile kernel and control), printing the verdict table.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)" --target gauntlet gauntlet-worker gauntlet_gate_table
mkdir -p gauntlet-out
rc=0
build/gauntlet selftest --timeout 10 --memory-limit 1G --json gauntlet-out/corpus.json "$@" || rc=$?
# The per-gate table of planted bugs (docs/gate-table.md is this, committed).
if [ -s gauntlet-out/corpus.json ]; then
  build/gauntlet_gate_table gauntlet-out/corpus.json -o gauntlet-out/gate-table.md &&
    echo "per-gate table: gauntlet-out/gate-table.md"
fi
exit "$rc"
