#!/usr/bin/env python3
"""Builds a `gauntlet audit` JSONL of (reference, candidate) pairs from a KernelBench checkout.

Each candidate module (a `.py` defining ModelNew) is paired with the KernelBench problem it was
written for (`KernelBench/level<L>/<N>_<Title>.py`), found from the level and problem id in the
candidate's file name: `level1_problem23_triton.py`, `level_1_problem_23_sample_0_kernel.py`,
`23_Softmax.py` under a `level1` folder. A `results.jsonl` beside the kernels' folder (one record
per kernel, with `level` and `problem_id`) adds its numeric fields to the line (the authors'
timings), prefixed `recorded_`.

A leaderboard checkout (the KernelBench leaderboard's layout: `docs/assets/data.json` mapping
"Level L: N_Title" to solutions `{"display_name", "torch_speedup", "file"}`, problems in
`docs/assets/problems/lL_pN.py`, solutions in `docs/assets/solutions/FILE.py`) is read from its
index instead: every solution paired with its problem, `model` = the display name,
`recorded_torch_speedup` = the speedup it lists.

The corpus's code never enters this repository: point --checkout at a checkout outside it (or an
ignored folder such as .deps/). Usage:
  tools/corpus/kernelbench_jsonl.py --checkout DIR [--kernels GLOB ...] [--levels 1,2] --out pairs.jsonl
Default kernels: DIR/triton_runs/level*_triton/kernels/*.py (the ScalingIntelligence/KernelBench
branch sokserey/tritonDump). Prints what it paired and what it could not, one line each, to stderr;
exit 0 when at least one pair was written, 1 when none, 2 on bad usage.
"""
import argparse
import glob
import json
import os
import re
import sys

NAME_PATTERNS = [
    re.compile(r"level_?(\d+)_problem_?(\d+)(?!\d)"),
]


def level_and_problem(path):
    """(level, problem id) from a candidate's path, or None."""
    base = os.path.basename(path)
    for pattern in NAME_PATTERNS:
        m = pattern.search(base)
        if m:
            return int(m.group(1)), int(m.group(2))
    m = re.match(r"(\d+)_", base)
    folder = re.search(r"level_?(\d+)", os.path.dirname(path))
    if m and folder:
        return int(folder.group(1)), int(m.group(1))
    return None


def problem_file(checkout, level, problem):
    """KernelBench/level<L>/<N>_*.py, when exactly one matches."""
    hits = []
    for folder in ("level%d" % level, "level_%d" % level):
        hits += glob.glob(os.path.join(checkout, "KernelBench", folder, "%d_*.py" % problem))
    return hits[0] if len(hits) == 1 else None


def recorded_results(kernel_paths):
    """{(level, problem): {field: value}} from results.jsonl files beside the kernels' folders."""
    out = {}
    for folder in sorted({os.path.dirname(os.path.dirname(p)) for p in kernel_paths}):
        path = os.path.join(folder, "results.jsonl")
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                try:
                    r = json.loads(line)
                    key = (int(r["level"]), int(r["problem_id"]))
                except (ValueError, KeyError, TypeError):
                    print("%s:%d: skipped (not a record with level and problem_id)" % (path, n), file=sys.stderr)
                    continue
                fields = {}
                for k, v in r.items():
                    if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in ("level", "problem_id"):
                        fields["recorded_" + k] = v
                stats = r.get("runtime_triton_stats")
                if isinstance(stats, dict) and isinstance(stats.get("hardware"), str):
                    fields["recorded_hardware"] = stats["hardware"]
                out[key] = fields
    return out


LEADERBOARD_INDEX = os.path.join("docs", "assets", "data.json")
_LEADERBOARD_KEY = re.compile(r"^Level (\d+): (\d+)_(.*)$")


def leaderboard_lines(checkout, levels):
    """(lines, unpaired) of a leaderboard checkout: one line per listed solution whose problem and
    solution files are there."""
    with open(os.path.join(checkout, LEADERBOARD_INDEX), encoding="utf-8") as f:
        index = json.load(f)
    lines, unpaired = [], 0
    if not isinstance(index, dict):
        raise ValueError("%s is not an object of problems" % LEADERBOARD_INDEX)
    for key, solutions in index.items():
        m = _LEADERBOARD_KEY.match(key)
        if not m or not isinstance(solutions, list):
            print("%s: %r is not a 'Level L: N_Title' key with a list; skipped" % (LEADERBOARD_INDEX, key), file=sys.stderr)
            unpaired += 1
            continue
        level, problem, title = int(m.group(1)), int(m.group(2)), m.group(3)
        if levels and level not in levels:
            continue
        ref = os.path.join(checkout, "docs", "assets", "problems", "l%d_p%d.py" % (level, problem))
        for s in solutions:
            file = s.get("file") if isinstance(s, dict) else None
            cand = os.path.join(checkout, "docs", "assets", "solutions", "%s.py" % file) if isinstance(file, str) else ""
            if not (cand and re.fullmatch(r"[A-Za-z0-9_.-]+", file) and os.path.isfile(cand) and os.path.isfile(ref)):
                print("%s: %s: solution %r or its problem file is missing; skipped" % (LEADERBOARD_INDEX, key, file), file=sys.stderr)
                unpaired += 1
                continue
            line = {"name": "%d_%s" % (problem, title), "level": level, "problem_id": problem,
                    "kernel_file": os.path.relpath(cand, checkout), "ref": read(ref), "candidate": read(cand)}
            if isinstance(s.get("display_name"), str):
                line["model"] = s["display_name"]
            if isinstance(s.get("torch_speedup"), (int, float)) and not isinstance(s.get("torch_speedup"), bool):
                line["recorded_torch_speedup"] = s["torch_speedup"]
            lines.append(line)
    return lines, unpaired


