//! Misuse 04: check-then-act. `contains_key` then `insert` runs an
//! initialization twice; `load` then `store` loses an update.
//!
//! Both halves of each pair are forced into the harmful interleaving with a
//! `Barrier`, so the numbers are the same on every run.
//!
//! Run with `cargo run --example misuse_04_check_then_act`.

#[path = "misuse_common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use dashmap::DashMap;
use larder::{Snapshot, TypedCache};

/// What each variant did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Threads asking for the same cold key at once.
    pub callers: usize,
    /// `contains_key` then `insert` (forced overlap): inits run.
    pub broken_inits: usize,
    /// ... and distinct values handed out for the one key.
    pub broken_distinct_values: usize,
    /// `TypedCache::get_or_init`, callers arriving during the init: inits.
    pub fixed_inits: usize,
    /// ... and distinct values handed out (all callers share one `Arc`).
    pub fixed_distinct_values: usize,
    /// ... and callers that blocked on the init instead of running their
    /// own (timing-dependent: printed, not asserted).
    pub fixed_waits: u64,
    /// Threads racing for the one counter (forced), and increments each.
    pub racers: u64,
    /// Final counter after `racers` forced `load` + `store(+1)`.
    pub broken_final: u64,
    /// Increments lost by the forced `load` + `store`.
    pub broken_lost: u64,
    /// Final counter after `racers` forced `update(+1)`.
    pub fixed_final: u64,
    /// How often the `update` closures ran (more than `racers`: the loser
    /// of the race recomputed its value on top of the winner's).
    pub fixed_closure_runs: u64,
    /// Unforced: threads times increments with `update`.
    pub stress_expected: u64,
    /// Unforced: the counter after them (exact, every run).
    pub stress_fixed_final: u64,
}

/// A parsed schema: expensive to build.
#[derive(Debug)]
pub struct Schema {
    /// The fields.
    pub fields: Vec<String>,
}

fn parse_schema(inits: &AtomicUsize) -> Schema {
    // Relaxed: a counter read after the threads are joined.
    inits.fetch_add(1, Ordering::Relaxed);
    Schema {
        fields: vec!["id".into(), "name".into()],
    }
}

/// Counts distinct allocations among the values callers received.
fn distinct(values: &[Arc<Schema>]) -> usize {
    let mut pointers: Vec<*const Schema> = values.iter().map(Arc::as_ptr).collect();
    pointers.sort();
    pointers.dedup();
    pointers.len()
}

