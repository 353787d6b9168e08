#!/usr/bin/env python3
"""Markdown tables for docs/benchmarks.md from a showdown report.

  python3 scripts/benchmark_tables.py REPORT.json [--threads N]
      [--workload FAMILY/NAME ...] [--pair FAMILY/NAME:ROW_A:ROW_B ...]
      [--skip CONTENDER_PART ...]

For each selected workload (all by default): every contender's median
throughput (million operations per second) at one thread and at N threads
(2 by default), and the first (larder) row's throughput over that
contender's at one thread and at N threads: the median of the per-round
ratios, then the lowest and the highest. The showdown's rounds are interleaved, so a round's
ratio compares rows measured in the same phase of the host; that is why the
ratios are taken round by round rather than as a ratio of two medians.

--pair prints the same per-round ratio for two named rows of one workload
(ROW_A over ROW_B; a row is named by a part of its contender name), for the
comparisons that do not involve the first row.

The instruction tables come from scripts/instructions.sh.
"""

import argparse
import json


def mops(ops_per_sec):
    """Million operations per second, three digits; slow workloads (a 1 ms
    init per key) in operations per second."""
    m = ops_per_sec / 1e6
    if m < 0.01:
        return f"{ops_per_sec:,.0f}/s"
    if m >= 100:
        return f"{m:.0f}"
    if m >= 10:
        return f"{m:.1f}"
    if m >= 1:
        return f"{m:.2f}"
    return f"{m:.3g}"


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def ratio(a_rounds, b_rounds):
    per_round = [a / b for a, b in zip(a_rounds, b_rounds) if b > 0]
    return f"{median(per_round):.2f} ({min(per_round):.2f}-{max(per_round):.2f})"


def find(workloads, selector):
    family, name = selector.split("/", 1)
    for w in workloads:
        if w["family"] == family and w["workload"] == name:
            return w
    raise SystemExit(f"no workload {selector!r} in the report")


def row(workload, part):
    matches = [r for r in workload["contenders"] if part in r["name"]]
    if not matches:
        raise SystemExit(f"no contender matching {part!r} in {workload['workload']!r}")
    exact = [r for r in matches if r["name"] == part]
    return (exact or matches)[0]


def cell(row, threads):
    return next(c for c in row["cells"] if c["threads"] == threads)


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("report")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workload", action="append", default=[])
    parser.add_argument("--pair", action="append", default=[])
    parser.add_argument("--skip", action="append", default=[],
                        help="leave out contenders whose name contains this")
    args = parser.parse_args()
    report = json.load(open(args.report))
    workloads = report["workloads"]
    chosen = [find(workloads, s) for s in args.workload] or workloads
    n = args.threads
    for w in chosen:
        print(f"\n{w['family']} / {w['workload']}:\n")
        print(f"| contender | 1 thread | {n} threads | first row over this, 1 thread | ... {n} threads |")
        print("|---|---:|---:|---:|---:|")
        first = w["contenders"][0]
        for i, r in enumerate(w["contenders"]):
            if i > 0 and any(part in r["name"] for part in args.skip):
                continue
            by = {c["threads"]: c for c in r["cells"]}
            one = mops(by[1]["ops_per_sec"]) if 1 in by else ""
            versus = "" if i == 0 else ratio(cell(first, n)["rounds"], by[n]["rounds"])
            versus_one = ""
            if i > 0 and 1 in by and n != 1:
                versus_one = ratio(cell(first, 1)["rounds"], by[1]["rounds"])
            name = r["name"] + (" (over its bound)" if r.get("over_bound") else "")
            print(f"| {name} | {one} | {mops(by[n]['ops_per_sec'])} | {versus_one} | {versus} |")
    if args.pair:
        print(f"\n| workload | row | over | {n} threads: median (lowest-highest) |")
        print("|---|---|---|---:|")
        for spec in args.pair:
            selector, a, b = spec.split(":")
            w = find(workloads, selector)
            ra, rb = row(w, a), row(w, b)
            print(f"| {w['workload']} | {ra['name']} | {rb['name']} | "
                  f"{ratio(cell(ra, n)['rounds'], cell(rb, n)['rounds'])} |")


if __name__ == "__main__":
    main()
