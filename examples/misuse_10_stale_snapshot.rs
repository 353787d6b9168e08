//! Misuse 10: loading a snapshot twice within one unit of work, or keeping
//! one snapshot for ever.
//!
//! Two loads of a swapped value in one request can straddle a store: the
//! request then combines fields of two different configurations, a value
//! that no configuration ever said. The opposite mistake keeps the `Arc` it
//! loaded at start-up for the life of a worker and never sees an update.
//! The fix for both: load once per unit of work (`load` or `load_full`),
//! use only that value inside it, and load again for the next one
//! (`cached_reader` makes the per-request load nearly free).
//!
//! The store between the two loads is forced with channels, so the numbers
//! are the same on every run.
//!
//! Run with `cargo run --example misuse_10_stale_snapshot`.

#[path = "misuse_common/mod.rs"]
mod common;

use std::sync::mpsc;
use std::thread;

use larder::Snapshot;

/// A rate limit: `amount` requests per `window`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// Requests allowed per window.
    pub amount: u32,
    /// The window.
    pub window: &'static str,
}

/// What each variant did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The limit the broken request applied (never configured).
    pub broken_applied: Limit,
    /// The versions its two loads saw.
    pub broken_versions: (u64, u64),
    /// The limit the fixed request applied (the configuration it loaded).
    pub fixed_applied: Limit,
    /// The versions its one load saw (twice the same).
    pub fixed_versions: (u64, u64),
    /// Updates made while a long-lived worker kept its start-up `Arc`.
    pub updates: u64,
    /// How many versions behind that worker was at the end.
    pub broken_staleness: u64,
    /// How many versions behind a worker loading per request (through a
    /// `CachedReader`) was at the end.
    pub fixed_staleness: u64,
}

fn configured() -> [Limit; 2] {
    [
        Limit {
            amount: 100,
            window: "second",
        },
        Limit {
            amount: 6000,
            window: "minute",
        },
    ]
}

/// Runs one request on another thread while the main thread stores the new
/// configuration between the request's two reads of it.
fn request(load_once: bool) -> (Limit, (u64, u64)) {
    let [old, new] = configured();
    let config = Snapshot::new(old);
    let (paused_tx, paused_rx) = mpsc::channel();
    let (resume_tx, resume_rx) = mpsc::channel();
    thread::scope(|s| {
        let config = &config;
        let handler = s.spawn(move || {
            if load_once {
                // FIXED: one load; every field comes from the same value.
                let limit = config.load_full();
                paused_tx.send(()).expect("main waits");
                resume_rx.recv().expect("main resumes us");
                let applied = Limit {
                    amount: limit.amount,
                    window: limit.window,
                };
                (applied, (limit.version(), limit.version()))
            } else {
                // BROKEN: each field read through its own load.
                let amount = config.load().amount;
                let first = config.version();
                paused_tx.send(()).expect("main waits");
                resume_rx.recv().expect("main resumes us");
                let window = config.load().window;
                let second = config.version();
                (Limit { amount, window }, (first, second))
            }
        });
        paused_rx.recv().expect("handler pauses");
        config.store(new); // an operator changes the limit mid-request
        resume_tx.send(()).expect("handler waits");
        handler.join().expect("handler thread")
    })
}

/// A worker that keeps the configuration it loaded at start-up (BROKEN) or
/// loads it per request through a `CachedReader` (FIXED); returns how many
/// versions behind it is after `updates` updates.
fn staleness(updates: u64, per_request: bool) -> u64 {
    let [old, _] = configured();
    let config = Snapshot::new(old);
    let kept_at_startup = config.load_full();
    let mut reader = config.cached_reader();
    let mut used_version = 0;
    for i in 1..=updates {
        config.update(|limit| Limit {
            amount: limit.amount + 1,
            ..limit.clone()
        });
        // The next request:
        used_version = if per_request {
            reader.load().version()
        } else {
            kept_at_startup.version()
        };
        assert!(i >= used_version);
    }
    config.version() - used_version
}

/// Runs every variant.
pub fn run() -> Outcome {
    let (broken_applied, broken_versions) = request(false);
    let (fixed_applied, fixed_versions) = request(true);
    let updates = 3;
    Outcome {
        broken_applied,
        broken_versions,
        fixed_applied,
        fixed_versions,
        updates,
        broken_staleness: staleness(updates, false),
        fixed_staleness: staleness(updates, true),
    }
}

fn main() {
    common::header(
        10,
        "using a stale snapshot, or loading twice in one unit of work",
    );
    let outcome = run();
    let [old, new] = configured();
    common::note(format!(
        "configured: {} per {} (version 0), then {} per {} (version 1), stored mid-request",
        old.amount, old.window, new.amount, new.window
    ));
    common::broken(format!(
        "two loads in one request: applied {} per {} (versions {:?}), a limit nobody configured",
        outcome.broken_applied.amount, outcome.broken_applied.window, outcome.broken_versions
    ));
    common::fixed(format!(
        "one load_full per request: applied {} per {} (versions {:?})",
        outcome.fixed_applied.amount, outcome.fixed_applied.window, outcome.fixed_versions
    ));
    common::broken(format!(
        "worker keeps its start-up Arc: {} versions behind after {} updates",
        outcome.broken_staleness, outcome.updates
    ));
    common::fixed(format!(
        "worker loads per request via cached_reader(): {} versions behind after {} updates",
        outcome.fixed_staleness, outcome.updates
    ));
}
