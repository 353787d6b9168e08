//! `OrderedIndex` against `RwLock<BTreeMap>` (parking_lot, std, crossbeam's
//! `ShardedLock`), `crossbeam_skiplist::SkipMap`, `scc::TreeIndex`, and the
//! DashMap + collect + sort misuse: point reads, scan-mix, mixed,
//! write-heavy and consumer workloads at 64K and 1M keys, 1, 2 and 4 threads.
//! `cargo bench --bench ordered`; results in docs/benchmarks.md.

mod common;

fn ordered(c: &mut criterion::Criterion) {
    for workload in common::ordered::workloads(common::Size::Full) {
        common::criterion_workload(c, &workload);
    }
}

criterion::criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = ordered
}
criterion::criterion_main!(benches);
