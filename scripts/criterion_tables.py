#!/usr/bin/env python3
"""Turns criterion's saved estimates into the Markdown tables of design/criterion-results.md.

Usage: cargo bench --bench <name>  (or plain `cargo bench`), then
       python3 scripts/criterion_tables.py [target/criterion] [group-prefix ...]

Every bench measures element throughput (one element = one operation, summed over
threads), so a cell is 1e3 / (mean ns per operation) = million operations per second.
The first row of a group is larder's; "x" gives larder's throughput over the row's.
"""
import json
import os
import sys
from collections import OrderedDict


def load(root):
    groups = OrderedDict()
    for dirpath, _dirs, files in os.walk(root):
        if "benchmark.json" not in files or os.path.basename(dirpath) != "new":
            continue
        with open(os.path.join(dirpath, "benchmark.json")) as f:
            bench = json.load(f)
        with open(os.path.join(dirpath, "estimates.json")) as f:
            est = json.load(f)
        mean_ns = est["mean"]["point_estimate"]
        lo = est["mean"]["confidence_interval"]["lower_bound"]
        hi = est["mean"]["confidence_interval"]["upper_bound"]
        group = bench["group_id"]
        row = bench["function_id"] or bench["value_str"]
        col = bench["value_str"] or ""
        groups.setdefault(group, OrderedDict()).setdefault(row, {})[col] = (
            1e3 / mean_ns,
            1e3 / hi,
            1e3 / lo,
        )
    return groups


# The row every other row is compared with, where a family has several
# larder rows; otherwise the first larder row.
PRIMARY = {
    "snapshot/load": "larder Snapshot::load",
    "typed/": "larder TypedCache::get_or_init",
    "ordered/": "larder OrderedIndex",
}


def fmt(mops):
    """Million ops/s with three significant digits (slow workloads are < 0.01)."""
    if mops >= 100:
        return f"{mops:.0f}"
    if mops >= 10:
        return f"{mops:.1f}"
    if mops >= 1:
        return f"{mops:.2f}"
    return f"{mops:.3g}"


def thread_key(col):
    digits = "".join(c for c in col if c.isdigit())
    return (int(digits) if digits else 0, col)


def render(groups, prefixes):
    out = []
    for group in sorted(groups):
        if prefixes and not any(group.startswith(p) for p in prefixes):
            continue
        rows = groups[group]
        cols = sorted({c for r in rows.values() for c in r}, key=thread_key)
        primary = next((v for k, v in PRIMARY.items() if group.startswith(k)), None)
        names = sorted(rows, key=lambda n: (n != primary, not n.startswith("larder"), n))
        first = rows[names[0]]
        out.append(f"#### {group}\n")
        out.append("| contender | " + " | ".join(cols) + " |")
        out.append("|---|" + "---:|" * len(cols))
        for name in names:
            cells = []
            for c in cols:
                if c not in rows[name]:
                    cells.append("")
                    continue
                mops, lo, hi = rows[name][c]
                cell = fmt(mops)
                if name != names[0] and c in first:
                    cell += f" (x{first[c][0] / mops:.2f})"
                cells.append(cell)
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    args = sys.argv[1:]
    root = "target/criterion"
    if args and os.path.isdir(args[0]):
        root = args.pop(0)
    print(render(load(root), args))
