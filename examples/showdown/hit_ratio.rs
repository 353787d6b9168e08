//! The LRU family's hit ratio against capacity: every cache replays one
//! trace on one thread, from empty, at each capacity on a log scale, beside
//! three references on the same trace: exact global LRU and Belady's OPT
//! (the most hits any cache of that capacity can get), both offline, and
//! the popularity oracle (the most an online cache can expect when every
//! access is an independent draw, as in the Zipf traces).
//!
//! Each point counts every access of the trace (a `get`, then an `insert`
//! on a miss), cold start included, so the caches and the references count
//! the same thing. The entries a cache holds are sampled during the replay;
//! one that held more than its capacity is flagged: its hit ratio is that
//! of a bigger cache, so it is drawn as a cross off the lines, never marked
//! best, and exempt from the check against OPT. Every other cache must stay
//! at or below OPT, and `Mutex<lru::LruCache>`, which is exact LRU, must hit
//! exactly as the LRU reference: the run panics otherwise.

use super::chart::{Chart, is_larder};
use super::hit_ratio_chart::{self, Part};
use super::table::{Emphasis, Table};
use crate::common::lru::{self, BenchCache, Larder, MutexLru};
use crate::common::offline;
use serde_json::json;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

/// Capacities, in percent of the trace's key space.
const PERCENTS: &[f64] = &[0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0];
/// `--quick`: the first eight.
const QUICK_PERCENTS: usize = 8;
/// How many times a replay samples the cache's `len`.
const LEN_SAMPLES: usize = 64;
/// The name of the exact-LRU contender checked against the LRU reference.
pub const EXACT_LRU_PEER: &str = "lru::LruCache (Mutex)";

/// One cache at one capacity.
struct Point {
    hits: u64,
    /// Entries held at the end of the replay.
    len: usize,
    /// The most entries seen held (sampled, the end included).
    peak: usize,
}

type Replay = fn(&[u64], usize) -> Point;

/// The contenders, larder's policies first.
const CONTENDERS: &[(&str, Replay)] = &[
    ("larder exact LRU", replay::<Larder<0, 1>>),
    ("larder S3-FIFO", replay::<Larder<2, 1>>),
    ("larder CLOCK", replay::<Larder<1, 1>>),
    ("quick_cache", replay::<quick_cache::sync::Cache<u64, u64>>),
    ("moka", replay::<moka::sync::Cache<u64, u64>>),
    ("mini-moka", replay::<mini_moka::sync::Cache<u64, u64>>),
    (EXACT_LRU_PEER, replay::<MutexLru>),
    (
        "scc::HashCache",
        replay::<scc::HashCache<u64, u64, ahash::RandomState>>,
    ),
];

fn replay<C: BenchCache>(trace: &[u64], capacity: usize) -> Point {
    let cache = C::build(capacity);
    let every = (trace.len() / LEN_SAMPLES).max(1);
    let (mut hits, mut peak) = (0, 0);
    for (i, &key) in trace.iter().enumerate() {
        if cache.get(key).is_some() {
            hits += 1;
        } else {
            cache.insert(key);
        }
        if i % every == every - 1 {
            peak = peak.max(cache.len());
        }
    }
    let len = cache.len();
    Point {
        hits,
        len,
        peak: peak.max(len),
    }
}

