//! The showdown: every larder primitive against the maps and crates people
//! would use instead, side by side, in one run.
//!
//! ```text
//! cargo run --release --example showdown                 # about four minutes
//! cargo run --release --example showdown -- --quick      # a few seconds (smoke run)
//! cargo run --release --example showdown -- --only lru --threads 1,2,4,8
//! cargo run --release --example showdown -- --only lru --workload zipf0.9,pure-hit --threads 1,2
//! cargo run --release --example showdown -- --json       # JSON on stdout
//! cargo run --release --example showdown -- --sweep 1000,10000,100000,1000000
//! ```
//!
//! `--sweep` measures one representative workload per family at each size
//! (entries) instead, and charts throughput against size.
//!
//! The LRU family also charts hit ratio against capacity (workloads
//! `hit-ratio zipf0.9`, `hit-ratio zipf1.1`, `hit-ratio scans`): each cache
//! replays one trace on one thread at capacities on a log scale, beside
//! offline exact LRU and Belady's OPT (`showdown/hit_ratio.rs`).
//!
//! It measures the workloads of the criterion benches (shared through
//! `benches/common/`, not copied), prints Markdown tables, and writes
//! `target/showdown/index.html` (one self-contained page to open in a
//! browser: the machine's state and warnings, then per primitive the
//! headline ratio, the charts and the tables; `showdown/page.rs`),
//! `report.md`, `report.json` and the charts as SVG files. Each chart says
//! one thing: larder's rows are blue and the others warm colours, larder's
//! first row over the fastest other row is written above each thread
//! count, thread counts above the core count are shaded, and a cache
//! workload adds throughput against hit ratio (`showdown/*_chart.rs`).
//!
//! Each cell is the median of `--rounds` timed runs (5 by default, 1 with
//! `--quick`), each of a calibrated operation count. The rounds are
//! interleaved: every round measures every contender of a workload (each at
//! its thread counts in turn, so its data stays warm) before the next round
//! starts, so a slow phase of a shared host falls on all contenders alike
//! instead of on whichever row was being measured. A ratio between two rows
//! is therefore taken round by round, and reported as the median of the
//! per-round ratios with their spread (`showdown/ratio.rs`). `report.json`
//! keeps every round's figure and every round's ratio.

#[path = "showdown/bar_chart.rs"]
mod bar_chart;
#[path = "showdown/chart.rs"]
mod chart;
#[path = "../benches/common/mod.rs"]
mod common;
#[path = "showdown/hit_ratio.rs"]
mod hit_ratio;
#[path = "showdown/hit_ratio_chart.rs"]
mod hit_ratio_chart;
#[path = "showdown/legend.rs"]
mod legend;
#[path = "showdown/page.rs"]
mod page;
#[path = "showdown/ratio.rs"]
mod ratio;
#[path = "showdown/scatter_chart.rs"]
mod scatter_chart;
#[path = "showdown/table.rs"]
mod table;
#[path = "showdown/throughput_chart.rs"]
mod throughput_chart;
#[path = "showdown/versus.rs"]
mod versus;

use common::{Contender, Size, Workload};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const FAMILIES: &[&str] = &[
    "snapshot",
    "indexed",
    "ordered",
    "lru",
    "typed",
    "workqueue",
];

struct Options {
    quick: bool,
    only: Option<String>,
    /// Only the workloads whose name contains one of these (comma-separated
    /// on the command line).
    workload: Option<String>,
    threads: Option<Vec<usize>>,
    json: bool,
    out: PathBuf,
    seconds: f64,
    /// Interleaved rounds per cell (the median is reported).
    rounds: usize,
    sweep: Option<Vec<usize>>,
    /// Whether the timer slack was set to 1 ns (typed cold inits sleep 1 ms).
    tight_slack: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: showdown [--quick] [--only FAMILY] [--workload NAME_PART,...] [--threads 1,2,4] [--json] [--out DIR] [--seconds N] [--rounds N] [--sweep 1000,1000000]\n\
         families: {}",
        FAMILIES.join(", ")
    );
    std::process::exit(2)
}

