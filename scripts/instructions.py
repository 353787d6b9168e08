#!/usr/bin/env python3
"""Instruction counts per operation from the instruction benches.

Reads the summaries that `cargo bench --bench instructions -- --save-summary=json`
leaves under target/gungraun/, divides each benchmark's instruction count
(callgrind's `Ir`) by the operations it performs (`OPS` in
benches/instructions/inputs.rs), and then:

  table   prints one Markdown table per primitive: instructions per operation,
          larder's rows first, each peer's count as a multiple of larder's;
  check   compares every larder row with benches/instructions/baselines.json
          and exits 1, naming each row, when one grew more than the tolerance
          (3%) or when a larder row has no baseline or a baseline no row;
  update  rewrites baselines.json from this run (commit it on its own, saying
          why the counts moved).

Used through scripts/instructions.sh.
"""

import datetime
import glob
import json
import os
import platform
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUMMARIES = os.path.join(ROOT, "target", "gungraun", "larder", "instructions")
BASELINES = os.path.join(ROOT, "benches", "instructions", "baselines.json")
INPUTS = os.path.join(ROOT, "benches", "instructions", "inputs.rs")
TOLERANCE = 0.03
GROUPS = ["snapshot", "indexed", "ordered", "lru", "typed"]
TITLES = {
    "snapshot": "Snapshot",
    "indexed": "IndexedStore",
    "ordered": "OrderedIndex",
    "lru": "LruCache",
    "typed": "TypedCache",
}


def ops():
    """The operation count every benchmark performs, read from the bench."""
    text = open(INPUTS).read()
    match = re.search(r"pub const OPS: usize = ([0-9_]+);", text)
    if not match:
        sys.exit(f"no `pub const OPS: usize = N;` in {INPUTS}")
    return int(match.group(1).replace("_", ""))


def measured():
    """{(group, function, id): instructions per operation} of this run."""
    per_op = ops()
    rows = {}
    for path in glob.glob(os.path.join(SUMMARIES, "*", "*", "summary.json")):
        summary = json.load(open(path))
        profile = next(p for p in summary["profiles"] if p["tool"] == "Callgrind")
        ir = profile["data"]["total"]["metrics"]["Ir"]["values"]["new"]
        key = (summary["group"], summary["function_name"], summary["id"])
        rows[key] = ir / per_op
    if not rows:
        sys.exit(f"no summaries under {SUMMARIES}: run scripts/instructions.sh")
    return rows


def name(key):
    return f"{key[0]}::{key[1]} {key[2]}"


def is_larder(key):
    return key[2].startswith("larder")


def bench_order():
    """[(group, function)] in the order the bench files list them
    (`library_benchmark_group!(name = G; benchmarks = f, g, ...)`), and
    {function: [id, ...]} in the order of their `#[bench::id(...)]` lines."""
    listed = []
    ids = {}
    for path in sorted(glob.glob(os.path.join(os.path.dirname(INPUTS), "*.rs"))):
        text = open(path).read()
        for group, names in re.findall(r"name\s*=\s*(\w+);\s*benchmarks\s*=\s*([\w,\s]+)\)", text):
            listed.extend((group, n.strip()) for n in names.split(",") if n.strip())
        pending = []
        for line in text.splitlines():
            bench = re.match(r"\s*#\[bench::(\w+)", line)
            function = re.match(r"\s*(?:pub )?fn (\w+)", line)
            if bench:
                pending.append(bench.group(1))
            elif function and pending:
                group = next((g for g, f in listed if f == function.group(1)), None)
                ids[(group, function.group(1))] = pending
                pending = []
    return listed, ids


def order(rows):
    """Keys grouped by primitive and operation, in the bench's order,
    larder's rows first within an operation."""
    listed, ids = bench_order()
    functions = []
    for group, function, _ in rows:
        if (group, function) not in functions:
            functions.append((group, function))
    functions.sort(
        key=lambda gf: (
            GROUPS.index(gf[0]) if gf[0] in GROUPS else 99,
            listed.index(gf) if gf in listed else 99,
        )
    )
    out = []
    for group, function in functions:
        keys = [k for k in rows if k[0] == group and k[1] == function]
        written = ids.get((group, function), [])
        keys.sort(key=lambda k: (not is_larder(k), written.index(k[2]) if k[2] in written else 99, k[2]))
        out.extend(keys)
    return out