def select(lines, per_problem, spread, problems=None):
    """At most `per_problem` candidates of each (level, problem), in their order; `spread`: the
    first candidate of every problem, then every second one, and so on, so that an audit cut short
    by its time limit has seen as many problems as it could; `problems`: only these problem ids."""
    seen, kept = {}, []
    for line in lines:
        if problems and line["problem_id"] not in problems:
            continue
        key = (line["level"], line["problem_id"])
        rank = seen.get(key, 0)
        seen[key] = rank + 1
        if per_problem and rank >= per_problem:
            continue
        kept.append((rank, line))
    if spread:
        kept.sort(key=lambda rl: rl[0])  # stable: problems keep their order within a round
    return [line for _, line in kept]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", required=True, help="a KernelBench checkout (KernelBench/level<L>/ inside)")
    ap.add_argument("--kernels", action="append", help="glob of candidate modules, relative to --checkout (repeatable)")
    ap.add_argument("--out", required=True, help="the JSONL to write")
    ap.add_argument("--tag", default="", help="a 'tag' field for every line (e.g. the corpus's name)")
    ap.add_argument("--levels", default="", help="only these levels, comma-separated (e.g. 1,2)")
    ap.add_argument("--per-problem", type=int, default=0, metavar="N",
                    help="at most N candidates of each problem (default: all)")
    ap.add_argument("--spread", action="store_true",
                    help="order round-robin over problems: each problem's first candidate, then each one's second, ...")
    ap.add_argument("--problems", default="",
                    help="only these problem ids, comma-separated, ranges allowed (e.g. 12-15,19)")
    a = ap.parse_args()
    problems = set()
    try:
        for part in (x.strip() for x in a.problems.split(",")):
            if not part:
                continue
            low, _, high = part.partition("-")
            first, last = int(low), int(high or low)
            if first > last:
                raise ValueError(part)
            problems.update(range(first, last + 1))
    except ValueError:
        print("kernelbench_jsonl: --problems takes ids or ranges separated by commas (12-15,19), not %r" % a.problems,
              file=sys.stderr)
        return 2
    if a.per_problem < 0:
        print("kernelbench_jsonl: --per-problem takes a count >= 0, not %d" % a.per_problem, file=sys.stderr)
        return 2
    try:
        levels = {int(x) for x in a.levels.split(",") if x.strip()}
    except ValueError:
        print("kernelbench_jsonl: --levels takes numbers separated by commas, not %r" % a.levels, file=sys.stderr)
        return 2
    if os.path.isfile(os.path.join(a.checkout, LEADERBOARD_INDEX)) and not a.kernels:
        try:
            lines, unpaired = leaderboard_lines(a.checkout, levels)
        except (OSError, ValueError) as e:
            print("kernelbench_jsonl: %s: %s" % (os.path.join(a.checkout, LEADERBOARD_INDEX), e), file=sys.stderr)
            return 2
        lines = select(lines, a.per_problem, a.spread, problems)
        with open(a.out, "w", encoding="utf-8") as out:
            for line in lines:
                if a.tag:
                    line["tag"] = a.tag
                out.write(json.dumps(line) + "\n")
        print("kernelbench_jsonl: %d pairs written to %s, %d candidates unpaired" % (len(lines), a.out, unpaired),
              file=sys.stderr)
        return 0 if lines else 1
    if not os.path.isdir(os.path.join(a.checkout, "KernelBench")):
        print("kernelbench_jsonl: %s has no KernelBench/ folder (the problems)" % a.checkout, file=sys.stderr)
        return 2
    patterns = a.kernels or ["triton_runs/level*_triton/kernels/*.py"]
    kernels = sorted({p for g in patterns for p in glob.glob(os.path.join(a.checkout, g))})
    if not kernels:
        print("kernelbench_jsonl: no candidate matches %s under %s" % (", ".join(patterns), a.checkout), file=sys.stderr)
        return 2
    recorded = recorded_results(kernels)
    lines, unpaired = [], 0
    for k in kernels:
        rel = os.path.relpath(k, a.checkout)
        lp = level_and_problem(k)
        if lp is not None and levels and lp[0] not in levels:
            continue
        if lp is None:
            print("%s: no level and problem id in its name; skipped" % rel, file=sys.stderr)
            unpaired += 1
            continue
        ref = problem_file(a.checkout, *lp)
        if ref is None:
            print("%s: no single KernelBench/level%d/%d_*.py; skipped" % (rel, lp[0], lp[1]), file=sys.stderr)
            unpaired += 1
            continue
        line = {"name": os.path.basename(ref), "level": lp[0], "problem_id": lp[1],
                "kernel_file": rel, "ref": read(ref), "candidate": read(k)}
        if a.tag:
            line["tag"] = a.tag
        line.update(recorded.get(lp, {}))
        lines.append(line)
    lines = select(lines, a.per_problem, a.spread, problems)
    written = len(lines)
    with open(a.out, "w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line) + "\n")
    print("kernelbench_jsonl: %d pairs written to %s, %d candidates unpaired" % (written, a.out, unpaired), file=sys.stderr)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