fn parse_options() -> Options {
    let mut options = Options {
        quick: false,
        only: None,
        workload: None,
        threads: None,
        json: false,
        out: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/target/showdown")),
        seconds: 150.0,
        rounds: 0,
        sweep: None,
        tight_slack: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => options.quick = true,
            "--json" => options.json = true,
            "--only" => {
                let family = args.next().unwrap_or_else(|| usage());
                if !FAMILIES.contains(&family.as_str()) {
                    eprintln!("unknown family {family:?}");
                    usage();
                }
                options.only = Some(family);
            }
            "--workload" => options.workload = Some(args.next().unwrap_or_else(|| usage())),
            "--threads" => {
                let list = args.next().unwrap_or_else(|| usage());
                let threads: Result<Vec<usize>, _> = list.split(',').map(str::parse).collect();
                match threads {
                    Ok(t) if !t.is_empty() && t.iter().all(|&n| n > 0) => options.threads = Some(t),
                    _ => usage(),
                }
            }
            "--sweep" => {
                let list = args.next().unwrap_or_else(|| usage());
                let sizes: Result<Vec<usize>, _> = list.split(',').map(str::parse).collect();
                match sizes {
                    Ok(s) if !s.is_empty() && s.iter().all(|&n| n >= 10) => options.sweep = Some(s),
                    _ => usage(),
                }
            }
            "--out" => options.out = PathBuf::from(args.next().unwrap_or_else(|| usage())),
            "--seconds" => {
                options.seconds = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .filter(|s: &f64| *s > 0.0)
                    .unwrap_or_else(|| usage())
            }
            "--rounds" => {
                options.rounds = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .filter(|&n: &usize| n > 0)
                    .unwrap_or_else(|| usage())
            }
            "--bench" => {} // passed by `cargo bench`-style runners; ignore
            "-h" | "--help" => usage(),
            other => {
                eprintln!("unknown argument {other:?}");
                usage()
            }
        }
    }
    if options.quick {
        options.seconds = options.seconds.min(10.0);
    }
    if options.rounds == 0 {
        options.rounds = if options.quick { 1 } else { 5 };
    }
    options
}

/// The size sweep's workloads of `family` at `entries` (none for snapshot,
/// whose cost does not depend on a number of entries).
fn sweep_of(family: &str, entries: usize) -> Vec<Workload> {
    match family {
        "indexed" => common::indexed::sweep(entries),
        "ordered" => common::ordered::sweep(entries),
        "lru" => common::lru::sweep(entries),
        "typed" => common::typed::sweep(entries),
        _ => Vec::new(),
    }
}

fn workloads_of(family: &str, size: Size) -> Vec<Workload> {
    match family {
        "snapshot" => common::snapshot::workloads(size),
        "indexed" => common::indexed::workloads(size),
        "ordered" => common::ordered::workloads(size),
        "lru" => common::lru::workloads(size),
        "typed" => common::typed::workloads(size),
        "workqueue" => common::workqueue::workloads(size),
        _ => Vec::new(),
    }
}

/// One measured cell.
struct Cell {
    threads: usize,
    /// The median round's throughput.
    ops_per_sec: f64,
    /// The median round's extra figure (hit ratio, inits per key...).
    extra: Option<(String, f64)>,
    /// Every round's throughput, in round order.
    rounds: Vec<f64>,
}

struct Row {
    contender: String,
    cells: Vec<Cell>,
    /// A bounded cache's `(len, capacity)` after its last round.
    bound: Option<(usize, usize)>,
}

impl Row {
    /// Whether the cache held more entries than its capacity (its hit
    /// ratio then is not one of a cache of that capacity).
    fn over_bound(&self) -> bool {
        self.bound.is_some_and(|(len, capacity)| len > capacity)
    }
}

struct Measured {
    family: &'static str,
    workload: String,
    rows: Vec<Row>,
}

/// One round of one cell: throughput, and the contender's extra figure.
fn measure(
    contender: &dyn Contender,
    threads: usize,
    budget: Duration,
) -> (f64, Option<(String, f64)>) {
    let ops_per_sec = common::throughput(contender, threads, budget);
    (ops_per_sec, contender.extra())
}

/// The cell of `samples` (one per round, in round order): the median round
/// (the upper middle one for an even number of rounds).
fn median_cell(threads: usize, samples: Vec<(f64, Option<(String, f64)>)>) -> Cell {
    let rounds: Vec<f64> = samples.iter().map(|(ops, _)| *ops).collect();
    let mut sorted = samples;
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (ops_per_sec, extra) = sorted.swap_remove(sorted.len() / 2);
    Cell {
        threads,
        ops_per_sec,
        extra,
        rounds,
    }
}

