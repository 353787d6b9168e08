#!/usr/bin/env python3
"""Instructions and estimated cycles per operation from the instruction benches.

Reads the summaries that `cargo bench -p larder -p kube-compare --bench
instructions -- --save-summary=json` leaves under target/gungraun/ (larder's
bench, benches/instructions/, and kube-compare's, which sets larder's
Kubernetes store beside kube-runtime's), takes two figures of each benchmark
and divides them by the operations it performs (`OPS` in
benches/instructions/inputs.rs, or the constant OPS_CONSTANTS names for the
benchmarks that perform another count):

  instructions  callgrind's `Ir`;
  est. cycles   gungraun's `EstimatedCycles`, from callgrind's cache
                simulation (`--cache-sim=yes`, the geometry pinned by
                scripts/instructions.sh): every instruction fetch and data
                access that hits L1 counts 1, one that misses L1 and hits
                the last level 5, one that misses the last level 35
                (`cycles` below; design/instruction-counts.md cites
                gungraun's source).

and then:

  table   prints one Markdown table per primitive: both figures per
          operation, larder's rows first, each peer's as a multiple of
          larder's;
  check   compares every larder row with benches/instructions/baselines.json
          and exits 1, naming the row and the figure, when either grew more
          than the tolerance (3%), when a larder row has no baseline or a
          baseline no row, or when the run's cache geometry is not the
          baselines';
  update  rewrites baselines.json from this run (commit it on its own, saying
          why the figures moved).

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
# Where gungraun leaves each bench's summaries (its home, then the package
# and the bench's name).
SUMMARIES = [
    os.path.join(ROOT, "target", "gungraun", "larder", "instructions"),
    os.path.join(ROOT, "target", "gungraun", "kube-compare", "instructions"),
]
BASELINES = os.path.join(ROOT, "benches", "instructions", "baselines.json")
INPUTS = os.path.join(ROOT, "benches", "instructions", "inputs.rs")
KUBE_BENCH = os.path.join(ROOT, "kube-compare", "benches", "instructions", "kube.rs")
# The bench files whose groups and rows are listed (their order is the
# tables' order).
BENCH_FILES = sorted(glob.glob(os.path.join(os.path.dirname(INPUTS), "*.rs"))) + [KUBE_BENCH]
TOLERANCE = 0.03
GROUPS = ["snapshot", "indexed", "ordered", "lru", "typed", "kube"]
# (key in baselines.json, gungraun's metric, table heading, name in messages)
FIGURES = [
    ("instructions", "Ir", "instructions / op", "instructions"),
    ("cycles", "EstimatedCycles", "est. cycles / op", "est. cycles"),
]
TITLES = {
    "snapshot": "Snapshot",
    "indexed": "IndexedStore",
    "ordered": "OrderedIndex",
    "lru": "LruCache",
    "typed": "TypedCache",
    "kube": "Kubernetes: larder beside kube-runtime (100,000 pods)",
}
# The benchmarks that perform another count of operations than `OPS` of
# benches/instructions/inputs.rs (each of them costly under callgrind), and
# the bench file and constant that count them. Every `kube` row has one.
INDEXED_BENCH = os.path.join(ROOT, "benches", "instructions", "indexed.rs")
OPS_CONSTANTS = {
    ("indexed", "replace"): (INDEXED_BENCH, "RELISTS"),
    ("indexed", "by_index"): (INDEXED_BENCH, "NAMESPACE_READS"),
    ("kube", "apply_event"): (KUBE_BENCH, "OPS"),
    ("kube", "pods_on_node"): (KUBE_BENCH, "LOOKUPS"),
}


def constant(path, name):
    """The value of `pub const NAME: usize = N;` in the bench file `path`."""
    text = open(path).read()
    match = re.search(rf"pub const {name}: usize = ([0-9_]+);", text)
    if not match:
        sys.exit(f"no `pub const {name}: usize = N;` in {path}")
    return int(match.group(1).replace("_", ""))


def ops(group="indexed", function=None):
    """The operations a benchmark performs, read from its bench: the
    constant OPS_CONSTANTS names, or `OPS` of benches/instructions/inputs.rs."""
    if group == "kube" and (group, function) not in OPS_CONSTANTS:
        sys.exit(f"kube::{function}: no operation count (add it to OPS_CONSTANTS)")
    path, name = OPS_CONSTANTS.get((group, function), (INPUTS, "OPS"))
    return constant(path, name)


def cycles(m):
    """gungraun 0.20's `EstimatedCycles` from callgrind's raw events
    (gungraun-runner src/runner/callgrind/mod.rs, `CyclesEstimator::calculate`):
    L1 hits + 5 x last-level hits + 35 x last-level misses, over every
    instruction fetch and data read and write."""
    accesses = m["Ir"] + m["Dr"] + m["Dw"]
    l1_misses = m["I1mr"] + m["D1mr"] + m["D1mw"]
    ll_misses = m["ILmr"] + m["DLmr"] + m["DLmw"]
    return (accesses - l1_misses) + 5 * (l1_misses - ll_misses) + 35 * ll_misses


def geometry(directory):
    """The cache geometry callgrind simulated, as its output file states it
    (`desc: D1 cache: 32768 B, 64 B, 8-way associative`): {"I1": "32768,8,64", ...}."""
    for path in sorted(glob.glob(os.path.join(directory, "callgrind.*.out*"))):
        found = {}
        for line in open(path, errors="replace"):
            match = re.match(r"desc: (I1|D1|LL) cache: (\d+) B, (\d+) B, (\d+)-way associative", line)
            if match:
                level, size, line_size, ways = match.groups()
                found[level] = f"{size},{ways},{line_size}"
            elif line.startswith("events:"):
                break
        if len(found) == 3:
            return found
    sys.exit(f"no cache geometry in {directory}: callgrind ran without --cache-sim=yes")


def measured():
    """({(group, function, id): {figure: per operation}}, cache geometry) of this run."""
    rows = {}
    geometries = {}
    paths = [p for d in SUMMARIES for p in glob.glob(os.path.join(d, "*", "*", "summary.json"))]
    for path in paths:
        summary = json.load(open(path))
        profile = next(p for p in summary["profiles"] if p["tool"] == "Callgrind")
        metrics = {k: v["values"]["new"] for k, v in profile["data"]["total"]["metrics"].items()}
        key = (summary["group"], summary["function_name"], summary["id"])
        if "EstimatedCycles" not in metrics:
            sys.exit(f"{name(key)}: no EstimatedCycles (callgrind ran without --cache-sim=yes)")
        # The formula is gungraun's; a gungraun that changed it would move
        # every figure without a change to the code measured.
        if cycles(metrics) != metrics["EstimatedCycles"]:
            sys.exit(
                f"{name(key)}: gungraun's EstimatedCycles {metrics['EstimatedCycles']} is not "
                f"{cycles(metrics)}, the formula of gungraun 0.20: see design/instruction-counts.md"
            )
        per_op = ops(key[0], key[1])
        rows[key] = {figure: metrics[metric] / per_op for figure, metric, _, _ in FIGURES}
        geometries[key] = json.dumps(geometry(os.path.dirname(path)), sort_keys=True)
    if not rows:
        sys.exit(f"no summaries under {' or '.join(SUMMARIES)}: run scripts/instructions.sh")
    if len(set(geometries.values())) != 1:
        sys.exit(f"rows simulated with different caches: {sorted(set(geometries.values()))}")
    return rows, json.loads(next(iter(geometries.values())))


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
    for path in BENCH_FILES:
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
        heading = " | ".join(f"{title} | x larder" for _, _, title, _ in FIGURES)
        print(f"| operation | contender | {heading} |")
        print("|---|---|" + "---:|---:|" * len(FIGURES))
        for key in [k for k in keys if k[0] == group]:
            first = next(k for k in keys if k[:2] == key[:2])
            cells = []
            for figure, _, _, _ in FIGURES:
                ratio = ""
                if not is_larder(key) and is_larder(first):
                    ratio = f"{rows[key][figure] / rows[first][figure]:.2f}"
                cells.append(f"{rows[key][figure]:,.1f} | {ratio}")
            print(f"| {key[1]} | {key[2]} | {' | '.join(cells)} |")
    kube_goals(rows)


def kube_goals(rows):
    """The `kube` group's rows as its goals read them, in both figures:
    larder's watch event with no index against kube-runtime's (at most
    1x); with the namespace and node indexes against larder's with none
    plus the two index functions' own cost (at most 1.25x); kube-runtime's
    "pods on node X" against larder's node index (at least 100x). Printed,
    not checked: the peer rows are the measure, and the gate checks
    larder's rows against their baselines."""
    def row(function, contender):
        return rows.get(("kube", function, contender))

    goals = []
    plain, indexed = row("apply_event", "larder_no_index"), row("apply_event", "larder_namespace_node")
    fns, kube = row("apply_event", "index_fns"), row("apply_event", "kube_runtime")
    if plain and kube:
        goals.append(("watch event, no index: larder / kube-runtime", "<= 1", lambda f: plain[f] / kube[f], 1.0, False))
    if plain and indexed and fns:
        goals.append((
            "watch event, namespace and node indexes: larder / (no index + index functions)",
            "<= 1.25",
            lambda f: indexed[f] / (plain[f] + fns[f]),
            1.25,
            False,
        ))
    larder_read = row("pods_on_node", "larder")
    for contender in ["kube_runtime_state", "kube_runtime_state_filter"]:
        other = row("pods_on_node", contender)
        if larder_read and other:
            goals.append((
                f"pods on node X: {contender} / larder",
                ">= 100",
                lambda f, other=other: other[f] / larder_read[f],
                100.0,
                True,
            ))
    if not goals:
        return
    print("\n#### Kubernetes goals\n")
    print("| goal | bound | instructions | est. cycles |")
    print("|---|---|---:|---:|")
    for title, bound, ratio, limit, at_least in goals:
        cells = []
        for figure, _, _, _ in FIGURES:
            value = ratio(figure)
            met = value >= limit if at_least else value <= limit
            cells.append(f"{value:.2f} {'met' if met else 'MISSED'}")
        print(f"| {title} | {bound} | {' | '.join(cells)} |")


