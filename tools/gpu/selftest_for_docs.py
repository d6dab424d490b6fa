#!/usr/bin/env python3
"""Merges a device call's selftest reports (selftest-cuda-N.json) into one trimmed report for docs/data/.

Usage: selftest_for_docs.py OUT.json REPORT.json [REPORT.json ...]
Keeps what docs/gate-table.md and a reader need (each gate's status, category, cases and message,
the selftest's expectation and mismatches, the GPU's name and driver); drops the timing evidence
and the replay paths, which point into the device machine's folders.
"""
import json
import sys


def trimmed(kernel):
    env = kernel.get("environment", {})
    gpu = env.get("gpu", {})
    out = {k: kernel[k] for k in ("manifest", "op", "seed", "verdict", "seconds", "kernel_hash", "schema_hash",
                                  "selftest") if k in kernel}
    out["environment"] = {k: env[k] for k in ("device", "gauntlet", "compiler") if k in env}
    out["environment"]["gpu"] = {k: gpu[k] for k in ("name", "driver", "compute_capability", "cuda_driver_api")
                                 if k in gpu}
    out["gates"] = [{k: g[k] for k in ("name", "status", "category", "cases", "message", "seconds") if k in g}
                    for g in kernel.get("gates", [])]
    return out


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: selftest_for_docs.py OUT.json REPORT.json [REPORT.json ...]")
    kernels = []
    for path in argv[2:]:
        try:
            with open(path) as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"selftest_for_docs.py: error: {path}: {e}")
        if not isinstance(report, list):
            sys.exit(f"selftest_for_docs.py: error: {path} is not a selftest report (a JSON array)")
        kernels += [trimmed(k) for k in report]
    with open(argv[1], "w") as f:
        f.write(json.dumps(kernels, indent=1) + "\n")
    print(f"wrote {len(kernels)} kernels to {argv[1]}")


if __name__ == "__main__":
    main(sys.argv)
