#!/usr/bin/env python3
"""Where a batch's host CPU went: CPU seconds by process name and by thread name, sampled from /proc.

usage: cpu_by_process.py STOP_FILE [INTERVAL_S]   (samples until STOP_FILE exists, then prints a table)
       cpu_by_process.py --self-test

A context costs the driver more beside busy CPUs (ctx_settings_bench.py, "beside 16 busy CPUs"), so
the question is which of gauntlet's processes keep them busy. Each thread's utime + stime is read
every INTERVAL_S (default 0.2 s); a thread's CPU is its last sample less its first (a thread first
seen after the start counts from zero: it started during the batch). A thread that lives and dies
between two samples is missed, so the table is a lower bound; the sampler's own CPU is printed.
Each row also gives the kernel's share (stime): a context's creation is the driver's work in the
kernel, so system time elsewhere (clones, namespaces, page faults) is what it may queue behind.
"""
import os
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def read_threads():
    """{(pid, tid): (process name, thread name, cpu seconds, of them system)} for every thread readable now."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                pname = f.read().strip()
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            # The name is in parentheses and may hold spaces; the fields after it are fixed.
            tname = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2:].split()
            out[(pid, tid)] = (pname, tname, (int(fields[11]) + int(fields[12])) / TICK, int(fields[12]) / TICK)
    return out


def accumulate(first, last, seen_at_start):
    """[CPU s, of them system] by process name and by (process, thread) name from first and last samples."""
    by_process, by_thread = {}, {}
    for key, (pname, tname, cpu, system) in last.items():
        base, base_system = first[key][2:4] if key in seen_at_start else (0.0, 0.0)
        used, used_system = max(0.0, cpu - base), max(0.0, system - base_system)
        for table_, name in ((by_process, pname), (by_thread, (pname, tname))):
            row = table_.setdefault(name, [0.0, 0.0])
            row[0] += used
            row[1] += used_system
    return by_process, by_thread


def table(by_process, by_thread, wall, top=25):
    total = sum(cpu for cpu, _ in by_process.values())
    total_system = sum(system for _, system in by_process.values())
    lines = [f"host CPU by process over {wall:.1f} s: {total:.1f} CPU s sampled ({total / max(wall, 1e-9):.2f} cores), "
             f"{total_system:.1f} s of it system",
             "| process | CPU s | of it system | cores | share |", "|---|---|---|---|---|"]
    for name, (s, system) in sorted(by_process.items(), key=lambda kv: -kv[1][0])[:top]:
        lines.append(f"| {name} | {s:.1f} | {system:.1f} | {s / max(wall, 1e-9):.2f} | {s / max(total, 1e-9):.0%} |")
    lines += ["| process: thread | CPU s | of it system | cores | share |", "|---|---|---|---|---|"]
    for (p, t), (s, system) in sorted(by_thread.items(), key=lambda kv: -kv[1][0])[:top]:
        lines.append(f"| {p}: {t} | {s:.1f} | {system:.1f} | {s / max(wall, 1e-9):.2f} | {s / max(total, 1e-9):.0%} |")
    return "\n".join(lines)


def self_test():
    first = {("1", "1"): ("gauntlet", "gauntlet", 10.0, 4.0), ("2", "2"): ("old", "old", 5.0, 1.0)}
    last = {("1", "1"): ("gauntlet", "gauntlet", 12.5, 5.0), ("1", "9"): ("gauntlet", "omp", 1.0, 0.25),
            ("3", "3"): ("gauntlet-worker", "cuda-EvtHandlr", 0.5, 0.5)}
    by_process, by_thread = accumulate(first, last, set(first))
    checks = [(abs(by_process["gauntlet"][0] - 3.5) < 1e-9, by_process),
              (abs(by_process["gauntlet"][1] - 1.25) < 1e-9, ("system", by_process)),
              (abs(by_thread[("gauntlet", "omp")][0] - 1.0) < 1e-9, by_thread),
              ("| gauntlet | 3.5 | 1.2" in table(by_process, by_thread, 1.0), table(by_process, by_thread, 1.0)),
              ("old" not in by_process, "a thread gone before the end counts nothing: it has no last sample")]
    bad = [str(m) for ok, m in checks if not ok]
    print("\n".join(bad) or "cpu_by_process self-test: ok")
    return 1 if bad else 0


def main():
    if sys.argv[1:2] == ["--self-test"]:
        return self_test()
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    stop, interval = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
    t0 = time.time()
    first = read_threads()
    seen_at_start = set(first)
    last = dict(first)
    while not os.path.exists(stop):
        time.sleep(interval)
        last.update(read_threads())  # a thread that exited keeps its last sample
    by_process, by_thread = accumulate(first, last, seen_at_start)
    print(table(by_process, by_thread, time.time() - t0))
    own = os.times()
    print(f"the sampler's own CPU: {own.user + own.system:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
