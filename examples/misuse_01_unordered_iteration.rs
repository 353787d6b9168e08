//! Misuse 01: iterating an unordered map where the consumer needs key order.
//!
//! Go original: consumer offsets kept in a `sync.Map` and walked with
//! `Range` to commit or consume "everything up to offset N", as if `Range`
//! visited keys in order. It does not, and neither does any hash map: the
//! order is whatever the hashes make it. Code that stops at the first key
//! beyond N skips offsets; code that takes "the first" key as the oldest
//! takes a random one; code that processes in iteration order processes out
//! of order.
//!
//! `OrderedIndex` is the fix the Go documents recommend (an ordered map
//! under a reader-writer lock): `first` is the smallest key, `range` and
//! `iter` are sorted, and `drain_to` removes and returns, in order, every
//! entry up to a bound in one atomic step.
//!
//! The `DashMap` here uses a fixed hasher and shard count, so it prints the
//! same (wrong) order on every run.
//!
//! Run with `cargo run --example misuse_01_unordered_iteration`.

#[path = "misuse_common/mod.rs"]
mod common;

use std::ops::Bound;

use dashmap::DashMap;
use larder::OrderedIndex;

/// The offsets of messages received and not yet consumed.
pub const OFFSETS: std::ops::RangeInclusive<u64> = 100..=131;
/// The consumer may consume every offset up to and including this one.
pub const COMMITTED: u64 = 115;

/// What each variant consumed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Offsets up to `COMMITTED` (what should be consumed).
    pub expected: Vec<u64>,
    /// DashMap, "stop at the first offset beyond the commit": consumed, in
    /// the order consumed.
    pub broken_stop_early: Vec<u64>,
    /// DashMap, filter all: consumed in the order consumed.
    pub broken_filtered: Vec<u64>,
    /// DashMap: the "oldest" pending offset taken as the first one iterated.
    pub broken_first: u64,
    /// OrderedIndex `drain_to(Included(COMMITTED))`: consumed in order.
    pub fixed_drained: Vec<u64>,
    /// OrderedIndex `first()`: the oldest pending offset after the drain.
    pub fixed_first: u64,
    /// Entries left in the index after the drain.
    pub fixed_left: usize,
}

/// Offsets consumed out of place: positions where an offset is smaller than
/// the one consumed before it.
pub fn inversions(order: &[u64]) -> usize {
    order.windows(2).filter(|w| w[1] < w[0]).count()
}

/// Offsets of `expected` that `consumed` lacks.
pub fn missed(expected: &[u64], consumed: &[u64]) -> usize {
    expected.iter().filter(|o| !consumed.contains(o)).count()
}

fn message(offset: u64) -> String {
    format!("payload of offset {offset}")
}

/// BROKEN: a hash map iterated as if it were ordered.
fn broken() -> (Vec<u64>, Vec<u64>, u64) {
    let pending: DashMap<u64, String, common::FixedHasher> =
        DashMap::with_hasher_and_shard_amount(common::FixedHasher::default(), 4);
    for offset in OFFSETS {
        pending.insert(offset, message(offset));
    }
    // "Consume everything up to the commit; offsets are increasing, so stop
    // at the first one beyond it."
    let mut stop_early = Vec::new();
    for entry in pending.iter() {
        if *entry.key() > COMMITTED {
            break;
        }
        stop_early.push(*entry.key());
    }
    // "Consume every offset up to the commit" (all of them, out of order).
    let filtered: Vec<u64> = pending
        .iter()
        .map(|entry| *entry.key())
        .filter(|offset| *offset <= COMMITTED)
        .collect();
    // "The oldest pending offset is the first one."
    let first = pending
        .iter()
        .next()
        .map(|entry| *entry.key())
        .expect("not empty");
    (stop_early, filtered, first)
}

/// LARDER: an ordered index, drained up to the commit in one step.
fn fixed() -> (Vec<u64>, u64, usize) {
    let pending: OrderedIndex<u64, String> = OrderedIndex::new();
    for offset in OFFSETS {
        pending.insert(offset, message(offset));
    }
    let drained: Vec<u64> = pending
        .drain_to(Bound::Included(&COMMITTED))
        .into_iter()
        .map(|(offset, _message)| offset)
        .collect();
    let (first, _) = pending.first().expect("offsets beyond the commit remain");
    (drained, first, pending.len())
}

/// Runs both variants.
pub fn run() -> Outcome {
    let (broken_stop_early, broken_filtered, broken_first) = broken();
    let (fixed_drained, fixed_first, fixed_left) = fixed();
    Outcome {
        expected: (*OFFSETS.start()..=COMMITTED).collect(),
        broken_stop_early,
        broken_filtered,
        broken_first,
        fixed_drained,
        fixed_first,
        fixed_left,
    }
}

fn main() {
    common::header(1, "expecting ordered iteration from a hash map");
    let outcome = run();
    common::note(format!(
        "pending offsets {}..={}, committed up to {COMMITTED}: {} offsets to consume",
        OFFSETS.start(),
        OFFSETS.end(),
        outcome.expected.len()
    ));
    common::broken(format!(
        "DashMap, stop at the first offset > {COMMITTED}: consumed {} ({} missed): {:?}",
        outcome.broken_stop_early.len(),
        missed(&outcome.expected, &outcome.broken_stop_early),
        outcome.broken_stop_early
    ));
    common::broken(format!(
        "DashMap, filter every offset <= {COMMITTED}: consumed {} with {} out of order: {:?}",
        outcome.broken_filtered.len(),
        inversions(&outcome.broken_filtered),
        outcome.broken_filtered
    ));
    common::broken(format!(
        "DashMap, oldest pending = first iterated: {} (the oldest is {})",
        outcome.broken_first,
        OFFSETS.start()
    ));
    common::fixed(format!(
        "OrderedIndex::drain_to(Included({COMMITTED})): consumed {} ({} missed, {} out of order): {:?}",
        outcome.fixed_drained.len(),
        missed(&outcome.expected, &outcome.fixed_drained),
        inversions(&outcome.fixed_drained),
        outcome.fixed_drained
    ));
    common::fixed(format!(
        "OrderedIndex::first() after the drain: {} ({} offsets left pending)",
        outcome.fixed_first, outcome.fixed_left
    ));
}
