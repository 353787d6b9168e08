//! `IndexedStore` against the kube-rs, client-go and naive DashMap designs,
//! with pod-shaped objects. `cargo bench --bench indexed`; results in
//! docs/benchmarks.md.

mod common;

fn indexed(c: &mut criterion::Criterion) {
    for workload in common::indexed::workloads(common::Size::Full) {
        common::criterion_workload(c, &workload);
    }
}

criterion::criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = indexed
}
criterion::criterion_main!(benches);
