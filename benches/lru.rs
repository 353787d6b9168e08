//! `LruCache` (read through `get` and through `get_with`, under both
//! policies) against `Mutex<lru::LruCache>` (one lock, and sharded 16
//! ways), moka, mini-moka, quick_cache and scc's `HashCache`, every peer
//! storing `u64` values and reading them out by value: get-then-insert-on-miss over Zipf
//! 0.9 / 1.1 keys at capacities of 1% and 10% of 1M keys, and pure hits; 1,
//! 2 and 4 threads. Hit ratios are reported by the showdown
//! (`Contender::extra`). `cargo bench --bench lru`; results in
//! docs/benchmarks.md.

mod common;

fn lru(c: &mut criterion::Criterion) {
    for workload in common::lru::workloads(common::Size::Full) {
        common::criterion_workload(c, &workload);
    }
}

criterion::criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = lru
}
criterion::criterion_main!(benches);