fn main() {
    let mut options = parse_options();
    // Before any thread is spawned: every worker inherits it.
    options.tight_slack = common::typed::tighten_timer_slack();
    let size = if options.quick {
        Size::Quick
    } else {
        Size::Full
    };
    let started = Instant::now();

    eprintln!("checking that the machine is idle...");
    let host = common::host_check();
    let idle_ratio = host.idle_ratio;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let idle_warning = if cores < 2 {
        None
    } else if idle_ratio < 1.7 {
        Some(format!(
            "two spinning threads did {idle_ratio:.2}x the work of one (expected close to 2x): \
             the machine is busy, so these figures understate what it can do"
        ))
    } else if idle_ratio > 2.3 {
        Some(format!(
            "two spinning threads did {idle_ratio:.2}x the work of one, more than two cores \
             can: the single thread was slowed (another load, or the host taking the core), \
             so the machine's speed varies and these figures are noisy"
        ))
    } else {
        None
    };
    if let Some(warning) = &idle_warning {
        eprintln!("WARNING: {warning}");
    }

    eprintln!("building workloads ({size:?})...");
    let families: Vec<&'static str> = FAMILIES
        .iter()
        .copied()
        .filter(|f| options.only.as_deref().is_none_or(|only| only == *f))
        .collect();
    let mut plan: Vec<Workload> = Vec::new();
    for family in &families {
        let mut workloads = match &options.sweep {
            Some(sizes) => sizes.iter().flat_map(|&n| sweep_of(family, n)).collect(),
            None => workloads_of(family, size),
        };
        if let Some(parts) = &options.workload {
            workloads.retain(|w| parts.split(',').any(|part| w.name.contains(part)));
        }
        if let Some(threads) = &options.threads {
            for w in &mut workloads {
                w.threads = threads.clone();
            }
        }
        plan.extend(workloads);
    }
    let keep = |name: &str| {
        let parts = options.workload.as_deref().unwrap_or("");
        parts.is_empty() || parts.split(',').any(|part| name.contains(part))
    };
    let studies = if families.contains(&"lru") && options.sweep.is_none() {
        hit_ratio::run(options.quick, keep)
    } else {
        Vec::new()
    };
    let cells: usize = plan
        .iter()
        .map(|w| w.contenders.len() * w.threads.len())
        .sum();
    if cells == 0 && studies.is_empty() {
        eprintln!("nothing to measure");
        std::process::exit(1);
    }
    let runs = cells * options.rounds;
    let budget = Duration::from_secs_f64((options.seconds / runs as f64).clamp(0.005, 2.0));

    let bar = ProgressBar::new(runs as u64);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let mut results = Vec::new();
    for workload in &plan {
        // samples[contender][thread count]: one (throughput, extra) per round.
        let mut samples: Vec<Vec<Vec<_>>> = workload
            .contenders
            .iter()
            .map(|_| workload.threads.iter().map(|_| Vec::new()).collect())
            .collect();
        for round in 0..options.rounds {
            for (c, contender) in workload.contenders.iter().enumerate() {
                for (t, &threads) in workload.threads.iter().enumerate() {
                    bar.set_message(format!(
                        "{}/{}: {} @{}t, round {}",
                        workload.family,
                        workload.name,
                        contender.name(),
                        threads,
                        round + 1
                    ));
                    samples[c][t].push(measure(contender.as_ref(), threads, budget));
                    bar.inc(1);
                }
            }
        }
        let rows: Vec<Row> = workload
            .contenders
            .iter()
            .zip(samples)
            .map(|(contender, per_threads)| Row {
                contender: contender.name(),
                bound: contender.bound(),
                cells: workload
                    .threads
                    .iter()
                    .zip(per_threads)
                    .map(|(&threads, rounds)| median_cell(threads, rounds))
                    .collect(),
            })
            .collect();
        results.push(Measured {
            family: workload.family,
            workload: workload.name.clone(),
            rows,
        });
    }
    bar.finish_and_clear();

    let elapsed = started.elapsed();
    let warnings = warnings(&results, &idle_warning, cores);
    std::fs::create_dir_all(&options.out).expect("create the output folder");
    clear_previous_output(&options.out);
    let charts = if options.sweep.is_some() {
        throughput_chart::draw_sweep(&results, &options.out)
    } else {
        let mut charts = Vec::new();
        for m in &results {
            charts.extend(throughput_chart::draw(m, cores, &options.out));
            charts.extend(scatter_chart::draw(m, cores, &options.out));
        }
        charts.extend(hit_ratio::draw(&studies, &options.out));
        charts
    };

    let state = machine_state(&options, &host, elapsed);
    let mut markdown = render_markdown(&results, options.sweep.is_some(), &state, &warnings);
    markdown.push_str(&hit_ratio::markdown(&studies));
    let mut report = render_json(&results, &options, &host, &idle_warning, elapsed);
    report["cores"] = json!(cores);
    report["warnings"] = json!(warnings);
    report["hit_ratio"] = hit_ratio::json(&studies);
    report["charts"] = charts.iter().map(chart::Chart::json).collect();
    let html = page::render(&page::Page {
        results: &results,
        studies: &studies,
        charts: &charts,
        state: &state,
        warnings: &warnings,
        cores,
    });

    std::fs::write(options.out.join("report.md"), &markdown).expect("write report.md");
    std::fs::write(
        options.out.join("report.json"),
        serde_json::to_string_pretty(&report).expect("serialize"),
    )
    .expect("write report.json");
    std::fs::write(options.out.join("index.html"), html).expect("write index.html");

    if options.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("serialize")
        );
    } else {
        println!("{markdown}");
    }
    eprintln!(
        "wrote {} (index.html, report.md, report.json, {} charts) in {:.1} s",
        options.out.display(),
        charts.len(),
        elapsed.as_secs_f64()
    );
}