/// One workload: every contender and the references at each capacity.
pub struct Study {
    pub workload: String,
    keys: usize,
    accesses: usize,
    percents: Vec<f64>,
    capacities: Vec<usize>,
    lru: Vec<u64>,
    opt: Vec<u64>,
    oracle: Vec<u64>,
    rows: Vec<(&'static str, Vec<Point>)>,
    seconds: f64,
}

impl Study {
    fn ratio(&self, hits: u64) -> f64 {
        hits as f64 / self.accesses as f64
    }
    fn over(&self, point: &Point, at: usize) -> bool {
        point.peak > self.capacities[at]
    }
    /// Whether `row` has the most hits at capacity `at` among the caches
    /// that kept their bound.
    fn best(&self, row: usize, at: usize) -> bool {
        let point = &self.rows[row].1[at];
        !self.over(point, at)
            && self
                .rows
                .iter()
                .map(|(_, points)| &points[at])
                .filter(|p| !self.over(p, at))
                .all(|p| p.hits <= point.hits)
    }
}

/// The study's workload names, each matched by `--workload` like the
/// throughput workloads'.
pub fn workload_names() -> [&'static str; 3] {
    ["hit-ratio zipf0.9", "hit-ratio zipf1.1", "hit-ratio scans"]
}

/// Runs the workloads `keep` selects. Panics if a cache that kept its
/// bound beats OPT, or if exact LRU's peer misses the LRU reference.
pub fn run(quick: bool, keep: impl Fn(&str) -> bool) -> Vec<Study> {
    let (keys, accesses) = if quick {
        (10_000, 250_000)
    } else {
        (100_000, 1_000_000)
    };
    let percents = &PERCENTS[..if quick {
        QUICK_PERCENTS
    } else {
        PERCENTS.len()
    }];
    let mut studies = Vec::new();
    for name in workload_names().into_iter().filter(|n| keep(n)) {
        let started = Instant::now();
        eprintln!("hit ratio against capacity: {name}...");
        let trace = match name {
            "hit-ratio zipf0.9" => lru::zipf_trace(keys, 0.9, accesses, 1),
            "hit-ratio zipf1.1" => lru::zipf_trace(keys, 1.1, accesses, 1),
            _ => lru::scan_polluted_trace(keys, accesses, 1),
        };
        let next = offline::next_uses(&trace);
        let capacities: Vec<usize> = percents
            .iter()
            .map(|p| ((keys as f64 * p / 100.0).round() as usize).max(1))
            .collect();
        let mut study = Study {
            workload: name.to_string(),
            keys,
            accesses,
            percents: percents.to_vec(),
            lru: capacities
                .iter()
                .map(|&c| offline::lru_hits(&trace, c))
                .collect(),
            opt: capacities
                .iter()
                .map(|&c| offline::opt_hits(&trace, &next, c))
                .collect(),
            oracle: capacities
                .iter()
                .map(|&c| offline::oracle_hits(&trace, c))
                .collect(),
            rows: CONTENDERS
                .iter()
                .map(|&(label, replay)| {
                    (
                        label,
                        capacities.iter().map(|&c| replay(&trace, c)).collect(),
                    )
                })
                .collect(),
            capacities,
            seconds: 0.0,
        };
        study.seconds = started.elapsed().as_secs_f64();
        check(&study);
        studies.push(study);
    }
    studies
}

/// The references bound what the caches measured.
fn check(study: &Study) {
    for (at, (&oracle, &opt)) in study.oracle.iter().zip(&study.opt).enumerate() {
        assert!(
            oracle <= opt,
            "{}: the popularity oracle hit {oracle} times at capacity {}, more than OPT \
             ({opt}): a reference is wrong",
            study.workload,
            study.capacities[at]
        );
    }
    for (label, points) in &study.rows {
        for (at, point) in points.iter().enumerate() {
            let capacity = study.capacities[at];
            assert!(
                study.over(point, at) || point.hits <= study.opt[at],
                "{}: {label} hit {} times at capacity {capacity}, more than Belady's OPT ({}), \
                 while holding at most {} entries: the OPT reference or the cache is wrong",
                study.workload,
                point.hits,
                study.opt[at],
                point.peak
            );
            assert!(
                *label != EXACT_LRU_PEER || point.hits == study.lru[at],
                "{}: {label}, an exact LRU, hit {} times at capacity {capacity}, the LRU \
                 reference {}: the reference is wrong",
                study.workload,
                point.hits,
                study.lru[at]
            );
        }
    }
}

fn percent_label(percent: f64) -> String {
    format!("{percent}%")
}

/// What one study says before its tables.
pub fn description(s: &Study) -> String {
    format!(
        "{} accesses over {} keys{}, one thread, each cache from empty at each capacity \
         ({:.1} s). Hit ratio in percent, the best cache that kept its bound in bold; OPT \
         (Belady, offline) is the most any cache of that capacity can hit; the popularity \
         oracle (it keeps the most popular keys) is the most an online cache can expect when \
         accesses are independent draws, as in the Zipf traces. † held more than its capacity \
         (next table): not comparable, not marked best, drawn as a cross.",
        s.accesses,
        s.keys,
        if s.workload.ends_with("scans") {
            " plus never-repeated scan keys"
        } else {
            ""
        },
        s.seconds
    )
}

/// A study's two tables: hit ratios, then entries held against capacity.
pub fn tables(s: &Study) -> (Table, Table) {
    let mut header = vec!["capacity".to_string()];
    for (p, c) in s.percents.iter().zip(&s.capacities) {
        header.push(format!("{} ({c})", percent_label(*p)));
    }
    let mut ratios = Table::new(header.clone());
    for (label, hits) in [
        ("OPT (offline)", &s.opt),
        ("popularity oracle (online bound)", &s.oracle),
        ("exact LRU (offline)", &s.lru),
    ] {
        let mut row = vec![(label.to_string(), Emphasis::Italic)];
        row.extend(
            hits.iter()
                .map(|&h| (format!("{:.2}", 100.0 * s.ratio(h)), Emphasis::Plain)),
        );
        ratios.rows.push(row);
    }
    for (index, (label, points)) in s.rows.iter().enumerate() {
        let mut row = vec![(label.to_string(), Emphasis::Plain)];
        row.extend(points.iter().enumerate().map(|(at, p)| {
            let ratio = format!("{:.2}", 100.0 * s.ratio(p.hits));
            if s.over(p, at) {
                (format!("{ratio} †"), Emphasis::Plain)
            } else if s.best(index, at) {
                (ratio, Emphasis::Strong)
            } else {
                (ratio, Emphasis::Plain)
            }
        }));
        ratios.rows.push(row);
    }
    let mut held = Table::new(header);
    for (label, points) in &s.rows {
        let mut row = vec![(label.to_string(), Emphasis::Plain)];
        row.extend(points.iter().enumerate().map(|(at, p)| {
            let capacity = s.capacities[at];
            if s.over(p, at) {
                (
                    format!("{} / {capacity}, peak {}: over †", p.len, p.peak),
                    Emphasis::Strong,
                )
            } else {
                (format!("{} / {capacity}", p.len), Emphasis::Plain)
            }
        }));
        held.rows.push(row);
    }
    (ratios, held)
}

/// The heading of a study's section.
pub fn heading(s: &Study) -> String {
    format!("lru / {}: hit ratio against capacity", s.workload)
}

/// One section per study: hit ratios, then entries held against capacity.
pub fn markdown(studies: &[Study]) -> String {
    let mut out = String::new();
    for s in studies {
        let (ratios, held) = tables(s);
        let _ = writeln!(
            out,
            "## {}\n\n{}\n\n{}\nEntries held at the end / capacity (and the most seen held, \
             when above it):\n\n{}",
            heading(s),
            description(s),
            ratios.markdown(),
            held.markdown()
        );
    }
    out
}

/// The studies for `report.json`: every point's hits, ratio, `len`, peak
/// and flag, beside the references.
pub fn json(studies: &[Study]) -> serde_json::Value {
    let studies: Vec<_> = studies
        .iter()
        .map(|s| {
            let points: Vec<_> = s
                .capacities
                .iter()
                .enumerate()
                .map(|(at, &capacity)| {
                    json!({
                        "capacity": capacity,
                        "percent_of_keys": s.percents[at],
                        "opt_hits": s.opt[at],
                        "opt_hit_ratio": s.ratio(s.opt[at]),
                        "lru_hits": s.lru[at],
                        "lru_hit_ratio": s.ratio(s.lru[at]),
                        "oracle_hits": s.oracle[at],
                        "oracle_hit_ratio": s.ratio(s.oracle[at]),
                        "contenders": s.rows.iter().enumerate().map(|(row, (label, points))| {
                            let p = &points[at];
                            json!({
                                "name": label,
                                "hits": p.hits,
                                "hit_ratio": s.ratio(p.hits),
                                "len": p.len,
                                "peak_len": p.peak,
                                "capacity": capacity,
                                "over_bound": s.over(p, at),
                                "best": s.best(row, at),
                            })
                        }).collect::<Vec<_>>(),
                    })
                })
                .collect();
            json!({
                "workload": s.workload,
                "keys": s.keys,
                "accesses": s.accesses,
                "threads": 1,
                "seconds": s.seconds,
                "points": points,
            })
        })
        .collect();
    serde_json::Value::Array(studies)
}

/// Draws two charts per study (`lru_hit_ratio_vs_capacity_<trace>_larder.svg`
/// and `..._others.svg`).
pub fn draw(studies: &[Study], out: &Path) -> Vec<Chart> {
    let mut charts = Vec::new();
    for s in studies {
        let stem = s
            .workload
            .trim_start_matches("hit-ratio ")
            .replace('.', "_");
        for part in [Part::Larder, Part::Others] {
            let file = format!(
                "lru_hit_ratio_vs_capacity_{stem}_{}.svg",
                part.file_suffix()
            );
            let drawn = Chart::draw(out, &file, hit_ratio_chart::SIZE, |root| {
                hit_ratio_chart::draw(s, part, &root)
            });
            let message = match part {
                Part::Larder => {
                    "larder's policies against OPT, the popularity oracle and exact LRU"
                }
                Part::Others => {
                    "the other caches against OPT and exact LRU, with larder's best policy"
                }
            };
            if let Some((svg, plot)) = drawn {
                charts.push(Chart {
                    file,
                    svg,
                    plot,
                    family: "lru",
                    workloads: vec![s.workload.clone()],
                    kind: "hit-ratio",
                    message: message.to_string(),
                });
            }
        }
    }
    charts
}

/// What the chart module reads of a study.
impl Study {
    pub fn caption(&self) -> String {
        let count = |n: usize| match n {
            n if n >= 1_000_000 && n % 100_000 == 0 => format!("{}M", n as f64 / 1e6),
            n if n >= 1_000 && n % 1_000 == 0 => format!("{}K", n / 1_000),
            n => n.to_string(),
        };
        format!(
            "lru: hit ratio vs capacity, {} ({} keys, {} accesses, 1 thread)",
            self.workload.trim_start_matches("hit-ratio "),
            count(self.keys),
            count(self.accesses)
        )
    }
    pub fn percents(&self) -> &[f64] {
        &self.percents
    }
    /// The references: label and hit ratio at each capacity.
    pub fn references(&self) -> [(&'static str, Vec<f64>); 3] {
        let ratios = |hits: &[u64]| hits.iter().map(|&h| self.ratio(h)).collect();
        [
            ("OPT (Belady, offline)", ratios(&self.opt)),
            ("popularity oracle", ratios(&self.oracle)),
            ("exact LRU (offline)", ratios(&self.lru)),
        ]
    }
    /// larder's policy with the most hits over the capacities where it kept
    /// its bound.
    pub fn best_larder_policy(&self) -> Option<&'static str> {
        let kept = |points: &[Point]| -> u64 {
            points
                .iter()
                .enumerate()
                .filter(|(at, p)| !self.over(p, *at))
                .map(|(_, p)| p.hits)
                .sum()
        };
        self.rows
            .iter()
            .filter(|(label, _)| is_larder(label))
            .max_by_key(|(_, points)| kept(points))
            .map(|(label, _)| *label)
    }
    /// Each contender: label, and at each capacity its hit ratio and
    /// whether it held more than that capacity.
    pub fn curves(&self) -> Vec<(&'static str, Vec<(f64, bool)>)> {
        self.rows
            .iter()
            .map(|(label, points)| {
                let points = points
                    .iter()
                    .enumerate()
                    .map(|(at, p)| (self.ratio(p.hits), self.over(p, at)))
                    .collect();
                (*label, points)
            })
            .collect()
    }
}