def load_baselines():
    """({key: {figure: per operation}}, the cache geometry they were simulated with)."""
    if not os.path.exists(BASELINES):
        sys.exit(f"no baselines at {BASELINES}: run scripts/instructions.sh --update")
    data = json.load(open(BASELINES))
    rows = {}
    for row in data["rows"]:
        key = tuple(row["row"].replace("::", " ").split(" "))
        rows[key] = {figure: row[figure] for figure, _, _, _ in FIGURES if figure in row}
    return rows, data.get("cache")


def check(rows, cache, partial):
    base, base_cache = load_baselines()
    failures = []
    if base_cache != cache:
        failures.append(
            f"the run simulated caches {cache}, the baselines {base_cache}: "
            "figures under different caches do not compare (re-record the baselines)"
        )
    print(f"larder rows against {os.path.relpath(BASELINES, ROOT)} (fails above +{TOLERANCE:.0%}):")
    for key in order(rows):
        if not is_larder(key):
            continue
        cells = []
        regressed = False
        for figure, _, _, label in FIGURES:
            if figure not in base.get(key, {}):
                failures.append(f"{name(key)}: no {label} baseline (new row: run --update and commit it)")
                continue
            was, now = base[key][figure], rows[key][figure]
            change = now / was - 1
            cells.append(f"{was:12,.1f} -> {now:12,.1f} {change:+7.2%}")
            if change > TOLERANCE:
                regressed = True
                failures.append(f"{name(key)}: {label} {was:,.1f} -> {now:,.1f} per op ({change:+.2%})")
        mark = "REGRESSED" if regressed else "ok"
        print(f"  {mark:9} {name(key):45} {'   '.join(cells)}")
    for key in base:
        if is_larder(key) and key not in rows and not partial:
            failures.append(f"{name(key)}: has a baseline but was not measured")
    if failures:
        print("\ninstruction-count gate FAILED:")
        for failure in failures:
            print(f"  {failure}")
        sys.exit(1)
    print("instruction-count gate passed (instructions and est. cycles)")


