//! Snapshot reads under a writer publishing every millisecond.
//! `cargo bench --bench snapshot`; results in docs/benchmarks.md.

mod common;

fn snapshot(c: &mut criterion::Criterion) {
    for workload in common::snapshot::workloads(common::Size::Full) {
        common::criterion_workload(c, &workload);
    }
}

criterion::criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = snapshot
}
criterion::criterion_main!(benches);
