//! loom models of `OrderedIndex`'s waiting consumption: the real wake-up
//! protocol (`src/ordered/wait.rs`) over loom's mutex and condvar, with
//! futures driven by `loom::future::block_on`. Three tasks each: two
//! consumers and a producer. Each model runs on the single-lock engine and
//! on two-entry leaves, and the negative controls run a broken protocol
//! (`WaitFault`) that the model must catch: a lost wake-up shows as
//! loom's deadlock, a lost entry as a failed count.
#![cfg(loom)]

use larder::fault::{WaitFault, inject};
use larder::{OrderedIndex, OrderedLock};
use loom::thread;
use std::future::Future;
// std's `Arc`, not loom's: a model that deadlocks (the negative controls)
// unwinds its threads, and dropping a loom `Arc` then aborts the process.
use std::sync::Arc;
use std::task::Poll;

/// Which engine a model runs on.
#[derive(Clone, Copy)]
enum Engine {
    /// One tree under one (sharded) lock.
    OneLock,
    /// `OrderedLock::Partitioned` with leaves of at most two entries.
    Leaves,
}

fn index_of(engine: Engine) -> OrderedIndex<u32, u32> {
    match engine {
        Engine::OneLock => OrderedIndex::builder()
            .lock(OrderedLock::Sharded)
            .build()
            .expect("valid settings"),
        Engine::Leaves => OrderedIndex::builder()
            .lock(OrderedLock::Partitioned)
            .leaf_size(2)
            .build()
            .expect("valid settings"),
    }
}

/// Two consumers wait on an empty index, one blocked in `pop_first_wait`,
/// one in `pop_first_async` under `block_on`; the producer inserts two
/// entries. Both consumers return (no lost wake-up: otherwise loom reports
/// a deadlock), each with a different entry.
fn waiting_consumers_take_each_entry_once(engine: Engine, fault: WaitFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let index = Arc::new(index_of(engine));
        let blocked = {
            let index = Arc::clone(&index);
            thread::spawn(move || index.pop_first_wait())
        };
        let waiting = {
            let index = Arc::clone(&index);
            thread::spawn(move || loom::future::block_on(index.pop_first_async()))
        };
        index.insert(1_u32, 10_u32);
        index.insert(2, 20);
        let mut taken = vec![blocked.join().unwrap(), waiting.join().unwrap()];
        taken.sort_unstable_by_key(|(key, _)| *key);
        for (key, value) in &taken {
            assert_eq!(**value, key * 10, "a value came apart from its key");
        }
        let keys: Vec<u32> = taken.iter().map(|(key, _)| *key).collect();
        assert_eq!(keys, [1, 2], "an entry was handed out twice");
        assert!(index.is_empty());
    });
}

#[test]
fn ordered_waiting_consumers_take_each_entry_once() {
    waiting_consumers_take_each_entry_once(Engine::OneLock, WaitFault::None);
}

#[test]
fn partitioned_waiting_consumers_take_each_entry_once() {
    waiting_consumers_take_each_entry_once(Engine::Leaves, WaitFault::None);
}

#[test]
#[should_panic(expected = "deadlock")]
fn waiting_negative_control_no_wake() {
    waiting_consumers_take_each_entry_once(Engine::OneLock, WaitFault::NoWake);
}

#[test]
#[should_panic(expected = "deadlock")]
fn waiting_negative_control_count_before_publish() {
    waiting_consumers_take_each_entry_once(Engine::OneLock, WaitFault::CountBeforePublish);
}

#[test]
#[should_panic(expected = "deadlock")]
fn partitioned_waiting_negative_control_count_before_publish() {
    waiting_consumers_take_each_entry_once(Engine::Leaves, WaitFault::CountBeforePublish);
}

#[test]
#[should_panic(expected = "deadlock")]
fn waiting_negative_control_register_after_check() {
    waiting_consumers_take_each_entry_once(Engine::OneLock, WaitFault::RegisterAfterCheck);
}

/// One consumer polls `pop_first_async` once and then drops it (a
/// cancelled wait), another blocks in `pop_first_wait`; the producer
/// inserts one entry, and a second one only if the cancelled consumer got
/// the first. The cancelled wait took nothing unless its one poll returned
/// the entry; the blocked consumer is never left asleep beside an entry (a
/// wake-up that went to the cancelled future must not be lost); every entry
/// is handed out once.
fn cancelled_wait_takes_nothing(engine: Engine, fault: WaitFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let index = Arc::new(index_of(engine));
        let cancelled = {
            let index = Arc::clone(&index);
            thread::spawn(move || {
                let mut waiting = Box::pin(index.pop_first_async());
                // One poll, then the future is dropped.
                loom::future::block_on(std::future::poll_fn(|cx| {
                    Poll::Ready(match waiting.as_mut().poll(cx) {
                        Poll::Ready(entry) => Some(entry),
                        Poll::Pending => None,
                    })
                }))
            })
        };
        let blocked = {
            let index = Arc::clone(&index);
            thread::spawn(move || index.pop_first_wait())
        };
        index.insert(1_u32, 10_u32);
        let early = cancelled.join().unwrap();
        if early.is_some() {
            index.insert(2, 20);
        }
        let mut keys: Vec<u32> = early.into_iter().map(|(key, _)| key).collect();
        keys.push(blocked.join().unwrap().0);
        keys.sort_unstable();
        let expected: &[u32] = if keys.len() == 2 { &[1, 2] } else { &[1] };
        assert_eq!(keys, expected, "an entry was lost or handed out twice");
        assert!(index.is_empty(), "an entry was left behind");
    });
}

#[test]
fn ordered_cancelled_wait_takes_nothing() {
    cancelled_wait_takes_nothing(Engine::OneLock, WaitFault::None);
}

#[test]
fn partitioned_cancelled_wait_takes_nothing() {
    cancelled_wait_takes_nothing(Engine::Leaves, WaitFault::None);
}

#[test]
#[should_panic(expected = "deadlock")]
fn cancelled_wait_negative_control_wake_one() {
    cancelled_wait_takes_nothing(Engine::OneLock, WaitFault::WakeOne);
}

#[test]
#[should_panic(expected = "deadlock")]
fn cancelled_wait_negative_control_take_then_pending() {
    cancelled_wait_takes_nothing(Engine::OneLock, WaitFault::TakeThenPending);
}
