#!/usr/bin/env python3
"""Fresh CUDA contexts one after another in N slots, as a run's gates start them: the steady floor.

ctx_settings_bench.py measures the throughput ceiling's unit as a burst: 16 children released at
once, wall / 16. A run starts its children as slots free up instead, and each child does work
between its context's creation and its teardown (cases, each holding the GPU's turn). This bench
does the same with nothing of gauntlet's in it: N slots, each forking child after child for
SECONDS; a child starts CUDA under one setting (ctx_settings_bench.SETTINGS), runs CASES small
kernels, each synchronized under an exclusive flock (the turn), and exits. Contexts finished per
second against the burst's serial cost says how much of the ceiling any scheduling of those
children can reach (issue 18: the runs reach 70-80% of the burst's ceiling).

usage: ctx_steady_bench.py SECONDS CASES[xCYCLES][mMIB] SETTING N [N ...]
(CASES x CYCLES: each case a kernel that spins CYCLES GPU clock cycles, torch.cuda._sleep, instead of
a tiny add; 35x2000000 is about 35 turns of 1.2 ms, a gauntlet child's turn-held time. If contexts
and turns do not overlap, the contexts a second fall by the turns' share.
mMIB: before each case's turn the child gives its cache back to the driver and takes MIB MiB afresh,
a cudaFree and a cudaMalloc a case, as a gauntlet child's poison reservation may: if the driver's
memory calls and context creation queue on one lock, the contexts a second fall.)
prints a markdown table and `steady_seconds_per_context_N=S` lines.
"""
import fcntl
import os
import sys
import time

import torch

from ctx_settings_bench import SETTINGS, apply_setting, run as burst


def child(setting, cases, lock_path, cycles=0, realloc_mib=0):
    if apply_setting(setting):  # namespaces made and, at exit, torn down, child after child (needs root)
        os._exit(2)
    torch.cuda.init()
    x = torch.ones(1 << 18, device="cuda")
    torch.cuda.synchronize()
    with open(lock_path, "w") as lock:
        for _ in range(cases):
            if realloc_mib:
                torch.cuda.empty_cache()
                torch.empty(realloc_mib << 20, dtype=torch.uint8, device="cuda")
            fcntl.flock(lock, fcntl.LOCK_EX)
            if cycles:
                torch.cuda._sleep(cycles)
            else:
                x.add_(1.0)
            torch.cuda.synchronize()
            fcntl.flock(lock, fcntl.LOCK_UN)
    os._exit(0)


def steady(n, seconds, cases, setting, cycles=0, realloc_mib=0):
    lock_path = f"/tmp/ctx-steady-{os.getpid()}.lock"
    deadline = time.monotonic() + seconds
    running = {}
    done = failed = 0

    def start():
        pid = os.fork()
        if pid == 0:
            child(setting, cases, lock_path, cycles, realloc_mib)
        running[pid] = True

    t0 = time.monotonic()
    for _ in range(n):
        start()
    while running:
        pid, status = os.wait()
        running.pop(pid, None)
        done += 1
        failed += status != 0
        if time.monotonic() < deadline:
            start()
    wall = time.monotonic() - t0
    os.unlink(lock_path)
    return wall, done, failed


def main():
    seconds, name = float(sys.argv[1]), sys.argv[3]
    spec, _, realloc_mib = sys.argv[2].partition("m")
    cases, _, cycles = spec.partition("x")
    cases, cycles, realloc_mib = int(cases), int(cycles or 0), int(realloc_mib or 0)
    slots = [int(a) for a in sys.argv[4:]] or [16]
    setting = SETTINGS[name]
    burst_wall = burst(16, setting)[0]
    print(f"setting: {name}; {cases} cases a child" + (f" of {cycles} GPU cycles each" if cycles else "") +
          (f", each after a cudaFree and a cudaMalloc of {realloc_mib} MiB" if realloc_mib else "") +
          f"; burst of 16 at once: {burst_wall / 16:.4f} s a context (the ceiling's unit)")
    print(f"| slots | children | wall s | s a context | contexts/s | of the burst's rate | failed |")
    print("|---|---|---|---|---|---|---|")
    for n in slots:
        wall, done, failed = steady(n, seconds, cases, setting, cycles, realloc_mib)
        per = wall / max(1, done)
        print(f"| {n} | {done} | {wall:.2f} | {per:.4f} | {done / wall:.2f} | {(burst_wall / 16) / per:.0%} | {failed} |",
              flush=True)
        print(f"steady_seconds_per_context_{n}={per:.4f}")


if __name__ == "__main__":
    main()
