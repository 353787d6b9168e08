//! Unit tests of the sequential core (`core.rs`): each protocol rule on
//! its own, with the invariants checked after every step. The concurrent
//! behaviour is tested through the public API in `tests/workqueue.rs` and
//! by the loom models in `loom-tests/tests/workqueue.rs`.

use std::time::Duration;

use super::core::{Added, Core, Popped};

const fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// The keys' "hash": the tests pick colliding hashes on purpose below.
fn hash(key: u32) -> u64 {
    u64::from(key % 4)
}

fn add(core: &mut Core<u32>, key: u32, now: Duration) -> Added {
    let (added, _) = core.add(hash(key), key, now);
    core.check_invariants();
    added
}

fn pop(core: &mut Core<u32>, now: Duration) -> Popped<u32> {
    let (popped, _) = core.pop(now);
    core.check_invariants();
    popped
}

fn done(core: &mut Core<u32>, key: u32, now: Duration) -> bool {
    let (requeued, _) = core.done(hash(key), &key, now);
    core.check_invariants();
    requeued
}

#[test]
fn a_waiting_key_is_queued_once() {
    let mut core = Core::default();
    assert_eq!(add(&mut core, 1, ms(0)), Added::Queued);
    assert_eq!(add(&mut core, 1, ms(0)), Added::AlreadyQueued);
    assert_eq!(add(&mut core, 5, ms(0)), Added::Queued); // same hash, other key
    assert_eq!(core.len(), 2);
    assert_eq!(core.counters.adds, 2);
    assert_eq!(pop(&mut core, ms(0)), Popped::Key(1));
    assert_eq!(pop(&mut core, ms(0)), Popped::Key(5));
    assert_eq!(pop(&mut core, ms(0)), Popped::Empty);
}

#[test]
fn a_processing_key_is_not_handed_out_again() {
    let mut core = Core::default();
    add(&mut core, 1, ms(0));
    assert_eq!(pop(&mut core, ms(0)), Popped::Key(1));
    assert_eq!(core.processing(), 1);
    assert_eq!(add(&mut core, 1, ms(0)), Added::WhileProcessing);
    assert_eq!(add(&mut core, 1, ms(0)), Added::WhileProcessing);
    assert_eq!(core.len(), 0);
    assert_eq!(pop(&mut core, ms(0)), Popped::Empty);
}

#[test]
fn an_add_during_processing_is_queued_by_done() {
    let mut core = Core::default();
    add(&mut core, 1, ms(0));
    assert_eq!(pop(&mut core, ms(0)), Popped::Key(1));
    add(&mut core, 1, ms(0));
    assert!(done(&mut core, 1, ms(0)));
    assert_eq!(pop(&mut core, ms(0)), Popped::Key(1));
    // Without an add during processing, done lets the key go.
    assert!(!done(&mut core, 1, ms(0)));
    assert_eq!(core.processing(), 0);
    assert_eq!(pop(&mut core, ms(0)), Popped::Empty);
}

#[test]
fn done_of_a_key_nobody_holds_changes_nothing() {
    let mut core = Core::default();
    assert!(!done(&mut core, 9, ms(0)));
    add(&mut core, 9, ms(0));
    // Queued, not processing: done must not queue it a second time.
    assert!(!done(&mut core, 9, ms(0)));
    assert_eq!(core.len(), 1);
}

#[test]
fn a_sooner_delay_wins_and_a_later_one_does_not_postpone() {
    let mut core = Core::default();
    core.add_at(hash(1), 1, ms(100));
    core.check_invariants();
    let (soonest, _) = core.add_at(hash(1), 1, ms(10));
    assert!(soonest, "the sooner time is the heap's new soonest");
    let (soonest, _) = core.add_at(hash(1), 1, ms(50));
    assert!(!soonest);
    core.check_invariants();
    assert_eq!(core.delayed(), 1);
    assert_eq!(pop(&mut core, ms(9)), Popped::Empty);
    assert_eq!(pop(&mut core, ms(10)), Popped::Key(1));
    assert!(!done(&mut core, 1, ms(10)));
    // The stale heap items of 50 and 100 ms queue nothing.
    assert_eq!(pop(&mut core, ms(200)), Popped::Empty);
    assert_eq!(core.delayed(), 0);
}

#[test]
fn a_due_key_already_waiting_is_not_queued_twice() {
    let mut core = Core::default();
    add(&mut core, 1, ms(0));
    core.add_at(hash(1), 1, ms(10));
    assert_eq!(core.promote_due(ms(10)), 0);
    core.check_invariants();
    assert_eq!(core.len(), 1);
}

#[test]
fn a_stale_heap_item_of_a_reused_slot_is_skipped() {
    let mut core = Core::default();
    core.add_at(hash(1), 1, ms(10));
    core.add_at(hash(1), 1, ms(5));
    assert_eq!(pop(&mut core, ms(5)), Popped::Key(1));
    done(&mut core, 1, ms(5)); // key 1's slot is free again
    core.add_at(hash(2), 2, ms(20)); // and reused by key 2
    core.check_invariants();
    // Key 1's old item (10 ms) names the slot; it must not queue key 2.
    assert_eq!(pop(&mut core, ms(10)), Popped::Empty);
    assert_eq!(core.next_due(), Some(ms(20)));
    assert_eq!(pop(&mut core, ms(20)), Popped::Key(2));
}

#[test]
fn shutdown_drops_delayed_keys_ignores_adds_and_hands_out_the_rest() {
    let mut core = Core::default();
    add(&mut core, 1, ms(0));
    core.add_at(hash(2), 2, ms(10));
    add(&mut core, 3, ms(0));
    assert_eq!(pop(&mut core, ms(0)), Popped::Key(1));
    let dropped = core.shut_down();
    core.check_invariants();
    assert_eq!(dropped, [2]);
    assert_eq!(add(&mut core, 4, ms(0)), Added::Ignored);
    assert_eq!(core.add_at(hash(5), 5, ms(1)), (false, Some(5)));
    // Added while processing, after shutdown: ignored too.
    assert_eq!(add(&mut core, 1, ms(0)), Added::Ignored);
    assert_eq!(pop(&mut core, ms(20)), Popped::Key(3));
    assert_eq!(pop(&mut core, ms(20)), Popped::ShutDown);
    assert!(!done(&mut core, 1, ms(20)));
    assert!(!done(&mut core, 3, ms(20)));
    assert_eq!(core.processing(), 0);
}

#[test]
fn times_in_queue_and_in_processing_are_counted() {
    let mut core = Core::default();
    add(&mut core, 1, ms(0));
    add(&mut core, 2, ms(5));
    assert_eq!(pop(&mut core, ms(10)), Popped::Key(1));
    assert_eq!(pop(&mut core, ms(10)), Popped::Key(2));
    assert_eq!(core.counters.queue_time, ms(15));
    assert_eq!(core.counters.longest_queue_time, ms(10));
    let mut running: Vec<Duration> = core.processing_since().collect();
    running.sort();
    assert_eq!(running, [ms(10), ms(10)]);
    done(&mut core, 1, ms(30));
    assert_eq!(core.counters.processing_time, ms(20));
    assert_eq!(core.counters.processed, 1);
}

#[test]
fn only_a_forced_shutdown_ends_the_drains() {
    let mut core: Core<u32> = Core::default();
    let began = core.forced_shutdowns();
    drop(core.shut_down()); // a drain's own shutdown
    assert_eq!(core.forced_shutdowns(), began);
    core.force_shut_down();
    assert_ne!(core.forced_shutdowns(), began);
    assert!(core.is_shutting_down());
    core.check_invariants();
}
