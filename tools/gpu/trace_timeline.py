#!/usr/bin/env python3
"""What overlapped what across a run's processes: reads the timeline that gauntlet writes under
GAUNTLET_TRACE_DIR (include/gauntlet/common/trace.h: one trace-<pid>.tsv a process, lines
"kind begin_ns end_ns pid tid detail") and prints, as markdown, how much of the run's wall each
kind of interval covered, which of the two host-wide serial resources (the driver creating a
context, the GPU's turn) was busy when, what the gate slots did while neither was, and where a
gate's slot time went.

    trace_timeline.py DIR            # the report
    trace_timeline.py --self-test    # checks the arithmetic on a made-up timeline

Why (issue 18): per-process totals say how long each step took, not whether the contexts of one
verify process waited on another's turns; a run at 70% of its contexts' ceiling must be waiting on
something host-wide, and only a shared clock shows which.
"""
import glob
import os
import sys
from collections import defaultdict

BIN_NS = 1_000_000  # 1 ms bins for "how many were active at once"


def read_dir(directory):
    rows = []
    for path in sorted(glob.glob(os.path.join(directory, "trace-*.tsv"))):
        with open(path, errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) < 5:
                    continue
                try:
                    kind, begin, end, pid, tid = parts[0], int(parts[1]), int(parts[2]), int(parts[3]), int(parts[4])
                except ValueError:
                    continue
                if end >= begin:
                    rows.append((kind, begin, end, pid, tid, parts[5] if len(parts) > 5 else ""))
    return rows


def merged(intervals):
    out = []
    for b, e in sorted(intervals):
        if out and b <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([b, e])
    return out


def covered(intervals):
    return sum(e - b for b, e in merged(intervals))


def overlap(a_merged, b_merged):
    """Length of the intersection of two merged interval lists."""
    i = j = total = 0
    while i < len(a_merged) and j < len(b_merged):
        lo = max(a_merged[i][0], b_merged[j][0])
        hi = min(a_merged[i][1], b_merged[j][1])
        if hi > lo:
            total += hi - lo
        if a_merged[i][1] < b_merged[j][1]:
            i += 1
        else:
            j += 1
    return total


