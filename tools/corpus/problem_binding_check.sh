#!/usr/bin/env bash
# Whether each mapped KernelBench problem's contract binds to its get_inputs() (problem_contract.h):
# for every problem of kernelbench/level1.json found in a folder of problem files, a module whose
# ModelNew is the problem's own Model is verified (contract gate only, on the CPU) and the report's
# environment.contract is printed: the bound dims, or why nothing was bound.
# Usage: [PROBLEM_FILTER=regex] tools/corpus/problem_binding_check.sh PROBLEM_DIR [build-dir]
#   PROBLEM_FILTER: only problems whose name matches (grep -E). The contract gate runs at the bound
#   shape, so large matmul problems take minutes each on a small CPU.
#   PROBLEM_DIR holds KernelBench level-1 problem files, named as in KernelBench (19_ReLU.py) or as
#   a leaderboard's assets name them (l1_p19.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
problems=$(cd "$1" && pwd)
build=$(cd "${2:-build}" && pwd)
work=$(mktemp -d /tmp/gauntlet-binding-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/level1"
bound=0 unbound=0 missing=0
while IFS=$'\t' read -r id name; do
  if [ -n "${PROBLEM_FILTER:-}" ] && ! grep -Eq "$PROBLEM_FILTER" <<< "$name"; then continue; fi
  src=""
  for f in "$problems/$name.py" "$problems/l1_p$id.py"; do [ -f "$f" ] && src=$f && break; done
  if [ -z "$src" ]; then
    missing=$((missing + 1))
    continue
  fi
  module="$work/level1/$name.py"
  { cat "$src"; printf '\n\nclass ModelNew(Model):\n    pass\n'; } > "$module"
  # CPU only: a problem file that builds CUDA tensors is not run here.
  sed -i 's/\.cuda()//g; s/device="cuda"/device="cpu"/g' "$module"
  "$build"/gauntlet verify "$module" --gates contract --timeout 10 --json "$work/r.json" --quiet >/dev/null 2>&1 || true
  line=$(/usr/bin/python3 - "$work/r.json" <<'EOF'
import json, sys
try:
    c = json.load(open(sys.argv[1]))["environment"].get("contract")
except Exception as e:  # no report: the module did not load
    print("no-report", e); sys.exit()
if c is None: print("no-contract-entry")
elif c["bound"]: print("bound", c["inputs"])
else: print("unbound", c["why_not"])
EOF
)
  rm -f "$work/r.json"
  case $line in bound*) bound=$((bound + 1)) ;; *) unbound=$((unbound + 1)) ;; esac
  printf '%-45s %s\n' "$name" "$line"
done < <(/usr/bin/python3 -c '
import json
for p in json.load(open("kernelbench/level1.json"))["problems"]:
    print(str(p["id"]) + "\t" + p["name"])')
echo "problems: $bound bound, $unbound not bound, $missing not found in $problems"
