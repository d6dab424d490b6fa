#!/usr/bin/env bash
# Regenerates docs/gate-table.md from the corpus: runs `gauntlet selftest --json` (or renders a
# report given as $1) through tools/gate_table. The table is never edited by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
report=${1:-}
if [ -z "$report" ]; then
  cmake --build "$BUILD" -j"$(nproc)" --target gauntlet gauntlet-worker gauntlet_gate_table
  mkdir -p gauntlet-out
  report=gauntlet-out/corpus.json
  # A kernel that is not as declared still gets its row, marked "NOT as declared".
  "$BUILD"/gauntlet selftest --timeout 10 --memory-limit 1G --json "$report" || true
else
  cmake --build "$BUILD" --target gauntlet_gate_table
fi
# Rows this machine's selftest skipped (fp8_matmul needs a PyTorch with float8) come from reports
# of a machine that ran them, kept in docs/data/selftest-*.json; the first report's rows stand.
# The CUDA kernels' verdicts come the same way from a GPU host's selftest (tools/gpu/run-on-h200.sh,
# merged and trimmed by tools/gpu/selftest_for_docs.py) and get the table's CUDA section.
"$BUILD"/gauntlet_gate_table "$report" docs/data/selftest-*.json -o docs/gate-table.md
echo "wrote docs/gate-table.md from $report"