def active_counts(intervals, t0, bins):
    """Per 1 ms bin, how many intervals were active at the bin's middle."""
    diff = [0] * (bins + 1)
    for b, e in intervals:
        first = max(0, (b - t0 + BIN_NS // 2) // BIN_NS)
        last = min(bins, (e - t0 + BIN_NS // 2) // BIN_NS)
        if last > first:
            diff[first] += 1
            diff[last] -= 1
    counts, run = [], 0
    for i in range(bins):
        run += diff[i]
        counts.append(run)
    return counts


def analyse(rows):
    """The figures the report prints, as a dict (the self-test checks them)."""
    by_kind = defaultdict(list)
    for kind, b, e, _, _, _ in rows:
        by_kind[kind].append((b, e))
    gates = by_kind.get("gate") or [(b, e) for _, b, e, _, _, _ in rows]
    t0 = min(b for b, _ in gates)
    t1 = max(e for _, e in gates)
    wall = max(1, t1 - t0)
    clip = lambda ivs: [(max(b, t0), min(e, t1)) for b, e in ivs if e > t0 and b < t1]
    r = {"wall_s": wall / 1e9, "kinds": {}}
    for kind, ivs in sorted(by_kind.items()):
        c = clip(ivs)
        r["kinds"][kind] = {"n": len(ivs), "sum_s": sum(e - b for b, e in ivs) / 1e9,
                            "coverage": covered(c) / wall, "concurrency": sum(e - b for b, e in c) / wall}
    contexts = merged(clip(by_kind.get("child_context", [])))
    turns = merged(clip(by_kind.get("turn", [])))
    either = merged(contexts + turns)
    r["contexts_coverage"] = covered(contexts) / wall
    r["turns_coverage"] = covered(turns) / wall
    r["both_coverage"] = overlap(contexts, turns) / wall
    r["either_coverage"] = covered(either) / wall
    # The driver's time a child: the wall while some child created its context or started CUDA,
    # over the children that did (against the burst's floor a context, a run's serial cost a child).
    driver = merged(contexts + merged(clip(by_kind.get("child_cuda_init", []))))
    children = len(by_kind.get("child_context", []))
    r["driver_coverage"] = covered(driver) / wall
    r["driver_s_a_child"] = covered(driver) / 1e9 / children if children else 0.0
    # While neither serial resource was busy: what the gate slots held, on average.
    bins = wall // BIN_NS
    idle = [True] * bins
    for b, e in either:
        for i in range(max(0, (b - t0) // BIN_NS), min(bins, (e - t0 + BIN_NS - 1) // BIN_NS)):
            idle[i] = False
    idle_bins = sum(idle)
    r["idle_s"] = idle_bins * BIN_NS / 1e9
    # Where in the batch the idle time lies, by tenth of the wall: in its first and last tenths it is
    # the batch's ramp and tail (fewer kernels in flight), which a longer batch makes a smaller share.
    tenths = [0.0] * 10
    for i, is_idle in enumerate(idle):
        if is_idle:
            tenths[i * 10 // bins] += BIN_NS / 1e9
    r["idle_by_tenth"] = tenths
    r["during_idle"] = {}
    for kind in ("gate", "spawn", "load", "child_cuda_init", "child_first_poison", "child_preload", "call",
                 "turn_wait", "gate_slot_wait", "session"):
        counts = active_counts(clip(by_kind.get(kind, [])), t0, bins)
        r["during_idle"][kind] = (sum(c for c, i in zip(counts, idle) if i) / idle_bins) if idle_bins else 0.0
    # A gate's slot time, by what its own thread did in it.
    per_thread = defaultdict(list)
    for kind, b, e, pid, tid, detail in rows:
        per_thread[(pid, tid)].append((kind, b, e, detail))
    split = defaultdict(lambda: defaultdict(float))
    for items in per_thread.values():
        for kind, b, e, detail in items:
            if kind != "gate":
                continue
            s = split[detail]
            s["runs"] += 1
            s["slot"] += (e - b) / 1e9
            inside = lambda k: merged([(max(b, x), min(e, y)) for kk, x, y, _ in items if kk == k and y > b and x < e])
            starting = merged(inside("spawn") + inside("load"))
            calls = inside("call")
            waits = inside("turn_wait")
            # Waiting for a GPU gate slot (GAUNTLET_GPU_GATE_SLOTS) inside the gate's own slot.
            slot_waits = inside("gate_slot_wait")
            start_waits = inside("start_slot_wait")  # GAUNTLET_GPU_START_SLOTS, before a child's load
            s["starting"] += covered(starting) / 1e9
            s["calls"] += covered(calls) / 1e9
            s["turn_waits"] += overlap(calls, merged(waits)) / 1e9
            s["gate_slot_waits"] += covered(slot_waits) / 1e9
            # Its children's contexts (wall from creation to the first copy back, queueing in the
            # driver included): a default-queue child's against a one-queue child's, gate by gate.
            contexts = [(x, y) for kk, x, y, _ in items if kk == "child_context" and b <= x < e]
            s["contexts"] += len(contexts)
            s["context_s"] += sum(y - x for x, y in contexts) / 1e9
            s["start_slot_waits"] += covered(start_waits) / 1e9
            s["parent"] += ((e - b) - covered(merged(starting + calls + slot_waits + start_waits))) / 1e9
    r["gates"] = {g: dict(v) for g, v in split.items()}
    # Children alive with their context made (from their load's end to their session's end), by
    # hardware queues: a live default-queue context makes every new context dearer (docs/gpu.md).
    alive = defaultdict(float)
    for items in per_thread.values():
        loads = [(b, e, d.split()[0] if d else "") for k, b, e, d in items if k == "load"]
        for k, b, e, _ in items:
            if k != "session":
                continue
            inside = [l for l in loads if b <= l[0] and l[1] <= e]
            if inside:
                alive[inside[0][2]] += max(0, e - inside[0][1])
    r["alive_after_load"] = {q: v / wall for q, v in sorted(alive.items())}
    return r


def report(r):
    pct = lambda x: f"{100 * x:.0f}%"
    out = [f"wall {r['wall_s']:.2f} s (first gate's slot to last gate's end)", "",
           "| kind | intervals | summed s | of the wall covered | mean at once |", "|---|---|---|---|---|"]
    for kind, k in r["kinds"].items():
        out.append(f"| {kind} | {k['n']} | {k['sum_s']:.2f} | {pct(k['coverage'])} | {k['concurrency']:.2f} |")
    out += ["", f"the two serial resources: a context being created {pct(r['contexts_coverage'])} of the wall, "
            f"a GPU turn held {pct(r['turns_coverage'])}, both at once {pct(r['both_coverage'])}, "
            f"either {pct(r['either_coverage'])}; neither {r['idle_s']:.2f} s"]
    out.append(f"the driver (a context or CUDA init in progress) {pct(r['driver_coverage'])} of the wall: "
               f"{r['driver_s_a_child']:.4f} s a child")
    out.append("children alive past their load (mean at once), by hardware queues: " +
               (", ".join(f"{q or 'unknown'} {v:.2f}" for q, v in r["alive_after_load"].items()) or "none"))
    t = r["idle_by_tenth"]
    out.append("neither busy, by tenth of the wall (s): " + " ".join(f"{x:.2f}" for x in t) +
               f"; in the first and last tenths (the batch's ramp and tail) {t[0] + t[-1]:.2f} s of {sum(t):.2f}")
    d = r["during_idle"]
    out.append("while neither was busy, on average: " + ", ".join(f"{k} {v:.2f}" for k, v in d.items()))
    out += ["", "| gate | runs | slot s a run | GPU gate slot wait | start slot waits | starting (spawn, load) | "
            "cases (calls) | of them turn waits | parent alone | contexts a run | a context (mean s) |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for g, s in sorted(r["gates"].items(), key=lambda kv: -kv[1]["slot"]):
        n = max(1, s["runs"])
        ctx = s["context_s"] / s["contexts"] if s["contexts"] else 0.0
        out.append(f"| {g} | {int(s['runs'])} | {s['slot'] / n:.3f} | {s['gate_slot_waits'] / n:.3f} | "
                   f"{s['start_slot_waits'] / n:.3f} | {s['starting'] / n:.3f} | {s['calls'] / n:.3f} | {s['turn_waits'] / n:.3f} | {s['parent'] / n:.3f} | "
                   f"{s['contexts'] / n:.2f} | {ctx:.3f} |")
    return "\n".join(out)


def self_test():
    ms = 1_000_000
    rows = [
        # One gate of 100 ms on thread (1, 11): spawn 0-10, load 10-40, two calls 50-60, 70-90.
        ("gate", 0, 100 * ms, 1, 11, "contract"),
        ("spawn", 0, 10 * ms, 1, 11, ""), ("load", 10 * ms, 40 * ms, 1, 11, "queues=1 k.so"),
        ("session", 0, 95 * ms, 1, 11, "cuda"), ("child_cuda_init", 12 * ms, 15 * ms, 1, 11, ""),
        ("child_context", 15 * ms, 35 * ms, 1, 11, ""),
        ("call", 50 * ms, 60 * ms, 1, 11, ""), ("call", 70 * ms, 90 * ms, 1, 11, ""),
        ("turn_wait", 70 * ms, 75 * ms, 1, 11, ""), ("gate_slot_wait", 40 * ms, 45 * ms, 1, 11, "0"),
        ("start_slot_wait", 45 * ms, 48 * ms, 1, 11, "0"),
        ("turn", 52 * ms, 58 * ms, 1, 11, ""), ("turn", 75 * ms, 88 * ms, 1, 11, ""),
        # Another process's context, overlapping a turn by 3 ms.
        ("child_context", 85 * ms, 95 * ms, 2, 21, ""),
    ]
    r = analyse(rows)
    checks = [
        (abs(r["wall_s"] - 0.1) < 1e-9, "wall"),
        (abs(r["contexts_coverage"] - 0.30) < 1e-9, "contexts 20 + 10 ms of 100"),
        (abs(r["turns_coverage"] - 0.19) < 1e-9, "turns 6 + 13 ms"),
        (abs(r["both_coverage"] - 0.03) < 1e-9, "overlap 85-88"),
        (abs(r["either_coverage"] - 0.46) < 1e-9, "union"),
        (abs(r["idle_s"] - 0.054) < 1e-9, "neither: 100 - 46 ms"),
        (all(abs(a - b) < 1e-9 for a, b in zip(r["idle_by_tenth"], [x / 1000 for x in (10, 5, 0, 5, 10, 4, 10, 5, 0, 5)])),
         "idle by tenth: 0-15, 35-52, 58-75 and 95-100 ms"),
        (abs(r["gates"]["contract"]["starting"] - 0.040) < 1e-9, "spawn + load"),
        (abs(r["gates"]["contract"]["calls"] - 0.030) < 1e-9, "calls"),
        (abs(r["gates"]["contract"]["turn_waits"] - 0.005) < 1e-9, "turn wait inside a call"),
        (abs(r["gates"]["contract"]["gate_slot_waits"] - 0.005) < 1e-9, "GPU gate slot wait"),
        (r["gates"]["contract"]["contexts"] == 1, "one context in the gate (the other process's is not)"),
        (abs(r["gates"]["contract"]["context_s"] - 0.020) < 1e-9, "its context 15-35 ms"),
        (abs(r["gates"]["contract"]["start_slot_waits"] - 0.003) < 1e-9, "start slot wait"),
        (abs(r["gates"]["contract"]["parent"] - 0.022) < 1e-9, "the rest"),
        (abs(r["during_idle"]["gate"] - 1.0) < 1e-9, "the gate spans every idle bin"),
        (abs(r["driver_coverage"] - 0.33) < 1e-9, "init 12-15 beside contexts 15-35 and 85-95"),
        (abs(r["driver_s_a_child"] - 0.0165) < 1e-9, "33 ms over two contexts"),
        (abs(r["alive_after_load"].get("queues=1", 0) - 0.55) < 1e-9, "alive from 40 to 95 ms"),
    ]
    failed = [name for ok, name in checks if not ok]
    if failed:
        print("trace_timeline self-test failed: " + ", ".join(failed), r)
        return 1
    print(f"trace_timeline self-test: {len(checks)} checks passed")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0] + "\nusage: trace_timeline.py DIR | --self-test", file=sys.stderr)
        return 2
    rows = read_dir(argv[1])
    if not rows:
        print(f"trace_timeline: no trace-*.tsv intervals under {argv[1]} (was GAUNTLET_TRACE_DIR set?)", file=sys.stderr)
        return 1
    print(report(analyse(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
