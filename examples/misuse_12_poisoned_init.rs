//! Misuse 12: a failed or panicking initialization that breaks every later
//! caller.
//!
//! `std::sync::LazyLock` runs its initializer once; if it panics, the lazy
//! value is poisoned for ever and every later access panics too, even after
//! the cause (a backend that was briefly down) has gone away. A `std::sync::Mutex` whose
//! holder panicked is poisoned the same way: every later `lock().unwrap()`
//! panics. The larder way: a panicking closure in `Snapshot::update` stores
//! nothing and poisons nothing; `TypedCache::get_or_init` lets the panic
//! reach the panicking caller only and hands the key to the next caller,
//! which runs the init again; `get_or_try_init` returns an error without
//! caching it.
//!
//! Run with `cargo run --example misuse_12_poisoned_init`.

#[path = "misuse_common/mod.rs"]
mod common;

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, LazyLock, Mutex};
use std::thread;
use std::time::Duration;

use larder::{Snapshot, TypedCache};

/// What each variant did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Callers after the first, failed one.
    pub later_callers: usize,
    /// `LazyLock`: later callers that failed although the backend was back.
    pub broken_lazy_failed: usize,
    /// `LazyLock`: how often the initializer ran (it is never retried).
    pub broken_lazy_init_runs: usize,
    /// `std::sync::Mutex`: later `lock()` calls that returned `PoisonError`.
    pub broken_mutex_poisoned: usize,
    /// `Snapshot::update` with a panicking closure: later updates that failed.
    pub fixed_snapshot_failed: usize,
    /// The snapshot's value after the panic and the later updates.
    pub fixed_snapshot_value: u64,
    /// `TypedCache::get_or_init`, first init panicked: later callers that
    /// failed.
    pub fixed_typed_failed: usize,
    /// ... and how often the init ran (the panicked one, then one retry).
    pub fixed_typed_init_runs: usize,
    /// `get_or_try_init`, first init returned `Err`: later callers that got
    /// an error (the error is returned, not cached).
    pub fixed_typed_error_sticky: usize,
    /// Hand-over: a caller waiting on an init that panics. Did the
    /// panicking caller get its panic, and the waiter a value?
    pub fixed_handover: (bool, bool),
    /// Hand-over: the cache's `init_failures` and `inits` counters.
    pub fixed_handover_stats: (u64, u64),
}

/// The backend is down for the first call and fine afterwards.
fn load_schema(calls: &AtomicUsize) -> String {
    // Relaxed: a counter read after the threads are joined.
    if calls.fetch_add(1, Ordering::Relaxed) == 0 {
        panic!("backend unavailable");
    }
    "schema v1".to_owned()
}

/// BROKEN: `LazyLock` whose first initialization panics.
fn broken_lazy(later_callers: usize) -> (usize, usize) {
    let calls = AtomicUsize::new(0);
    let schema = LazyLock::new(|| load_schema(&calls));
    let first = panic::catch_unwind(AssertUnwindSafe(|| schema.len()));
    assert!(first.is_err(), "the first initialization fails");
    let failed = (0..later_callers)
        .filter(|_| panic::catch_unwind(AssertUnwindSafe(|| schema.len())).is_err())
        .count();
    (failed, calls.load(Ordering::Relaxed))
}

/// BROKEN: a `std::sync::Mutex` whose holder panicked.
fn broken_mutex(later_callers: usize) -> usize {
    let registry = Mutex::new(Vec::<String>::new());
    thread::scope(|s| {
        let holder = s.spawn(|| {
            let mut guard = registry.lock().expect("not poisoned yet");
            guard.push("half-registered".to_owned());
            panic!("registration failed");
        });
        assert!(holder.join().is_err(), "the holder panicked");
    });
    (0..later_callers)
        .filter(|_| registry.lock().is_err())
        .count()
}

/// LARDER: a panicking `update` closure stores nothing; later updates work.
fn fixed_snapshot(later_callers: usize) -> (usize, u64) {
    let counter = Snapshot::new(0_u64);
    let first = panic::catch_unwind(AssertUnwindSafe(|| {
        counter.update(|_| panic!("computing the new value failed"));
    }));
    assert!(first.is_err(), "the first update panics");
    let failed = (0..later_callers)
        .filter(|_| {
            panic::catch_unwind(AssertUnwindSafe(|| {
                counter.update(|n| n + 1);
            }))
            .is_err()
        })
        .count();
    (failed, **counter.load())
}

