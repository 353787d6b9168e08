//! The waiting machinery shared by the containers that hand out entries:
//! a waiting consumer (blocking, with or without a deadline, or as a
//! future) and the wake-up protocol between it and the producers. Used by
//! `OrderedIndex`'s `pop_first`/`drain_to` waiting forms (`ordered/wait.rs`)
//! and by `WorkQueue`'s `get` forms (`workqueue/mod.rs`).
//!
//! A consumer's *attempt* is the container's own atomic step (it takes the
//! container's lock, takes an entry or returns `None`); a producer calls
//! [`Waiters::before_insert`] and [`Waiters::after_insert`] around the step
//! that makes an entry available.
//!
//! # Protocol
//!
//! [`Waiters`] holds a count of registered waiters (blocked threads and
//! pending futures), and under one mutex an epoch and the wakers of the
//! pending futures. A blocked thread waits on the condvar beside it.
//!
//! A consumer:
//!
//! 1. tries the operation (`pop_first` or `drain_to`, the engine's own
//!    atomic step); if it took something, it is done;
//! 2. registers: under the mutex, adds 1 to the count and reads the epoch;
//! 3. tries again, with no lock of ours held; if it took something, it
//!    deregisters and is done;
//! 4. under the mutex, if the epoch is the one it read, waits (a thread on
//!    the condvar, a future by leaving its waker and returning `Pending`);
//!    else it reads the new epoch and goes back to 3.
//!
//! A producer, after `insert` added a new key and released the engine's
//! locks, loads the count; if it is 0 it is done (the cost of the protocol
//! on a write with no waiters: one load of a word no writer writes).
//! Otherwise, under the mutex, it bumps the epoch, notifies the condvar's
//! threads and takes every waker, and wakes them after unlocking. Every
//! waiter is woken, not one: a woken future may be dropped before it polls
//! again, and a `drain_to` waiter may want another range than the new key,
//! so a single wake-up could land where nobody takes the entry.
//!
//! # No lost wake-up
//!
//! The window is between a consumer finding the index empty and it
//! sleeping. Two cases, for a consumer C and a producer P inserting key k:
//!
//! - P's count load does not see C's registration. Then C's retry (step 3)
//!   sees k (or the index after someone else took k). P's insert and C's
//!   retry both take the engine's locks: the one write lock of
//!   `OrderedLock::Single` and `Sharded`, or,
//!   with leaves, the router's read lock and the leaf that holds k (C's
//!   step locks the first leaf, or all leaves up to its bound, which holds
//!   k if k is in C's range; a leaf split or merge in between goes through
//!   the router's write lock, which orders the two steps the same way). If
//!   C's retry took those locks before P did, C's registration (sequenced
//!   before its retry) happens before P's count load, which by coherence
//!   then sees it, even Relaxed: a contradiction. So P's insert came first,
//!   and C's retry happens after it and sees k.
//! - P's count load sees the registration. P then bumps the epoch under the
//!   mutex. If C reaches step 4 before that, it is waiting and P's notify
//!   or wake reaches it (the mutex is held from C's epoch check to its
//!   wait); if after, C finds the epoch changed and retries.
//!
//! A `WorkQueue`'s engine lock is its one state mutex: `add`, `done`,
//! `shut_down` and a getter's retry all take it, so the same argument holds.
//!
//! The loom models in `loom-tests/tests/ordered_wait.rs` and
//! `loom-tests/tests/workqueue.rs` check this, and
//! that each broken variant of `WaitFault` deadlocks or loses an entry.
//!
//! # Cancellation
//!
//! A future removes an entry only inside the `poll` that returns `Ready`
//! with it, so dropping a pending future takes nothing; its drop only
//! deregisters it.
//!
//! # Locks
//!
//! One mutex, never held while calling into the engine or running user
//! code (the consumer's retry runs with it released; wakers are woken after
//! it is released).
//!
//! # Files
//!
//! This one, and `broken.rs`: the protocol's broken variants for the loom
//! models (`cfg(loom)` only).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use crate::sync::{AtomicUsize, CachePadded, Condvar, Mutex, Ordering};

#[cfg(loom)]
mod broken;
#[cfg(loom)]
pub(crate) use broken::Publishing;
#[cfg(loom)]
use broken::{Held, before_publish, poll_waiting, take_wakers, wait_registered, wake_after};
#[cfg(not(loom))]
use {
    no_count_before as before_publish, poll_wait as poll_waiting,
    retry_then_sleep as wait_registered, take_every_waker as take_wakers,
    wake_if_waiting as wake_after,
};

/// What [`Waiters::before_insert`] hands to [`Waiters::after_insert`]:
/// nothing (a loom negative control's early count load, under loom).
#[cfg(not(loom))]
#[derive(Default)]
pub(crate) struct Publishing;

