//! `IndexedStore` against the kube-rs, client-go and naive DashMap designs,
//! with pod-shaped objects; then what an informer does to its store (watch
//! events, initial load) against the kube-rs design.
//! `cargo bench --bench indexed`; results in docs/benchmarks.md.
//! `cargo bench --bench indexed -- "by-index forms"` runs only the
//! comparison of the by-index forms (figures in docs/indexed.md).
//!
//! `cargo bench --bench indexed -- interleaved` runs only the interleaved
//! comparison of the informer workloads (every contender measured
//! round-robin in one run, ratios printed); a run with no filter ends with
//! it too. `-- profile-events` only applies watch events to the indexed
//! store, and `-- profile-load` only loads it, for a profiler.

mod common;

use std::time::Duration;

use common::indexed::events::{self, Indexed, KubeRs, Unindexed, Watched};

fn indexed(c: &mut criterion::Criterion) {
    for workload in common::indexed::workloads(common::Size::Full) {
        common::criterion_workload(c, &workload);
    }
}

/// `by_index`, `by_index_entries` and `for_each_by_index` on one namespace
/// (about 100 pods) of a 10K store: what each form costs per call.
fn forms(c: &mut criterion::Criterion) {
    for workload in common::indexed::visit::workloads() {
        common::criterion_workload(c, &workload);
    }
}

/// Watch events applied one by one (element throughput: events per second)
/// and the initial load of every pod with one `replace`.
fn informer(c: &mut criterion::Criterion) {
    let mut g = c.benchmark_group(format!("indexed/watch events {}K", events::PODS / 1000));
    g.throughput(criterion::Throughput::Elements(1));
    let indexed = Watched::<Indexed>::new();
    g.bench_function(<Indexed as events::InformerStore>::NAME, |b| {
        b.iter_custom(|n| indexed.apply(n as usize))
    });
    let kube = Watched::<KubeRs>::new();
    g.bench_function(<KubeRs as events::InformerStore>::NAME, |b| {
        b.iter_custom(|n| kube.apply(n as usize))
    });
    let unindexed = Watched::<Unindexed>::new();
    g.bench_function(<Unindexed as events::InformerStore>::NAME, |b| {
        b.iter_custom(|n| unindexed.apply(n as usize))
    });
    g.finish();

    let mut g = c.benchmark_group(format!("indexed/initial load {}K", events::PODS / 1000));
    g.sample_size(10);
    g.bench_function("larder IndexedStore::replace, 2 indexes", |b| {
        b.iter_custom(|n| {
            (0..n)
                .map(|_| events::load_time::<Indexed>())
                .sum::<Duration>()
        })
    });
    g.bench_function("kube-rs: build AHashMap, swap under the lock", |b| {
        b.iter_custom(|n| {
            (0..n)
                .map(|_| events::load_time::<KubeRs>())
                .sum::<Duration>()
        })
    });
    g.bench_function("larder IndexedStore::replace, no index", |b| {
        b.iter_custom(|n| {
            (0..n)
                .map(|_| events::load_time::<Unindexed>())
                .sum::<Duration>()
        })
    });
    g.bench_function("bare AHashMap build", |b| {
        b.iter_custom(|n| {
            (0..n)
                .map(|_| events::hashmap_build_time())
                .sum::<Duration>()
        })
    });
    g.finish();
}

/// The interleaved comparison, when no filter is given or the filter asks
/// for it.
fn interleaved(_: &mut criterion::Criterion) {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if filters.is_empty() || filters.iter().any(|f| f.contains("interleaved")) {
        events::interleaved(9);
    }
}

criterion::criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = indexed, forms, informer, interleaved
}

/// `criterion_main!`, after the profiling modes (which run alone).
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "profile-events") {
        events::profile_events(20);
        return;
    }
    if args.iter().any(|a| a == "profile-load") {
        events::profile_load(10);
        return;
    }
    benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
}
