//! Snapshot reads under a writer publishing every millisecond, and what a
//! long-held `Guard` costs (`snapshot/guards-held`: loads while the calling
//! thread holds guards, and a store while a guard of the value it replaces
//! is alive). `cargo bench --bench snapshot`; results in
//! docs/benchmarks.md and docs/snapshot.md.

mod common;

use std::hint::black_box;

use larder::Snapshot;

fn snapshot(c: &mut criterion::Criterion) {
    for workload in common::snapshot::workloads(common::Size::Full) {
        common::criterion_workload(c, &workload);
    }
}

/// One thread: `load` while this thread holds 0, 7, 8 or 64 other guards
/// (arc-swap lends each thread 8 debt slots; past them a load takes its
/// fallback path), and `store` with the last guard dropped before it or
/// still held (the writer then pays that guard's debt).
fn guards_held(c: &mut criterion::Criterion) {
    let mut group = c.benchmark_group("snapshot/guards-held");
    let snap = Snapshot::new(vec![1_u64; 16]);
    for held in [0, 7, 8, 64] {
        let guards: Vec<_> = (0..held).map(|_| snap.load()).collect();
        group.bench_function(format!("load, {held} guards held by this thread"), |b| {
            b.iter(|| black_box(snap.load().len()))
        });
        drop(guards);
    }
    let value = vec![2_u64; 16];
    group.bench_function("store, the last guard dropped before it", |b| {
        b.iter(|| {
            drop(black_box(snap.load()));
            snap.store(value.clone());
        })
    });
    group.bench_function("store, the last guard held across it", |b| {
        b.iter(|| {
            let guard = black_box(snap.load());
            snap.store(value.clone());
            drop(guard);
        })
    });
    group.finish();
}

criterion::criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = snapshot, guards_held
}
criterion::criterion_main!(benches);