/// LARDER: `TypedCache::get_or_init` whose first init panics.
fn fixed_typed_panic(later_callers: usize) -> (usize, usize) {
    let calls = AtomicUsize::new(0);
    let schemas: TypedCache<&str, String> = TypedCache::new();
    let first = panic::catch_unwind(AssertUnwindSafe(|| {
        schemas.get_or_init(&"users", || load_schema(&calls));
    }));
    assert!(first.is_err(), "the first initialization fails");
    let failed = (0..later_callers)
        .filter(|_| {
            panic::catch_unwind(AssertUnwindSafe(|| {
                schemas.get_or_init(&"users", || load_schema(&calls));
            }))
            .is_err()
        })
        .count();
    (failed, calls.load(Ordering::Relaxed))
}

/// LARDER: `get_or_try_init` whose first init fails: the error reaches that
/// caller and is not cached.
fn fixed_typed_error(later_callers: usize) -> usize {
    let calls = AtomicUsize::new(0);
    let schemas: TypedCache<&str, String> = TypedCache::new();
    let fetch = || {
        // Relaxed: a counter, read by this thread only.
        if calls.fetch_add(1, Ordering::Relaxed) == 0 {
            Err("backend unavailable")
        } else {
            Ok("schema v1".to_owned())
        }
    };
    assert!(schemas.get_or_try_init(&"users", fetch).is_err());
    (0..later_callers)
        .filter(|_| schemas.get_or_try_init(&"users", fetch).is_err())
        .count()
}

/// LARDER: a caller blocks on an init that then panics; it takes over.
fn fixed_handover() -> ((bool, bool), (u64, u64)) {
    let schemas: TypedCache<&str, String> = TypedCache::new();
    let leader_in_init = Barrier::new(2);
    let (leader_panicked, waiter_value) = thread::scope(|s| {
        let leader = s.spawn(|| {
            schemas.get_or_init(&"users", || {
                leader_in_init.wait();
                // Give the waiter time to block on this init.
                thread::sleep(Duration::from_millis(20));
                panic!("init crashed mid-way");
            })
        });
        let waiter = s.spawn(|| {
            leader_in_init.wait();
            schemas.get_or_init(&"users", || "schema v1".to_owned())
        });
        (leader.join().is_err(), waiter.join().ok())
    });
    let stats = schemas.stats();
    (
        (
            leader_panicked,
            waiter_value.is_some_and(|v| v == "schema v1"),
        ),
        (stats.init_failures, stats.inits),
    )
}

/// Runs every variant with five callers after the failed one.
pub fn run() -> Outcome {
    let later_callers = 5;
    let (broken_lazy_failed, broken_lazy_init_runs) = broken_lazy(later_callers);
    let (fixed_snapshot_failed, fixed_snapshot_value) = fixed_snapshot(later_callers);
    let (fixed_typed_failed, fixed_typed_init_runs) = fixed_typed_panic(later_callers);
    let (fixed_handover, fixed_handover_stats) = fixed_handover();
    Outcome {
        later_callers,
        broken_lazy_failed,
        broken_lazy_init_runs,
        broken_mutex_poisoned: broken_mutex(later_callers),
        fixed_snapshot_failed,
        fixed_snapshot_value,
        fixed_typed_failed,
        fixed_typed_init_runs,
        fixed_typed_error_sticky: fixed_typed_error(later_callers),
        fixed_handover,
        fixed_handover_stats,
    }
}

fn main() {
    common::quiet_panics();
    common::header(
        12,
        "a failed or panicking initialization breaks every later caller",
    );
    let outcome = run();
    common::broken(format!(
        "LazyLock, first init panicked: {} of {} later callers failed although the backend was back; init ran {} time(s)",
        outcome.broken_lazy_failed, outcome.later_callers, outcome.broken_lazy_init_runs
    ));
    common::broken(format!(
        "std Mutex, holder panicked: {} of {} later lock() calls got PoisonError",
        outcome.broken_mutex_poisoned, outcome.later_callers
    ));
    common::fixed(format!(
        "Snapshot::update, closure panicked: {} of {} later updates failed; value = {}",
        outcome.fixed_snapshot_failed, outcome.later_callers, outcome.fixed_snapshot_value
    ));
    common::fixed(format!(
        "TypedCache::get_or_init, first init panicked: {} of {} later callers failed; init ran {} times (the panicked one, one retry)",
        outcome.fixed_typed_failed, outcome.later_callers, outcome.fixed_typed_init_runs
    ));
    common::fixed(format!(
        "TypedCache::get_or_try_init, first init returned Err: {} of {} later callers got an error (errors are not cached)",
        outcome.fixed_typed_error_sticky, outcome.later_callers
    ));
    common::fixed(format!(
        "TypedCache, waiter blocked on an init that panicked: panic reached its caller = {}, waiter got the value = {}; stats init_failures = {}, inits = {}",
        outcome.fixed_handover.0,
        outcome.fixed_handover.1,
        outcome.fixed_handover_stats.0,
        outcome.fixed_handover_stats.1
    ));
}
