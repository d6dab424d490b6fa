#!/usr/bin/env python3
"""Per-gate start of Python-module children with and without the Python zygote (docs/modules.md).

Runs `gauntlet verify` on a plain-torch module (corpus/modules/softmax_module.json) with the
zygote and with --no-zygote, one gate process at a time, and reads each gate's evidence.time
(spawn_seconds over children: starting the child and loading the module, up to its LoadReply).
With the zygote the first child also pays the zygote's start (python3 importing torch once), so
that is reported apart. Also times a bare `python3 -c "import torch"` for reference.

usage: tools/bench/pyzygote_bench.py BUILD_DIR [--runs N] [--module MANIFEST]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

GATES = "contract,accuracy,special-values,subnormals,layouts,determinism,statelessness,memory,provenance"


def verify(gauntlet, manifest, zygote, out_json):
    cmd = [gauntlet, "verify", manifest, "--seed", "1", "--quiet", "--jobs", "1", "--gates", GATES, "--json", out_json]
    if not zygote:
        cmd.append("--no-zygote")
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t0
    with open(out_json) as f:
        report = json.load(f)
    starts = []  # (gate, seconds per child, children)
    for g in report["gates"]:
        t = g.get("evidence", {}).get("time")
        if t and t.get("children"):
            starts.append((g["name"], t["spawn_seconds"] / t["children"], t["children"]))
    return wall, starts, report["environment"]["sandbox"]["launcher"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--module", default=os.path.join(os.path.dirname(__file__), "../../corpus/modules/softmax_module.json"))
    args = ap.parse_args()
    gauntlet = os.path.join(args.build, "gauntlet")
    python = os.environ.get("GAUNTLET_PYTHON", "/usr/bin/python3")
    imports = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        subprocess.run([python, "-c", "import torch"], check=True)
        imports.append(time.perf_counter() - t0)
    print("python3 -c 'import torch': median %.2f s over %d runs" % (statistics.median(imports), args.runs))
    with tempfile.TemporaryDirectory() as tmp:
        for zygote in (False, True):
            firsts, rest, walls, launcher = [], [], [], ""
            for _ in range(args.runs):
                wall, starts, launcher = verify(gauntlet, args.module, zygote, os.path.join(tmp, "r.json"))
                walls.append(wall)
                if starts:
                    firsts.append(starts[0][1])
                    rest.extend(s for _, s, _ in starts[1:])
            label = "with the zygote   " if zygote else "without (fork+exec)"
            print("%s launcher=%s: per-gate start median %.3f s (min %.3f, max %.3f, %d gate processes); "
                  "first gate %.2f s; verify wall %.1f s" % (label, launcher, statistics.median(rest), min(rest), max(rest),
                                                           len(rest), statistics.median(firsts), statistics.median(walls)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
