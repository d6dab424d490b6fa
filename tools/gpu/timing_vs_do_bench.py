#!/usr/bin/env python3
"""The timing gate against an independent timer (issue 5, item 6).

For every CUDA kernel that passed the timing gate in a `gauntlet selftest --json` report, times the
same kernel source (built here with torch.utils.cpp_extension) and the same ATen baseline on inputs
of the same shapes, dtypes and attributes with triton.testing.do_bench (its own 256 MB L2 flush,
CUDA events, median), and writes the ratios as Markdown and JSON.

usage: timing_vs_do_bench.py SELFTEST.json|VERIFY_JSON_DIR OUT_PREFIX [--aten-only]
  --aten-only  compare only the ATen baselines (no nvcc builds: seconds instead of minutes)
"""
import json
import os
import subprocess
import sys

import torch
import torch.nn.functional as F
from triton.testing import do_bench

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}

# The library baselines, as the worker's library_baseline.cpp calls them.
ATEN = {
    "relu": lambda t, a: torch.relu(t[0]),
    "sigmoid": lambda t, a: torch.sigmoid(t[0]),
    "gelu": lambda t, a: F.gelu(t[0]),
    "softmax": lambda t, a: torch.softmax(t[0], a[0]),
    "log_softmax": lambda t, a: torch.log_softmax(t[0], a[0]),
    "sum": lambda t, a: t[0].sum(a[0]),
    "mean": lambda t, a: t[0].mean(a[0]),
    "cumsum": lambda t, a: torch.cumsum(t[0], a[0]),
    "matmul": lambda t, a: torch.mm(t[0], t[1]),
    "bmm": lambda t, a: torch.bmm(t[0], t[1]),
    "layer_norm": lambda t, a: F.layer_norm(t[0], [t[0].shape[-1]], t[1], t[2], a[0]),
    "rms_norm": lambda t, a: t[0] * torch.rsqrt(t[0].pow(2).mean(-1, keepdim=True) + a[0]) * t[1],
}


def schema(op):
    with open(os.path.join(ROOT, "opschemas", op + ".json")) as f:
        return json.load(f)


def parse_attr(spec, text):
    if spec["type"] == "int64":
        return int(text)
    if spec["type"] == "bool":
        return text in ("true", "1")
    return float(text)


def inputs_for(s, ev):
    tensors = []
    for inp in s["inputs"]:
        desc = ev["inputs"][inp["name"]]
        dtype = DTYPES.get(desc["dtype"])
        if dtype is None or inp.get("values", {}).get("kind", "real") not in ("real", "positive", "nonnegative"):
            return None, None  # index inputs: not needed for the CUDA controls
        t = torch.randn(desc["shape"], device="cuda", dtype=torch.float32).to(dtype)
        if inp.get("values", {}).get("kind") in ("positive", "nonnegative"):
            t = t.abs()
        tensors.append(t)
    attrs = [parse_attr(a, ev["attrs"][a["name"]]) for a in s.get("attributes", []) if a["name"] in ev["attrs"]]
    return tensors, attrs


def synced_median(fn, iterations=400):
    """The timing gate's loop in Python: L2 flush, events around one call, a device sync after
    every call (do_bench queues all its calls and syncs once). Tells a loop difference from a
    measurement difference."""
    cache = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        cache.zero_()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def build_all(sources, build_root):
    """Builds each source as a torch extension, in parallel processes (nvcc takes ~30 s each)."""
    procs = {}
    for name, src in sources.items():
        d = os.path.join(build_root, name)
        os.makedirs(d, exist_ok=True)
        code = ("from torch.utils.cpp_extension import load; "
                f"load(name={name!r}, sources=[{src!r}], build_directory={d!r}, "
                "extra_cuda_cflags=['-O3', '-gencode=arch=compute_90,code=sm_90'], verbose=False)")
        procs[name] = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    errors = {}
    for name, p in procs.items():
        out, _ = p.communicate()
        if p.returncode != 0:
            errors[name] = out.decode(errors="replace")[-2000:]
    return errors


