//! `WorkQueue` against a hand-made `Mutex<(VecDeque, HashSet)>` + `Condvar`
//! queue with the same dedup: add, get and done cycles over 10,000 keys,
//! each added 4 times before it is taken, on one thread and with 2
//! producers and 2 workers (`benches/common/workqueue.rs`).
//! `cargo bench --bench workqueue`.

mod common;

criterion::criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = common::workqueue::criterion_benches
}
criterion::criterion_main!(benches);
