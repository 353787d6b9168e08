//! Misuse 09: publishing data behind a flag with `Ordering::Relaxed`.
//!
//! A writer fills in data, then sets a `ready` flag; a reader waits for the
//! flag, then reads the data. With `Relaxed` on the flag nothing orders the
//! two: the reader may see `ready == true` and still read the old data. On
//! x86 the hardware happens to keep stores in order, so this bug cannot be
//! seen at run time there at all; on ARM it shows up rarely. The proof is the
//! loom model `relaxed_flag_publication_is_caught` in
//! `loom-tests/tests/misuse.rs`, which explores the weak-memory outcomes
//! and finds the stale read; its fixed twin (`Release` on the store,
//! `Acquire` on the load) passes.
//!
//! This example runs both at run time and prints what the machine showed,
//! plus the larder way: a `Snapshot` publishes the data and its readiness
//! in one atomic pointer, so there is no separate flag to get wrong.
//!
//! Run with `cargo run --example misuse_09_relaxed_publication`.

#[path = "misuse_common/mod.rs"]
mod common;

use std::hint;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use larder::Snapshot;

/// What each variant showed at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Publications tried per variant.
    pub rounds: usize,
    /// Relaxed flag: reads that saw the flag but stale data. Depends on the
    /// hardware (always 0 on x86); the loom model is the proof of the bug.
    pub broken_stale_at_run_time: usize,
    /// Release/Acquire flag: stale reads (0 on every machine).
    pub fixed_flag_stale: usize,
    /// `Snapshot`: stale reads (0 on every machine).
    pub fixed_snapshot_stale: usize,
}

/// One writer publishes 42 behind a flag; one reader waits for the flag and
/// reads the data. Returns whether the reader saw stale data.
fn flag_round(store_order: Ordering, load_order: Ordering) -> bool {
    let data = AtomicU64::new(0);
    let ready = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            // Relaxed: the data itself; its visibility is what the flag's
            // ordering is supposed to provide.
            data.store(42, Ordering::Relaxed);
            // `store_order`: Release pairs with the reader's Acquire load;
            // Relaxed (the bug) pairs with nothing.
            ready.store(true, store_order);
        });
        let reader = s.spawn(|| {
            // `load_order`: Acquire pairs with the writer's Release store.
            while !ready.load(load_order) {
                hint::spin_loop();
                thread::yield_now();
            }
            // Relaxed: ordered (or not) by the flag, see above.
            data.load(Ordering::Relaxed) != 42
        });
        reader.join().expect("reader thread")
    })
}

/// The larder way: the data and its readiness are one published value.
fn snapshot_round() -> bool {
    #[derive(Debug, Clone)]
    struct Payload {
        a: u64,
        b: u64,
    }
    let published: Snapshot<Option<Payload>> = Snapshot::new(None);
    thread::scope(|s| {
        s.spawn(|| {
            published.store(Some(Payload { a: 42, b: 43 }));
        });
        let reader = s.spawn(|| {
            loop {
                if let Some(payload) = published.load_full().value() {
                    return (payload.a, payload.b) != (42, 43);
                }
                thread::yield_now();
            }
        });
        reader.join().expect("reader thread")
    })
}

/// Runs `rounds` publications of each variant.
pub fn run_rounds(rounds: usize) -> Outcome {
    let count = |f: &dyn Fn() -> bool| (0..rounds).filter(|_| f()).count();
    Outcome {
        rounds,
        broken_stale_at_run_time: count(&|| flag_round(Ordering::Relaxed, Ordering::Relaxed)),
        fixed_flag_stale: count(&|| flag_round(Ordering::Release, Ordering::Acquire)),
        fixed_snapshot_stale: count(&snapshot_round),
    }
}

/// Runs 200 publications of each variant.
pub fn run() -> Outcome {
    run_rounds(200)
}

fn main() {
    common::header(9, "publishing data behind a flag with Relaxed ordering");
    let outcome = run();
    common::broken(format!(
        "Relaxed flag: {} of {} reads saw the flag but stale data on this {} machine{}",
        outcome.broken_stale_at_run_time,
        outcome.rounds,
        std::env::consts::ARCH,
        if cfg!(any(target_arch = "x86", target_arch = "x86_64")) {
            " (x86 keeps stores in order: the bug is invisible here)"
        } else {
            ""
        }
    ));
    common::broken(
        "loom finds it on every machine: loom-tests/tests/misuse.rs relaxed_flag_publication_is_caught",
    );
    common::fixed(format!(
        "Release store / Acquire load: {} of {} stale (loom: release_acquire_flag_publication passes)",
        outcome.fixed_flag_stale, outcome.rounds
    ));
    common::fixed(format!(
        "Snapshot<Option<Payload>>: {} of {} stale: data and readiness are one atomic pointer",
        outcome.fixed_snapshot_stale, outcome.rounds
    ));
}