def main():
    report_path, out_prefix = sys.argv[1], sys.argv[2]
    aten_only = "--aten-only" in sys.argv[3:]
    if os.path.isdir(report_path):  # a folder of `gauntlet verify --json` files (throughput runs)
        reports = []
        for name in sorted(os.listdir(report_path)):
            if name.endswith(".json"):
                with open(os.path.join(report_path, name)) as f:
                    reports.append(json.load(f))
    else:
        with open(report_path) as f:
            reports = json.load(f)
    from torch.utils.cpp_extension import load

    todo = []
    for r in reports:
        if not isinstance(r, dict) or r.get("environment", {}).get("device") != "cuda":
            continue
        timing = next((g for g in r.get("gates", []) if g.get("name") == "timing"), None)
        if not timing or timing.get("status") != "pass":
            continue
        for ev in timing.get("evidence", {}).get("dtypes", []):
            todo.append((r, ev))
    sources = {}
    for r, _ in todo:
        src = r["source"]
        sources["gt_" + os.path.splitext(os.path.basename(src))[0]] = os.path.abspath(src)
    build_root = os.path.join(os.environ.get("TMPDIR", "/tmp"), "gauntlet-do-bench")
    build_errors = {} if aten_only else build_all(sources, build_root)
    rows = []
    for r, ev in todo:
        op = r["op"]
        name = "gt_" + os.path.splitext(os.path.basename(r["source"]))[0]
        s = schema(op)
        tensors, attrs = inputs_for(s, ev)
        row = {"kernel": r["source"], "op": op, "dtype": ev["dtype"], "case": ev["case"],
               "gauntlet_candidate_ms": ev["candidate"]["median_ms"],
               "gauntlet_candidate_iqr": ev["candidate"]["relative_iqr"],
               "gauntlet_baseline_ms": ev.get("baseline", {}).get("median_ms")}
        if tensors is None:
            row["note"] = "inputs not reproducible here"
            rows.append(row)
            continue
        if aten_only:
            pass
        elif name in build_errors:
            row["note"] = "torch.utils.cpp_extension build failed: " + build_errors[name][-300:]
        else:
            mod = load(name=name, sources=[sources[name]], build_directory=os.path.join(build_root, name),
                       extra_cuda_cflags=["-O3", "-gencode=arch=compute_90,code=sm_90"], verbose=False)
            row["do_bench_candidate_ms"] = do_bench(lambda: mod.forward(*tensors, *attrs), warmup=25, rep=200,
                                                    return_mode="median")
            row["candidate_ratio"] = row["gauntlet_candidate_ms"] / row["do_bench_candidate_ms"]
            row["synced_candidate_ms"] = synced_median(lambda: mod.forward(*tensors, *attrs))
        if op in ATEN and row["gauntlet_baseline_ms"]:
            row["do_bench_baseline_ms"] = do_bench(lambda: ATEN[op](tensors, attrs), warmup=25, rep=200,
                                                   return_mode="median")
            row["baseline_ratio"] = row["gauntlet_baseline_ms"] / row["do_bench_baseline_ms"]
        rows.append(row)
    with open(out_prefix + ".json", "w") as f:
        json.dump(rows, f, indent=1)
    lines = ["| kernel | dtype | case | gauntlet ms (IQR) | do_bench ms | ratio | synced loop ms | gauntlet ATen ms | do_bench ATen ms | ratio |",
             "|---|---|---|---|---|---|---|---|---|---|"]

    def num(v, f="%.4g"):
        return f % v if isinstance(v, (int, float)) else "—"
    within = total = 0
    for row in rows:
        for key in ("candidate_ratio", "baseline_ratio"):
            if key in row:
                total += 1
                within += abs(row[key] - 1) <= 0.03
        lines.append("| %s | %s | %s | %s (%.0f%%) | %s | %s | %s | %s | %s | %s |" % (
            os.path.basename(row["kernel"]), row["dtype"], row["case"], num(row["gauntlet_candidate_ms"]),
            100 * row["gauntlet_candidate_iqr"], num(row.get("do_bench_candidate_ms")),
            num(row.get("candidate_ratio"), "%.3f"), num(row.get("synced_candidate_ms")), num(row.get("gauntlet_baseline_ms")),
            num(row.get("do_bench_baseline_ms")), num(row.get("baseline_ratio"), "%.3f")) +
            (" " + row["note"] if "note" in row else ""))
    lines.append("")
    lines.append(f"{within} of {total} medians within 3% of do_bench's.")
    with open(out_prefix + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