/// What the reader should know before reading a figure: the idle check,
/// an unoptimized build, thread counts above the core count, caches that
/// held more than their capacity.
fn warnings(results: &[Measured], idle_warning: &Option<String>, cores: usize) -> Vec<String> {
    let mut out: Vec<String> = idle_warning.iter().cloned().collect();
    if cfg!(debug_assertions) {
        out.push(
            "this showdown was built without optimizations: its figures say nothing of \
             anyone's speed (run it with `--release` or `--profile bench`)"
                .to_string(),
        );
    }
    let mut over: Vec<usize> = results
        .iter()
        .flat_map(|m| m.rows[0].cells.iter().map(|c| c.threads))
        .filter(|&t| t > cores)
        .collect();
    over.sort_unstable();
    over.dedup();
    if !over.is_empty() {
        let list: Vec<String> = over.iter().map(usize::to_string).collect();
        out.push(format!(
            "{} threads run on {cores} cores: those columns oversubscribe the cores (shaded on \
             the charts); they measure how a contender copes with more threads than cores, not \
             how it scales",
            list.join(", ")
        ));
    }
    let mut over_bound: Vec<(&str, Vec<&str>)> = Vec::new();
    for m in results {
        for row in m.rows.iter().filter(|r| r.over_bound()) {
            match over_bound
                .iter_mut()
                .find(|(name, _)| *name == row.contender)
            {
                Some((_, workloads)) => workloads.push(&m.workload),
                None => over_bound.push((&row.contender, vec![&m.workload])),
            }
        }
    }
    for (name, workloads) in over_bound {
        out.push(format!(
            "{name} held more entries than its capacity after its last round ({}): its hit \
             ratio there is that of a bigger cache",
            workloads.join(", ")
        ));
    }
    out
}

