//! Misuse 07: taking a read lock recursively while a writer waits.
//!
//! parking_lot's `RwLock` (and std's on most platforms) is fair to writers:
//! once a writer waits, new readers queue behind it. A thread that already
//! holds a read guard and asks for a second one (often hidden: a helper
//! function that locks again) waits for the writer, and the writer waits for
//! that thread's first guard: a deadlock that only happens when a write
//! arrives at the wrong moment.
//!
//! The demonstrator forces that moment: it waits until the writer has
//! announced itself (`is_locked_exclusive`), then asks for the second read
//! guard with `try_read_for`, which gives up after a timeout instead of
//! hanging.
//!
//! Run with `cargo run --example misuse_07_recursive_read_lock`.

#[path = "misuse_common/mod.rs"]
mod common;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use larder::Snapshot;
use parking_lot::RwLock;

/// What each variant did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The nested `read()` would deadlock (it timed out behind the writer).
    pub broken_deadlock: bool,
    /// The writer completed once the outer guard was dropped.
    pub broken_writer_finished_after_release: bool,
    /// larder: the store completed while the outer guard was alive.
    pub fixed_store_completed_under_guard: bool,
    /// larder: versions seen by the outer and the nested load (the nested
    /// one ran after the store, without waiting for the outer guard).
    pub fixed_versions_seen: (u64, u64),
}

/// Sums the routes: the helper that (re-)takes the read lock.
fn total_weight(table: &RwLock<Vec<u32>>) -> Option<u32> {
    // Real code says `table.read()`; this waits at most STALL_TIMEOUT.
    let routes = table.try_read_for(common::STALL_TIMEOUT)?;
    Some(routes.iter().sum())
}

/// BROKEN: read guard held, a writer arrives, then a nested read.
fn broken() -> (bool, bool) {
    let table = RwLock::new(vec![1, 2, 3]);
    thread::scope(|s| {
        let outer = table.read();
        let writer = s.spawn(|| table.write().push(4));
        // Wait (bounded) until the writer holds the writer bit and is waiting
        // for readers to leave: from now on new readers queue behind it.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !table.is_locked_exclusive() {
            assert!(Instant::now() < deadline, "the writer never arrived");
            thread::yield_now();
        }
        let nested = total_weight(&table);
        let deadlock = nested.is_none();
        drop(outer); // the deadlock is broken only because we can let go here
        writer.join().expect("writer thread");
        (deadlock, table.read().len() == 4)
    })
}

/// LARDER: `Snapshot::load` takes no lock; a nested load never waits, and a
/// writer never waits for readers.
fn fixed() -> (bool, (u64, u64)) {
    let table = Snapshot::new(vec![1_u32, 2, 3]);
    let (stored_tx, stored_rx) = mpsc::channel();
    thread::scope(|s| {
        let outer = table.load();
        s.spawn(|| {
            let mut routes = table.load_full().to_vec();
            routes.push(4);
            table.store(routes);
            stored_tx.send(()).expect("main thread waits");
        });
        // The store completes while `outer` is alive (bounded wait).
        let store_completed = stored_rx.recv_timeout(Duration::from_secs(5)).is_ok();
        let nested = table.load(); // never waits
        let versions = (outer.version(), nested.version());
        (store_completed, versions)
    })
}

/// Runs both variants.
pub fn run() -> Outcome {
    let (broken_deadlock, broken_writer_finished_after_release) = broken();
    let (fixed_store_completed_under_guard, fixed_versions_seen) = fixed();
    Outcome {
        broken_deadlock,
        broken_writer_finished_after_release,
        fixed_store_completed_under_guard,
        fixed_versions_seen,
    }
}

fn main() {
    common::header(7, "recursive read lock while a writer waits");
    let outcome = run();
    common::broken(format!(
        "RwLock: read guard held, writer waiting, nested read(): deadlock = {} (try_read_for gave up after {:?}); writer finished once the outer guard was dropped: {}",
        outcome.broken_deadlock,
        common::STALL_TIMEOUT,
        outcome.broken_writer_finished_after_release
    ));
    common::fixed(format!(
        "Snapshot: store completed while the outer guard was alive: {}; nested load did not wait, versions seen (outer, nested) = {:?}",
        outcome.fixed_store_completed_under_guard, outcome.fixed_versions_seen
    ));
    common::note(
        "within one unit of work, use the outer guard's value (see misuse 10): the nested load saw a newer version",
    );
}
