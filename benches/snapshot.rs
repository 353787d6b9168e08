//! Snapshot reads under a writer publishing every millisecond.
//! `cargo bench --bench snapshot`; results in docs/benchmarks.md.

mod common;

fn snapshot(c: &mut criterion::Criterion) {
    let contenders = common::snapshot::contenders();
    common::criterion_group_for(
        c,
        "snapshot/read_under_1ms_writer",
        &contenders,
        common::snapshot::THREADS,
    );
}

criterion::criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = snapshot
}
criterion::criterion_main!(benches);