/// What a [`Waiting`] future holds beside its attempt: nothing (a loom
/// negative control's stashed entry, under loom).
#[cfg(not(loom))]
type Held<T> = std::marker::PhantomData<fn() -> T>;

/// The consumers waiting for an entry of one index.
pub(crate) struct Waiters {
    /// The number of registered waiters. Changed under `list`'s mutex; read
    /// by every producer without it (see the module docs for why Relaxed is
    /// enough). On a line of its own, so that the producers' loads of it do
    /// not share a line with anything written.
    count: CachePadded<AtomicUsize>,
    list: Mutex<WaitList>,
    /// Where blocked threads wait.
    ready: Condvar,
}

/// The state under the mutex.
#[derive(Default)]
struct WaitList {
    /// Bumped by every wake-up, so that a consumer whose retry raced with
    /// one sees that it must retry again.
    epoch: u64,
    /// The pending futures' wakers, by registration slot; `None` for a slot
    /// whose waker was taken by a wake-up (or is free).
    wakers: Vec<Option<Waker>>,
    /// The free slots of `wakers`.
    free: Vec<usize>,
}

/// A blocking waiter's registration; deregisters on drop, panics included.
struct Registration<'a>(&'a Waiters);

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        // A loom model that deadlocks unwinds its threads, and a loom
        // atomic touched then aborts the process instead of failing the
        // model (the negative controls rely on the failure).
        #[cfg(loom)]
        if std::thread::panicking() {
            return;
        }
        // Relaxed: a late decrement only costs a producer a needless wake-up.
        self.0.count.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Waiters {
    pub(crate) fn new() -> Self {
        Self {
            count: CachePadded::new(AtomicUsize::new(0)),
            list: Mutex::new(WaitList::default()),
            ready: Condvar::new(),
        }
    }

    /// Called by `insert` before it touches the engine.
    #[inline(always)]
    pub(crate) fn before_insert(&self) -> Publishing {
        before_publish(self)
    }

    /// Called by `insert` after the engine's insert released its locks:
    /// wakes the waiters if `added` a new key and anyone waits.
    #[inline(always)]
    pub(crate) fn after_insert(&self, publishing: Publishing, added: bool) {
        wake_after(self, publishing, added);
    }

    /// Wakes every waiter.
    #[cold]
    fn wake_all(&self) {
        for waker in take_wakers(self) {
            waker.wake();
        }
    }

    /// BROKEN on purpose, for the loom negative controls `WaitFault::WakeOne`
    /// and `WorkQueueFault::ShutdownWakesOne`: bumps the epoch and wakes one
    /// waiter, the first pending future if there is one, else one blocked
    /// thread.
    #[cfg(loom)]
    #[cold]
    pub(crate) fn wake_one(&self) {
        let mut list = self.list.lock();
        list.epoch = list.epoch.wrapping_add(1);
        match list.wakers.iter_mut().find_map(Option::take) {
            Some(waker) => {
                drop(list);
                waker.wake();
            }
            None => {
                self.ready.notify_one();
            }
        }
    }

    /// Registers a blocking waiter; returns its registration and the epoch.
    fn register(&self) -> (Registration<'_>, u64) {
        let list = self.list.lock();
        // Relaxed: ordered before the retry that follows by program order,
        // and through the engine's locks before a producer's load.
        self.count.fetch_add(1, Ordering::Relaxed);
        (Registration(self), list.epoch)
    }

    /// Blocks until `attempt` returns something, or until `deadline`.
    pub(crate) fn wait<T>(
        &self,
        deadline: Option<Instant>,
        mut attempt: impl FnMut() -> Option<T>,
    ) -> Option<T> {
        if let Some(found) = attempt() {
            return Some(found);
        }
        let (_registration, seen) = self.register();
        wait_registered(self, seen, deadline, attempt)
    }

    /// One poll of a future waiting for `attempt`; `registered` is its slot
    /// and the epoch it last saw, once it has registered.
    fn poll_once<T>(
        &self,
        registered: &mut Option<(usize, u64)>,
        cx: &mut Context<'_>,
        attempt: &mut impl FnMut() -> Option<T>,
    ) -> Poll<T> {
        loop {
            if let Some(found) = attempt() {
                self.deregister(registered);
                return Poll::Ready(found);
            }
            let mut list = self.list.lock();
            match registered {
                None => {
                    let slot = list.free.pop().unwrap_or_else(|| {
                        list.wakers.push(None);
                        list.wakers.len() - 1
                    });
                    // Relaxed: as in `register`.
                    self.count.fetch_add(1, Ordering::Relaxed);
                    *registered = Some((slot, list.epoch));
                }
                Some((_, seen)) if *seen != list.epoch => *seen = list.epoch,
                Some((slot, _)) => {
                    // Left under the mutex, in the section that found the
                    // epoch unchanged: the next wake-up takes it.
                    let waker = &mut list.wakers[*slot];
                    match waker {
                        Some(old) if old.will_wake(cx.waker()) => {}
                        _ => *waker = Some(cx.waker().clone()),
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    /// Gives back a future's slot, if it has one.
    fn deregister(&self, registered: &mut Option<(usize, u64)>) {
        if let Some((slot, _)) = registered.take() {
            let waker = {
                let mut list = self.list.lock();
                list.free.push(slot);
                self.count.fetch_sub(1, Ordering::Relaxed);
                list.wakers[slot].take()
            };
            drop(waker);
        }
    }
}

#[cfg(test)]
impl Waiters {
    /// Waiters registered now (for tests).
    pub(crate) fn registered(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// How many wake-ups there were (for tests).
    pub(crate) fn epoch(&self) -> u64 {
        self.list.lock().epoch
    }
}

/// `before_insert`'s step: nothing to do before the engine's insert.
#[allow(
    clippy::default_constructed_unit_structs,
    reason = "a tuple struct under loom, where the broken variants fill it"
)]
fn no_count_before(_: &Waiters) -> Publishing {
    Publishing::default()
}

/// `after_insert`'s step: if the insert `added` a key, loads the waiter
/// count and wakes every waiter if there is one.
fn wake_if_waiting(waiters: &Waiters, _: Publishing, added: bool) {
    // Relaxed: this load comes after the insert released the engine's
    // locks, and a registration it must see is sequenced before the
    // consumer's retry under those locks (module docs, "No lost wake-up").
    if added && waiters.count.load(Ordering::Relaxed) != 0 {
        waiters.wake_all();
    }
}

/// A wake-up's step under the mutex: bumps the epoch, notifies every
/// blocked thread and takes every pending future's waker (woken by the
/// caller after unlocking).
fn take_every_waker(waiters: &Waiters) -> Vec<Waker> {
    let mut list = waiters.list.lock();
    list.epoch = list.epoch.wrapping_add(1);
    waiters.ready.notify_all();
    list.wakers.iter_mut().filter_map(Option::take).collect()
}

/// Steps 3 and 4 for a blocking waiter registered at epoch `seen`: tries
/// again, then sleeps while the epoch is unchanged, until `attempt`
/// returns something or `deadline` passes.
fn retry_then_sleep<T>(
    waiters: &Waiters,
    mut seen: u64,
    deadline: Option<Instant>,
    mut attempt: impl FnMut() -> Option<T>,
) -> Option<T> {
    loop {
        if let Some(found) = attempt() {
            return Some(found);
        }
        let mut list = waiters.list.lock();
        if list.epoch == seen {
            match deadline {
                None => waiters.ready.wait(&mut list),
                Some(deadline) => {
                    if Instant::now() >= deadline {
                        return None;
                    }
                    // Timed out or not, the loop retries once more and
                    // then looks at the clock.
                    waiters.ready.wait_until(&mut list, deadline);
                }
            }
        }
        seen = list.epoch;
    }
}

/// One poll of a waiting future.
fn poll_wait<T, F: FnMut() -> Option<T>>(
    waiting: &mut Waiting<'_, T, F>,
    cx: &mut Context<'_>,
) -> Poll<T> {
    let waiters = waiting.waiters;
    waiters.poll_once(&mut waiting.registered, cx, &mut waiting.attempt)
}

/// The future of the `*_async` forms: polls `attempt` and waits between
/// polls as [`Waiters`] says.
pub(crate) struct Waiting<'a, T, F> {
    waiters: &'a Waiters,
    attempt: F,
    registered: Option<(usize, u64)>,
    held: Held<T>,
}

// No field is pinned: `poll` moves nothing out of `self` but the output.
impl<T, F> Unpin for Waiting<'_, T, F> {}

impl<'a, T, F: FnMut() -> Option<T>> Waiting<'a, T, F> {
    pub(crate) fn new(waiters: &'a Waiters, attempt: F) -> Self {
        Self {
            waiters,
            attempt,
            registered: None,
            held: Held::default(),
        }
    }
}

impl<T, F: FnMut() -> Option<T>> Future for Waiting<'_, T, F> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        poll_waiting(self.get_mut(), cx)
    }
}

impl<T, F> Drop for Waiting<'_, T, F> {
    fn drop(&mut self) {
        // As in `Registration`'s drop.
        #[cfg(loom)]
        if std::thread::panicking() {
            return;
        }
        self.waiters.deregister(&mut self.registered);
    }
}
