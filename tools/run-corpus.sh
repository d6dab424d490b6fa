#!/usr/bin/env bash
# The README's main job: installs dependencies, builds gauntlet, and runs it over the bundled corpus
# (every planted bug, hostile kernel and control), printing the verdict table.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)" --target gauntlet gauntlet-worker
mkdir -p gauntlet-out
build/gauntlet selftest --timeout 10 --memory-limit 1G --json gauntlet-out/corpus.json "$@"