def table(rows):
    keys = order(rows)
    for group in [g for g in GROUPS if any(k[0] == g for k in keys)]:
        print(f"\n### {TITLES.get(group, group)}\n")
        print("| operation | contender | instructions / op | x larder |")
        print("|---|---|---:|---:|")
        for key in [k for k in keys if k[0] == group]:
            first = next(k for k in keys if k[:2] == key[:2])
            ratio = ""
            if not is_larder(key) and is_larder(first):
                ratio = f"{rows[key] / rows[first]:.2f}"
            print(f"| {key[1]} | {key[2]} | {rows[key]:,.1f} | {ratio} |")


def load_baselines():
    if not os.path.exists(BASELINES):
        sys.exit(f"no baselines at {BASELINES}: run scripts/instructions.sh --update")
    data = json.load(open(BASELINES))
    return {tuple(r["row"].replace("::", " ").split(" ")): r["per_op"] for r in data["rows"]}


def check(rows, partial):
    base = load_baselines()
    failures = []
    print(f"larder rows against {os.path.relpath(BASELINES, ROOT)} (fails above +{TOLERANCE:.0%}):")
    for key in order(rows):
        if not is_larder(key):
            continue
        if key not in base:
            failures.append(f"{name(key)}: no baseline (new row: run --update and commit it)")
            continue
        change = rows[key] / base[key] - 1
        mark = "REGRESSED" if change > TOLERANCE else "ok"
        print(f"  {mark:9} {name(key):45} {base[key]:12,.1f} -> {rows[key]:12,.1f}  {change:+.2%}")
        if change > TOLERANCE:
            failures.append(f"{name(key)}: {base[key]:,.1f} -> {rows[key]:,.1f} instructions/op ({change:+.2%})")
    for key in base:
        if is_larder(key) and key not in rows and not partial:
            failures.append(f"{name(key)}: has a baseline but was not measured")
    if failures:
        print("\ninstruction-count gate FAILED:")
        for failure in failures:
            print(f"  {failure}")
        sys.exit(1)
    print("instruction-count gate passed")


def command(args):
    try:
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def update(rows):
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    data = {
        "about": "Instructions per operation (callgrind Ir / ops) of benches/instructions; "
        "scripts/instructions.sh --check fails when a larder row grows more than 3%.",
        "ops": ops(),
        "commit": command(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]),
        "date": datetime.date.today().isoformat(),
        "machine": f"{os.cpu_count()} cores, {cpu}, {platform.system()} {platform.machine()}",
        "rustc": command(["rustc", "--version"]),
        "valgrind": command(["valgrind", "--version"]),
        "rows": [{"row": name(k), "per_op": round(rows[k], 1)} for k in order(rows)],
    }
    # One row a line, so a baseline change reads as a diff of the rows moved.
    rows_text = ",\n".join("  " + json.dumps(r) for r in data.pop("rows"))
    head = json.dumps(data, indent=1)[:-2]
    with open(BASELINES, "w") as out:
        out.write(f"{head},\n \"rows\": [\n{rows_text}\n ]\n}}\n")
    print(f"wrote {len(rows)} rows to {os.path.relpath(BASELINES, ROOT)}")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "table"
    # With a filter, rows not run are not missing.
    partial = "--partial" in sys.argv[2:]
    rows = measured()
    if mode == "table":
        table(rows)
    elif mode == "check":
        table(rows)
        print()
        check(rows, partial)
    elif mode == "update":
        if partial:
            sys.exit("update takes a whole run: no filter")
        table(rows)
        update(rows)
    else:
        sys.exit("usage: instructions.py [table|check|update]")


if __name__ == "__main__":
    main()
