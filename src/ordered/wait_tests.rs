//! Unit tests of the wake-up protocol's bookkeeping (`wait.rs`): what the
//! public API cannot see, the count of registered waiters that every
//! producer loads and the epoch a wake-up bumps. The protocol's behaviour
//! (no lost wake-up, each entry to one consumer, cancellation) is tested
//! through the API in `tests/ordered_wait.rs` and by the loom models.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use super::OrderedIndex;
use crate::watchdog;

fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

/// Waits (yielding) until `index` has a registered waiter, or `waiter`
/// returned without one.
fn until_registered<T>(index: &OrderedIndex<u64, u64>, waiter: &thread::ScopedJoinHandle<'_, T>) {
    while index.waiters.registered() == 0 && !waiter.is_finished() {
        thread::yield_now();
    }
}

#[test]
fn a_finished_blocking_wait_deregisters() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    let index = OrderedIndex::<u64, u64>::new();
    // Registered, then timed out.
    assert_eq!(index.pop_first_timeout(Duration::from_millis(1)), None);
    assert_eq!(index.waiters.registered(), 0);
    // Registered, woken and served.
    thread::scope(|s| {
        let waiter = s.spawn(|| index.pop_first_wait());
        until_registered(&index, &waiter);
        index.insert(7, 70);
        let (key, value) = waiter.join().expect("waiter");
        assert_eq!((key, *value), (7, 70));
    });
    assert_eq!(index.waiters.registered(), 0);
    // A timed wait served by an insert deregisters too.
    thread::scope(|s| {
        let waiter =
            s.spawn(|| index.drain_to_timeout(std::ops::Bound::Unbounded, Duration::from_secs(60)));
        until_registered(&index, &waiter);
        index.insert(8, 80);
        assert_eq!(waiter.join().expect("waiter").len(), 1);
    });
    assert_eq!(index.waiters.registered(), 0);
}

#[test]
fn a_finished_or_dropped_future_deregisters() {
    let index = OrderedIndex::<u64, u64>::new();
    {
        let mut pending = pin!(index.pop_first_async());
        assert!(poll_once(pending.as_mut()).is_pending());
        assert_eq!(index.waiters.registered(), 1);
    }
    assert_eq!(index.waiters.registered(), 0);
    let mut waiting = pin!(index.pop_first_async());
    assert!(poll_once(waiting.as_mut()).is_pending());
    index.insert(1, 10);
    assert!(matches!(poll_once(waiting.as_mut()), Poll::Ready((1, _))));
    assert_eq!(index.waiters.registered(), 0);
}

#[test]
fn only_a_new_key_with_a_waiter_wakes() {
    let index = OrderedIndex::<u64, u64>::new();
    // No waiter: a new key costs a load of the count, no wake-up.
    index.insert(1, 10);
    assert_eq!(index.waiters.epoch(), 0);
    // A waiter for a range the index holds nothing of yet.
    let mut waiting = pin!(index.drain_to_async(std::ops::Bound::Excluded(&1)));
    assert!(poll_once(waiting.as_mut()).is_pending());
    assert_eq!(index.waiters.registered(), 1);
    // A replaced value is no new key: nobody is woken.
    index.insert(1, 11);
    assert_eq!(index.waiters.epoch(), 0);
    // A new key wakes every waiter, whatever range it waits for.
    index.insert(5, 50);
    assert_eq!(index.waiters.epoch(), 1);
    assert!(poll_once(waiting.as_mut()).is_pending());
    index.insert(0, 0);
    assert_eq!(index.waiters.epoch(), 2);
    assert!(matches!(poll_once(waiting.as_mut()), Poll::Ready(entries) if entries.len() == 1));
    assert_eq!(index.waiters.registered(), 0);
}

/// A waker that counts its wake-ups.
struct Counting(AtomicUsize);

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_re_polled_future_is_woken_through_its_latest_waker() {
    let index = OrderedIndex::<u64, u64>::new();
    let (first, second) = (
        Arc::new(Counting(AtomicUsize::new(0))),
        Arc::new(Counting(AtomicUsize::new(0))),
    );
    let mut waiting = pin!(index.pop_first_async());
    for counting in [&first, &second] {
        let waker = Waker::from(Arc::clone(counting));
        assert!(
            waiting
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
    }
    // Polled again by another task (another waker): the wake-up must reach
    // that one, or the future sleeps with an entry waiting.
    index.insert(3, 30);
    assert_eq!(second.0.load(Ordering::SeqCst), 1);
    assert_eq!(first.0.load(Ordering::SeqCst), 0);
    assert!(matches!(poll_once(waiting.as_mut()), Poll::Ready((3, _))));
}