def command(args):
    try:
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def update(rows, cache):
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    data = {
        "about": "Per operation of benches/instructions (a figure over ops) and of "
        "kube-compare/benches/instructions (the kube rows: over its OPS, or its LOOKUPS for "
        "pods_on_node): instructions "
        "(callgrind Ir) and est. cycles (gungraun's EstimatedCycles: L1 hits + 5 x LL hits "
        "+ 35 x LL misses, over instruction fetches and data accesses, under the cache "
        "below); scripts/instructions.sh --check fails when either grows more than 3% in "
        "a larder row.",
        "ops": ops(),
        "cache": cache,
        "commit": command(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]),
        "date": datetime.date.today().isoformat(),
        "machine": f"{os.cpu_count()} cores, {cpu}, {platform.system()} {platform.machine()}",
        "rustc": command(["rustc", "--version"]),
        "valgrind": command(["valgrind", "--version"]),
        "rows": [
            {"row": name(k), **{f: round(rows[k][f], 1) for f, _, _, _ in FIGURES}} for k in order(rows)
        ],
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
    rows, cache = measured()
    if mode == "table":
        table(rows)
    elif mode == "check":
        table(rows)
        print()
        check(rows, cache, partial)
    elif mode == "update":
        if partial:
            sys.exit("update takes a whole run: no filter")
        table(rows)
        update(rows, cache)
    else:
        sys.exit("usage: instructions.py [table|check|update]")


if __name__ == "__main__":
    main()
