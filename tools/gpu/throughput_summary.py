#!/usr/bin/env python3
"""Throughput of a batch of `gauntlet verify --json` runs: kernels per hour and where the time went.

usage: throughput_summary.py DIR WALL_SECONDS [LABEL [CONTEXT_SECONDS [ONE_QUEUE_CONTEXT_SECONDS [Q=SECONDS ...]]]]
       throughput_summary.py --self-test    (the ceiling's arithmetic on made-up reports)
DIR holds one verify JSON per kernel run (or audit JSON lists of them); WALL_SECONDS is the batch's wall-clock time.
CONTEXT_SECONDS, one fresh CUDA context's serial cost measured in the same run
(tools/gpu/ctx_settings_bench.py), and ONE_QUEUE_CONTEXT_SECONDS, the same with one hardware queue
(default: CONTEXT_SECONDS), give the ceiling: the driver creates contexts one after another, so no
schedule beats 3600 / (the contexts a kernel started, each at its measured cost) kernels per hour.
Each gate's evidence says its children's hardware queues (time.hardware_queues, 0: default); Q=SECONDS
prices a context of Q queues (GAUNTLET_CONCURRENT_GATE_QUEUES=Q), measured in the same run. A kernel
run with contexts of a queue count that has no measured price gets no ceiling, not a wrong one.
"""
import glob
import json
import os
import statistics
import sys


def started_children(report):
    """(children, hardware queues) of each part of a kernel run that started CUDA children: its gates
    and, in an audit's reports, the field's standard check (one child a kernel, its queues stored
    beside its verdict; a check stored before those counts, or not run, has none)."""
    for g in report.get("gates", []):
        time_ = g.get("evidence", {}).get("time", {})
        yield time_.get("children", 0), time_.get("hardware_queues", 0)
    check = report.get("standard_check")
    if isinstance(check, dict):
        yield check.get("children", 0), check.get("hardware_queues", 0)


def context_floor(reports, price):
    """The contexts' serial cost summed over the kernel runs, each child priced by its hardware queues
    (price: queues -> seconds, 0 the driver's default), and the queue counts that had children but no
    price (then the sum is not a floor)."""
    floor_s, unpriced = 0.0, set()
    for r in reports:
        for children, queues in started_children(r):
            if children and queues not in price:
                unpriced.add(queues)
            floor_s += children * price.get(queues, 0.0)
    return floor_s, unpriced


def steady_state(spans):
    """A verify batch's steady state from its processes' (start, end): from the moment the most of them
    ran at once (the P-th start) to the last one's start, P processes were always in flight, as
    xargs -P replaces each that ends; before it is the batch's ramp, after it its tail. Returns
    (window seconds, kernel runs done in it, each counted by the share of its wall inside), or None
    when the batch never had two in flight."""
    events = sorted([(t0, 1) for t0, _ in spans] + [(t1, -1) for _, t1 in spans], key=lambda e: (e[0], e[1]))
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    starts = sorted(t0 for t0, _ in spans)
    if most < 2 or len(starts) < most:
        return None
    a, b = starts[most - 1], starts[-1]
    if b <= a:
        return None
    done = sum(max(0.0, min(t1, b) - max(t0, a)) / (t1 - t0) for t0, t1 in spans if t1 > t0)
    return b - a, done


def prepared_ahead_line(reports):
    """Timing's sets made while the correctness gates ran (Gate::prepare_ahead), of all it timed; "" if none timed."""
    ahead = [(d.get("prepared_ahead", {}).get("sets", 0), d.get("input_sets", 0), d.get("prepared_ahead", {}).get("seconds", 0.0))
             for r in reports for g in r.get("gates", []) if g["name"] == "timing" for d in g.get("evidence", {}).get("dtypes", [])]
    if not ahead:
        return ""
    return (f"timing sets made while the correctness gates ran: {sum(a for a, _, _ in ahead)} of {sum(n for _, n, _ in ahead)} "
            f"(that thread: median {statistics.median([s for _, _, s in ahead]):.3f} s)")