fn machine_line() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    format!(
        "{cores} cores, {cpu}, {} {}",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

/// The run's conditions in one paragraph (the head of `report.md` and of
/// the page).
fn machine_state(options: &Options, host: &common::HostCheck, elapsed: Duration) -> String {
    format!(
        "Machine: {}. Mode: {}, each cell the median of {} interleaved round{}. Idle check: 2 \
         threads did {:.2}x one. Host speed before the run: one thread spun {:.0} M additions/s, \
         a dependent random read over 64 MiB took {:.0} ns. Timer slack: {}. Total {:.1} s.",
        machine_line(),
        if options.quick { "quick" } else { "full" },
        options.rounds,
        if options.rounds == 1 { "" } else { "s" },
        host.idle_ratio,
        host.spin_mops,
        host.random_read_ns,
        if options.tight_slack {
            "1 ns (a 1 ms init sleeps close to 1 ms)"
        } else {
            "the system's (a 1 ms init oversleeps)"
        },
        elapsed.as_secs_f64()
    )
}

/// How to read a workload's table.
const CELLS: &str = "Cells: million operations per second over all threads (the median round); in \
     parentheses, how many times faster the first (larder) row is: the median of the \
     per-round ratios, then the lowest and the highest. Thread counts above the core count \
     oversubscribe the cores. A bounded cache's entries held after its last round are shown \
     against its capacity; one over its bound is flagged (its hit ratio is that of a bigger \
     cache).";

fn render_markdown(results: &[Measured], sweep: bool, state: &str, warnings: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# larder showdown\n");
    if sweep {
        let _ = writeln!(
            out,
            "Size sweep: one workload per family at each size (the last word of its name: \
             entries).\n"
        );
    }
    let _ = writeln!(out, "{state}\n");
    for warning in warnings {
        let _ = writeln!(out, "> **Warning:** {warning}.\n");
    }
    let _ = writeln!(out, "{CELLS}\n");
    for m in results {
        let _ = writeln!(out, "## {} / {}\n", m.family, m.workload);
        let _ = writeln!(out, "{}", workload_table(m).markdown());
    }
    out
}

/// A workload's table: each row's throughput at each thread count (the
/// first row's ratio over it beside), its extra figure, its bound.
fn workload_table(m: &Measured) -> table::Table {
    use table::Emphasis::{Plain, Strong};
    let threads: Vec<usize> = m.rows[0].cells.iter().map(|c| c.threads).collect();
    let extra_label = m
        .rows
        .iter()
        .flat_map(|r| r.cells.iter())
        .find_map(|c| c.extra.as_ref().map(|(label, _)| label.clone()));
    let mut header = vec!["contender".to_string()];
    for t in &threads {
        header.push(format!("{t} thread{}", if *t == 1 { "" } else { "s" }));
    }
    header.extend(extra_label.clone());
    let bounded = m.rows.iter().any(|r| r.bound.is_some());
    if bounded {
        header.push("len / capacity".to_string());
    }
    let mut table = table::Table::new(header);
    let first = &m.rows[0];
    for row in &m.rows {
        let mut line = vec![(row.contender.clone(), Plain)];
        for (i, cell) in row.cells.iter().enumerate() {
            let mops = format_mops(cell.ops_per_sec / 1e6);
            if std::ptr::eq(row, first) {
                line.push((mops, Plain));
            } else {
                let ratio = ratio::Ratio::of(&first.cells[i].rounds, &cell.rounds);
                line.push((format!("{mops} ({})", ratio.label()), Plain));
            }
        }
        if extra_label.is_some() {
            let extras: Vec<String> = row
                .cells
                .iter()
                .filter_map(|c| c.extra.as_ref().map(|(_, v)| format_extra(*v)))
                .collect();
            line.push((extras.join(" / "), Plain));
        }
        if bounded {
            line.push(match row.bound {
                Some((len, capacity)) if len > capacity => {
                    (format!("{len} / {capacity}: over its bound"), Strong)
                }
                Some((len, capacity)) => (format!("{len} / {capacity}"), Plain),
                None => (String::new(), Plain),
            });
        }
        table.rows.push(line);
    }
    table
}

/// Million operations per second, three significant digits (slow
/// workloads such as 1 ms inits are far below one).
fn format_mops(mops: f64) -> String {
    if mops >= 100.0 {
        format!("{mops:.0}")
    } else if mops >= 10.0 {
        format!("{mops:.1}")
    } else if mops >= 1.0 {
        format!("{mops:.2}")
    } else {
        let digits = (2 - mops.log10().floor() as i32).clamp(3, 9) as usize;
        format!("{mops:.digits$}")
    }
}

fn format_extra(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        format!("{value:.3}")
    }
}

fn render_json(
    results: &[Measured],
    options: &Options,
    host: &common::HostCheck,
    idle_warning: &Option<String>,
    elapsed: Duration,
) -> serde_json::Value {
    json!({
        "machine": machine_line(),
        "mode": if options.quick { "quick" } else { "full" },
        "rounds": options.rounds,
        "idle_ratio": host.idle_ratio,
        "spin_mops": host.spin_mops,
        "random_read_ns": host.random_read_ns,
        "idle_warning": idle_warning,
        "seconds": elapsed.as_secs_f64(),
        "workloads": results.iter().map(|m| json!({
            "family": m.family,
            "workload": m.workload,
            "contenders": m.rows.iter().map(|r| json!({
                "name": r.contender,
                "len": r.bound.map(|(len, _)| len),
                "capacity": r.bound.map(|(_, capacity)| capacity),
                "over_bound": r.over_bound(),
                "cells": r.cells.iter().enumerate().map(|(i, c)| json!({
                    "threads": c.threads,
                    "ops_per_sec": c.ops_per_sec,
                    "rounds": c.rounds,
                    // The first row over this one, round by round.
                    "first_over_this": ratio::Ratio::of(&m.rows[0].cells[i].rounds, &c.rounds).json(),
                    "extra": c.extra.as_ref().map(|(label, value)| json!({"label": label, "value": value})),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

fn file_stem(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// Removes what an earlier run wrote to `out` (its report and charts), so a
/// run with `--only` leaves no stale charts beside its report. Only the
/// showdown's own files go: anything else in the folder is left alone.
fn clear_previous_output(out: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(out) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ours = name == "report.md"
            || name == "report.json"
            || name == "index.html"
            || name.ends_with(".svg");
        if ours && path.is_file() {
            std::fs::remove_file(&path).expect("remove the previous run's output");
        }
    }
}
