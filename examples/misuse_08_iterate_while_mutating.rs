//! Misuse 08: iterating a concurrent map while it is being mutated, by
//! another thread or by the loop itself.
//!
//! The borrow checker forbids this for a plain `HashMap`, but a concurrent
//! map takes `&self` everywhere, so it compiles. `DashMap::iter` is not a
//! snapshot: it read-locks one shard at a time. A writer that moves an
//! entry from a shard already visited to one not yet visited makes the loop
//! see it twice; moving one the other way makes the loop miss it. And the
//! loop itself calling `remove` on the entry it is looking at waits for the
//! shard lock its own iterator holds: a deadlock.
//!
//! The fix is to iterate a snapshot: `OrderedIndex::snapshot()` (O(1),
//! holds no lock) sees each entry exactly once, as of one instant, while
//! the live index is changed by anyone, including the loop itself.
//!
//! The moves happen at a forced point of the iteration (channels), and the
//! `DashMap` uses a fixed hasher, so the numbers are the same on every run.
//!
//! Run with `cargo run --example misuse_08_iterate_while_mutating`.

#[path = "misuse_common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::thread;

use dashmap::DashMap;
use dashmap::try_result::TryResult;
use larder::OrderedIndex;

const JOBS: u32 = 12;
const SHARDS: usize = 4;

type JobMap = DashMap<String, u32, common::FixedHasher>;

/// What each variant saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Jobs in the map (each must be seen exactly once).
    pub jobs: u32,
    /// DashMap: jobs the loop saw twice while two jobs were being moved.
    pub broken_seen_twice: usize,
    /// DashMap: jobs the loop never saw.
    pub broken_missed: usize,
    /// DashMap: `remove` calls from inside the loop that would deadlock.
    pub broken_removes_deadlocked: usize,
    /// OrderedIndex snapshot: jobs seen twice during the same moves.
    pub fixed_seen_twice: usize,
    /// OrderedIndex snapshot: jobs missed.
    pub fixed_missed: usize,
    /// OrderedIndex: entries removed from inside the snapshot loop.
    pub fixed_removed_in_loop: usize,
}

fn job_key(i: u32) -> String {
    format!("job-{i:02}")
}

/// Whether `a` (present) and `b` live in the same shard: with a read guard
/// on `a`'s shard, a write lock on `b`'s shard is refused iff it is the same.
fn same_shard(map: &JobMap, a: &str, b: &str) -> bool {
    let _guard = map.get(a).expect("a is present");
    matches!(map.try_get_mut(b), TryResult::Locked)
}

/// Finds a key that is not in the map and lives in the shard of `of`.
fn new_key_in_shard_of(map: &JobMap, of: &str, tag: &str) -> String {
    (0..)
        .map(|i| format!("{tag}-{i}"))
        .find(|k| !map.contains_key(k) && same_shard(map, of, k))
        .expect("some key hashes to every shard")
}

/// Counts jobs (values) seen twice and jobs never seen.
fn tally(seen: &[u32]) -> (usize, usize) {
    let mut counts = BTreeMap::new();
    for job in seen {
        *counts.entry(*job).or_insert(0_usize) += 1;
    }
    let twice = counts.values().filter(|c| **c > 1).count();
    let missed = (0..JOBS).filter(|j| !counts.contains_key(j)).count();
    (twice, missed)
}

/// The moves a writer makes at the pause point: `(from, to)` key pairs.
struct Plan {
    pause_at: String,
    moves: [(String, String); 2],
}