def self_test():
    """The ceiling's arithmetic on made-up reports: each queue count at its own price, none without one."""
    gate = lambda name, queues, children: {"name": name, "evidence": {"time": {"children": children, "hardware_queues": queues}}}
    kernel = {"gates": [gate("contract", 1, 1), gate("memory", 1, 4), gate("determinism", 2, 2), gate("timing", 2, 1),
                        gate("gradients", 0, 0)]}
    price = {0: 0.2, 1: 0.08, 2: 0.1}
    floor_s, unpriced = context_floor([kernel, kernel], price)
    checks = [(abs(floor_s - 2 * (5 * 0.08 + 3 * 0.1)) < 1e-12, f"floor {floor_s}"),
              (unpriced == set(), f"unpriced {unpriced}")]
    floor_s, unpriced = context_floor([kernel], {0: 0.2, 1: 0.08})
    checks.append((unpriced == {2}, f"a 2-queue child without a price: unpriced {unpriced}"))
    default = {"gates": [gate("determinism", 0, 2)]}
    floor_s, unpriced = context_floor([default], {0: 0.2, 1: 0.08})
    checks.append((abs(floor_s - 0.4) < 1e-12 and not unpriced, f"default queues at the default price: {floor_s}"))
    # An audit's report: the standard check's child is one more context, at its own queues' price.
    audited = dict(kernel, standard_check={"verdict": "accept", "children": 1, "hardware_queues": 0})
    floor_s, unpriced = context_floor([audited], price)
    checks.append((abs(floor_s - (5 * 0.08 + 3 * 0.1 + 0.2)) < 1e-12 and not unpriced, f"the standard check's child: {floor_s}"))
    older = dict(kernel, standard_check={"verdict": "accept"})  # stored before the counts: no child known
    floor_s, _ = context_floor([older], price)
    checks.append((abs(floor_s - (5 * 0.08 + 3 * 0.1)) < 1e-12, f"a check without counts: {floor_s}"))
    # Two in flight from t=1 (the second start) to t=11 (the last start): 0.9 + 1.0 + 0.1 + 0 runs.
    window = steady_state([(0, 10), (1, 11), (10, 20), (11, 21)])
    checks.append((window is not None and abs(window[0] - 10) < 1e-12 and abs(window[1] - 2.0) < 1e-12,
                   f"steady state {window}"))
    checks.append((steady_state([(0, 5), (5, 10)]) is None, "one at a time has no steady state"))
    timed = lambda sets, made, seconds: {"gates": [{"name": "timing", "evidence": {"dtypes": [
        {"input_sets": sets, "prepared_ahead": {"sets": made, "seconds": seconds}}]}}]}
    line = prepared_ahead_line([timed(2, 2, 0.9), timed(2, 0, 0.0), timed(2, 2, 1.1)])
    checks.append(("4 of 6" in line and "median 0.900 s" in line, f"prepared ahead: {line!r}"))
    checks.append((prepared_ahead_line([kernel]) == "", "no timing sets: no line"))
    failed = [what for ok, what in checks if not ok]
    if failed:
        print("throughput_summary self-test failed: " + ", ".join(failed))
        return 1
    print(f"throughput_summary self-test: {len(checks)} checks passed")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    folder, wall = sys.argv[1], float(sys.argv[2])
    label = sys.argv[3] if len(sys.argv) > 3 else os.path.basename(folder)
    context_s = float(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else 0.0
    one_queue_s = float(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5] else context_s
    # A context's measured cost by its hardware queues (0: the driver's default).
    price = {0: context_s, 1: one_queue_s}
    for arg in sys.argv[6:]:
        q, _, seconds = arg.partition("=")
        price[int(q)] = float(seconds)
    reports = []
    for path in sorted(glob.glob(os.path.join(folder, "**", "*.json"), recursive=True)):
        try:
            with open(path) as f:
                loaded = json.load(f)
            # A `gauntlet audit --json` file is a list of such reports.
            reports.extend(loaded if isinstance(loaded, list) else [loaded])
        except (OSError, ValueError) as e:
            print(f"unreadable {path}: {e}", file=sys.stderr)
    if not reports:
        print(f"{label}: no reports in {folder}")
        return 1
    gate_children = {}
    gate_seconds, parts = {}, {"spawn_seconds": 0.0, "spawn_lock_seconds": 0.0, "spawn_zygote_start_seconds": 0.0, "spawn_zygote_seconds": 0.0,
                                "spawn_clone_seconds": 0.0, "child_context_seconds": 0.0,
                                "child_before_context_seconds": 0.0, "inputs_seconds": 0.0, "oracle_seconds": 0.0, "kernel_seconds": 0.0,
                                "worker_round_trip_seconds": 0.0, "children": 0}
    verdicts = {}
    for r in reports:
        verdicts[r.get("verdict")] = verdicts.get(r.get("verdict"), 0) + 1
        for g in r.get("gates", []):
            gate_seconds.setdefault(g["name"], []).append(g.get("seconds", 0.0))
            gate_children.setdefault(g["name"], []).append(g.get("evidence", {}).get("time", {}).get("children", 0))
            time_ = g.get("evidence", {}).get("time", {})
            for k in parts:
                parts[k] += time_.get(k, 0)
    floor_s, unpriced = context_floor(reports, price)  # the contexts' serial cost over every kernel run
    per_kernel = [r.get("seconds", 0.0) for r in reports]
    turns = [r.get("environment", {}).get("gpu_turns", {}) for r in reports]
    runs = len(reports)
    print(f"## {label}: {runs} kernel runs in {wall:.1f} s wall = {runs / wall * 3600:.0f} kernels/hour")
    children_per_kernel = sum(c for r in reports for c, _ in started_children(r)) / runs  # the check's too
    # The kernels per hour the driver's context creation allows (None: no floor measured, or unpriced).
    ceiling = 3600 / (floor_s / runs) if context_s > 0 and floor_s > 0 and not unpriced else None
    if unpriced:
        print(f"no ceiling: contexts of {sorted(unpriced)} hardware queues have no cost measured in this run")
    elif ceiling:
        print(f"ceiling {ceiling:.0f} kernels/hour = 3600 / {floor_s / runs:.3f} s of fresh contexts a kernel "
              f"({children_per_kernel:.2f} children; {context_s:.3f} s a context, {one_queue_s:.3f} s with one hardware "
              f"queue{''.join(f', {s:.3f} s with {q}' for q, s in sorted(price.items()) if q > 1)}, measured in this run): "
              f"{runs / wall * 3600 / ceiling:.0%} of it")
    print(f"verdicts: {verdicts}; per-kernel wall median {statistics.median(per_kernel):.2f} s "
          f"(min {min(per_kernel):.2f}, max {max(per_kernel):.2f})")
    print("| gate | runs | median s | max s | sum s | children a run (median, max) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, secs in gate_seconds.items():
        kids = gate_children.get(name, [0])
        print(f"| {name} | {len(secs)} | {statistics.median(secs):.2f} | {max(secs):.2f} | {sum(secs):.1f} "
              f"| {statistics.median(kids):g}, {max(kids)} |")
    clock = [d.get("host_seconds", {}) for r in reports for g in r.get("gates", []) if g["name"] == "timing"
             for d in g.get("evidence", {}).get("dtypes", [])]
    if clock:
        for k in ("prepare", "child", "clock", "judge"):
            vals = [c.get(k, 0.0) for c in clock]
            print(f"timing {k}: median {statistics.median(vals):.3f} s, sum {sum(vals):.1f} s")
    if line := prepared_ahead_line(reports):
        print(line)
    inside = [d.get("worker_seconds", {}) for r in reports for g in r.get("gates", []) if g["name"] == "timing"
              for d in g.get("evidence", {}).get("dtypes", [])]
    if any(inside):
        print("timing worker (median s): " + ", ".join(
            f"{k} {statistics.median([w.get(k, 0.0) for w in inside if w]):.3f}"
            for k in ("sets_to_device", "first_calls", "warmup", "timed_loop")))
    print(f"children {parts['children']}, summed: spawn {parts['spawn_seconds']:.1f} s, inputs "
          f"{parts['inputs_seconds']:.1f} s, oracle {parts['oracle_seconds']:.1f} s, inside kernels {parts['kernel_seconds']:.1f} s, worker round trips "
          f"{parts['worker_round_trip_seconds']:.1f} s")
    phases = [r.get("environment", {}).get("worker_phases", {}) for r in reports]
    if any(phases):
        total = {k: sum(p.get(k, 0) for p in phases) for k in ("cases", "poison_seconds", "to_device_seconds",
                                                                 "kernel_seconds", "from_device_seconds",
                                                                 "check_seconds", "case_seconds", "reserve_seconds",
                                                                 "poison_release_seconds")}
        n = max(1, total["cases"])
        print(f"inside the CUDA workers' {total['cases']} cases (ms a case): poison {1e3 * total['poison_seconds'] / n:.2f}, "
              f"inputs to device {1e3 * total['to_device_seconds'] / n:.2f}, entry and sync {1e3 * total['kernel_seconds'] / n:.2f}, "
              f"outputs to host {1e3 * total['from_device_seconds'] / n:.2f}, inputs read back {1e3 * total['check_seconds'] / n:.2f}; "
              f"whole case {1e3 * total['case_seconds'] / n:.2f}; of the poisoning, the cache released in the turn "
              f"{1e3 * total['poison_release_seconds'] / n:.2f}; outside the turn: poison blocks reserved {1e3 * total['reserve_seconds'] / n:.2f}")
        counted = [p.get("driver_memory") for p in phases if p.get("driver_memory")]
        if counted:
            c = {k: sum(x.get(k, 0) for x in counted) for k in ("cases", "allocs", "frees")}
            print(f"the caching allocator's driver calls in {c['cases']} counted cases: {c['allocs']} allocations, "
                  f"{c['frees']} frees ({c['allocs'] / max(1, c['cases']):.2f} and {c['frees'] / max(1, c['cases']):.2f} a case)")
    # One child a kernel (the last CUDA child to load) says where its start went: beside the
    # parent's spawn time a child, which includes waiting for the driver behind other contexts.
    starts = [r.get("environment", {}).get("gpu", {}).get("startup_seconds") for r in reports]
    starts = [x for x in starts if x]
    if starts:
        keys = ("before_serve", "load_wait", "sandbox", "dlopen", "cuda_init", "context", "preload")
        print(f"a child's start, median of {len(starts)} (s): " + ", ".join(
            f"{k} {statistics.median([x.get(k, 0.0) for x in starts]):.3f}" for k in keys) +
            f"; the parent's spawn a child {parts['spawn_seconds'] / max(1, parts['children']):.3f}")
        pre = [r.get("environment", {}).get("gpu", {}).get("preloaded") for r in reports]
        pre = [x for x in pre if x]
        if pre:
            print(f"kernel functions preloaded at a child's start (median of {len(pre)}): "
                  f"{statistics.median([x.get('kernels', 0) for x in pre]):.0f} kernels of "
                  f"{statistics.median([x.get('symbols', 0) for x in pre]):.0f} function symbols")
    kids = max(1, parts["children"])
    print(f"the parent's spawn a child (s, mean of {parts['children']}): {parts['spawn_seconds'] / kids:.3f}, of it "
          f"waiting for the launcher {parts['spawn_lock_seconds'] / kids:.3f}, starting the zygote "
          f"{parts['spawn_zygote_start_seconds'] / kids:.3f}, the zygote's round trip "
          f"{parts['spawn_zygote_seconds'] / kids:.3f} (the clone {parts['spawn_clone_seconds'] / kids:.3f}); the rest is "
          f"the child's start and the load: the children's own context and first poisoning "
          f"{parts['child_context_seconds'] / kids:.3f}, before it {parts['child_before_context_seconds'] / kids:.3f} "
          f"(CPU children count 0 here)")
    # Every CUDA child's load on one clock with the parent's (environment.child_starts, sums a kernel).
    cs = [r.get("environment", {}).get("child_starts") for r in reports]
    cs = [x for x in cs if x]
    if cs:
        n = max(1, sum(x.get("children", 0) for x in cs))
        total = {k: sum(x.get(k, 0.0) for x in cs) for k in ("load_in_flight_seconds", "reply_in_flight_seconds",
                                                              "load_total_seconds")}
        print(f"a CUDA child's load (s, mean of {n}): {total['load_total_seconds'] / n:.3f} from the Load frame written "
              f"to the reply read, of it the Load frame in flight {total['load_in_flight_seconds'] / n:.3f} and the reply "
              f"in flight {total['reply_in_flight_seconds'] / n:.3f}; the spawn before it (launcher, zygote, clone) "
              f"{(parts['spawn_seconds'] - total['load_total_seconds']) / kids:.3f}")
    # verify batches: each process's wall (walls/NAME.txt: start end) against its report's seconds.
    outside, spans = [], []
    for path in sorted(glob.glob(os.path.join(folder, "walls", "*.txt"))):
        name = os.path.splitext(os.path.basename(path))[0]
        try:
            with open(path) as f:
                t0, t1 = (float(x) for x in f.read().split())
            with open(os.path.join(folder, "reports", name + ".json")) as f:
                reported = json.load(f).get("seconds", 0.0)
        except (OSError, ValueError):
            continue
        outside.append((t1 - t0, reported))
        spans.append((t0, t1))
    window = steady_state(spans) if spans else None
    if window and ceiling:
        # The whole batch's share includes its ramp and tail, which a corpus of thousands pays once.
        seconds, done = window
        rate = done / seconds * 3600
        print(f"steady state (every process in flight, {seconds:.1f} s of the {wall:.1f} s wall): {rate:.0f} kernels/hour, "
              f"{rate / ceiling:.0%} of the ceiling; the ramp and tail are the rest of the wall")
    if outside:
        walls = [w for w, _ in outside]
        gaps = [w - r for w, r in outside]
        print(f"verify processes: wall median {statistics.median(walls):.2f} s, of it outside the report's seconds "
              f"median {statistics.median(gaps):.3f} s (mean {statistics.mean(gaps):.3f}; LibTorch's load, argument "
              f"and schema checks, exit): {sum(gaps) / max(1e-9, sum(walls)):.1%} of the processes' time")
    methods = sorted({r.get("environment", {}).get("gpu", {}).get("poison_method", "") for r in reports} - {""})
    if methods:
        print("device poisoning: " + ", ".join(methods))
    if any(turns):
        held = [t.get("held_seconds", 0.0) for t in turns]
        waited = [t.get("waited_seconds", 0.0) for t in turns]
        print(f"GPU turns: {sum(t.get('turns', 0) for t in turns)} ({sum(t.get('overruns', 0) for t in turns)} past "
              f"their bound, {sum(t.get('beside_others', 0) for t in turns)} granted beside others while a child "
              f"overran), held {sum(held):.1f} s "
              f"(median {statistics.median(held):.2f} s a kernel), waited {sum(waited):.1f} s; "
              f"held / wall = {sum(held) / wall:.2f} (1.0: the GPU's turns never idle)")
        # The two host-wide serial resources side by side, per child: the driver's context creation
        # (the floor measured in this run) and the GPU's turns (held exclusively). Their sum against
        # the run's wall per child says how much of the two overlapped (thirty-first session: 0.137 s
        # a child at 8x4, where bare children started in slots take 0.070).
        kids = max(1, parts["children"])
        if floor_s > 0:
            print(f"per child: {wall / kids:.4f} s of wall; contexts (floor) {floor_s / kids:.4f} s + turns held "
                  f"{sum(held) / kids:.4f} s = {(floor_s + sum(held)) / kids:.4f} s of the two serial resources")
        slots = {}
        for t in turns:
            for b in t.get("by_length", []):
                key = b.get("up_to_ms")
                n_s = slots.setdefault(key, [0, 0.0])
                n_s[0] += b.get("turns", 0)
                n_s[1] += b.get("held_seconds", 0.0)
        if slots:
            order = sorted(slots, key=lambda k: float("inf") if k is None else k)
            print("turns by length: " + ", ".join(
                f"{'over 1000' if k is None else 'up to %g' % k} ms: {slots[k][0]} turns, {slots[k][1]:.1f} s" for k in order))
    return 0


if __name__ == "__main__":
    sys.exit(main())
