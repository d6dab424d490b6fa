#!/usr/bin/env python3
"""Figures of a `gauntlet audit --json` file, for the docs: pairs, how many were verifiable,
verdicts, per-gate failure counts and categories, the not-verifiable reasons, gate seconds.

  tools/corpus/audit_summary.py AUDIT.json [--wall SECONDS] [--markdown]
--wall: the audit's wall time, for kernels per hour. Exit 2 when the file is unreadable.
"""
import argparse
import collections
import json
import sys


def reason_head(text, width=110):
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 3] + "..."


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("audit_json")
    ap.add_argument("--wall", type=float, default=0.0)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    try:
        with open(a.audit_json, encoding="utf-8") as f:
            records = json.load(f)
        assert isinstance(records, list)
    except (OSError, ValueError, AssertionError) as e:
        print("audit_summary: %s: not an audit JSON array (%s)" % (a.audit_json, e), file=sys.stderr)
        return 2
    verdicts = collections.Counter()
    failing = collections.Counter()      # gate -> kernels failing it
    categories = collections.Counter()   # (gate, category) -> count
    harness = collections.Counter()      # gate -> harness-error count
    not_verifiable = collections.Counter()
    gate_seconds = collections.defaultdict(float)
    complete = 0
    for r in records:
        verdicts[r.get("verdict", "?")] += 1
        complete += bool(r.get("complete"))
        if r.get("entry_error"):
            not_verifiable[reason_head(r["entry_error"], 90)] += 1
        for g in r.get("gates", []):
            name, status = g.get("name", "?"), g.get("status", "?")
            gate_seconds[name] += float(g.get("seconds", 0) or 0)
            if status == "fail":
                failing[name] += 1
                categories[(name, g.get("category", ""))] += 1
            elif status == "error":
                if g.get("category") == "harness-error":
                    harness[name] += 1
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
    if a.wall > 0:
        lines.append("wall %.0f s: %.0f complete kernels per hour" % (a.wall, complete * 3600.0 / a.wall))
    for reason, n in not_verifiable.most_common():
        lines.append("not verifiable x%d: %s" % (n, reason))
    prefix = "- " if a.markdown else ""
    print("\n".join(prefix + l for l in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