/// BROKEN: `contains_key`, then init and `insert`; every caller checks
/// before any inserts (forced with a barrier).
fn broken_double_init(callers: usize) -> (usize, usize) {
    let cache: DashMap<&str, Arc<Schema>> = DashMap::new();
    let inits = AtomicUsize::new(0);
    let all_checked = Barrier::new(callers);
    let values: Vec<Arc<Schema>> = thread::scope(|s| {
        let handles: Vec<_> = (0..callers)
            .map(|_| {
                s.spawn(|| {
                    let missing = !cache.contains_key("users");
                    all_checked.wait(); // force: everyone has checked before anyone inserts
                    if missing {
                        let schema = Arc::new(parse_schema(&inits));
                        cache.insert("users", Arc::clone(&schema));
                        schema
                    } else {
                        Arc::clone(&cache.get("users").expect("present"))
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("caller"))
            .collect()
    });
    (inits.load(Ordering::Relaxed), distinct(&values))
}

/// LARDER: `get_or_init`; the other callers call in only once the first
/// caller is inside its init (forced with a barrier), and the init then
/// takes a while.
fn fixed_single_init(callers: usize) -> (usize, usize, u64) {
    // Shared values: the cache holds an `Arc`, every caller gets a clone.
    let cache: TypedCache<&str, Arc<Schema>> = TypedCache::new();
    let inits = AtomicUsize::new(0);
    let leader_in_init = Barrier::new(callers);
    let values: Vec<Arc<Schema>> = thread::scope(|s| {
        let (cache, inits, leader_in_init) = (&cache, &inits, &leader_in_init);
        let leader = s.spawn(move || {
            cache.get_or_init(&"users", || {
                leader_in_init.wait(); // release the other callers
                // Give them time to reach get_or_init and block on this init;
                // whether they wait or arrive after it, each gets its value.
                thread::sleep(Duration::from_millis(20));
                Arc::new(parse_schema(inits))
            })
        });
        let others: Vec<_> = (1..callers)
            .map(|_| {
                s.spawn(move || {
                    leader_in_init.wait();
                    cache.get_or_init(&"users", || Arc::new(parse_schema(inits)))
                })
            })
            .collect();
        let mut values = vec![leader.join().expect("leader")];
        values.extend(others.into_iter().map(|h| h.join().expect("caller")));
        values
    });
    (
        inits.load(Ordering::Relaxed),
        distinct(&values),
        cache.stats().waits,
    )
}

/// BROKEN: every racer loads, then (after all have loaded) stores load + 1.
fn broken_lost_update(racers: u64) -> u64 {
    let counter = Snapshot::new(0_u64);
    let all_loaded = Barrier::new(racers as usize);
    thread::scope(|s| {
        for _ in 0..racers {
            s.spawn(|| {
                let seen = counter.load_full();
                all_loaded.wait(); // force: everyone has read 0 before anyone writes
                counter.store(**seen + 1);
            });
        }
    });
    **counter.load()
}

/// LARDER: the same forced race with `update`: every racer's first closure
/// computes from the same value, yet nothing is lost: all but one exchange
/// fail and their closures run again on the newer value.
fn fixed_update(racers: u64) -> (u64, u64) {
    let counter = Snapshot::new(0_u64);
    let all_computed = Barrier::new(racers as usize);
    let runs = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..racers {
            s.spawn(|| {
                let mut first = true;
                counter.update(|n| {
                    runs.fetch_add(1, Ordering::Relaxed);
                    if first {
                        first = false;
                        all_computed.wait(); // force: everyone computes from 0
                    }
                    n + 1
                });
            });
        }
    });
    (**counter.load(), runs.load(Ordering::Relaxed) as u64)
}

/// LARDER, unforced: threads hammering `update` lose nothing.
fn stress_update(threads: u64, each: u64) -> u64 {
    let counter = Arc::new(Snapshot::new(0_u64));
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..each {
                    counter.update(|n| n + 1);
                }
            });
        }
    });
    **counter.load()
}

/// Runs every variant.
pub fn run() -> Outcome {
    let callers = 4;
    let (broken_inits, broken_distinct_values) = broken_double_init(callers);
    let (fixed_inits, fixed_distinct_values, fixed_waits) = fixed_single_init(callers);
    let racers = 2;
    let broken_final = broken_lost_update(racers);
    let (fixed_final, fixed_closure_runs) = fixed_update(racers);
    let (threads, each) = (4, 500);
    Outcome {
        callers,
        broken_inits,
        broken_distinct_values,
        fixed_inits,
        fixed_distinct_values,
        fixed_waits,
        racers,
        broken_final,
        broken_lost: racers - broken_final,
        fixed_final,
        fixed_closure_runs,
        stress_expected: threads * each,
        stress_fixed_final: stress_update(threads, each),
    }
}

fn main() {
    common::header(4, "check-then-act: double initialization, load-then-store");
    let outcome = run();
    common::broken(format!(
        "{} threads, contains_key then insert (forced overlap): init ran {} times, {} different values handed out for one key",
        outcome.callers, outcome.broken_inits, outcome.broken_distinct_values
    ));
    common::fixed(format!(
        "{} threads, TypedCache::get_or_init (callers arrive during the init): init ran {} time, {} value shared ({} callers waited)",
        outcome.callers, outcome.fixed_inits, outcome.fixed_distinct_values, outcome.fixed_waits
    ));
    common::broken(format!(
        "{} threads each load then store +1 (forced overlap): counter = {}, {} update(s) lost",
        outcome.racers, outcome.broken_final, outcome.broken_lost
    ));
    common::fixed(format!(
        "{} threads each Snapshot::update(+1) (same forced overlap): counter = {}, closure ran {} times (the loser retried)",
        outcome.racers, outcome.fixed_final, outcome.fixed_closure_runs
    ));
    common::fixed(format!(
        "unforced: 4 threads x 500 update(+1): counter = {} of {}",
        outcome.stress_fixed_final, outcome.stress_expected
    ));
}