/// BROKEN: DashMap iterated while a writer moves two jobs.
fn broken_moves() -> (usize, usize) {
    let map = JobMap::with_hasher_and_shard_amount(common::FixedHasher::default(), SHARDS);
    for i in 0..JOBS {
        map.insert(job_key(i), i);
    }
    // Learn the shard order of the iteration: consecutive keys in the same
    // shard form one group, and groups are visited one after the other.
    let order: Vec<String> = map.iter().map(|e| e.key().clone()).collect();
    let mut groups: Vec<Vec<String>> = Vec::new();
    for key in order {
        match groups.last_mut() {
            Some(group) if same_shard(&map, &group[0], &key) => group.push(key),
            _ => groups.push(vec![key]),
        }
    }
    assert!(groups.len() >= 3, "the jobs span at least three shards");
    let (first, last) = (&groups[0][0], &groups[groups.len() - 1][0]);
    let plan = Plan {
        // Pause while the loop is in the second shard.
        pause_at: groups[1][0].clone(),
        moves: [
            // From a shard already visited to one not yet visited: seen twice.
            (first.clone(), new_key_in_shard_of(&map, last, "moved")),
            // From a shard not yet visited to one already visited: missed.
            (last.clone(), new_key_in_shard_of(&map, first, "moved")),
        ],
    };

    let (paused_tx, paused_rx) = mpsc::channel();
    let (resume_tx, resume_rx) = mpsc::channel::<()>();
    let (map, plan) = (&map, &plan);
    thread::scope(|s| {
        s.spawn(move || {
            paused_rx.recv().expect("the loop pauses");
            for (from, to) in &plan.moves {
                let (_, job) = map.remove(from).expect("present");
                map.insert(to.clone(), job);
            }
            resume_tx.send(()).expect("the loop waits");
        });
        let mut seen = Vec::new();
        for entry in map.iter() {
            seen.push(*entry.value());
            if *entry.key() == plan.pause_at {
                paused_tx.send(()).expect("writer waits");
                resume_rx.recv().expect("writer resumes us");
            }
        }
        tally(&seen)
    })
}

/// BROKEN: the loop removes finished jobs from the map it is iterating.
fn broken_remove_in_loop() -> usize {
    let map = JobMap::with_hasher_and_shard_amount(common::FixedHasher::default(), SHARDS);
    for i in 0..JOBS {
        map.insert(job_key(i), i);
    }
    let mut would_deadlock = 0;
    for entry in map.iter() {
        let finished = entry.value() % 2 == 0;
        if finished {
            // `map.remove(entry.key())` would wait for the shard lock this
            // iterator holds. Ask instead of waiting:
            if matches!(map.try_get_mut(entry.key()), TryResult::Locked) {
                would_deadlock += 1;
            }
        }
    }
    would_deadlock
}

/// LARDER: the same moves during iteration of an `OrderedIndex` snapshot,
/// and removal from inside the loop.
fn fixed() -> (usize, usize, usize) {
    let index: OrderedIndex<String, u32> = (0..JOBS).map(|i| (job_key(i), i)).collect();
    let view = index.snapshot(); // O(1), holds no lock
    let pause_at = job_key(4);
    let mut seen = Vec::new();
    let mut removed = 0;
    for (key, job) in view.iter() {
        seen.push(**job);
        if *key == pause_at {
            // Another thread moves two jobs: one behind the loop, one ahead.
            thread::scope(|s| {
                s.spawn(|| {
                    for (from, to) in [(job_key(1), "moved-z"), (job_key(9), "moved-a")] {
                        let job = index.remove(&from).expect("present");
                        index.insert(to.to_owned(), *job);
                    }
                });
            });
        }
        if **job % 2 == 0 {
            // The loop itself removes finished jobs from the live index.
            if index.remove(key).is_some() {
                removed += 1;
            }
        }
    }
    let (twice, missed) = tally(&seen);
    (twice, missed, removed)
}

/// Runs every variant.
pub fn run() -> Outcome {
    let (broken_seen_twice, broken_missed) = broken_moves();
    let (fixed_seen_twice, fixed_missed, fixed_removed_in_loop) = fixed();
    Outcome {
        jobs: JOBS,
        broken_seen_twice,
        broken_missed,
        broken_removes_deadlocked: broken_remove_in_loop(),
        fixed_seen_twice,
        fixed_missed,
        fixed_removed_in_loop,
    }
}

fn main() {
    common::header(8, "iterating while mutating the same structure");
    let outcome = run();
    common::broken(format!(
        "DashMap::iter while a writer moves 2 of {} jobs: {} job seen twice, {} job missed",
        outcome.jobs, outcome.broken_seen_twice, outcome.broken_missed
    ));
    common::broken(format!(
        "DashMap::iter, remove(key) inside the loop: {} of {} removes would deadlock (the loop holds the shard lock)",
        outcome.broken_removes_deadlocked,
        outcome.jobs / 2
    ));
    common::fixed(format!(
        "OrderedIndex::snapshot() iterated during the same moves: {} seen twice, {} missed",
        outcome.fixed_seen_twice, outcome.fixed_missed
    ));
    common::fixed(format!(
        "OrderedIndex, remove(key) inside the snapshot loop: {} of {} removed, no deadlock",
        outcome.fixed_removed_in_loop,
        outcome.jobs / 2
    ));
    common::note(
        "to remove by a predicate, use OrderedIndex::retain (its predicate runs outside the lock)",
    );
}
