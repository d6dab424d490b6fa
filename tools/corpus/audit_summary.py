#!/usr/bin/env python3
"""Figures of a `gauntlet audit --json` file, for the docs: pairs, how many were verifiable,
verdicts, per-gate failure counts and categories, the not-verifiable reasons, gate seconds.

  tools/corpus/audit_summary.py AUDIT.json [--wall SECONDS] [--before EARLIER.json] [--markdown]
--wall: the audit's wall time, for kernels per hour. --before: the same database's report before
this run (a resumed audit): the rate counts only the kernels this run completed. Exit 2 when a
file is unreadable.
"""
import argparse
import collections
import json
import sys


def reason_head(text, width=110):
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 3] + "..."


def read_records(path):
    try:
        with open(path, encoding="utf-8") as f:
            records = json.load(f)
        assert isinstance(records, list)
        return records
    except (OSError, ValueError, AssertionError) as e:
        print("audit_summary: %s: not an audit JSON array (%s)" % (path, e), file=sys.stderr)
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("audit_json")
    ap.add_argument("--wall", type=float, default=0.0)
    ap.add_argument("--before", default="")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    records = read_records(a.audit_json)
    earlier = read_records(a.before) if a.before else []
    if records is None or earlier is None:
        return 2
    done_before = {(r.get("kernel_hash"), r.get("entry")) for r in earlier if r.get("complete")}
    verdicts = collections.Counter()
    failing = collections.Counter()      # gate -> kernels failing it
    categories = collections.Counter()   # (gate, category) -> count
    harness = collections.Counter()      # gate -> harness-error count
    not_verifiable = collections.Counter()
    gate_seconds = collections.defaultdict(float)
    time_parts = collections.defaultdict(float)  # evidence.time, summed over gates
    contracts = collections.Counter()    # bound / why not (a problem's get_inputs() contract)
    describe_seconds = []
    complete = 0
    this_run = this_run_verifiable = 0  # completed by this run (all of them without --before)
    for r in records:
        verdicts[r.get("verdict", "?")] += 1
        complete += bool(r.get("complete"))
        if r.get("complete") and (r.get("kernel_hash"), r.get("entry")) not in done_before:
            this_run += 1
            this_run_verifiable += not r.get("entry_error")
        binding = (r.get("environment") or {}).get("contract")
        if isinstance(binding, dict):
            contracts["bound" if binding.get("bound") else "not bound: " + reason_head(binding.get("why_not", ""), 70)] += 1
            if binding.get("describe_seconds") is not None:
                describe_seconds.append(float(binding["describe_seconds"]))
        if r.get("entry_error"):
            not_verifiable[reason_head(r["entry_error"], 90)] += 1
        for g in r.get("gates", []):
            name, status = g.get("name", "?"), g.get("status", "?")
            gate_seconds[name] += float(g.get("seconds", 0) or 0)
            for part, value in ((g.get("evidence") or {}).get("time") or {}).items():
                if part.endswith("_seconds"):
                    time_parts[part[: -len("_seconds")]] += float(value or 0)
            if status == "harness-error" or (status == "error" and g.get("category") == "harness-error"):
                harness[name] += 1
                categories[(name, "harness-error")] += 1
            elif status == "fail":
                failing[name] += 1
                categories[(name, g.get("category", ""))] += 1
            elif status == "error":
                categories[(name, g.get("category", ""))] += 1
    total = len(records)
    verifiable = total - sum(not_verifiable.values())
    lines = []
    lines.append("kernels %d, verifiable %d, complete %d" % (total, verifiable, complete))
    lines.append("verdicts: " + ", ".join("%s %d" % kv for kv in verdicts.most_common()))
    lines.append("failing gates (kernels): " + (", ".join("%s %d" % kv for kv in failing.most_common()) or "none"))
    lines.append("categories (gate/category: count): " +
                 (", ".join("%s/%s %d" % (g, c, n) for (g, c), n in categories.most_common()) or "none"))
    lines.append("harness errors by gate: " + (", ".join("%s %d" % kv for kv in harness.most_common()) or "none"))
    lines.append("gate seconds (summed over kernels): " +
                 ", ".join("%s %.0f" % (g, s) for g, s in sorted(gate_seconds.items(), key=lambda kv: -kv[1])))
    if time_parts:
        lines.append("where the gate seconds went (summed evidence.time; oracle and round trips overlap): " +
                     ", ".join("%s %.0f" % kv for kv in sorted(time_parts.items(), key=lambda kv: -kv[1])))
    if contracts:
        lines.append("problem contracts (get_inputs()): " + ", ".join("%s %d" % kv for kv in contracts.most_common()))
    if describe_seconds:
        d = sorted(describe_seconds)
        lines.append("describing get_inputs() (one reference child per kernel): median %.1f s, max %.1f s, total %.0f s" %
                     (d[len(d) // 2], d[-1], sum(d)))
    if a.wall > 0:
        lines.append("wall %.0f s: %d kernels completed by this run (%d verifiable), %.0f per hour (%.0f verifiable)" %
                     (a.wall, this_run, this_run_verifiable, this_run * 3600.0 / a.wall,
                      this_run_verifiable * 3600.0 / a.wall))
    for reason, n in not_verifiable.most_common():
        lines.append("not verifiable x%d: %s" % (n, reason))
    prefix = "- " if a.markdown else ""
    print("\n".join(prefix + l for l in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
